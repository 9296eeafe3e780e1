"""The hierarchical roofline: a bandwidth roof per memory level, a compute roof per dtype, and the roof
each measured point lives under.

A point is held to the bandwidth roof of the innermost level its working set fits in (a 4 MiB matrix
in an 8 MiB L3 is read at L3 speed, not DRAM's) and to the compute roof of its dtype:
attainable = min(compute roof, intensity × level bandwidth). A point above :data:`MEASUREMENT_ERROR`
× its own roof measured something other than what it claims.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from .plateaus import Plateau, level_of

#: A point above this multiple of its own roof is a measurement error, flagged, never printed silently.
MEASUREMENT_ERROR = 1.10

#: The level beyond the caches.
DRAM = "DRAM"

#: Whatever must come from DRAM (a decode pool, each STREAM array) holds at least this many times
#: the aggregate last-level cache of the CPUs in use (STREAM's rule: each array ≥ 4× the caches).
POOL_LLC_MULTIPLE = 4

#: The kernel whose median is the DRAM bandwidth roof. A decode step reads its weights and writes
#: next to nothing, so its roof is a read: ``read`` (s = b·c, BLAS dot) reads two arrays and writes
#: none. STREAM's add (a = b + c) also writes one, and each written line is first read into the cache
#: (write-allocate) but not counted, so a GEMV read its weights faster than add's figure said (roof
#: fractions of 1.04–1.05 in 3 of 5 quiet runs). numpy cannot fuse a triad: it needs two passes per
#: block, which measures numpy rather than memory; add matches a native triad (tools/stream_triad.c).
CEILING_KERNEL = "read"

#: The roof in results recorded before ``read`` was measured: add was the roof until then.
EARLIER_CEILING_KERNEL = "add"


def roof_kernel(kinds: Iterable[str]) -> str | None:
    """The kernel among recorded ``kinds`` whose figure is the bandwidth roof: :data:`CEILING_KERNEL`,
    or :data:`EARLIER_CEILING_KERNEL` in results from before it was measured; None without either."""
    present = set(kinds)
    return next((k for k in (CEILING_KERNEL, EARLIER_CEILING_KERNEL) if k in present), None)


#: A roof below this share of its referee's figure is likely too low: its own kernel measured something slower
#: than the level or the cores. The Xeon's L1 roof read 0.37-0.43 of likwid-bench's while numba compiled its
#: kernel at 256 bits; the levels on Zen 3 and Zen 4 agreed within about 1 %.
LIKELY_TOO_LOW = 0.7


@dataclass(frozen=True)
class Refereed:
    """One roof beside its referee in the same run: the run's own kernel's figure and the referee's (GB/s or
    GFLOP/s). The roof is the faster of the two (:attr:`figure`), named by :attr:`kernel`: a roof is the
    fastest honest kernel in the run, and a point above a roof its referee beats is the roof's error."""

    roof: str
    own: float
    own_kernel: str
    referee: float
    referee_kernel: str

    @property
    def ratio(self) -> float:
        """The own kernel's figure ÷ the referee's."""
        return self.own / self.referee

    @property
    def figure(self) -> float:
        return max(self.own, self.referee)

    @property
    def kernel(self) -> str:
        if self.own >= self.referee:
            return self.own_kernel
        return f"{self.referee_kernel} (the referee; {self.own_kernel}: {self.ratio:.2f}× it)"

    @property
    def too_low(self) -> bool:
        """The own kernel read below :data:`LIKELY_TOO_LOW` × the referee."""
        return self.ratio < LIKELY_TOO_LOW


def refereed_levels(levels: tuple[LevelRoof, ...], referees: Mapping[str, float], kernel: str) -> tuple[LevelRoof, ...]:
    """``levels`` with each roof its referee (``referees``: GB/s by level, of ``kernel``) beats replaced by the
    referee's figure, named (:class:`Refereed`); the plateau stays, the sweep's extent of the level."""
    out = []
    for r in levels:
        ref = referees.get(r.level)
        if ref and ref > r.gbps:
            r = LevelRoof(r.level, r.bytes, ref, Refereed(r.level, r.gbps, r.kernel, ref, kernel).kernel, r.plateau)
        out.append(r)
    return tuple(out)


