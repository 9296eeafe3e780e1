"""Warm up, then the median of several timed samples, keeping the spread."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import BadInput
from ..model.guards import NOISY_SPREAD


@dataclass(frozen=True)
class Timing:
    """Seconds per call of each timed sample (each sample averages ``number`` calls)."""

    per_call: tuple[float, ...]
    number: int
    single_call: float

    @property
    def median(self) -> float:
        return statistics.median(self.per_call)

    @property
    def best(self) -> float:
        return min(self.per_call)

    @property
    def spread(self) -> float:
        """Slowest sample ÷ fastest sample (1.0 means perfectly steady)."""
        return max(self.per_call) / min(self.per_call)

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD


def time_calls(
    fn: Callable[[], object],
    repeats: int = 7,
    warmup: int = 2,
    min_sample_s: float = 0.005,
    sync: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    min_total_s: float = 0.0,
    max_repeats: int = 50,
) -> Timing:
    """Time ``fn`` after ``warmup`` calls: ``repeats`` samples of ``number`` back-to-back calls.

    ``number`` is chosen from the last warm-up call so a sample lasts at least ``min_sample_s``,
    which amortises timer and call overhead on fast kernels; more samples are taken (up to
    ``max_repeats``) until they add up to ``min_total_s``, so a median of fast samples is not
    decided by a few milliseconds of a noisy machine. ``sync`` (a device synchronize) runs
    before each clock read when given. ``single_call`` is one call timed on its own.
    """
    if repeats < 1 or warmup < 0:
        raise BadInput(f"repeats must be ≥ 1 and warmup ≥ 0, got {repeats} and {warmup}")
    sync = sync or (lambda: None)
    for _ in range(max(warmup - 1, 0)):
        fn()
    sync()
    t0 = clock()
    fn()
    sync()
    single = clock() - t0
    if not math.isfinite(single) or single < 0:
        raise BadInput(f"the clock went backwards or broke: {single!r} s")
    number = max(1, math.ceil(min_sample_s / single)) if single > 0 else 1000
    if min_total_s > 0 and single > 0:
        repeats = max(repeats, min(max_repeats, math.ceil(min_total_s / (number * single))))
    samples = []
    for _ in range(repeats):
        sync()
        t0 = clock()
        for _ in range(number):
            fn()
        sync()
        samples.append((clock() - t0) / number)
    if min(samples) <= 0:
        raise BadInput("timed samples of zero length: the clock is too coarse for this kernel")
    return Timing(per_call=tuple(samples), number=number, single_call=single)
