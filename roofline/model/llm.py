"""LLM shapes as the roofline sees them: parameter counts, bytes per weight, KV-cache bytes per token.

A :class:`ModelShape` is a Llama-style decoder (grouped-query attention, SwiGLU MLP, RMSNorm,
no biases but optional q/k/v biases), optionally a mixture of experts. Presets live in
``models.toml`` beside this module; every count here is computed from the shape, never stored.
Architectures the shape cannot represent (``[unsupported]`` in the same file) are refused by name.
Weight formats: plain dtypes (:data:`WEIGHT_BYTES`) and quantization formats
(:data:`QUANT_FORMATS`) whose bytes per weight follow their specification's block layout.
"""

from __future__ import annotations

import difflib
import re
import tomllib
from dataclasses import dataclass, fields
from importlib import resources

from ..errors import BadInput, positive_int

#: Bytes per stored weight, before any quantization scales.
WEIGHT_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
#: Bytes per KV-cache element.
KV_BYTES = {"fp32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0}
#: int4 weights carry one scale per group of this many weights (GPTQ/AWQ-style) ...
INT4_GROUP_SIZE = 128
#: ... stored in this many bytes (an fp16 scale).
INT4_SCALE_BYTES = 2


@dataclass(frozen=True)
class QuantFormat:
    """A quantized weight format: ``bits`` per weight plus ``group_bytes`` of scales/zeros per group.

    ``group`` is the format's fixed block (weights per scale); None means the group comes from
    ``group_size`` (GPTQ, AWQ, ...). ``compute`` is the dtype its matmuls run in.
    """

    name: str
    bits: int
    group_bytes: float
    group: int | None
    compute: str
    layout: str
    source: str

    def bytes_per_weight(self, group_size: int = INT4_GROUP_SIZE) -> float:
        group = self.group if self.group is not None else group_size
        return self.bits / 8 + self.group_bytes / group


_GGML = "ggml/src/ggml-common.h (block_* structs), https://github.com/ggml-org/llama.cpp"
_MX = "OCP Microscaling Formats (MX) Specification v1.0, https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf"

#: Quantization formats and their layouts. Per-tensor and per-output-channel scales are a vanishing
#: fraction (one number per tensor or per row of thousands) and are not counted.
QUANT_FORMATS: dict[str, QuantFormat] = {
    f.name: f
    for f in (
        QuantFormat("q8_0", 8, 2, 32, "bf16", "blocks of 32: fp16 scale + 32 int8 (34 B)", _GGML),
        QuantFormat("q4_0", 4, 2, 32, "bf16", "blocks of 32: fp16 scale + 16 B of nibbles (18 B)", _GGML),
        QuantFormat("q4_1", 4, 4, 32, "bf16", "blocks of 32: fp16 scale and min + 16 B (20 B)", _GGML),
        QuantFormat("q5_0", 5, 2, 32, "bf16", "blocks of 32: fp16 scale + 4 B high bits + 16 B (22 B)", _GGML),
        QuantFormat("q5_1", 5, 4, 32, "bf16", "blocks of 32: fp16 scale and min + 4 B + 16 B (24 B)", _GGML),
        QuantFormat("q2_k", 2, 20, 256, "bf16", "super-blocks of 256: 16 B scales + 64 B + fp16 d, dmin (84 B)", _GGML),
        QuantFormat(
            "q3_k", 3, 14, 256, "bf16", "super-blocks of 256: 32 B + 64 B + 12 B scales + fp16 d (110 B)", _GGML
        ),
        QuantFormat(
            "q4_k", 4, 16, 256, "bf16", "super-blocks of 256: fp16 d, dmin + 12 B scales + 128 B (144 B)", _GGML
        ),
        QuantFormat(
            "q5_k", 5, 16, 256, "bf16", "super-blocks of 256: fp16 d, dmin + 12 B + 32 B + 128 B (176 B)", _GGML
        ),
        QuantFormat(
            "q6_k", 6, 18, 256, "bf16", "super-blocks of 256: 128 B + 64 B + 16 B scales + fp16 d (210 B)", _GGML
        ),
        QuantFormat(
            "gptq",
            4,
            2.5,
            None,
            "bf16",
            "4-bit weights packed in int32, per group and output column an fp16 scale and a 4-bit zero "
            "(qzeros); g_idx (one int32 per input row) not counted",
            "AutoGPTQ / GPTQ-for-LLaMa QuantLinear (qweight, qzeros, scales, g_idx), https://github.com/AutoGPTQ/AutoGPTQ",
        ),
        QuantFormat(
            "awq",
            4,
            2.5,
            None,
            "bf16",
            "4-bit weights packed in int32, per group and output column an fp16 scale and a 4-bit zero",
            "AutoAWQ WQLinear_GEMM (qweight, qzeros, scales), https://github.com/casper-hansen/AutoAWQ",
        ),
        QuantFormat(
            "int4-zp",
            4,
            4,
            None,
            "bf16",
            "4-bit weights, per group and output column a bf16 scale and a bf16 zero (gpt-fast, torchao int4)",
            "gpt-fast quantize.py WeightOnlyInt4QuantHandler (scales_and_zeros, bf16 [groups, out, 2]), "
            "https://github.com/pytorch-labs/gpt-fast",
        ),
        QuantFormat(
            "nf4",
            4,
            4,
            64,
            "bf16",
            "blocks of 64: 4-bit NormalFloat + fp32 absmax (bitsandbytes default, no double quantization)",
            "bitsandbytes Linear4bit / QLoRA paper (Dettmers et al. 2023, section 3), https://arxiv.org/abs/2305.14314",
        ),
        QuantFormat("mxfp4", 4, 1, 32, "bf16", "blocks of 32: FP4 E2M1 + one E8M0 scale byte (17 B)", _MX),
        QuantFormat(
            "nvfp4",
            4,
            1,
            16,
            "bf16",
            "blocks of 16: FP4 E2M1 + one FP8 E4M3 scale byte (9 B); the per-tensor fp32 scale not counted",
            "NVIDIA, 'Introducing NVFP4 for efficient and accurate low-precision inference' (2025), "
            "https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-accurate-low-precision-inference/",
        ),
        QuantFormat(
            "fp8-tensor",
            8,
            0,
            1,
            "fp8",
            "FP8 E4M3 weights with one fp32 scale per tensor (not counted), fp8 matmuls",
            "NVIDIA Transformer Engine / TensorRT-LLM FP8 (per-tensor scaling), https://github.com/NVIDIA/TensorRT-LLM",
        ),
    )
}


def weight_formats() -> list[str]:
    """Every name ``--dtype``/``--quant`` accepts: plain dtypes, then quantization formats."""
    return [*WEIGHT_BYTES, *QUANT_FORMATS]


def natural_compute(weight: str) -> str:
    """The dtype a format's matmuls run in: fp32 for fp32, fp8 for fp8 formats, else bf16."""
    if weight in QUANT_FORMATS:
        return QUANT_FORMATS[weight].compute
    return {"fp32": "fp32", "fp8": "fp8"}.get(weight, "bf16")


def uses_group_size(weight: str) -> bool:
    """Whether ``group_size`` changes this format's bytes (int4, gptq, awq, int4-zp)."""
    return weight == "int4" or (weight in QUANT_FORMATS and QUANT_FORMATS[weight].group is None)


def bytes_per_weight(dtype: str, group_size: int = INT4_GROUP_SIZE) -> float:
    """Bytes one weight occupies, scales and zeros included.

    Plain dtypes: :data:`WEIGHT_BYTES`; int4 adds one fp16 scale per group (0.5 + 2/group_size).
    A quantization format (:data:`QUANT_FORMATS`): its bits + its scale/zero bytes per group.
    fp8 and int8 scales (per tensor or per output channel) are a vanishing fraction and are
    not counted.
    """
    if dtype not in WEIGHT_BYTES and dtype not in QUANT_FORMATS:
        raise BadInput(f"unknown weight dtype {dtype!r} (use {', '.join(weight_formats())})")
    if not uses_group_size(dtype):
        return WEIGHT_BYTES[dtype] if dtype in WEIGHT_BYTES else QUANT_FORMATS[dtype].bytes_per_weight()
    if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size <= 0:
        raise BadInput(f"{dtype} group size must be a positive integer, got {group_size!r}")
    if dtype == "int4":
        return WEIGHT_BYTES["int4"] + INT4_SCALE_BYTES / group_size
    return QUANT_FORMATS[dtype].bytes_per_weight(group_size)


def bytes_per_kv_element(dtype: str) -> float:
    """Bytes per stored key or value element."""
    if dtype not in KV_BYTES:
        raise BadInput(f"unknown KV-cache dtype {dtype!r} (use {', '.join(KV_BYTES)})")
    return KV_BYTES[dtype]


#: The positive-integer fields of a shape; with ``sliding_window`` (optional) they are the flags a user may set.
COUNT_FIELDS = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "head_dim",
    "intermediate",
    "vocab",
    "experts",
    "experts_per_token",
)
SETTABLE_FIELDS = (*COUNT_FIELDS, "sliding_window")


