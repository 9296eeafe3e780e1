"""The Hardware value: peak FLOP/s per dtype, memory bandwidth, and where the figures come from."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

from ..errors import BadInput, positive


@dataclass(frozen=True)
class Hardware:
    """A device as the roofline model sees it.

    ``peak_flops`` maps a dtype name ("bf16", "fp32", ...) to dense FLOP/s;
    ``bandwidth`` is memory bandwidth in bytes/s; ``source`` says where the
    figures come from (a datasheet, or "measured on <host>"). ``memory_bytes`` is the
    capacity the device has; ``memory_reserved`` the part of it the driver or firmware keeps
    (ECC, firmware), so a program can use ``memory_bytes - memory_reserved`` at most.
    """

    name: str
    peak_flops: dict[str, float]
    bandwidth: float
    source: str = ""
    memory_bytes: float | None = None
    notes: str = ""
    memory_reserved: float = 0.0
    extra: dict[str, object] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        if not self.name:
            raise BadInput("hardware needs a name")
        positive(f"{self.name}: bandwidth", self.bandwidth)
        if not self.peak_flops:
            raise BadInput(f"{self.name}: no peak FLOP/s given")
        for dtype, flops in self.peak_flops.items():
            positive(f"{self.name}: peak {dtype} FLOP/s", flops)
        if self.memory_bytes is not None:
            positive(f"{self.name}: memory", self.memory_bytes)
        reserved = self.memory_reserved
        if isinstance(reserved, bool) or not isinstance(reserved, numbers.Real) or not 0 <= reserved < math.inf:
            raise BadInput(f"{self.name}: reserved memory must be a finite number ≥ 0, got {reserved!r}")
        if reserved and (self.memory_bytes is None or reserved >= self.memory_bytes):
            raise BadInput(
                f"{self.name}: reserved memory {reserved!r} B is not below the capacity {self.memory_bytes!r}"
            )

    @property
    def usable_memory(self) -> float | None:
        """Bytes a program can allocate: the capacity less what the driver reserves (None: unknown)."""
        return None if self.memory_bytes is None else self.memory_bytes - self.memory_reserved

    def peak(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; BadInput naming the dtypes known if absent."""
        try:
            return self.peak_flops[dtype]
        except KeyError:
            known = ", ".join(sorted(self.peak_flops)) or "none"
            raise BadInput(f"{self.name} has no peak for dtype {dtype!r} (known: {known})") from None


#: The lab's H100: bf16 dense peak and HBM3 bandwidth as NVIDIA publishes them (H100 SXM5 datasheet).
H100 = Hardware(
    name="H100 SXM",
    peak_flops={"bf16": 990e12},
    bandwidth=3.35e12,
    source="NVIDIA H100 Tensor Core GPU datasheet (SXM5): 1,979 TFLOP/s bf16 with sparsity, 990 dense; 3.35 TB/s HBM3",
    memory_bytes=80e9,
)
