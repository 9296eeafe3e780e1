"""This machine measured live for ``roofline report``: the run asv's ``setup_cache`` makes, then the overhead.

:func:`measure_live` runs :func:`roofline.suite.run.measure_run` (the same passes, ceilings, referees where on,
level sweep and contention watch) at the sizes asked for, then a tiny step's overhead the way asv's overhead
tracks measure it (:func:`roofline.suite.harness.overhead_seconds`), and returns the typed :class:`LiveRun`;
:func:`roofline.report.from_run.report_from_run` renders it. What asv records of a run and what the live report
shows are then the same figures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..host import host_facts
from ..measure.sweep import SWEEP_BATCHES, SWEEP_N
from ..model.dtypes import SUITE
from .harness import overhead_seconds
from .machine_file import cpu_facts
from .run import RunState, measure_run


@dataclass(frozen=True)
class LiveRun:
    """One live measurement of this machine: the run's state, the host's facts, and a tiny numpy step's
    overhead as (amortized, single-call) seconds."""

    state: RunState
    facts: Mapping[str, object]
    overhead: tuple[float, float]


def measure_live(
    sizes: Sequence[int],
    batches: Sequence[int],
    cache_sizes: Sequence[int] = (),
    sweep_n: int = SWEEP_N,
    sweep_batches: Sequence[int] = SWEEP_BATCHES,
    progress: Callable[..., Any] | None = None,
) -> LiveRun:
    """Measure this machine with the run asv's ``setup_cache`` makes at these sizes (the variables' choices
    ``ROOFLINE_N``, ``ROOFLINE_CACHE_N``, ``ROOFLINE_BATCH``, and the crossover sweep at ``sweep_n`` over
    ``sweep_batches``), then the numpy overhead asv's tracks record.

    ``progress``: a bar for the run's turns, made as ``progress(total=...)`` (tqdm's interface); the caller shows it.
    """
    chosen = {"ROOFLINE_N": tuple(sizes), "ROOFLINE_CACHE_N": tuple(cache_sizes), "ROOFLINE_BATCH": tuple(batches)}
    state = measure_run(chosen, chosen=chosen, sweep=(sweep_n, tuple(sweep_batches)), progress=progress)
    single, amortized = overhead_seconds("numpy", SUITE.name)
    return LiveRun(state, {**host_facts(), **cpu_facts()}, (amortized, single))
