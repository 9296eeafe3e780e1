"""Every roof of this machine in one call: bandwidth per memory level and compute per dtype.

:func:`measure_hierarchy` measures them at one moment (the quiet checks' tool; a run, asv's or the
live report's, measures them in its rounds, :mod:`roofline.suite.run`): it sweeps the working set
(:mod:`roofline.measure.levels`) and measures each dtype's compute roof
(:mod:`roofline.measure.compute`), reusing GEMM peaks already measured for fp32 and fp64.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from ..errors import BackendUnavailable
from ..host import cache_topology, cpu_count
from ..model.hierarchy import DRAM, ComputeRoof, Hierarchy
from . import compute, levels, likwid
from .ceilings import GemmPeak


def measure_hierarchy(
    peaks: Mapping[str, GemmPeak] | None = None,
    dtypes: tuple[str, ...] = compute.COMPUTE_DTYPES,
    sweep: dict[str, object] | None = None,
    compute_kwargs: dict[str, object] | None = None,
) -> tuple[Hierarchy, list[str]]:
    """The roofs of this machine, and warnings for what could not be measured (numba absent, say).

    ``peaks``: numpy GEMM peaks by numpy dtype name, used for fp32 and fp64 instead of measuring again;
    ``sweep``: keyword arguments for :func:`roofline.measure.levels.cache_sweep`;
    ``compute_kwargs``: for :func:`roofline.measure.compute.compute_roof` (n, runs).
    """
    warnings: list[str] = []
    try:
        s = levels.cache_sweep(**(sweep or {}))
        level_roofs, read_write, caches = s.roofs, s.plateau_roofs("update"), s.capacities
    except BackendUnavailable as exc:
        level_roofs, read_write, caches = (), (), tuple(levels.capacities(cache_topology()))
        warnings.append(f"no bandwidth roof per cache level: {exc}")
    given = {compute.from_gemm(p).dtype: compute.from_gemm(p) for p in (peaks or {}).values()}
    roofs, skipped = compute.compute_roofs(tuple(d for d in dtypes if d not in given), **(compute_kwargs or {}))
    ordered = sorted([*given.values(), *roofs], key=lambda c: dtypes.index(c.dtype) if c.dtype in dtypes else 99)
    return Hierarchy(level_roofs, tuple(ordered), caches, read_write, skipped), warnings


@dataclass(frozen=True)
class Agreement:
    """One roof beside an independent referee's figure measured alternately with it in the same run."""

    roof: str
    suite: float
    referee: float
    unit: str
    referee_kernel: str
    referee_bytes: int | None = None

    @property
    def ratio(self) -> float:
        """The suite's figure over the referee's."""
        return self.suite / self.referee

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "ratio": self.ratio}


def refereed_sweep(
    kernel: str = levels.ROOF_KERNEL, seconds: float = 0.25, also: tuple[str, ...] = (), **sweep_kwargs
) -> tuple[levels.CacheSweep, tuple[Agreement, ...]]:
    """The working-set sweep with likwid-bench's ``kernel`` run at one working set inside each level
    after every round of the sweep, so both see the same machine; each level's roof beside the median
    of likwid-bench's figures (each run lasts about ``seconds``). ``also``: further kernels swept, not
    refereed. BackendUnavailable where numba or likwid-bench cannot run."""
    caches = sweep_kwargs.pop("caches", None)
    caches = tuple(caches if caches is not None else cache_topology())
    threads = sweep_kwargs.pop("threads", None) or cpu_count()
    sizes = sorted(sweep_kwargs.pop("sizes", None) or levels.sweep_sizes(levels.capacities(caches)))
    where = likwid.referee_sizes(levels.capacities(caches), DRAM)
    likwid.available(threads)
    figures: dict[str, list[likwid.LikwidResult]] = {}
    expected: dict[str, float] = {}

    def after_size(_round: int, size: int) -> None:
        if size != sizes[-1]:
            return
        for level, result in likwid.referee_levels(where, threads, expected, kernel, seconds).items():
            figures.setdefault(level, []).append(result)
            expected[level] = result.rate

    s = levels.cache_sweep(
        sizes, kernel_names=(kernel, *also), threads=threads, caches=caches, after_size=after_size, **sweep_kwargs
    )
    out = []
    for roof in s.plateau_roofs(kernel):
        runs = figures.get(roof.level, [])
        if runs:
            rate = statistics.median(r.rate for r in runs)
            out.append(Agreement(roof.level, roof.gbps, rate, "GB/s", runs[0].kernel, runs[0].bytes))
    return s, tuple(out)


def refereed_peaks(roofs: Sequence[ComputeRoof], threads: int | None = None) -> tuple[Agreement, ...]:
    """Each fp64/fp32 compute roof beside likwid-bench's FMA peak (``peakflops``: register-resident,
    so a GEMM reaches some 70–95 % of it; likwid-bench calibrates each run to ≥ 1 s). BackendUnavailable
    where likwid-bench cannot run."""
    threads = threads or cpu_count()
    likwid.available(threads)
    out = []
    for roof in roofs:
        if roof.dtype not in ("fp64", "fp32"):
            continue
        name = likwid.kernel_for(roof.dtype)
        size = 32 * 1024 * threads  # in L1: the kernel computes on registers, the data only feeds them
        r = likwid.likwid_bench(name, size, threads)
        out.append(Agreement(roof.dtype, roof.gflops, r.rate, "GFLOP/s", r.kernel, None))
    return tuple(out)