@dataclass(frozen=True)
class ModelShape:
    """A decoder-only transformer's shape.

    ``intermediate`` is the MLP width of one expert; ``experts`` = 1 means a dense model.
    ``sliding_window`` caps the KV tokens kept per sequence (None: the whole context).
    ``qkv_bias``: the q, k and v projections carry biases (Qwen2).
    """

    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    experts: int = 1
    experts_per_token: int = 1
    sliding_window: int | None = None
    tied_embeddings: bool = False
    qkv_bias: bool = False
    source: str = ""
    aliases: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for f in COUNT_FIELDS:
            positive_int(f"{self.name}: {f.replace('_', ' ')}", getattr(self, f))
        if self.sliding_window is not None:
            positive_int(f"{self.name}: sliding window", self.sliding_window)
        if self.heads % self.kv_heads:
            raise BadInput(f"{self.name}: {self.heads} heads is not a multiple of {self.kv_heads} KV heads")
        if self.experts_per_token > self.experts:
            raise BadInput(f"{self.name}: {self.experts_per_token} experts per token but only {self.experts} experts")

    # ---- parameter counts ----------------------------------------------------------------

    @property
    def attention_params(self) -> int:
        """Per layer: q and o (hidden × heads·head_dim each), k and v (hidden × kv_heads·head_dim each)."""
        return self.hidden * self.head_dim * 2 * (self.heads + self.kv_heads)

    @property
    def bias_params(self) -> int:
        """Per layer: the q, k and v biases ((heads + 2 · kv_heads) · head_dim), 0 without them."""
        return (self.heads + 2 * self.kv_heads) * self.head_dim if self.qkv_bias else 0

    @property
    def expert_params(self) -> int:
        """One SwiGLU MLP (gate, up, down): 3 · hidden · intermediate."""
        return 3 * self.hidden * self.intermediate

    @property
    def router_params(self) -> int:
        """Per layer: the MoE router (hidden × experts), 0 for a dense model."""
        return self.hidden * self.experts if self.experts > 1 else 0

    @property
    def norm_params(self) -> int:
        """Per layer: two RMSNorm weight vectors."""
        return 2 * self.hidden

    @property
    def embedding_params(self) -> int:
        """The input embedding table (vocab × hidden)."""
        return self.vocab * self.hidden

    @property
    def lm_head_params(self) -> int:
        """The output projection; 0 when it shares the embedding table."""
        return 0 if self.tied_embeddings else self.vocab * self.hidden

    def _params(self, experts: float) -> float:
        per_layer = (
            self.attention_params + self.bias_params + experts * self.expert_params + self.router_params
        ) + self.norm_params
        return self.layers * per_layer + self.embedding_params + self.lm_head_params + self.hidden

    @property
    def params_total(self) -> int:
        """Every stored parameter (all experts, embeddings, norms)."""
        return int(self._params(self.experts))

    @property
    def params_active(self) -> int:
        """Parameters one token uses (experts_per_token of the experts), as MoE papers count them."""
        return int(self._params(self.experts_per_token))

    def params_read(self, experts: float) -> float:
        """Parameters one decode step reads when ``experts`` experts per layer are touched.

        The input embedding is looked up, not read: only one row per sequence, which is ignored.
        A tied table is read in full as the output projection.
        """
        return sum(self.phase_params(experts).values())

    def phase_params(self, experts: float) -> dict[str, float]:
        """The parameters each phase of a step reads, each norm with the phase it feeds.

        ``qkv_o``: q, k, v, o projections, their biases, the input norm; ``mlp``: the ``experts``
        touched, the router, the post-attention norm; ``head``: the output projection (a tied
        embedding table when tied) and the final norm. The attention phase reads KV cache only.
        """
        head = self.embedding_params if self.tied_embeddings else self.lm_head_params
        return {
            "qkv_o": self.layers * (self.attention_params + self.bias_params + self.hidden),
            "mlp": self.layers * (experts * self.expert_params + self.router_params + self.hidden),
            "head": head + self.hidden,
        }

    @property
    def matmul_params_per_token(self) -> int:
        """Weights one token multiplies by (2 FLOPs each): attention, active experts, router, output head."""
        return sum(self.phase_matmul_params.values())

    @property
    def phase_matmul_params(self) -> dict[str, int]:
        """Per phase, the weights one token multiplies by: q/k/v/o; active experts and router; output head."""
        return {
            "qkv_o": self.layers * self.attention_params,
            "mlp": self.layers * (self.experts_per_token * self.expert_params + self.router_params),
            "head": self.vocab * self.hidden,
        }

    # ---- the KV cache --------------------------------------------------------------------

    def kv_tokens(self, context: int) -> int:
        """KV entries kept and read per sequence at ``context`` tokens (capped by a sliding window)."""
        return context if self.sliding_window is None else min(context, self.sliding_window)

    def kv_tokens_sum(self, first: int, last: int) -> int:
        """Σ kv_tokens(c) for c = first … last (0 when last < first): the KV entries read over those steps."""
        if last < first:
            return 0
        window = self.sliding_window
        below_last = last if window is None else min(last, window)
        total = (first + below_last) * (below_last - first + 1) // 2 if below_last >= first else 0
        if window is not None and last > window:
            total += (last - max(first, window + 1) + 1) * window
        return total

    def kv_bytes_per_token(self, kv_bytes: float) -> float:
        """2 (K and V) · layers · kv_heads · head_dim · bytes per element."""
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_bytes

    def attention_flops_per_token(self, context: int) -> int:
        """q·Kᵀ and weights·V over the kept context: 4 · layers · heads · head_dim · kv_tokens."""
        return 4 * self.layers * self.heads * self.head_dim * self.kv_tokens(context)

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["aliases"] = list(self.aliases)
        out["params_total"] = self.params_total
        out["params_active"] = self.params_active
        return out


