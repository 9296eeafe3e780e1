"""What the asv benchmarks call: one function per benchmark step, guards printed to asv's stderr.

Kept apart from the benchmarks so they stay thin (parameters plus one call) and so the same
code runs under asv, under pytest and from the command line.

Each run measures once (:mod:`roofline.suite.run`, in asv's ``setup_cache``): the benchmarks read
that one measurement, so a point's GFLOP/s, GB/s and roofline fraction share one timing and every
derived figure shares one set of ceilings. The ``time_`` twins time the same step back to back in
their own process (:func:`decode_twin`): asv's own view of the same kernel, and its samples.

A combination this run did not choose, or that cannot run here (an absent backend or dtype, a
matrix that does not fit the cache), raises :class:`~roofline.errors.BackendUnavailable`, a
``NotImplementedError``: asv records it as skipped (NaN). A kernel that computed wrong values
raises :class:`~roofline.errors.KernelMismatch`: asv records a failure. The CUDA grid is
measured once per asv run in ``setup_cache`` too (one process: importing torch and making a CUDA
context cost seconds per process); its cached entries are plain floats and strings, so the
per-combination processes need no torch.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import BackendUnavailable, KernelMismatch
from ..host import import_torch
from ..measure.backends import available, build_step, release_cuda
from ..measure.contention import limit_blas, watched
from ..measure.numpy_step import decode_step
from ..measure.step import DecodeMeasurement, StepRounds, measure_step
from ..measure.timing import settle
from ..model import guards
from ..model.dtypes import SUITE, by_numpy
from ..outcome import Failed, Measured, Outcome, Skipped, attempt, of_cache
from . import handoff, notes, params
from . import run as _run
from .names import ENGINE_CLASSES, MODEL_CLASS
from .run import RunState, Timed, passes

_said: set[str] = set()

#: Significant digits a track records: ten times finer than the spread of any timing here (≥ 1 %),
#: and no 17-digit floats in asv's result files and pages.
TRACK_DIGITS = 4


def tracked(value: float) -> float:
    """A track's value as asv records it: a Python float to :data:`TRACK_DIGITS` significant digits."""
    value = float(value)
    return float(f"{value:.{TRACK_DIGITS}g}") if math.isfinite(value) else value


#: What the processes reading one setup_cache have said, in its folder (asv runs each there, one at a time).
SAID_FILE = "roofline-said.txt"


def _asv_benchmark() -> str:
    """The asv benchmark this process runs (``name-param index``, asv_runner's ``_run``), or "" outside asv."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "_run" and "asv_runner" in frame.f_code.co_filename:
            return str(frame.f_locals.get("benchmark_id", ""))
        frame = frame.f_back
    return ""


def _asv_frame(*names: str) -> bool:
    """Whether one of asv_runner's functions ``names`` is on this call's stack."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in names and "asv_runner" in frame.f_code.co_filename:
            return True
        frame = frame.f_back
    return False


def _under_asv() -> bool:
    """Whether asv runs this process's benchmark or setup_cache (asv_runner's ``_run`` or ``_setup_cache``
    calls it): what it leaves for the asv run's later processes (:mod:`~roofline.suite.handoff`) is theirs
    only then."""
    return _asv_frame("_run", "_setup_cache")


def preload_for_forks() -> None:
    """Import torch in asv's forkserver (``--launch-method forkserver``, as ``roofline bench`` runs without
    a CUDA device): asv_runner's ``_run_server`` imports the benchmark modules once and forks every
    benchmark's process from itself, so those that use torch (the backends' twins and tracks, CallOverhead)
    start with it rather than each importing it (2-3 s each here).
    asv spawns each ``setup_cache`` anew, never from the forkserver; anywhere but the forkserver,
    nothing: a spawned process imports only what it uses."""
    if _asv_frame("_run_server"):
        with contextlib.suppress(BackendUnavailable):
            import_torch()


