"""The dtypes roofline knows, in one table: bytes, numpy and torch names, tolerance, peak, meaning.

A dtype's ``name`` is also the key of its peak in a :class:`~roofline.model.hardware.Hardware`
("fp32", "bf16", ...), so a measurement's dtype names the roof it meets. numpy's names
("float32") appear only where numpy runs a kernel; :func:`by_numpy` finds a dtype by them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BadInput


@dataclass(frozen=True)
class Dtype:
    """One dtype: storage, names in the libraries that run it, and what a kernel in it must meet.

    ``tolerance`` is the largest relative (Frobenius) error of a kernel's output against a float64
    product of the operands it was given: accumulation and the rounding of the output (bf16 keeps
    8 bits: ~1e-3 typical). ``peak_unit`` is the unit of its peak in the catalogue, None when no
    peak is quoted for it. ``scaled``: per-tensor float32 scales through ``torch._scaled_mm``.
    """

    name: str
    bytes: float
    meaning: str
    numpy: str | None = None
    torch: str | None = None
    tolerance: float | None = None
    peak_unit: str | None = "FLOP/s"
    scaled: bool = False
    cuda_capability: tuple[int, int] | None = None


TABLE = (
    Dtype("fp64", 8, "IEEE float64", numpy="float64", torch="float64", tolerance=1e-10),
    Dtype("fp32", 4, "IEEE float32; on CUDA with TF32 off", numpy="float32", torch="float32", tolerance=1e-4),
    Dtype(
        "tf32",
        4,
        "float32 storage, TF32 tensor-core math (CUDA, compute capability ≥ 8.0)",
        torch="float32",
        tolerance=5e-3,  # inputs rounded to 10-bit mantissas inside the tensor cores: ~3e-4 typical
        cuda_capability=(8, 0),
    ),
    Dtype("bf16", 2, "bfloat16, float32 accumulation", torch="bfloat16", tolerance=1e-2, cuda_capability=(8, 0)),
    Dtype("fp16", 2, "IEEE float16", torch="float16", tolerance=5e-3),
    Dtype(
        "fp8",
        1,
        "float8 e4m3 with per-tensor float32 scales, bf16 output (torch._scaled_mm)",
        torch="float8_e4m3fn",
        tolerance=3e-2,  # e4m3 operands (exact in the reference), fp32 accumulation, bf16 output
        scaled=True,
        cuda_capability=(8, 9),
    ),
    Dtype("int8", 1, "8-bit integers; their peak is in integer OP/s", peak_unit="OP/s"),
    Dtype("int4", 0.5, "4-bit integer weights (group scales not counted)", peak_unit=None),
)

#: Every dtype by name, in the table's order.
DTYPES: dict[str, Dtype] = {d.name: d for d in TABLE}
#: The dtypes a peak may be quoted for (a catalogue figure, a Hardware's ``peak_flops`` key).
PEAKS: tuple[str, ...] = tuple(d.name for d in TABLE if d.peak_unit)
#: The dtypes a decode step can run in (numpy or torch holds them).
STEPS: tuple[str, ...] = tuple(d.name for d in TABLE if d.numpy or d.torch)
#: The dtype of the CPU suite's kernels (numpy float32) and of its compute roof.
SUITE = DTYPES["fp32"]
#: The dtypes a compute roof is measured for, in the order reports list them.
COMPUTE_DTYPES = ("fp64", "fp32", "bf16", "fp16", "int8")


def by_numpy(name: str) -> Dtype:
    """The dtype numpy calls ``name`` ('float32' → fp32); BadInput naming numpy's names otherwise."""
    for d in TABLE:
        if d.numpy == name:
            return d
    known = ", ".join(d.numpy for d in TABLE if d.numpy)
    raise BadInput(f"unknown dtype {name!r} for numpy (use one of: {known})")