# ---- presets ----------------------------------------------------------------------------------

#: The fields a shape needs; the rest have defaults.
SHAPE_FIELDS = ("layers", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab")


def _key(name: str) -> str:
    """'meta-llama/Meta-Llama-3-8B' → 'metallama38b': case, separators and an org prefix don't matter."""
    return re.sub(r"[^a-z0-9]", "", name.rsplit("/", 1)[-1].lower())


def _load_presets() -> tuple[dict[str, ModelShape], dict[str, str]]:
    """The presets, and the refused architectures: normalized name → 'Name uses ...'."""
    text = resources.files(__package__).joinpath("models.toml").read_text(encoding="utf-8")
    data = tomllib.loads(text)
    refused = {}
    for entry in data.pop("unsupported", {}).values():
        for name in entry["names"]:
            refused[_key(name)] = f"{name} uses {entry['reason']}"
    presets = {}
    for key, entry in data.items():
        entry = dict(entry)
        entry["aliases"] = tuple(entry.get("aliases", ()))
        presets[key] = ModelShape(**entry)
    return presets, refused


PRESETS, UNSUPPORTED = _load_presets()


def preset_names() -> list[str]:
    """The preset keys, e.g. 'llama-3-8b'."""
    return list(PRESETS)


def lookup_model(name: str) -> ModelShape:
    """A preset by name or alias (case and separators ignored); BadInput with the closest names."""
    index = {}
    for key, shape in PRESETS.items():
        for alias in (key, shape.name, *shape.aliases):
            index[_key(alias)] = key
    wanted = _key(name)
    if wanted in index:
        return PRESETS[index[wanted]]
    if wanted in UNSUPPORTED:
        raise BadInput(
            f"{UNSUPPORTED[wanted]}, which roofline's Llama-style model cannot represent: "
            "refused rather than approximated"
        )
    close = difflib.get_close_matches(wanted, list(index), n=3, cutoff=0.5)
    suggestions = list(dict.fromkeys(index[c] for c in close))
    hint = f"; closest: {', '.join(suggestions)}" if suggestions else ""
    raise BadInput(f"unknown model {name!r}{hint} (known: {', '.join(PRESETS)}, or 'custom' with a shape)")


def custom_model(base: ModelShape | None = None, name: str | None = None, **shape: object) -> ModelShape:
    """A shape from keyword fields, optionally over a preset; head_dim defaults to hidden / heads.

    Without ``base`` every field in :data:`SHAPE_FIELDS` except head_dim and kv_heads is needed
    (kv_heads defaults to heads, i.e. multi-head attention).
    """
    given = {k: v for k, v in shape.items() if v is not None}
    unknown = set(given) - {f.name for f in fields(ModelShape)}
    if unknown:
        raise BadInput(f"unknown model field(s): {', '.join(sorted(unknown))}")
    if base is not None:
        if not given and name is None:
            return base
        if "hidden" in given or "heads" in given:
            given.setdefault("head_dim", None)
        merged = {**{f.name: getattr(base, f.name) for f in fields(ModelShape)}, **given}
        merged["name"] = name or (f"{base.name} (modified)" if given else base.name)
        merged["aliases"] = ()
        if merged.get("head_dim") is None:
            merged["head_dim"] = _default_head_dim(merged)
        return ModelShape(**merged)
    missing = [f for f in SHAPE_FIELDS if f not in given and f not in ("head_dim", "kv_heads")]
    if missing:
        raise BadInput(f"a custom model needs {', '.join('--' + f.replace('_', '-') for f in missing)}")
    given.setdefault("kv_heads", given["heads"])
    if "head_dim" not in given:
        given["head_dim"] = _default_head_dim(given)
    return ModelShape(name=name or "custom", **given)


def _default_head_dim(shape: dict[str, object]) -> int:
    hidden, heads = shape["hidden"], shape["heads"]
    positive_int("hidden", hidden)
    positive_int("heads", heads)
    if hidden % heads:
        raise BadInput(f"hidden {hidden} is not a multiple of {heads} heads: give --head-dim")
    return hidden // heads
