"""A Llama model as a GGUF file lays it out: its tensors, their types and the bytes each holds.

llama.cpp reads a GGUF whose tensors it names (``token_embd``, ``blk.N.attn_q``, ...). In the files
roofline writes every matrix is in one weight format and the norms are F32, as llama.cpp's own
converter leaves them. The formats here are llama.cpp's names for roofline's weight formats
(:data:`roofline.model.llm.QUANT_FORMATS`); their bytes come from that one table. A decode step reads
every matrix once but only one row of ``token_embd`` per sequence (a lookup), which the bound
(:mod:`roofline.model.llm_estimate`) already leaves out; a tied model's head is ``token_embd`` read whole.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadInput
from .llm import ModelShape, bytes_per_weight

#: GGUF tensor type → roofline's weight format (``roofline decode --dtype/--quant``).
GGUF_FORMATS: dict[str, str] = {"F16": "fp16", "Q8_0": "q8_0", "Q4_0": "q4_0"}

#: Weights per block of a block-quantized GGUF type: a matrix row must hold whole blocks.
BLOCK = {"F16": 1, "Q8_0": 32, "Q4_0": 32}

#: Bytes per element of the F32 tensors (the norms).
F32_BYTES = 4


def gguf_format(name: str) -> str:
    """A GGUF type name from what a user gives (``q8_0``, ``Q8_0``, ``fp16``, ``f16``); BadInput otherwise."""
    key = name.strip().upper()
    by_weight = {weight.upper(): fmt for fmt, weight in GGUF_FORMATS.items()}
    if key in GGUF_FORMATS:
        return key
    if key in by_weight:
        return by_weight[key]
    raise BadInput(f"unknown GGUF format {name!r} (llama.cpp runs the files written here in {', '.join(GGUF_FORMATS)})")


@dataclass(frozen=True)
class GgufTensor:
    """One tensor: its name, its shape as numpy sees it (rows, columns) and its GGUF type."""

    name: str
    shape: tuple[int, ...]
    type: str

    @property
    def elements(self) -> int:
        out = 1
        for d in self.shape:
            out *= d
        return out

    @property
    def nbytes(self) -> int:
        """The tensor's data bytes: F32 at 4 B, a weight format at its bytes per weight (whole blocks)."""
        if self.type == "F32":
            return F32_BYTES * self.elements
        return round(self.elements * bytes_per_weight(GGUF_FORMATS[self.type]))


def check_shape(shape: ModelShape, fmt: str) -> None:
    """BadInput where llama.cpp's Llama graph, or a block format, cannot hold ``shape``."""
    if shape.experts > 1 or shape.qkv_bias or shape.sliding_window is not None:
        raise BadInput(
            f"{shape.name}: the GGUF files written here are dense Llama models (no experts, q/k/v biases or "
            "sliding window)"
        )
    block = BLOCK[gguf_format(fmt)]
    widths = {
        "hidden": shape.hidden,
        "intermediate": shape.intermediate,
        "heads × head_dim": shape.heads * shape.head_dim,
    }
    for what, width in widths.items():
        if width % block:
            raise BadInput(f"{shape.name}: {what} {width} is not a multiple of {fmt}'s block of {block} weights")


def llama_tensors(shape: ModelShape, fmt: str) -> tuple[GgufTensor, ...]:
    """The tensors of a Llama GGUF of ``shape`` with its matrices in ``fmt``, in file order."""
    fmt = gguf_format(fmt)
    check_shape(shape, fmt)
    h, q, kv = shape.hidden, shape.heads * shape.head_dim, shape.kv_heads * shape.head_dim
    out = [GgufTensor("token_embd.weight", (shape.vocab, h), fmt)]
    for i in range(shape.layers):
        b = f"blk.{i}"
        out += [
            GgufTensor(f"{b}.attn_norm.weight", (h,), "F32"),
            GgufTensor(f"{b}.attn_q.weight", (q, h), fmt),
            GgufTensor(f"{b}.attn_k.weight", (kv, h), fmt),
            GgufTensor(f"{b}.attn_v.weight", (kv, h), fmt),
            GgufTensor(f"{b}.attn_output.weight", (h, q), fmt),
            GgufTensor(f"{b}.ffn_norm.weight", (h,), "F32"),
            GgufTensor(f"{b}.ffn_gate.weight", (shape.intermediate, h), fmt),
            GgufTensor(f"{b}.ffn_up.weight", (shape.intermediate, h), fmt),
            GgufTensor(f"{b}.ffn_down.weight", (h, shape.intermediate), fmt),
        ]
    out.append(GgufTensor("output_norm.weight", (h,), "F32"))
    if not shape.tied_embeddings:
        out.append(GgufTensor("output.weight", (shape.vocab, h), fmt))
    return tuple(out)


def data_bytes(shape: ModelShape, fmt: str) -> int:
    """Bytes of every tensor's data (the file adds its header and 32-byte alignment)."""
    return sum(t.nbytes for t in llama_tensors(shape, fmt))


def step_bytes(shape: ModelShape, fmt: str) -> int:
    """Weight bytes one decode step reads from the file: every tensor but ``token_embd``, which it looks
    up a row of, unless the model is tied and the head reads it whole."""
    return sum(t.nbytes for t in llama_tensors(shape, fmt) if t.name != "token_embd.weight" or shape.tied_embeddings)