def _stderr(*lines: str) -> None:
    """asv's stderr (``asv run --show-stderr``) is the benchmarks' one channel; each line once per run.

    A process that reads a setup_cache's result (``cache.pickle`` in its folder) runs where every other
    reader of it does: the benchmark whose process first says a line notes itself beside it there, and
    only that benchmark says it again, in each of its rounds, since asv shows a benchmark's last round
    (once per process, a run's 7 warnings were replayed for every parameter: 1,180 lines of asv's
    output). asv discards a setup_cache's own stderr, so its process notes nothing.
    """
    shared = Path(SAID_FILE) if Path("cache.pickle").is_file() else None
    me = _asv_benchmark()
    owners: dict[str, str] = {}
    if shared is not None:
        try:
            for entry in shared.read_text(encoding="utf-8").splitlines():
                owner, _, line = entry.partition("\t")
                owners.setdefault(line, owner)
        except OSError:
            pass
    new = [x for x in dict.fromkeys(lines) if x not in _said and (x not in owners or (me and owners[x] == me))]
    for line in new:
        _said.add(line)
        print(f"roofline: {line}", file=sys.stderr)
    noted = [line for line in new if line not in owners]
    if shared is not None and noted:
        try:
            with shared.open("a", encoding="utf-8") as f:
                f.write("".join(f"{me}\t{line}\n" for line in noted))
        except OSError:
            pass


def _warn(lines: Sequence[str]) -> None:
    _stderr(*(f"warning: {line}" for line in lines))


def cached(value):
    """What a setup_cache returned: its figures, or what it came to instead raised (a bare reason, a string,
    or :class:`~roofline.outcome.Skipped`: the benchmark is skipped; :class:`~roofline.outcome.Failed`: it fails)."""
    return of_cache(value)


def measure_run(grid: Mapping[str, Sequence[object]]) -> RunState:
    """The suite's setup_cache (:func:`roofline.suite.run.measure_run`); the roofs a later setup_cache's bound
    divides by are left for it (:mod:`~roofline.suite.handoff`: models.ModelDecode's)."""
    state = _run.measure_run(grid)
    left = run_roofs(state)
    if left is not None and _under_asv():
        handoff.leave(*left)
    return state


def run_roofs(state: RunState) -> tuple[float, dict[str, float]] | None:
    """The run's DRAM roof (GB/s) and its compute roofs (GFLOP/s by dtype name: numpy's GEMMs, torch's dtypes),
    as asv records them; None without a DRAM roof."""
    hw = state.hardware
    if hw is None:
        return None
    return hw.bandwidth / 1e9, {d: v / 1e9 for d, v in _run.with_compute(hw, state.compute).peak_flops.items()}


def require(run: RunState | str) -> RunState:
    """This run's measurement; what setup_cache said instead (a reason) raises: the benchmark is skipped.

    Says once per process how the machine was (the contention headline) and the run's own warnings.
    """
    if not isinstance(run, RunState):
        raise BackendUnavailable(str(run))
    headline = run.conditions.headline()
    if headline:
        _stderr(headline)
    _warn(run.warnings)
    return run


@dataclass(frozen=True)
class Point:
    """A decode point as the benchmarks read it: figures of one timing, as plain floats.

    ``calls_per_sample``: the back-to-back calls each of the measurement's samples timed; the
    ``time_`` twin takes asv's samples the same way (asv's ``number``).
    """

    key: tuple
    seconds: float
    gflops: float
    gbps: float
    calls_per_sample: int
    fraction: float | None = None
    fraction_failed: str = ""
    blas_threads: int | None = None


def _point(
    key: tuple, result: Outcome | None, what: str, fraction_failed: str = "", threads: int | None = None
) -> Point:
    timed: Timed = (result or Skipped("was not measured in this run")).about(what).get()
    _warn(timed.warnings)
    m = timed.measurement
    return Point(
        key,
        float(m.seconds),
        tracked(m.gflops),
        tracked(m.gbps),
        int(m.calls_per_sample),
        None if timed.fraction is None else tracked(timed.fraction),
        fraction_failed,
        threads,
    )


def decode_point(run: RunState | str, regime: str, n: int, batch: int) -> Point:
    """The measured point (regime "dram" or "cache"); skipped when not chosen or not cache-resident."""
    run = require(run)
    label = f"{'cache-resident ' if regime == 'cache' else ''}n={n} batch={batch}"
    failed = run.ceilings.reason or ("" if run.hardware else "no ceilings were measured in this run")
    return _point((regime, n, batch), run.points.get((regime, n, batch)), label, failed, run.blas_threads)


def roofline_fraction(point: Point) -> float:
    """Achieved ÷ attainable at the point's exact intensity, against this run's ceilings."""
    if point.fraction is None:
        raise KernelMismatch(f"no roofline fraction: {point.fraction_failed or 'not a DRAM point'}")
    return point.fraction


