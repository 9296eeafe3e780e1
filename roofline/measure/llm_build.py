"""A real Llama-architecture model with random weights, built by Hugging Face ``transformers`` (no download).

A :class:`~roofline.model.llm.ModelShape` becomes a ``LlamaConfig`` (dense), ``MistralConfig`` (a sliding
window) or ``MixtralConfig`` (experts), then ``*ForCausalLM`` in the run dtype: the library people decode
with. Its initialization pass is skipped (``normal_`` over 1.3 B weights takes ~30 s on two cores);
instead a seeded block of uniform values (std 0.02, the library's initializer range) whose length is a
prime is tiled through every tensor: every weight is written before anything is timed, and no two rows
of a matrix are alike. RMSNorm weights are 1 + the same values.

torch and transformers are imported lazily; their absence is :class:`BackendUnavailable`.
"""

from __future__ import annotations

import importlib.util
import math

from ..errors import BackendUnavailable, BadInput, RooflineError
from ..host import import_torch
from ..model.llm import ModelShape
from .pools import check_fits

#: The dtypes a model is built in (the activation and KV dtype too).
MODEL_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
#: Length of the random block tiled through the weights: a prime, so no row length divides it.
RANDOM_BLOCK = 1_048_573
#: The weights' standard deviation (transformers' default ``initializer_range``).
WEIGHT_STD = 0.02


def import_transformers():
    """transformers, or BackendUnavailable saying why not (asking costs no import when it is absent)."""
    if importlib.util.find_spec("transformers") is None:
        raise BackendUnavailable("transformers is not installed (pip install 'roofline[models]')")
    import_torch()
    try:
        import transformers
    except ImportError as exc:
        raise BackendUnavailable(f"transformers does not import: {exc}") from None
    return transformers


def torch_dtype(dtype: str):
    """The torch dtype a model runs in; BadInput for anything but bf16, fp16, fp32."""
    if dtype not in MODEL_DTYPES:
        raise BadInput(f"a measured model runs in {', '.join(MODEL_DTYPES)}, not {dtype!r}")
    return getattr(import_torch(), MODEL_DTYPES[dtype])


def architecture(shape: ModelShape) -> str:
    """'llama', 'mistral' (sliding window) or 'mixtral' (experts); BadInput for what none of them is."""
    if getattr(shape, "qkv_bias", False):
        raise BadInput(f"{shape.name} has q/k/v biases: a measured model is built as Llama, Mistral or Mixtral only")
    if shape.experts > 1:
        return "mixtral"
    return "mistral" if shape.sliding_window is not None else "llama"


def hf_config(shape: ModelShape, context: int):
    """The transformers config of ``shape`` (SDPA attention, room for ``context`` positions)."""
    transformers = import_transformers()
    arch = architecture(shape)
    common = dict(
        vocab_size=shape.vocab,
        hidden_size=shape.hidden,
        intermediate_size=shape.intermediate,
        num_hidden_layers=shape.layers,
        num_attention_heads=shape.heads,
        num_key_value_heads=shape.kv_heads,
        head_dim=shape.head_dim,
        max_position_embeddings=max(context, 8192),
        tie_word_embeddings=shape.tied_embeddings,
        attn_implementation="sdpa",
    )
    if arch == "llama":
        return transformers.LlamaConfig(**common)
    if arch == "mistral":
        return transformers.MistralConfig(sliding_window=shape.sliding_window, **common)
    return transformers.MixtralConfig(
        num_local_experts=shape.experts,
        num_experts_per_tok=shape.experts_per_token,
        sliding_window=shape.sliding_window,
        **common,
    )


def element_bytes(dtype: str) -> int:
    return 4 if dtype == "fp32" else 2


def kv_cache_bytes(shape: ModelShape, dtype: str, batch: int, context: int) -> int:
    """Bytes of one static KV cache: 2 · layers · batch · kv_heads · context · head_dim elements."""
    return 2 * shape.layers * batch * shape.kv_heads * context * shape.head_dim * element_bytes(dtype)


def memory_needed(shape: ModelShape, dtype: str, batch: int, context: int) -> int:
    """Bytes a measurement holds at its largest ``batch``: the weights once (both paths share them), two
    KV caches (one per path), float32 logits of both paths, and the largest float64 weight the reference
    converts at a time."""
    weights = shape.params_total * element_bytes(dtype)
    logits = 2 * batch * shape.vocab * 4
    largest = max(shape.intermediate * shape.hidden * (2 if shape.experts > 1 else 1), shape.vocab * shape.hidden)
    return weights + 2 * kv_cache_bytes(shape, dtype, batch, context) + logits + largest * 8


def check_memory(shape: ModelShape, dtype: str, batch: int, context: int) -> int:
    """BadInput, with the figures, when the measurement would not fit this machine's available memory."""
    need = memory_needed(shape, dtype, batch, context)
    check_fits(need, f"{shape.name} in {dtype} at batch {batch}, context {context} (weights, two KV caches)")
    return need


def fill_random(model, seed: int = 0) -> None:
    """Write every parameter: a seeded uniform block of std :data:`WEIGHT_STD` tiled through each tensor,
    each tensor starting where the last one stopped; RMSNorm weights get 1 + those values."""
    torch = import_torch()
    bound = WEIGHT_STD * math.sqrt(3)
    gen = torch.Generator().manual_seed(seed)
    block = torch.rand(RANDOM_BLOCK, generator=gen, dtype=torch.float32).mul_(2 * bound).sub_(bound)
    blocks: dict = {}
    offset = 0
    with torch.no_grad():
        for name, p in model.named_parameters():
            src = blocks.setdefault(p.dtype, block.to(p.dtype))
            flat = p.view(-1)
            done = 0
            while done < flat.numel():
                start = (offset + done) % RANDOM_BLOCK
                take = min(RANDOM_BLOCK - start, flat.numel() - done)
                flat[done : done + take].copy_(src[start : start + take])
                done += take
            offset = (offset + flat.numel()) % RANDOM_BLOCK
            if name.endswith("norm.weight"):
                p.add_(1.0)


def build_model(shape: ModelShape, dtype: str = "bf16", context: int = 4096, seed: int = 0):
    """``shape`` as a transformers ``*ForCausalLM`` in ``dtype`` with random weights, in eval mode.

    Memory is not checked here (:func:`check_memory` is, with the batch and context the caller plans).
    """
    transformers = import_transformers()
    from transformers.initialization import no_init_weights

    tdtype = torch_dtype(dtype)
    config = hf_config(shape, context)
    cls = {
        "llama": transformers.LlamaForCausalLM,
        "mistral": transformers.MistralForCausalLM,
        "mixtral": transformers.MixtralForCausalLM,
    }[architecture(shape)]
    with no_init_weights():
        model = cls._from_config(config, dtype=tdtype)
    model.tie_weights()  # a tied head is the embedding table: transformers 5.24 leaves it apart here
    fill_random(model, seed)
    model.eval().requires_grad_(False)
    count = sum(p.numel() for p in model.parameters())
    if count != shape.params_total:
        raise RooflineError(
            f"transformers built {count:,} parameters for {shape.name}, the shape counts {shape.params_total:,}: "
            "the model and the bound would not describe the same network"
        )
    return model
