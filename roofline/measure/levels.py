"""Bandwidth per memory level: a working-set sweep on all cores and its plateaus (the hierarchical roofline).

The working set (all threads together) runs from a fraction of the aggregate L1 to
:data:`TOP_MULTIPLE` × the aggregate LLC (≥ 4×, so the last points come from DRAM), at
:data:`PER_OCTAVE` sizes per doubling. One thread per core, each pinned to its own core and
first-touching its own buffer, runs a compiled kernel (:mod:`roofline.measure.kernels`) that loops
``reps`` passes internally, so one call lasts ≥ ``min_sample_s`` whatever the level. Sizes and
kernels are timed in rounds (every size once per round), so a neighbour that comes and goes slows
all sizes alike rather than one level; each size's figure is the median over rounds, with its
confidence interval. Every kernel is validated against a float64 reference before timing and
every ``load`` call's result is checked.

The roofs are the plateaus of the read-only ``load`` kernel (:func:`roofline.model.plateaus.find_plateaus`):
a decode step's weights are read, never written. DRAM's is read where the decode pools are: at working
sets of ≥ 4× the aggregate LLC (:func:`~roofline.measure.pools.escape_bytes`), not from the sets just
past the LLC that it still partly serves. The read-write ``update`` plateaus are shown beside them.
"""

from __future__ import annotations

import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..errors import BadInput, KernelMismatch
from ..host import CacheLevel, cache_topology, cpu_count, llc_bytes, total_memory_bytes
from ..model.hierarchy import DRAM as OUTER
from ..model.hierarchy import LevelRoof
from ..model.intervals import median_ci
from ..model.plateaus import Plateau, find_plateaus
from .kernels import BYTES_PER_ELEMENT, PARTS, kernels, library
from .pools import check_fits, escape_bytes

#: Sizes per doubling of the working set.
PER_OCTAVE = 2
#: The sweep starts at this fraction of the aggregate L1 ...
BOTTOM_FRACTION = 1 / 8
#: ... and ends at this multiple of the aggregate LLC (≥ 4×: STREAM's rule, and room for a DRAM plateau).
TOP_MULTIPLE = 8
#: Rounds over all sizes; each size's figure is the median of its rounds.
ROUNDS = 5
#: The roof's kernel: read-only, like a decode step's weights.
ROOF_KERNEL = "load"
#: A timed call lasts at least this long: several scheduler slices, so a sample under a neighbour
#: measures the share of the cores it got (as a referee's long run does), not a lucky gap between slices.
MIN_SAMPLE_S = 0.03
#: Bytes in a cache line: every thread's buffer starts on one.
LINE = 64
#: A thread's share is a whole number of these elements (16 lines of float64), so each quarter that the
#: ``load`` kernel sums side by side starts on a line (a vector load that straddles two lines costs two, and
#: at L1 that shows) and is a whole number of its unrolled loop's bodies (4 lines: four 512-bit vectors),
#: with no scalar tail.
ALIGN = PARTS * 4 * LINE // 8


@dataclass(frozen=True)
class SweepPoint:
    """One working set (bytes, all threads) under one kernel: median GB/s over rounds, its interval."""

    kernel: str
    bytes: int
    gbps: float
    low_gbps: float
    high_gbps: float
    rounds: int
    reps: int


@dataclass(frozen=True)
class CacheSweep:
    """A working-set sweep, its plateaus per kernel and the roofs (the :data:`ROOF_KERNEL` plateaus)."""

    points: tuple[SweepPoint, ...]
    plateaus: tuple[Plateau, ...]
    caches: tuple[CacheLevel, ...]
    threads: int
    library: str

    def plateau_roofs(self, kernel: str = ROOF_KERNEL) -> tuple[LevelRoof, ...]:
        """One roof per level from ``kernel``'s plateaus; a cache's capacity is its aggregate size, DRAM's the RAM."""
        ram = total_memory_bytes()
        return tuple(
            LevelRoof(p.level, p.capacity_bytes or ram, p.gbps, f"{p.kernel} ({self.library})", p)
            for p in self.plateaus
            if p.kernel == kernel
        )

    @property
    def roofs(self) -> tuple[LevelRoof, ...]:
        """The roofs: the read-only kernel's plateaus."""
        return self.plateau_roofs(ROOF_KERNEL)

    @property
    def capacities(self) -> tuple[tuple[str, int], ...]:
        """(level, aggregate bytes) of the caches swept, innermost first."""
        return tuple(capacities(self.caches))

    def roof(self, level: str) -> LevelRoof | None:
        return next((r for r in self.roofs if r.level == level), None)

    def as_dict(self) -> dict[str, object]:
        return {
            "threads": self.threads,
            "library": self.library,
            "caches": [
                {
                    "level": c.name,
                    "size_bytes": c.size_bytes,
                    "instances": c.instances,
                    "aggregate_bytes": c.aggregate_bytes,
                }
                for c in self.caches
            ],
            "points": [vars(p) for p in self.points],
            "plateaus": [p.as_dict() for p in self.plateaus],
        }


