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
from ..measure import contention
from ..measure.sweep import SWEEP_BATCHES, SWEEP_N
from ..model.dtypes import SUITE
from ..model.hardware import Hardware
from . import params
from . import run as run_
from .harness import overhead_seconds
from .machine_file import cpu_facts
from .run import RoofAsk, RunState, measure_run

#: The --hardware value that means "the ceilings measured on this machine".
LOCAL = "local"


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


def is_local(name: str) -> bool:
    """Whether a --hardware value asks for this machine measured now (:data:`LOCAL`, any case)."""
    return name.strip().lower() == LOCAL


def watch_note(watch) -> list[str]:
    """What a measurement under :func:`~roofline.measure.contention.watched` says of itself: the threads it
    left to others, and whether it was contended (then its figures are not this machine's)."""
    reasons = watch.conditions.reasons() if watch.conditions is not None else []
    if reasons:
        return [f"measured under contention: {'; '.join(reasons)}: these roofs are not this machine's"]
    if watch.threads < watch.cores:
        return [f"the BLAS ran on {watch.threads} of {watch.cores} threads, the cores others left"]
    return []


def local_hardware(notes: list[str]) -> Hardware:
    """This machine's roofs now (:func:`~roofline.suite.run.measure_roofs`: the DRAM roof, numpy's GEMMs) with its
    RAM as memory, under the contention watch; what the watch says of the run goes to ``notes``."""
    with contention.watched() as watch:
        hw = run_.measure_roofs(RoofAsk(gemm_n=params.gemm_n())).require()
    notes += watch_note(watch)
    return hw