#: Each asv sample of a ``time_`` twin runs its steps back to back for at least this long. Beside a
#: busy neighbour the scheduler moves a process between a core of its own and a shared one every
#: few tens of ms; a 5 ms sample falls wholly in one or the other, so a twin's median could read
#: either speed. Measured on 2 cores beside two busy loops, a step doing twice the work read
#: 1.41–4.32× in 5 ms samples and 1.63–2.21× in 0.1 s samples (quiet: 1.92–2.44× and 1.92–1.98×).
TWIN_SAMPLE_SECONDS = 0.1


def twin_calls(point: Point) -> int:
    """Steps per asv sample of the point's twin: as many as each sample of its measurement, and
    enough to last :data:`TWIN_SAMPLE_SECONDS` at the measured time per step."""
    enough = math.ceil(TWIN_SAMPLE_SECONDS / point.seconds) if point.seconds > 0 else 1
    return max(1, point.calls_per_sample, enough)


class _Twin:
    """The measured point's step for asv's ``time_`` twin: built (and validated) on its first call,
    with the BLAS and OpenMP pools on as many threads as the run's measurement had.

    One call runs ``calls`` steps back to back (:func:`twin_calls`), and
    :meth:`clock` reads ``time.perf_counter() / calls``: with asv's ``number = 1`` and ``timer = clock``,
    asv's samples are seconds per step, of warm calls with nothing between them. (asv-runner re-runs
    ``setup`` before every timed call when ``number > 1`` and the class has a setup, which would
    time each step alone, after setup's own work.)
    """

    steps: dict[tuple, object] = {}

    def __init__(self, key: tuple, build, threads: int | None, calls: int = 1):
        self.key, self.build, self.threads = key, build, threads
        self.calls = max(1, int(calls))

    def __call__(self):
        step = self.steps.get(self.key)
        if step is None:
            step = self.steps[self.key] = self.build()
            limit_blas(self.threads)  # after the build: torch's pool is loaded by then
            settle()  # the build's float64 check spins the BLAS's workers: asv's samples come after
        for _ in range(self.calls - 1):
            step()
        return step()

    def clock(self) -> float:
        """asv's timer for this twin: seconds ÷ the steps one call runs."""
        return time.perf_counter() / self.calls


def decode_twin(point: Point) -> _Twin:
    """The same decode step the point measured, for asv to time back to back (asv's own samples)."""
    regime, n, batch = point.key
    return _Twin(point.key, lambda: decode_step(n, batch, SUITE.numpy, regime), point.blas_threads, twin_calls(point))


def bandwidth_gbps(run: RunState | str, kind: str) -> float:
    """This run's STREAM-style bandwidth of one kernel, GB/s (the roof is ``read``)."""
    return tracked(require(run).ceilings.get().bandwidth_gbps[kind])


def gemm_gflops(run: RunState | str, dtype: str) -> float:
    """This run's compute roof of ``dtype``, GFLOP/s: the fastest GEMM (square, or a decode point's shape)."""
    return tracked(require(run).ceilings.get().peak_gflops[dtype])


def observed_crossover(run: RunState | str) -> float:
    """The knee of this run's batch sweep 1..1024 over a DRAM pool (n: ROOFLINE_SWEEP_N)."""
    return tracked(require(run).crossover.get().batch)


def predicted_crossover(run: RunState | str) -> float:
    """Crossover batch for float32 weights from this run's ceilings: peak / bandwidth · 4 / 2."""
    run = require(run)
    run.ceilings.get()
    if run.predicted_crossover is None:
        raise KernelMismatch("no ceilings were measured in this run")
    return tracked(run.predicted_crossover)


def quietness(run: RunState | str) -> float:
    """Share of the cores' time that was the suite's while it measured (1.0: nobody else ran)."""
    run = require(run)
    if run.conditions.quietness is None:
        raise BackendUnavailable("no /proc/stat here: CPU time not sampled")
    return tracked(run.conditions.quietness)


def reference_drift(run: RunState | str) -> float:
    """The reference kernel's time per call at the end of the measurement ÷ at its start."""
    run = require(run)
    if run.conditions.reference_drift is None:
        raise BackendUnavailable("the reference kernel was not timed")
    return tracked(run.conditions.reference_drift)


