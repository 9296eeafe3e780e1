"""Sampling what the machine gives us: ``/proc/stat`` over a window, and a reference kernel's time.

Judged by :mod:`roofline.model.conditions`. Linux only: elsewhere the CPU figures are None and only
the reference kernel speaks.

- :func:`sample_cpu` sleeps for a window (1.5 s by default) and returns the share of the cores'
  time that other processes and the hypervisor (steal) took, and the other runnable threads on
  average: what ``make bench`` checks before it measures anything.
- :class:`Watch` covers a whole measurement: CPU counters and the reference kernel at its start,
  again at its end, and the measuring process's own CPU time in between, which is not "lost".
- :func:`reference_seconds`: a small cache-resident GEMV through the BLAS on all its threads (the
  kernel a busy neighbour hurts most), median time per call.
- :func:`blas_limit`: the BLAS on fewer threads for a while (threadpoolctl), the suite's answer to a
  machine found busy (:func:`~roofline.model.conditions.blas_threads_for`).
- :func:`watched`: all of it around one measurement: the sample, the threads it leaves, the watch.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import KernelMismatch
from ..host import blas_threads, cpu_count
from ..model.conditions import Conditions, blas_threads_for
from .numpy_step import reference_product, relative_error
from .pools import random_array

PROC_STAT = Path("/proc/stat")

#: The reference kernel: y = W·x with W n×n float32 (1 MiB), in cache, on the BLAS's threads.
REFERENCE_N = 512

#: How long :func:`sample_cpu` watches before measuring, by default.
SAMPLE_S = 1.5


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative jiffies of the cores this process may use: busy (not idle, not iowait), steal, total."""

    busy: int
    steal: int
    total: int
    running: int  # procs_running: runnable threads machine-wide, this one included
    clock: float  # time.monotonic() when read
    cores: int = 1  # the cores summed


