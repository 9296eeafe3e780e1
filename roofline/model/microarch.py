"""The physical limits of the cores this project has met, per microarchitecture: pure data, no clock.

A roof is set beside the most its cores can do at a clock (:func:`limits`): FLOPs from the FMA units, L1
bytes from the load ports. Each figure's source is named beside it. Zen 4 executes a 512-bit op as two
256-bit halves on its two 256-bit FMA pipes, so its FLOPs per cycle are Zen 3's. The clock is the caller's
(:func:`clock_of`: the TSC, else the model name's nominal clock; a turbo clock exceeds both, so a share above 1
is a core above its nominal clock). Which core a CPU has comes from its family and model numbers
(:func:`core_of`), which a VM never hides where it hides the model name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

#: Sources, cited once. Zen 3 and Zen 4 execute three memory operations a cycle, at most two of them loads of
#: 256-bit vectors (AMD's guides below, §2.12; Agner Fog's microarchitecture manual on Zen 3: "three memory
#: operations per clock cycle"; a Ryzen 9 5900X measured three reads a cycle, two with 256-bit vmovdqu; Zen 4
#: keeps two 256-bit loads a cycle and splits a 512-bit load in two): 64 B/cycle of L1 loads at 256 or 512 bits.
AMD_19H = (
    "AMD Software Optimization Guide for AMD Family 19h Processors (pub. 56665), §2.11.1 FP pipes, §2.12 LS unit: "
    "two 256-bit FMA pipes, two 256-bit loads a cycle"
)
AMD_ZEN4 = (
    "AMD Software Optimization Guide for the AMD Zen4 Microarchitecture (pub. 57647), §2.11.1, §2.12: a 512-bit op "
    "as two 256-bit halves, two 256-bit loads a cycle"
)
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

#: By the core names of :func:`core_of`; a core not here prints no limit.
MICROARCH = {
    "zen3": ZEN3,
    "zen4": ZEN4,
    "sapphire-rapids": GOLDEN_COVE_SERVER,
    "emerald-rapids": GOLDEN_COVE_SERVER,
}


#: AMD families 0x17-0x1A: (family, first model, last model) → the core the model name of a VM omits
#: (AMD's revision guides; 23/1 is Naples, 25/1 Milan, 25/17 Genoa).
AMD_CORES = (
    (23, 0x08, 0x08, "zen+"),
    (23, 0x18, 0x18, "zen+"),
    (23, 0x00, 0x2F, "zen1"),
    (23, 0x30, 0xFF, "zen2"),
    (25, 0x10, 0x1F, "zen4"),
    (25, 0x60, 0x7F, "zen4"),
    (25, 0xA0, 0xAF, "zen4c"),
    (25, 0x00, 0xFF, "zen3"),
    (26, 0x00, 0xFF, "zen5"),
)
#: Intel family 6 server cores: model → the core a VM's model name ('Intel(R) Xeon(R) Processor') omits (Intel's
#: DisplayFamily_DisplayModel table, SDM vol. 4 table 2-1, and Linux's arch/x86/include/asm/intel-family.h:
#: 0x55 SKYLAKE_X, 0x6A ICELAKE_X, 0x8F SAPPHIRERAPIDS_X, 0xCF EMERALDRAPIDS_X, 0xAD GRANITERAPIDS_X).
INTEL_SERVER_CORES = {85: "skylake-sp", 106: "ice-lake-sp", 143: "sapphire-rapids", 207: "emerald-rapids",
                      173: "granite-rapids"}  # fmt: skip
#: Model 85 is three cores; the flag each added tells them apart, as GCC's and LLVM's ``-march=native`` do
#: (libgcc's cpuinfo.h, LLVM's Host.cpp): avx512_bf16 Cooper Lake, else avx512_vnni Cascade Lake, else Skylake-SP.
#: (Steppings alone do not: Cascade Lake is 5-7, Cooper Lake 10-11.)
MODEL_85_BY_FLAG = (("avx512_bf16", "cooper-lake"), ("avx512_vnni", "cascade-lake"))


def amd_core(signature: Mapping[str, object]) -> str | None:
    """The Zen generation of an AMD CPU from its family and model numbers; None for others."""
    if signature.get("vendor") != "AuthenticAMD":
        return None
    family, model = signature.get("cpu family"), signature.get("model")
    for fam, first, last, core in AMD_CORES:
        if family == fam and isinstance(model, int) and first <= model <= last:
            return core
    return None


def intel_core(signature: Mapping[str, object], flags: frozenset[str] = frozenset()) -> str | None:
    """The Xeon server core of an Intel CPU from its family and model numbers (and, for model 85, its
    flags); None for others."""
    if signature.get("vendor") != "GenuineIntel" or signature.get("cpu family") != 6:
        return None
    core = INTEL_SERVER_CORES.get(signature.get("model"))  # type: ignore[arg-type]
    if core == "skylake-sp":
        core = next((name for flag, name in MODEL_85_BY_FLAG if flag in flags), core)
    return core


def core_of(signature: Mapping[str, object], flags: frozenset[str] = frozenset()) -> str | None:
    """The core of a CPU (:func:`amd_core`, :func:`intel_core`) from its signature; None where not known."""
    return amd_core(signature) or intel_core(signature, flags)


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


#: Where a clock came from, as the report and the machine key name it.
TSC, NOMINAL = "TSC", "nominal"
_NOMINAL = re.compile(r"^model name\s*:.*@\s*([0-9.]+)\s*GHz", re.MULTILINE | re.IGNORECASE)
_CLOCK_KEY = re.compile(rf"^([0-9.]+) GHz \(({TSC}|{NOMINAL})\)$")


@dataclass(frozen=True)
class Clock:
    """The clock a core's limits are set at: its GHz and where they came from (:data:`TSC` or :data:`NOMINAL`)."""

    ghz: float
    source: str

    @property
    def key(self) -> str:
        """As the machine file records it: '2.10 GHz (TSC)'."""
        return f"{self.ghz:.2f} GHz ({self.source})"

    @classmethod
    def parse(cls, text: object) -> Clock | None:
        """A :attr:`key` back; None for anything else (an old machine file has no such key)."""
        m = _CLOCK_KEY.match(str(text or "").strip())
        return cls(float(m.group(1)), m.group(2)) if m and float(m.group(1)) > 0 else None


def clock_of(cpuinfo: str) -> Clock | None:
    """The clock in /proc/cpuinfo's text: the TSC's (:func:`tsc_ghz`), else the model name's nominal '@ 2.10GHz';
    None where it says neither (the Xeon and EPYC VMs' model names give no clock; their TSCs do)."""
    if (ghz := tsc_ghz(cpuinfo)) is not None:
        return Clock(ghz, TSC)
    m = _NOMINAL.search(cpuinfo)
    return Clock(float(m.group(1)), NOMINAL) if m and float(m.group(1)) > 0 else None