def gemm_n(run: RunState | str) -> float:
    """The matrix size of this run's GEMM ceiling for the suite's dtype (ROOFLINE_GEMM_N), recorded with the results."""
    size = require(run).gemm_n
    if size is None:
        raise NotImplementedError("this run's state does not say its GEMM size")
    return float(size)


def sweep_n(run: RunState | str) -> float:
    """The matrix size of this run's crossover sweep (ROOFLINE_SWEEP_N), recorded with the results."""
    return float(require(run).sweep_n)


def blas_threads(run: RunState | str) -> float:
    """The threads the BLAS ran on in this run (fewer than the cores when others held some)."""
    run = require(run)
    if run.blas_threads is None:
        raise BackendUnavailable("the BLAS's threads are unknown here")
    return float(run.blas_threads)


def llc_bytes(run: RunState | str) -> float:
    """The last-level cache size this run sized its DRAM pools from (ROOFLINE_LLC_BYTES or the OS)."""
    return float(require(run).llc_bytes)


# ---- backends and the GPU (benchmarks/backends.py) ------------------------------------------

#: The figures the CUDA class tracks, from one measurement per combination.
GRID_FIELDS = ("gflops", "gbps", "seconds", "single_call_seconds")

#: The backends of the CPU backend class, measured in this order (never interleaved: their
#: thread pools would spin against each other).
CPU_BACKENDS = ("numpy", "torch-cpu")


def backend_grid(grid: Mapping[str, Sequence[object]]) -> dict[tuple, Outcome]:
    """Measure every chosen (backend, dtype, n, batch) of the CPU backend class; the rest keep why not.

    Timed in :func:`~roofline.suite.run.passes` rounds, numpy's steps then torch's in each (never
    together: their thread pools would spin against each other), and pooled, so no one moment of the
    machine makes a figure. Each round builds its steps afresh and lets them go before the next
    backend's are built, so one backend's pools are held at a time (numpy's and torch fp32's map the
    shared random file; torch's bf16 pools are copies). In rounds, ten processes read numpy fp32
    n=256 b=1 within max/min 1.36 on this project's 2-core VM (docs/measured/method.md).

    Under the run's contention watch (:func:`~roofline.measure.contention.watched`), in a process of its own:
    on a machine found busy the BLAS and torch run on the cores left, as the decode classes' run does, and
    the twins get as many; a contended grid says so in every point's warnings. Without it, numpy fp32
    n=2048 b=1 read 1.05 GFLOP/s (8 ms a step: a scheduler slice per GEMV) beside 5.1 for DecodeDRAM.
    """
    chosen = params.chosen(grid)
    out: dict[tuple, Outcome] = {}
    keys: dict[str, list[tuple]] = {backend: [] for backend in CPU_BACKENDS}
    for backend in CPU_BACKENDS:
        for dtype in ("fp32", "bf16"):
            for n in grid.get("ROOFLINE_BACKEND_N", ()):
                for batch in grid.get("ROOFLINE_BACKEND_BATCH", ()):
                    key = (backend, dtype, n, batch)
                    if n not in chosen["ROOFLINE_BACKEND_N"] or batch not in chosen["ROOFLINE_BACKEND_BATCH"]:
                        out[key] = Skipped("not chosen this run (ROOFLINE_BACKEND_N, _BATCH)")
                    else:
                        keys[backend].append(key)
    for backend in CPU_BACKENDS:  # torch loaded first: the watch limits the thread pools loaded when it starts
        try:
            if keys[backend]:
                available(backend, "fp32")
        except BackendUnavailable:
            pass
    with watched() as watch:
        rounds = _backend_rounds(keys, out)
    reasons = watch.conditions.reasons() if watch.conditions is not None else []
    threads = watch.threads if watch.threads < watch.cores else None
    measured = {
        key: m
        for backend in CPU_BACKENDS
        if keys[backend]
        for key, m in zip(keys[backend], rounds[backend].measurements(), strict=True)
    }
    # one line for every noisy step of the grid: each point carries it, asv's output says it once
    noisy = guards.noisy_points(
        [(f"{m.backend} {k[1]} n={m.n} batch={m.batch}", m.spread) for k, m in measured.items()]
    )
    for key, m in measured.items():
        notes = list(noisy)
        if m.threads is not None:
            notes.append(f"{m.backend} ran on {m.threads} torch thread(s)")
        if reasons:
            notes.append(f"the backend class was measured under contention: {'; '.join(reasons)}")
        out[key] = Measured(Timed(m, warnings=tuple(notes), threads=threads))
    return out