@dataclass(frozen=True)
class LevelRoof:
    """A bandwidth roof: the level, its capacity (aggregate bytes; RAM for DRAM; None if unknown), GB/s,
    the kernel that measured it and, from a sweep, its plateau."""

    level: str
    bytes: int | None
    gbps: float
    kernel: str
    plateau: Plateau | None = None

    def as_dict(self) -> dict[str, object]:
        row: dict[str, object] = {"level": self.level, "bytes": self.bytes, "gbps": self.gbps, "kernel": self.kernel}
        if (p := self.plateau) is not None:
            row.update(
                low_gbps=p.low_gbps,
                high_gbps=p.high_gbps,
                plateau_bytes=[p.first_bytes, p.last_bytes],
                ends_bytes=p.ends_bytes,
            )
        return row


@dataclass(frozen=True)
class ComputeRoof:
    """A compute roof: dtype, GFLOP/s (GOP/s for int8), the library that reached it, and its interval."""

    dtype: str
    gflops: float
    library: str
    low_gflops: float | None = None
    high_gflops: float | None = None
    n: int | None = None
    runs: int | None = None

    def as_dict(self) -> dict[str, object]:
        return {k: v for k, v in vars(self).items() if v is not None}


@dataclass(frozen=True)
class OwnRoof:
    """The roof one point lives under: its level's bandwidth and its dtype's compute roof, and the point's share."""

    level: str
    gbps: float | None
    compute_gflops: float | None
    attainable_gflops: float | None
    fraction: float | None
    bound: str | None

    @property
    def error(self) -> bool:
        """Above :data:`MEASUREMENT_ERROR` × its own roof: a measurement error."""
        return self.fraction is not None and self.fraction > MEASUREMENT_ERROR

    @property
    def binding(self) -> str:
        """The roof measurement that binds the point: the one that read too low where it passes it."""
        return f"{self.level} bandwidth roof" if self.bound == "bandwidth" else "compute roof"


@dataclass(frozen=True)
class Hierarchy:
    """Every measured roof of one machine: bandwidth per level (innermost first) and compute per dtype.

    ``caches``: (level, aggregate bytes) innermost first, which a point's working set is held to
    (known even where a level's roof was not measured); ``read_write``: the read-write kernel's
    plateaus, shown beside the roofs; ``skipped``: dtype → why its compute roof was not measured here.
    """

    levels: tuple[LevelRoof, ...] = ()
    compute: tuple[ComputeRoof, ...] = ()
    caches: tuple[tuple[str, int], ...] = ()
    read_write: tuple[LevelRoof, ...] = ()
    skipped: Mapping[str, str] = field(default_factory=dict)

    def level(self, name: str) -> LevelRoof | None:
        return next((r for r in self.levels if r.level == name), None)

    def compute_roof(self, dtype: str) -> ComputeRoof | None:
        return next((c for c in self.compute if c.dtype == dtype), None)

    def level_of(self, working_bytes: float | None) -> str:
        """The innermost level holding ``working_bytes``; DRAM when it is unknown or larger than every cache."""
        if working_bytes is None:
            return DRAM
        caches = self.caches or tuple((r.level, r.bytes) for r in self.levels if r.level != DRAM)
        return level_of(working_bytes, caches, DRAM)

    def own_roof(self, working_bytes: float | None, intensity: float, dtype: str, gflops: float | None) -> OwnRoof:
        """The roof a point (working set, FLOP/byte, dtype, achieved GFLOP/s) lives under, and its share of it."""
        name = self.level_of(working_bytes)
        level, compute = self.level(name), self.compute_roof(dtype)
        gbps = level.gbps if level else None
        peak = compute.gflops if compute else None
        if gbps is None or peak is None:  # one roof alone may not be the lower one: no share given
            return OwnRoof(name, gbps, peak, None, None, None)
        memory = intensity * gbps
        attainable = min(memory, peak)
        fraction = gflops / attainable if gflops else None
        return OwnRoof(name, gbps, peak, attainable, fraction, "bandwidth" if memory < peak else "compute")