def capacities(caches: Sequence[CacheLevel]) -> list[tuple[str, int]]:
    """(name, aggregate bytes) per cache level, innermost first; ``ROOFLINE_LLC_BYTES`` sets the last."""
    caps = [(c.name, c.aggregate_bytes) for c in sorted(caches, key=lambda c: c.level)]
    llc, source = llc_bytes()
    if caps and source == "ROOFLINE_LLC_BYTES":
        caps[-1] = (caps[-1][0], llc)
    return caps or [("LLC", llc)]


def sweep_sizes(
    caps: Sequence[tuple[str, int]], per_octave: int = PER_OCTAVE, top_multiple: float = TOP_MULTIPLE
) -> list[int]:
    """Working sets from :data:`BOTTOM_FRACTION` of the first level to ``top_multiple`` × the last, geometric."""
    lo = caps[0][1] * BOTTOM_FRACTION
    hi = caps[-1][1] * top_multiple
    steps = math.ceil(per_octave * math.log2(hi / lo))
    return sorted({int(lo * 2 ** (i / per_octave)) for i in range(steps + 1)})


def _random_on_a_line(seed: int, elements: int) -> np.ndarray:
    """``elements`` random float64 whose first element starts a cache line (numpy promises 16 bytes)."""
    raw = np.random.default_rng(seed).random(elements + LINE // 8)
    start = (-raw.ctypes.data % LINE) // raw.itemsize
    return raw[start : start + elements]


def own_buffers(shares: Sequence[int]) -> list[int]:
    """The shares (elements per thread) that get a buffer of their own: the smallest first, while
    together they hold no more than the largest, which every other share reads a prefix of."""
    *rest, largest = sorted(set(shares))
    own, total = [], 0
    for n in rest:
        if total + n > largest:
            break
        own.append(n)
        total += n
    return [*own, largest]


class _Team:
    """One thread per core, each pinned to its core, each owning (and first-touching) its buffers.

    A working set is a buffer of its own (as likwid-bench allocates one per run), not a prefix of the
    largest: on this project's Zen 3 VM an L1-sized prefix of a 128 MiB buffer read 65-145 GB/s on one
    core where a buffer of its own read 130-200, the two alternated in one process. Sets too large to
    have their own within twice the largest buffer's memory read a prefix of the largest.
    """

    def __init__(self, threads: int, shares: Sequence[int]):
        cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(threads))
        counter = itertools.count()
        self._local = threading.local()

        def pin() -> None:
            i = self._local.index = next(counter)
            if hasattr(os, "sched_setaffinity") and len(cpus) >= threads:
                os.sched_setaffinity(0, {cpus[i % len(cpus)]})

        self.threads = threads
        self.pool = ThreadPoolExecutor(max_workers=threads, initializer=pin)
        own = own_buffers(shares)
        # Each thread draws its own random buffers: the pages are written (never zero pages) by the core
        # that reads them.
        self.buffers = {
            n: self._on_every_thread(lambda i, k=k, n=n: _random_on_a_line(i * len(own) + k, n))
            for k, n in enumerate(own)
        }
        self._owner = {n: min(m for m in own if m >= n) for n in shares}

    def _on_every_thread(self, fn: Callable[[int], object]) -> list:
        """``fn(i)`` on thread i of the team, for every i at once; the results in thread order.

        A barrier holds each task until all have started, so no thread runs two (a pool may hand
        both tasks to one thread when the other is slow to wake: one sample at half the rate).
        """
        barrier = threading.Barrier(self.threads)

        def task(_):
            barrier.wait(timeout=60)
            return self._local.index, fn(self._local.index)

        return [r for _, r in sorted(self.pool.map(task, range(self.threads)), key=lambda ir: ir[0])]

    @property
    def largest(self) -> list[np.ndarray]:
        """Each thread's largest buffer."""
        return self.buffers[max(self.buffers)]

    def views(self, n: int) -> list[np.ndarray]:
        """Each thread's working set of ``n`` elements: its own buffer, or a prefix of the largest."""
        return [b[:n] for b in self.buffers[self._owner[n]]]

    def run(self, fn, n: int, reps: int, *args) -> tuple[float, list[float]]:
        """Wall time from the first thread's start to the last thread's end, and each thread's result.

        Thread i reads its own view i (the one it wrote): its core's caches hold it from call to call."""
        views = self.views(n)

        def one(i: int):
            t0 = time.perf_counter()
            r = fn(views[i], reps, *args)
            return t0, time.perf_counter(), r

        out = self._on_every_thread(one)
        return max(t1 for _, t1, _ in out) - min(t0 for t0, _, _ in out), [r for _, _, r in out]

    def close(self) -> None:
        self.pool.shutdown()