def _backend_rounds(keys: dict[str, list[tuple]], out: dict[tuple, Outcome]) -> dict[str, StepRounds]:
    """:func:`backend_grid`'s rounds: ``keys[backend]`` keeps the steps that built in every round (``out`` why
    the others did not)."""
    rounds: dict[str, StepRounds] = {}
    for r in range(passes()):
        for backend in CPU_BACKENDS:
            steps = {}
            for key in keys[backend]:
                built = attempt(lambda key=key: build_step(*key))
                if built.ok:
                    steps[key] = built.value
                else:
                    out[key] = built
            if not steps:
                keys[backend] = []
                continue
            settle()  # the builds' float64 checks and the last backend's workers have stopped spinning
            if r == 0:
                rounds[backend] = StepRounds(list(steps.values()))
                rounds[backend].time()
            else:  # a step that would not build in a later round has no figure
                rounds[backend].only([i for i, key in enumerate(keys[backend]) if key in steps])
                rounds[backend].time(list(steps.values()))
            keys[backend] = list(steps)
            rounds[backend].release()  # this round's pools go before the next are built
    return rounds


def backend_point(grid: Mapping[tuple, Outcome] | str, backend: str, dtype: str, n: int, batch: int) -> Point:
    """The measured combination; skipped when absent here or not chosen."""
    key = (backend, dtype, n, batch)
    result = cached(grid).get(key)
    threads = result.value.threads if result is not None and result.ok else None
    return _point(key, result, f"{backend} {dtype} n={n} batch={batch}", threads=threads)


def backend_twin(point: Point) -> _Twin:
    """The same step the combination measured, for asv to time back to back, on as many threads."""
    backend, dtype, n, batch = point.key
    return _Twin(point.key, lambda: build_step(backend, dtype, n, batch), point.blas_threads, twin_calls(point))


def cuda_grid(grid: Mapping[str, Sequence[object]]) -> dict[tuple, dict[str, object]]:
    """The CUDA class's setup_cache: :func:`gpu_grid` over the chosen dtypes, sizes and batches."""
    chosen = params.chosen(grid)
    return gpu_grid(chosen["ROOFLINE_GPU_DTYPES"], chosen["ROOFLINE_GPU_N"], chosen["ROOFLINE_GPU_BATCH"])


def gpu_grid(
    dtypes: Sequence[str], sizes: Sequence[int], batches: Sequence[int], backend: str = "torch-cuda"
) -> dict[tuple, Outcome]:
    """Measure every (dtype, n, batch) on ``backend``: {key: Measured({<GRID_FIELDS>..., "timer"})}, or
    skipped (absent here) or failed (a KernelMismatch: no figure) with the reason."""
    grid: dict[tuple, Outcome] = {}
    for dtype in dtypes:
        for n in sizes:
            for batch in batches:
                try:
                    grid[(backend, dtype, n, batch)] = attempt(
                        lambda d=dtype, n=n, b=batch: _gpu_entry(backend, d, n, b)
                    )
                finally:
                    release_cuda()
    return grid


def _gpu_entry(backend: str, dtype: str, n: int, batch: int) -> dict[str, object]:
    available(backend, dtype)
    m = _measure(build_step(backend, dtype, n, batch))
    return {**{f: float(getattr(m, f)) for f in GRID_FIELDS}, "timer": m.timer}


def _measure(step) -> DecodeMeasurement:
    m = measure_step(step)
    _warn(guards.noisy(m.spread, f"{m.backend} n={m.n} batch={m.batch}"))
    return m


def cuda_point(grid: dict | str, backend: str, dtype: str, n: int, batch: int) -> dict[str, object]:
    """The cached CUDA entry (:func:`grid_entry`); skipped when setup_cache could not measure."""
    return grid_entry(cached(grid), backend, dtype, n, batch)


def grid_entry(grid: dict, backend: str, dtype: str, n: int, batch: int) -> dict[str, object]:
    """The cached entry, re-raising what made it absent (asv: skipped) or wrong (asv: failed)."""
    return checked_entry(grid.get((backend, dtype, n, batch)), f"{backend} {dtype} n={n} batch={batch}")


