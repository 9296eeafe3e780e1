"""Warm up, then the median of several timed samples, keeping a robust spread and the samples.

:func:`time_interleaved` times several kernels together, one sample of each in turn, so that they
share whatever the machine did meanwhile: their ratio is steadier than that of kernels timed one
after the other. :func:`time_calls` is the one-kernel case. :func:`settle` waits, before timing one
thread pool, for another pool's idle workers to stop spinning.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import BadInput
from ..host import running_threads
from ..model.guards import NOISY_SPREAD

#: The longest :func:`settle` waits. OpenBLAS's idle workers spin 2**28 TSC cycles after each call
#: (its default THREAD_TIMEOUT): 0.10 s at this VM's 2.6 GHz, 0.27 s at 1 GHz.
SETTLE_LIMIT_S = 0.5
#: What :func:`settle` waits where the OS does not tell a thread's state.
SETTLE_BLIND_S = 0.15


def settle(
    limit_s: float = SETTLE_LIMIT_S,
    running: Callable[[], int | None] = running_threads,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], object] = time.sleep,
) -> float:
    """Wait until no other thread of this process runs (at most ``limit_s``); the seconds waited.

    Call it before timing one thread pool after another pool's work: a BLAS's idle workers spin
    after each call (OpenBLAS's 0.1 s, torch's OpenMP ~0.01 s), and a kernel timed meanwhile shares a
    core with them. On a 2-core VM a torch int8 GEMM timed just after a numpy matmul ran at half its
    rate. Where the OS does not say (``running`` gives None) it waits :data:`SETTLE_BLIND_S`.
    """
    start = clock()
    while (busy := running()) != 0:
        waited = clock() - start
        if busy is None:
            sleep(max(0.0, min(SETTLE_BLIND_S, limit_s) - waited))
            break
        if waited >= limit_s:
            break
        sleep(0.002)
    return clock() - start


def relative_iqr(values: Sequence[float]) -> float:
    """Interquartile range ÷ median (0.0: perfectly steady); 0.0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return (q3 - q1) / statistics.median(values)


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
        """Interquartile range ÷ median of the samples (0.0 means perfectly steady): robust to a stray sample."""
        return relative_iqr(self.per_call)

    @property
    def noisy(self) -> bool:
        return self.spread > NOISY_SPREAD


def time_interleaved(
    fns: Sequence[Callable[[], object]],
    repeats: int = 7,
    warmup: int = 2,
    min_sample_s: float = 0.005,
    sync: Callable[[], object] | None = None,
    clock: Callable[[], float] = time.perf_counter,
    min_total_s: float = 0.0,
    max_repeats: int = 50,
) -> list[Timing]:
    """Time every kernel of ``fns`` after ``warmup`` calls each: samples of ``number`` back-to-back calls.

    ``number`` is chosen per kernel from its last warm-up call so a sample lasts at least
    ``min_sample_s``, which amortises timer and call overhead on fast kernels; each kernel gets
    ``repeats`` samples, more (up to ``max_repeats``) until they add up to ``min_total_s``. With
    several kernels the samples go round-robin, one of each in turn (the order rotated each round),
    and each sample of a short kernel (several calls per sample) follows one untimed call of it,
    which brings its data back into the caches the others used. ``sync`` (a device synchronize)
    runs before each clock read when given.
    """
    if repeats < 1 or warmup < 0 or not fns:
        raise BadInput(f"repeats must be ≥ 1, warmup ≥ 0 and a kernel given, got {repeats}, {warmup}, {len(fns)}")
    sync = sync or (lambda: None)
    numbers, singles, wanted = [], [], []
    for fn in fns:
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
        count = repeats
        if min_total_s > 0 and single > 0:
            count = max(repeats, min(max_repeats, math.ceil(min_total_s / (number * single))))
        numbers.append(number)
        singles.append(single)
        wanted.append(count)
    samples: list[list[float]] = [[] for _ in fns]
    rounds = 0
    while any(len(s) < w for s, w in zip(samples, wanted, strict=True)):
        order = list(range(len(fns)))
        order = order[rounds % len(order) :] + order[: rounds % len(order)]
        for i in order:
            if len(samples[i]) >= wanted[i]:
                continue
            fn, number = fns[i], numbers[i]
            if len(fns) > 1 and number > 1:  # a short kernel: its data back in the caches first
                fn()
            sync()
            t0 = clock()
            for _ in range(number):
                fn()
            sync()
            samples[i].append((clock() - t0) / number)
        rounds += 1
    if any(min(s) <= 0 for s in samples):
        raise BadInput("timed samples of zero length: the clock is too coarse for this kernel")
    return [Timing(tuple(s), n, one) for s, n, one in zip(samples, numbers, singles, strict=True)]


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

    One kernel of :func:`time_interleaved`; ``single_call`` is one call timed on its own.
    """
    return time_interleaved([fn], repeats, warmup, min_sample_s, sync, clock, min_total_s, max_repeats)[0]


def pooled(timings: Sequence[Timing]) -> Timing:
    """The timings of one kernel at several moments as one: every sample, the first one's calls per
    sample and single call (the median and spread then span all the moments)."""
    if not timings:
        raise BadInput("no timing to pool")
    return Timing(tuple(x for t in timings for x in t.per_call), timings[0].number, timings[0].single_call)
