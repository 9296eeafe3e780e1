"""Every roof of this machine in one call: bandwidth per memory level and compute per dtype.

:func:`measure_hierarchy` is the entry point a run calls once (the live report, the asv harness):
it sweeps the working set (:mod:`roofline.measure.levels`) and measures each dtype's compute roof
(:mod:`roofline.measure.compute`), reusing GEMM peaks already measured for fp32 and fp64.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import BackendUnavailable
from ..model.hierarchy import Hierarchy
from . import compute, levels
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
        level_roofs, read_write, caches = (), (), tuple(levels.capacities(levels.cache_topology()))
        warnings.append(f"no bandwidth roof per cache level: {exc}")
    given = {compute.from_gemm(p).dtype: compute.from_gemm(p) for p in (peaks or {}).values()}
    roofs, skipped = compute.compute_roofs(tuple(d for d in dtypes if d not in given), **(compute_kwargs or {}))
    ordered = sorted([*given.values(), *roofs], key=lambda c: dtypes.index(c.dtype) if c.dtype in dtypes else 99)
    return Hierarchy(level_roofs, tuple(ordered), caches, read_write, skipped), warnings