def checked_entry(entry: Outcome | None, what: str) -> dict[str, object]:
    """An entry of a setup_cache grid, or what made it absent (BackendUnavailable) or wrong (KernelMismatch)."""
    return (entry or Skipped(f"{what} was not measured in setup_cache")).get()


def grid_value(entry: dict[str, object], field: str, scale: float = 1.0) -> float:
    """One figure of a measured entry as a plain float (asv needs a float)."""
    return tracked(float(entry[field]) * scale)


def overhead_available(backend: str) -> None:
    """BackendUnavailable (asv: skipped) when ``backend`` cannot run fp32 here."""
    available(backend, "fp32")


def overhead_seconds(backend: str, dtype: str) -> tuple[float, float]:
    """A tiny step's overhead, (single call, amortized) seconds: what asv's overhead tracks and the live report
    record. Under asv a backend's two tracks read one measurement (:mod:`~roofline.suite.handoff`: the first
    measures and leaves it; each process measured its own, torch's import included, 2.5 s a torch track here)."""
    from ..measure.overhead import measure_overhead

    name, shared = f"overhead {backend} {dtype}", _under_asv()
    left = handoff.read_json(name) if shared else None
    if not (isinstance(left, list) and len(left) == 2 and all(isinstance(x, float) for x in left)):
        o = measure_overhead(backend, dtype)
        left = [o.single_call_seconds, o.amortized_seconds]
        if shared:
            handoff.leave_json(name, left)
    return left[0], left[1]


def overhead_us(backend: str, dtype: str, which: str) -> float:
    """The overhead roof in µs (:func:`overhead_seconds`): ``which`` = "single" (one call alone) or "amortized"."""
    single, amortized = overhead_seconds(backend, dtype)
    return tracked((single if which == "single" else amortized) * 1e6)


def level_entry(run: RunState | str, level: str) -> tuple[float, int]:
    """A level's (GB/s, aggregate bytes) from this run's level sweep; BackendUnavailable (asv: skipped)
    where the sweep cannot run here or the machine lacks the level, KernelMismatch where it failed."""
    roofs = require(run).levels.get()
    if level not in roofs:
        raise BackendUnavailable(f"this machine has no {level} (its levels: {', '.join(roofs)})")
    return tracked(roofs[level].gbps), int(roofs[level].bytes or 0)


def referee(run: RunState | str, roof: str) -> float:
    """likwid-bench's figure for one roof (a memory level: GB/s of its load kernel; "fp32", "fp64": GFLOP/s
    of its FMA peak), timed after each round of the part that measures that roof; BackendUnavailable (asv: skipped)
    with the reason where it did not run or the machine lacks the level."""
    run = require(run)
    if not run.referees.ok:  # failed too: the referee is not the suite's figure
        raise BackendUnavailable(run.referees.reason)
    figures = run.referees.value
    if roof not in figures:
        raise BackendUnavailable(f"no referee for {roof} in this run (its roofs: {', '.join(figures)})")
    return tracked(figures[roof])


def peak_referee(run: RunState | str, dtype: str) -> float:
    """likwid-bench's FMA peak (GFLOP/s) for a numpy dtype of GemmPeak (:func:`referee`)."""
    return referee(run, by_numpy(dtype).name)


def compute_peak(run: RunState | str, dtype: str) -> float:
    """One torch dtype's compute roof of this run (GFLOP/s, GOP/s for int8), or BackendUnavailable (asv:
    skipped) with the reason; fp32 and fp64 are :func:`gemm_gflops`'s."""
    peaks = require(run).compute.get()
    return tracked(peaks.get(dtype, Skipped(f"no compute roof for {dtype} in this run")).get().gflops)


# ---- a real model decoded here (benchmarks/models.py) ----------------------------------------------

#: The dtype models.ModelDecode decodes in (its model: :func:`roofline.suite.params.model_decode`).
MODEL_DECODE_DTYPE = params.MODEL_DTYPE
#: A batch whose bound alone is longer than this per step here is skipped, with the figures: make bench
#: keeps to its few minutes (a CPU without bf16 instructions computes bf16 far below its fp32 roof).
MODEL_STEP_BUDGET_S = 2.0
#: ... and so is every batch when one prefill's bound is longer than this many step budgets.
PREFILL_BUDGETS = 5


def _noted(benchmark_class: str, grid: dict) -> dict:
    """``grid``, each combination without a figure noted for roofline bench's report (:mod:`~.notes`)."""
    notes.write_notes(notes.notes_of(benchmark_class, grid))
    return grid