def cpu_times(path: Path = PROC_STAT) -> CpuTimes | None:
    """The counters now, summed over the cores in this process's affinity; None without ``/proc/stat``."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    try:
        mine = {f"cpu{i}" for i in os.sched_getaffinity(0)}
    except AttributeError:  # pragma: no cover - not Linux
        mine = None
    busy = steal = total = running = cores = 0
    for line in lines:
        fields = line.split()
        if not fields:
            continue
        if fields[0].startswith("cpu") and fields[0] != "cpu" and (mine is None or fields[0] in mine):
            # user nice system idle iowait irq softirq steal (guest time is inside user already)
            v = [int(x) for x in fields[1:9]] + [0] * (8 - len(fields[1:9]))
            total += sum(v)
            cores += 1
            steal += v[7]
            busy += v[0] + v[1] + v[2] + v[5] + v[6]
        elif fields[0] == "procs_running":
            running = int(fields[1])
    if total == 0:
        return None
    return CpuTimes(busy=busy, steal=steal, total=total, running=running, clock=time.monotonic(), cores=cores)


def lost_shares(before: CpuTimes, after: CpuTimes, own_cpu_s: float = 0.0) -> tuple[float, float]:
    """(share taken by other processes and steal, steal share) of the cores' time between two reads.

    ``own_cpu_s``: CPU seconds the measuring process (and its children) used meanwhile: ours, not
    lost. It counts as a share of the cores' wall time between the reads, not in jiffies: some
    hypervisors tick ``/proc/stat`` faster than ``SC_CLK_TCK`` says.
    """
    total = after.total - before.total
    if total <= 0:
        return 0.0, 0.0
    window = (after.clock - before.clock) * max(1, after.cores)
    own = min(1.0, own_cpu_s / window) if window > 0 else 0.0
    steal = (after.steal - before.steal) / total
    others = max(0.0, (after.busy - before.busy) / total - own)
    return min(1.0, others + steal), min(1.0, steal)


def own_cpu_seconds() -> float:
    """CPU seconds of this process and of the children it has waited for (the likwid-bench runs that
    referee the run's roofs): the suite's own share of the machine, not another's."""
    t = os.times()
    return time.process_time() + t.children_user + t.children_system


def sample_cpu(seconds: float = SAMPLE_S, interval: float = 0.05, path: Path = PROC_STAT) -> Conditions:
    """Watch the cores for ``seconds`` while doing nothing: what others take, and the run queue."""
    own0 = own_cpu_seconds()
    first = cpu_times(path)
    if first is None:
        return Conditions(window_s=seconds)
    queue = []
    end = time.monotonic() + seconds
    last = first
    while time.monotonic() < end:
        time.sleep(interval)
        last = cpu_times(path) or last
        queue.append(max(0, last.running - 1))  # procs_running counts this thread, reading
    lost, steal = lost_shares(first, last, own_cpu_seconds() - own0)
    return Conditions(
        lost_share=lost,
        steal_share=steal,
        run_queue=statistics.mean(queue) if queue else None,
        window_s=last.clock - first.clock,
    )


def reference_kernel(n: int = REFERENCE_N) -> Callable[[], object]:
    """The reference GEMV, validated against float64 once (a wrong BLAS raises here too)."""
    w = random_array((n, n), "float32", seed=101)
    x = random_array((n, 1), "float32", seed=102)
    out = np.full((n, 1), np.nan, dtype=np.float32)  # a GEMV that writes nothing leaves NaN: caught below
    np.matmul(w, x, out=out)
    err = relative_error(out, reference_product(w, x))
    if not err <= 1e-4:
        raise KernelMismatch(
            f"the contention reference GEMV computed wrong values (relative error {err:.3g}): "
            "a wrong BLAS, no figure will be reported"
        )
    return lambda: np.matmul(w, x, out=out)


def reference_seconds(kernel: Callable[[], object] | None = None, seconds: float = 0.3) -> float:
    """Median seconds per call of the reference kernel over ≥ 5 samples of ≥ 5 ms, ``seconds`` in all."""
    kernel = kernel or reference_kernel()
    for _ in range(3):
        kernel()
    t0 = time.perf_counter()
    kernel()
    single = max(time.perf_counter() - t0, 1e-7)
    number = max(1, int(0.005 / single))
    samples = []
    end = time.perf_counter() + seconds
    while len(samples) < 5 or time.perf_counter() < end:
        t0 = time.perf_counter()
        for _ in range(number):
            kernel()
        samples.append((time.perf_counter() - t0) / number)
    return statistics.median(samples)


class Watch:
    """The conditions of a measurement: ``before`` (a quiet-looking sample), then start() … stop().

    ``before``: the :func:`sample_cpu` result taken just before (or None to skip it). stop() returns
    the :class:`~roofline.model.conditions.Conditions` of the whole: the larger lost share of the two
    windows, the reference kernel's drift and, when given, the decode steps' flat timing.
    """

    def __init__(self, before: Conditions | None = None, path: Path = PROC_STAT):
        self.before = before
        self.path = path
        self.kernel = reference_kernel()
        self.start_reference: float | None = None
        self._own0 = 0.0
        self._first: CpuTimes | None = None

    def start(self) -> Watch:
        self.start_reference = reference_seconds(self.kernel)
        self._own0 = own_cpu_seconds()
        self._first = cpu_times(self.path)
        return self

    def stop(self, flat: bool | None = None) -> Conditions:
        last = cpu_times(self.path)
        lost = steal = None
        if self._first is not None and last is not None:
            lost, steal = lost_shares(self._first, last, own_cpu_seconds() - self._own0)
        end_reference = reference_seconds(self.kernel)
        before = self.before or Conditions()
        lost_all = [v for v in (before.lost_share, lost) if v is not None]
        steal_all = [v for v in (before.steal_share, steal) if v is not None]
        window = (last.clock - self._first.clock) if (self._first and last) else None
        return replace(
            before,
            lost_share=max(lost_all) if lost_all else None,
            steal_share=max(steal_all) if steal_all else None,
            reference_drift=end_reference / self.start_reference if self.start_reference else None,
            flat_timing=flat,
            window_s=window,
        )


@contextmanager
def blas_limit(threads: int | None) -> Iterator[None]:
    """Run the block with the BLAS on ``threads`` threads (None: as it is)."""
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        yield


def limit_blas(threads: int | None) -> None:
    """Put the BLAS and the OpenMP pools (torch's intra-op threads) on ``threads`` threads for the rest of this
    process (a ``time_`` twin's process: as many as the measurement it twins had)."""
    if threads is not None:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=threads)


@dataclass
class Watched:
    """What :func:`watched` ran under: the threads the BLAS and OpenMP pools had, of ``cores``; after the
    block, the :class:`~roofline.model.conditions.Conditions` of the whole (None until then)."""

    threads: int
    cores: int
    conditions: Conditions | None = None


@contextmanager
def watched(sample_s: float = SAMPLE_S, flat: Callable[[], bool | None] | None = None) -> Iterator[Watched]:
    """Measure the block as the suite's run does: watch the cores first (:func:`sample_cpu`), put the BLAS and
    OpenMP pools on the cores others leave (:func:`~roofline.model.conditions.blas_threads_for`: on this
    project's 2-core VM beside a busy neighbour, a numpy GEMV on both cores cost a scheduler slice, ~8 ms a
    call at any size, on one core 0.3-1 ms), and :class:`Watch` the whole; ``flat`` (called at the end) says
    whether the block's timings ignored the work."""
    before = sample_cpu(sample_s)
    cores = blas_threads() or cpu_count()
    threads = blas_threads_for(cores, before.run_queue)
    out = Watched(threads, cores)
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads if threads < cores else None):
        watch = Watch(replace(before, blas_threads=threads, cores=cores)).start()
        yield out
        out.conditions = watch.stop(flat() if flat is not None else None)
