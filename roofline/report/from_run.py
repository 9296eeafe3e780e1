"""The roofline report of one run's measurement (:class:`~roofline.suite.run.RunState`): the live
``roofline report`` measures with the orchestrator asv's ``setup_cache`` calls
(:func:`roofline.suite.live.measure_live`), then renders its state here; nothing here measures.

What asv records of a run and what this report shows are then the same figures: the ceilings of the
same rounds, the points judged against them, the same referees and the same contention watch.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model.dtypes import DTYPES
from ..model.hierarchy import DRAM, Hierarchy
from ..suite.run import RunState
from .cpu import Point, Report, Roofs, build_report


def roofs_of(state: RunState) -> Roofs | None:
    """The run's ceilings (GB/s and GFLOP/s as asv records them) in the report's units, its referees beside."""
    if not state.ceilings.ok:
        return None
    c = state.ceilings.value
    referees: Mapping[str, float] = state.referees.value if state.referees.ok else {}
    return Roofs(
        bandwidth={k: v * 1e9 for k, v in c.bandwidth_gbps.items()},
        peaks={d: v * 1e9 for d, v in c.peak_gflops.items()},
        spreads=dict(c.spreads),
        referee=referees[DRAM] * 1e9 if referees.get(DRAM) else None,
        peak_referees={DTYPES[d].numpy: v * 1e9 for d, v in referees.items() if d in DTYPES},
        level_referees={k: v * 1e9 for k, v in referees.items() if k not in DTYPES},
        peak_kernels=dict(c.peak_kernels),
    )


def hierarchy_of(state: RunState) -> Hierarchy:
    """Each memory level's roof of the run's level sweep and each torch dtype's compute roof (or why not)."""
    levels = tuple(state.levels.value.values()) if state.levels.ok else ()
    roofs = state.compute.value if state.compute.ok else {}
    compute = tuple(r.value for r in roofs.values() if r.ok)
    skipped = {d: r.reason for d, r in roofs.items() if not r.ok}
    caches = tuple((r.level, r.bytes) for r in levels if r.level != DRAM and r.bytes)
    return Hierarchy(levels, compute, caches, skipped=skipped)


def _not_measured(state: RunState) -> list[str]:
    """A line for each part of the run that measured nothing, and why (the points say theirs per point)."""
    parts = {"ceilings": state.ceilings, "crossover sweep": state.crossover, "level sweep": state.levels}
    parts |= {"compute roofs": state.compute, "referees": state.referees}
    return [f"no {name} in this run: {o.reason}" for name, o in parts.items() if not o.ok]


def report_from_run(
    state: RunState,
    facts: Mapping[str, object],
    overhead: tuple[float, float] | None = None,
    source: str = "measured live",
) -> Report:
    """The report of ``state``; ``overhead``: a tiny step's (amortized, single-call) seconds where measured."""
    points = {key: p.value.measurement for key, p in state.points.items() if p.ok}
    crossover = state.crossover.value if state.crossover.ok else None
    return build_report(
        facts,
        roofs_of(state),
        decode=tuple(Point.of(m) for (regime, _, _), m in sorted(points.items()) if regime == "dram"),
        cache_resident=tuple(Point.of(m) for (regime, _, _), m in sorted(points.items()) if regime == "cache"),
        sweep_n=state.sweep_n,
        sweep=tuple(Point.of(m) for m in crossover.points) if crossover else (),
        knee=crossover.knee if crossover else None,
        recorded_crossover=crossover.batch if crossover else None,
        overhead_seconds=overhead[0] if overhead else None,
        overhead_single_seconds=overhead[1] if overhead else None,
        source=source,
        warnings=(*state.warnings, *_not_measured(state)),
        hierarchy=hierarchy_of(state),
        conditions=state.conditions,
    )