def model_entry(grid: dict | str, batch: int) -> dict[str, object]:
    """models.ModelDecode's entry for one batch; skipped when setup_cache could not measure (a reason)."""
    return checked_entry(cached(grid).get(batch), f"batch {batch}")


def _not_chosen(batches: Sequence[int], chosen: Sequence[int], variable: str) -> dict[int, Outcome]:
    """The skipped entries of the batches ``variable`` did not choose this run."""
    return {b: Skipped(f"not chosen this run ({variable})") for b in batches if b not in chosen}


def model_decode_grid(
    batches: Sequence[int],
    shape=None,
    dtype: str = MODEL_DECODE_DTYPE,
    context: int = 32,
    steps: int = 3,
    budget_s: float = MODEL_STEP_BUDGET_S,
    hardware=None,
) -> dict[int, Outcome]:
    """Decode ``shape`` (default: ``params.model_decode()``) at each batch; entries as :func:`gpu_grid`'s.

    A measured entry holds, for both paths, tokens/s and bound ÷ measured, and the bound's tokens/s.
    ``hardware`` (default: the run's roofs this asv run left, else :func:`~roofline.suite.run.model_roofs`
    measured here) is the bound's.
    """
    from ..measure.llm_build import import_transformers
    from ..measure.llm_decode import hold_against_bound, measure_model_decode
    from ..model.llm_estimate import DecodeSetup, step

    shape = shape or params.model_decode()
    grid = _not_chosen(batches, params.model_batches(), "ROOFLINE_MODEL_BATCH")
    batches = [b for b in batches if b not in grid]
    if not batches:
        return _noted(MODEL_CLASS, grid)
    try:
        import_transformers()
        hw = hardware or (handoff.read(dtype) if _under_asv() else None)  # the run's roofs, of its rounds
        if hw is None:  # the roofs the run would have left, measured here and now (its own layers' F.linear)
            hw = _run.model_roofs(shape, dtype, batches).require()
            _warn([f"{shape.name}: no run of this asv run left its roofs; the bound's are the model's own"])
    except BackendUnavailable as exc:
        return _noted(MODEL_CLASS, {**grid, **{b: Skipped(str(exc)) for b in batches}})
    setup = DecodeSetup(shape, hw, dtype=dtype, kv_dtype=dtype, context=context + steps)
    # the prefill's arithmetic is about a step of `context` sequences; it runs once per batch and path
    prefill = step(setup, context).step_s
    roof = f"{dtype} roof {hw.peak(setup.compute) / 1e9:.3g} GFLOP/s here"
    runnable = []
    for b in batches:
        bound = step(setup, b).step_s
        if bound > budget_s or prefill > PREFILL_BUDGETS * budget_s:
            why = f"a step's bound is {bound:.3g} s, a prefill's {prefill:.3g} s"
            grid[b] = Skipped(f"{shape.name} batch {b}: {why} ({roof}), over the budget")
        else:
            runnable.append(b)
    if not runnable:
        return _noted(MODEL_CLASS, grid)
    try:
        run = measure_model_decode(shape, runnable, dtype, context, warmup=1, steps=steps)
    except KernelMismatch as exc:
        return _noted(MODEL_CLASS, {**grid, **{b: Failed(str(exc)) for b in runnable}})
    entries: dict[int, dict[str, object]] = {}
    for row in hold_against_bound(run, hw):
        entry = entries.setdefault(row.batch, {"bound_tokens_per_s": row.bound.tokens_per_s})
        entry[f"{row.path}_tokens_per_s"] = row.batch / row.step_s
        entry[f"{row.path}_fraction"] = row.fraction
        if row.flagged:
            _warn([f"{shape.name} batch {row.batch} {row.path} beat its bound ({row.fraction:.3g}): a bug"])
    return _noted(MODEL_CLASS, {**grid, **{b: Measured(entry) for b, entry in entries.items()}})


# ---- an engine decoding a real model file here (benchmarks/engines.py) -------------------------------

#: Timed decode steps of each (format, batch) up to batch 8 in each of the engine's rounds (fewer above:
#: engine_decode.steps_at). At 16 the steps took 20 s of the 33 of the engine's setup_cache here (F16 batch 8: 92 ms).
ENGINE_STEPS = 6
#: The engine's rounds at most (the run's passes otherwise): with batches 1 to 64 and each format's prompt, three
#: rounds took 49 s of make bench here against 10 s for batches 1 and 8; two keep it within its budget.
ENGINE_ROUNDS = 2