def _validate(team: _Team, kernel: str, fns) -> None:
    """Each kernel against float64 numpy on every thread's largest buffer, once, before timing."""
    for i, buf in enumerate(team.largest):
        if kernel == "load":
            got, want = fns["load"](buf, 3), 3 * float(np.sum(buf, dtype=np.float64))
            if not abs(got - want) <= 1e-9 * abs(want):
                raise KernelMismatch(f"the compiled load kernel summed {got!r}, not {want!r}; no bandwidth reported")
        else:
            before = buf.copy()
            fns["update"](buf, 1, -1.0)
            ok = np.array_equal(buf, -before)
            buf[:] = before
            if not ok:
                raise KernelMismatch(f"the compiled update kernel is wrong on thread {i}; no bandwidth reported")


def _calibrate(team: _Team, fn, n: int, args: tuple, min_sample_s: float) -> int:
    """Passes per call that make a call last ``min_sample_s`` (even, so ``update`` leaves its buffer as it was)."""
    reps = 2
    while (elapsed := team.run(fn, n, reps, *args)[0]) < min_sample_s:
        reps *= 2 if elapsed < min_sample_s / 8 else math.ceil(min_sample_s / elapsed * 1.1)
        reps += reps % 2
    return reps


class LevelRounds:
    """A working-set sweep built once (buffers written, kernels compiled and validated) and timed at as
    many moments as :meth:`time` is called; :meth:`result` finds the plateaus of every round's samples
    pooled. A run spreads its rounds over the run as it does the STREAM ceilings' passes, so a slow
    moment of a shared machine moves a round, not a level. :meth:`close` ends the team's threads.

    ``sizes`` default to :func:`sweep_sizes` of this machine's caches (:func:`roofline.host.cache_topology`).
    ``after_size(r, size)`` runs after each working set of each round: a referee measured alternately
    with the sweep, at the same moment as the sweep's own figures for that level.
    BadInput for an unknown kernel or a sample time ≤ 0; BackendUnavailable without numba;
    KernelMismatch if a kernel computes a wrong result.
    """

    def __init__(
        self,
        sizes: Sequence[int] | None = None,
        kernel_names: Sequence[str] = ("load", "update"),
        threads: int | None = None,
        min_sample_s: float = MIN_SAMPLE_S,
        caches: Sequence[CacheLevel] | None = None,
        after_size: Callable[[int, int], object] | None = None,
    ):
        if min_sample_s <= 0:
            raise BadInput(f"a sweep needs a positive sample time, got {min_sample_s}")
        for k in kernel_names:
            if k not in BYTES_PER_ELEMENT:
                raise BadInput(f"unknown bandwidth kernel {k!r} (use {', '.join(BYTES_PER_ELEMENT)})")
        self.caches = tuple(caches if caches is not None else cache_topology())
        self.caps = capacities(self.caches)
        self.sizes = sorted(sizes or sweep_sizes(self.caps))
        self.kernel_names, self.min_sample_s, self.after_size = tuple(kernel_names), min_sample_s, after_size
        self.threads = threads or cpu_count()
        self.shares = {s: max(ALIGN, s // 8 // self.threads // ALIGN * ALIGN) for s in self.sizes}
        check_fits(8 * self.threads * sum(own_buffers(list(self.shares.values()))), "the cache sweep's buffers")
        self.fns = kernels()
        self.team: _Team | None = _Team(self.threads, list(self.shares.values()))
        try:
            for k in self.kernel_names:
                _validate(self.team, k, self.fns)
        except BaseException:
            self.close()
            raise
        self.reps: dict[tuple[int, str], int] = {}
        self.samples: dict[tuple[int, str], list[float]] = {}
        self.rounds = 0

    def time(self, rounds: int = 1) -> None:
        """``rounds`` rounds, each every size once with each kernel (calibrated in the first round)."""
        if self.team is None:
            raise BadInput("this sweep's threads have ended: no round can be timed after close()")
        team, fns = self.team, self.fns
        for _ in range(rounds):
            for s in self.sizes:
                n = self.shares[s]
                for k in self.kernel_names:
                    args = (-1.0,) if k == "update" else ()
                    if (s, k) not in self.reps:
                        self.reps[s, k] = _calibrate(team, fns[k], n, args, self.min_sample_s)
                    reps = self.reps[s, k]
                    elapsed, results = team.run(fns[k], n, reps, *args)
                    if k == "load":
                        want = reps * np.array([np.sum(v) for v in team.views(n)])
                        if not np.allclose(results, want, rtol=1e-6, atol=0):
                            raise KernelMismatch("the compiled load kernel returned a wrong sum while timed")
                    moved = BYTES_PER_ELEMENT[k] * n * self.threads * reps
                    self.samples.setdefault((s, k), []).append(moved / elapsed / 1e9)
                if self.after_size is not None:
                    self.after_size(self.rounds, s)
            self.rounds += 1

    def result(self) -> CacheSweep:
        """Each size's median over every round and the plateaus; BadInput before the first round."""
        if not self.rounds:
            raise BadInput("the cache sweep was never timed: no level to report")
        points = []
        for (s, k), rates in self.samples.items():
            ci, size = median_ci(rates), self.shares[s] * 8 * self.threads
            points.append(SweepPoint(k, size, ci.median, ci.low, ci.high, len(rates), self.reps[s, k]))
        points.sort(key=lambda p: (p.kernel, p.bytes))
        plateaus: list[Plateau] = []
        outer_from = escape_bytes(self.caps[-1][1])
        for k in self.kernel_names:
            pts = [p for p in points if p.kernel == k]
            plateaus += find_plateaus(
                [p.bytes for p in pts], [p.gbps for p in pts], self.caps, k, OUTER, outer_from=outer_from
            )
        return CacheSweep(tuple(points), tuple(plateaus), self.caches, self.threads, library())

    def close(self) -> None:
        """End the team's threads (the buffers go with the object)."""
        if self.team is not None:
            self.team.close()
            self.team = None


def cache_sweep(
    sizes: Sequence[int] | None = None,
    kernel_names: Sequence[str] = ("load", "update"),
    rounds: int = ROUNDS,
    threads: int | None = None,
    min_sample_s: float = MIN_SAMPLE_S,
    caches: Sequence[CacheLevel] | None = None,
    after_size: Callable[[int, int], object] | None = None,
) -> CacheSweep:
    """Sweep the working set on all cores with each kernel at one moment (``rounds`` rounds back to
    back) and find each level's plateau: :class:`LevelRounds` timed once. Its errors likewise."""
    if rounds < 1:
        raise BadInput(f"a sweep needs rounds ≥ 1, got {rounds}")
    sweep = LevelRounds(sizes, kernel_names, threads, min_sample_s, caches, after_size)
    try:
        sweep.time(rounds)
        return sweep.result()
    finally:
        sweep.close()


def level_names(caches: Sequence[CacheLevel] | None = None) -> list[str]:
    """The levels a sweep of this machine reports, innermost first: its caches, then DRAM."""
    return [name for name, _ in capacities(caches if caches is not None else cache_topology())] + [OUTER]
