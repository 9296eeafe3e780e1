"""The physical limits of the cores this project has met, per microarchitecture: pure data, no clock.

A roof is set beside the most its cores can do at a clock (:func:`limits`): FLOPs from the FMA units, L1
bytes from the load ports. Each figure's source is named beside it. Zen 4 executes a 512-bit op as two
256-bit halves on its two 256-bit FMA pipes, so its FLOPs per cycle are Zen 3's. The clock is the caller's
(:func:`tsc_ghz`: the TSC, which a turbo clock exceeds, so a share above 1 is a core above its nominal clock).
"""

from __future__ import annotations

from dataclasses import dataclass

#: Sources, cited once.
AMD_19H = "AMD Software Optimization Guide for AMD Family 19h Processors (pub. 56665), §2.11.1 FP pipes, §2.12 LS unit"
AMD_ZEN4 = "AMD Software Optimization Guide for the AMD Zen4 Microarchitecture (pub. 57647), §2.11.1, §2.12"
INTEL_ORM = (
    "Intel 64 and IA-32 Architectures Optimization Reference Manual (248966), Golden Cove: FMA on ports 0 and 5 at "
    "512 bits on Xeon, loads on ports 2, 3, 11: three 256-bit or two 512-bit a cycle"
)


@dataclass(frozen=True)
class Microarch:
    """One core's limits: its FMA units and the bits each computes a cycle, and its L1 load bytes a cycle."""

    name: str
    fma_units: int
    fma_bits: int
    load_bytes_per_cycle: int
    source: str

    def flops_per_cycle(self, dtype_bytes: int) -> float:
        """FLOPs a cycle of one core in a dtype of ``dtype_bytes`` (an FMA is two)."""
        return 2.0 * self.fma_units * self.fma_bits / (8 * dtype_bytes)


ZEN3 = Microarch("Zen 3", 2, 256, 64, AMD_19H)
ZEN4 = Microarch("Zen 4", 2, 256, 64, AMD_ZEN4)
GOLDEN_COVE_SERVER = Microarch("Golden Cove / Raptor Cove (Xeon)", 2, 512, 128, INTEL_ORM)

#: By the core names of :mod:`roofline.suite.gallery` (``amd_core``, ``intel_core``); a core not here prints no limit.
MICROARCH = {
    "zen3": ZEN3,
    "zen4": ZEN4,
    "sapphire-rapids": GOLDEN_COVE_SERVER,
    "emerald-rapids": GOLDEN_COVE_SERVER,
}


def limits(core: str | None, cores: int, ghz: float) -> dict[str, float]:
    """The cores' limits at ``ghz``: {"L1": GB/s of loads, "fp32", "fp64": GFLOP/s}; {} for a core not known."""
    m = MICROARCH.get(core or "")
    if m is None or cores <= 0 or not ghz > 0:
        return {}
    return {
        "L1": m.load_bytes_per_cycle * cores * ghz,
        "fp32": m.flops_per_cycle(4) * cores * ghz,
        "fp64": m.flops_per_cycle(8) * cores * ghz,
    }


def tsc_ghz(cpuinfo: str) -> float | None:
    """The TSC's rate from /proc/cpuinfo's text: ``bogomips`` ÷ 2 where the TSC is constant (Linux calibrates its
    delay loop on the TSC: the Xeon VM's 4200.00 is its 2.1 GHz); None where the text does not say."""
    flags, bogomips = set(), None
    for line in cpuinfo.splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "flags" and not flags:
            flags = set(value.split())
        elif key.lower() == "bogomips" and bogomips is None:
            try:
                bogomips = float(value)
            except ValueError:
                return None
    return bogomips / 2000 if bogomips and "constant_tsc" in flags else None