def engine_decode_grid(
    engine: str, formats: Sequence[str], batches: Sequence[int], shape=None
) -> dict[tuple[str, int], Outcome]:
    """Decode ``shape`` (default: ``params.engine_model()``) with ``engine`` in each format at each batch;
    entries as :func:`gpu_grid`'s, a measured one with tokens/s (wall clock and the engine's counters), the
    bound's, bound ÷ measured and the prediction (:mod:`roofline.model.engine_bound`), and at batch 1 the
    format's engine roof and crossover batch."""
    from ..errors import BadInput
    from ..measure.engine_decode import PROMPT_TOKENS, crossovers, hold_engine, measure_engine_decode
    from ..measure.engines import lookup_engine

    skipped = _not_chosen(batches, params.engine_batches(), "ROOFLINE_ENGINE_BATCH")
    unchosen = {(f, b): entry for f in formats for b, entry in skipped.items()}
    batches = [b for b in batches if b not in skipped]
    if not batches:
        return _noted(ENGINE_CLASSES.get(engine, engine), unchosen)
    keys = [(f, b) for f in formats for b in batches]
    try:
        shape = shape or params.engine_model()
        engine_ = lookup_engine(engine)
        left = handoff.read("fp32") if _under_asv() else None  # the run's roofs, of its rounds, printed
        run = measure_engine_decode(
            engine_,
            shape,
            list(formats),
            list(batches),
            steps=ENGINE_STEPS,
            rounds=min(passes(), ENGINE_ROUNDS),
            roofs=left or (lambda: _run.engine_roofs(params.gemm_n())),
            prompt_tokens=0 if params.quick() else PROMPT_TOKENS,  # a quick look: no engine roof (6 s of its 62)
        )
    except BadInput as exc:  # the model cannot be written or run here (disk, memory, shape)
        return _noted(ENGINE_CLASSES.get(engine, engine), {**unchosen, **{k: Skipped(str(exc)) for k in keys}})
    _warn(run.warnings)
    grid: dict[tuple[str, int], Outcome] = dict(unchosen)
    grid.update({key: outcome for key, outcome in run.outcomes.items() if not outcome.ok})
    rows = hold_engine(run)
    per_format = {c.format: c for c in crossovers(rows)}
    for row in rows:
        entry = {k: v for k, v in row.as_dict().items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
        entry["predicted_crossover"] = per_format[row.format].predicted
        entry["observed_crossover"] = per_format[row.format].observed
        grid[(row.format, row.batch)] = Measured(entry)
        what = f"{engine} {row.format} batch {row.batch}"
        if row.flagged and row.format in run.resident:
            _warn([f"{what} beat its DRAM bound ({row.fraction:.3g}): its file is cache-sized here"])
        elif row.flagged:
            _warn([f"{what} beat its bound ({row.fraction:.3g}): a bug in the bound"])
        if row.measured.counter_note:
            _warn([f"{what}: {row.measured.counter_note}"])
    return _noted(ENGINE_CLASSES.get(engine, engine), grid)


def engine_entry(grid: dict | str, fmt: str, batch: int) -> dict[str, object]:
    """engines.*Decode's entry for one (format, batch); skipped when setup_cache could not measure (a reason)."""
    return checked_entry(cached(grid).get((fmt, batch)), f"{fmt} batch {batch}")


#: The batch whose row keeps a format's own figures (its engine roof, its crossovers), once per format in asv.
FORMAT_BATCH = 1


def format_value(entry: dict[str, object], field: str, batch: int) -> float:
    """A figure of the format, not of the batch: recorded at :data:`FORMAT_BATCH`, skipped at every other."""
    if batch != FORMAT_BATCH:
        raise BackendUnavailable(f"a format's figure, recorded at batch {FORMAT_BATCH} only")
    return entry_value(entry, field)


def entry_value(entry: dict[str, object], field: str) -> float:
    """One figure of an ok entry; BackendUnavailable (asv: skipped) where this entry has none (a prediction
    of a compute-bound step, counters that did not count the timed tokens)."""
    if entry.get(field) is None:
        raise BackendUnavailable(f"no {field.replace('_', ' ')} for this combination in this run")
    return grid_value(entry, field)
