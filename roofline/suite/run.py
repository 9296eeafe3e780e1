"""One asv run's measurement, made once: what the suite's ``setup_cache`` returns to every benchmark.

:func:`measure_run` samples the machine before measuring (:func:`~roofline.measure.contention.sample_cpu`),
times a reference kernel, measures the ceilings **once** (STREAM, GEMM square and at the points'
shapes, torch's bf16/fp16/int8 GEMMs where the CPU computes them, and each memory level's roof)
with likwid-bench's figures for the same roofs as their referee, timed beside each round of them
where it runs,
the crossover sweep, and every chosen decode point **once**. The run makes :data:`PASSES` passes over
its parts; in each pass every part takes its turn and times one round (the points' samples
interleaved, DRAM and cache-resident together; the sweep's batches likewise; the level sweep's
sizes), and each part's rounds are pooled into one figure: a slow minute of a shared machine moves
one round, not the figure. Each turn starts once the last turn's BLAS workers have stopped spinning
(:func:`~roofline.measure.timing.settle`). Then it times the reference again. (asv's own ``rounds``,
the ``time_`` twins' setting in benchmarks/common.py, is a third thing: asv runs every twin once per
asv round.) Every benchmark of the run reads this one :class:`RunState`: a point's GFLOP/s,
GB/s, time per call and roofline fraction come from the same timing, and every derived figure
(fraction, ridge, predicted crossover) from the same ceilings: the figures the ceiling benchmarks
record.

Every part keeps one contract (:class:`Part`) and comes to one :data:`~roofline.outcome.Outcome`: measured
with its figures, or skipped (not chosen, not cache-resident, switched off) or failed (a kernel that
computes wrong values) with the reason, instead of failing the whole run. Nothing here prints:
the warnings travel with the state and :mod:`roofline.suite.harness` prints them to asv's stderr.
"""

from __future__ import annotations

import platform
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import BackendUnavailable, BadInput, KernelMismatch
from ..host import blas_threads, cache_topology, cpu_count, llc_bytes
from ..measure.ceilings import (
    BANDWIDTH_RUNS,
    CEILING_KERNEL,
    GEMM_RUNS,
    STREAM_ROUND_S,
    CeilingRounds,
    default_gemm_n,
    fastest_gemms,
    point_shapes,
    read_roof,
    roof_kernel,
)
from ..measure.compute import COMPUTE_ROUND_S, ComputeRounds
from ..measure.contention import Watch, blas_limit, sample_cpu
from ..measure.levels import ROOF_KERNEL, LevelRounds, capacities
from ..measure.likwid import REFEREE_OUTER, RefereeRounds, referee_sizes
from ..measure.numpy_step import decode_step
from ..measure.step import MIN_TOTAL_S, DecodeMeasurement, StepRounds
from ..measure.sweep import SWEEP_BATCHES, SWEEP_REPEATS, SweepRounds
from ..measure.timing import settle
from ..model import guards
from ..model.arithmetic import crossover_batch, gemm_intensity, roofline_fraction
from ..model.conditions import Conditions, blas_threads_for, flat_timing
from ..model.dtypes import SUITE, by_numpy
from ..model.hardware import Hardware
from ..model.hierarchy import LevelRoof
from ..outcome import Failed, Measured, Outcome, Skipped, attempt
from . import params

#: The variable choosing each decode regime's n (the batches: ROOFLINE_BATCH).
REGIME_N = {"dram": "ROOFLINE_N", "cache": "ROOFLINE_CACHE_N"}

#: The compute roofs likwid-bench referees in every run (its ``peakflops`` kernels): GemmPeak's dtypes.
REFEREE_PEAKS = ("fp32", "fp64")

#: The run's passes over its parts: the moments at which each part times one round (each ceiling's
#: bandwidth passes and GEMMs split among them). The ``time_`` twins take their samples in as many asv
#: rounds (benchmarks/common.py).
PASSES = 3
#: A quick look's passes (``ROOFLINE_QUICK=1``): each part's runs split between two, not three (3 s of its
#: run's 21 here); each roof is still its fastest pass's median, each point every pass pooled.
QUICK_PASSES = 2


def passes() -> int:
    """The run's passes: :data:`PASSES`, or a quick look's :data:`QUICK_PASSES`."""
    return QUICK_PASSES if params.quick() else PASSES


@dataclass(frozen=True)
class Timed:
    """A decode combination measured: its one timing, its fraction of the run's roof, its warnings.

    ``threads``: the BLAS and OpenMP threads it was timed on where a grid measured under its own watch
    chose fewer than the cores (the backend class's); None: as the run's.
    """

    measurement: DecodeMeasurement
    fraction: float | None = None
    warnings: tuple[str, ...] = ()
    threads: int | None = None


#: A combination of the grid: :class:`Timed` as :class:`~roofline.outcome.Measured`, or skipped or failed with why.
PointOutcome = Outcome


@dataclass(frozen=True)
class RunRoofs:
    """The figures the ceiling benchmarks record, and the only ones every derived figure divides by:
    GB/s per STREAM kernel, GFLOP/s per numpy dtype."""

    bandwidth_gbps: Mapping[str, float]
    peak_gflops: Mapping[str, float]
    #: the median's confidence interval, high ÷ low, per STREAM kernel
    spreads: Mapping[str, float] = field(default_factory=dict)
    #: each numpy dtype's roof GEMM with its size (:attr:`~roofline.measure.ceilings.GemmPeak.kernel`), and the size
    peak_kernels: Mapping[str, str] = field(default_factory=dict)
    gemm_sizes: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Crossover:
    """The crossover sweep's knee (a batch) and the points it was fitted to, every round's samples pooled."""

    batch: float
    points: tuple[DecodeMeasurement, ...] = ()


#: What a state pickled before a part existed says of it.
BEFORE = Skipped("not in this run (a state from before it)")


@dataclass(frozen=True)
class RunState:
    """What one run measured; plain data, pickled by asv into each benchmark's process.

    Each part is an :data:`~roofline.outcome.Outcome`: measured with its figures, or skipped or failed
    with the reason. ``ceilings``: :class:`RunRoofs`; ``points``: {(regime, n, batch): :data:`PointOutcome`};
    ``crossover``: :class:`Crossover`; ``levels``: {level: :class:`~roofline.model.hierarchy.LevelRoof`}, each
    memory level's read-only roof; ``compute``: {torch dtype: the outcome of its GEMM roof,
    :class:`~roofline.model.hierarchy.ComputeRoof`}; ``referees``: likwid-bench's figures timed beside each
    round of the roofs they referee (GB/s of its load kernel inside each memory level, GFLOP/s of its FMA
    peaks "fp32", "fp64").
    ``chosen``: the variables' choices (the sizes this run used); ``blas_threads``: the threads the BLAS
    ran on (the ``time_`` twins use as many); ``gemm_n``: the size of the suite dtype's square GEMM ceiling (the
    fastest of the sizes it climbed, or ROOFLINE_GEMM_N).
    """

    chosen: Mapping[str, tuple]
    llc_bytes: int
    llc_source: str
    sweep_n: int
    conditions: Conditions
    ceilings: Outcome = Failed("no ceilings were measured in this run")
    points: Mapping[tuple[str, int, int], Outcome] = field(default_factory=dict)
    crossover: Outcome = Failed("no sweep was measured")
    levels: Outcome = BEFORE
    compute: Outcome = BEFORE
    referees: Outcome = BEFORE
    warnings: tuple[str, ...] = ()
    blas_threads: int | None = None
    gemm_n: int | None = None

    @property
    def bandwidth_gbps(self) -> Mapping[str, float]:
        return self.ceilings.value.bandwidth_gbps if self.ceilings.ok else {}

    @property
    def peak_gflops(self) -> Mapping[str, float]:
        return self.ceilings.value.peak_gflops if self.ceilings.ok else {}

    @property
    def hardware(self) -> Hardware | None:
        """This run's roofs, built from exactly the figures the ceiling benchmarks record, each the faster of
        its own and its referee's (:func:`roofs`)."""
        return roofs(self.bandwidth_gbps, self.peak_gflops, self.referees.value if self.referees.ok else {})

    @property
    def predicted_crossover(self) -> float | None:
        """The crossover batch from the run's own ceilings, no referee (as ``roofline compare`` computes it)."""
        hw = roofs(self.bandwidth_gbps, self.peak_gflops)
        return crossover_batch(hw, SUITE.bytes, SUITE.name) if hw is not None else None


def roofs(
    bandwidth_gbps: Mapping[str, float], peak_gflops: Mapping[str, float], referees: Mapping[str, float] | None = None
) -> Hardware | None:
    """The Hardware of recorded ceilings (GB/s per STREAM kernel, GFLOP/s per numpy dtype); None without both.

    The roof is :func:`~roofline.measure.ceilings.roof_kernel`'s: read, or add in a state from before read;
    each roof the faster of it and its referee in ``referees`` (GB/s at DRAM, GFLOP/s by dtype name: likwid-bench's,
    :class:`~roofline.model.hierarchy.Refereed`): on the Xeon likwid-bench's fp32 FMA peak read 275 GFLOP/s where
    the GEMM roof read 186-219 and a batch-512 point 264."""
    referees = referees or {}
    kind = roof_kernel(bandwidth_gbps)
    roof = bandwidth_gbps.get(kind) if kind else None
    if roof:
        roof = max(roof, referees.get(REFEREE_OUTER) or 0.0)
    peaks = {by_numpy(d).name: max(v, referees.get(by_numpy(d).name) or 0.0) * 1e9 for d, v in peak_gflops.items() if v}
    if not roof or not peaks:
        return None
    return Hardware(platform.node() or "this machine", peaks, roof * 1e9, source="measured in this run")


class Part:
    """One part of the run, and the contract every part keeps (one per part, as threadpoolctl's
    ``LibController`` is one per library): ``make()`` builds its ``timer`` once; :meth:`turn` times one
    round; :meth:`outcome` pools every round into its figures (:meth:`figures`): measured, or skipped or
    failed with the reason, and lets its operands go; :meth:`close` ends what it holds where the run
    stopped on the way. A part that cannot be built or timed (a kernel that computes wrong values,
    sizes that cannot run, a broken clock) keeps why and times no later round; an ``optional`` part
    whose backend is absent here (BackendUnavailable while it is built) keeps why as skipped. What it
    has to say beside its figures goes to :attr:`warnings`.
    """

    #: The RunState field its outcome fills.
    name = ""

    def __init__(self, make: Callable[[], object], optional: bool = False):
        self.warnings: list[str] = []
        self.stopped: Outcome | None = None
        try:
            self.timer = make()
        except (KernelMismatch, BadInput) as exc:
            self.timer, self.stopped = None, Failed(str(exc))
        except BackendUnavailable as exc:
            if not optional:
                raise
            self.timer, self.stopped = None, Skipped(str(exc))

    def _time(self, *args) -> None:
        if self.timer is None:
            return
        try:
            self.timer.time(*args)
        except (KernelMismatch, BadInput) as exc:
            self.stop(Failed(str(exc)))

    def stop(self, why: Outcome) -> None:
        """No later round: ``why`` is its outcome; what it holds ends now."""
        self.close()
        self.timer, self.stopped = None, why

    def turn(self) -> None:
        """One round."""
        raise NotImplementedError

    def figures(self, timer):
        """Every round pooled into the part's figures (KernelMismatch or BadInput: it failed)."""
        raise NotImplementedError

    def outcome(self) -> Outcome:
        timer = self.timer
        if timer is None:
            return self.stopped or Failed("never measured")
        try:
            return attempt(lambda: self.figures(timer))
        finally:
            self.close()
            self.timer = None  # the operands go

    def close(self) -> None:
        """End what the part holds (threads) where :meth:`outcome` has not."""


#: Samples of each point in a pass, at least: more until they add up to POINT_PASS_S, so only a step of
#: ≥ 0.05 s a call takes this few (nine in all over the passes). At seven, n=8192 batch 512 (0.48 s a
#: call here) took 13 s of the run's 130.
POINT_REPEATS = 3
#: Seconds of samples of each point in a pass, at least: 0.45 s over the run's passes, nearly twice a
#: measurement at one moment's (MIN_TOTAL_S); at 0.25 a pass the 16 default points took 22 s of a run's 96.
POINT_PASS_S = 0.15


class _Points(Part):
    """The chosen decode points in rounds (:class:`~roofline.measure.step.StepRounds`), DRAM and cache-resident
    interleaved: {key: its measurement}."""

    name = "points"

    def __init__(self, steps: Mapping[tuple, object]):
        self.keys = list(steps)
        super().__init__(lambda: StepRounds(list(steps.values()), repeats=POINT_REPEATS, min_total_s=POINT_PASS_S))

    def turn(self) -> None:
        self._time()

    def figures(self, timer) -> dict:
        return dict(zip(self.keys, timer.measurements(), strict=True)) if self.keys else {}


class _Ceilings(Part):
    """The run's ceilings in rounds (:class:`~roofline.measure.ceilings.CeilingRounds`): :class:`RunRoofs`."""

    name = "ceilings"

    def __init__(self, gemm_n: int | None, shapes: Sequence[tuple[int, int]] = (), gemv: Sequence[int] = ()):
        super().__init__(lambda: CeilingRounds(gemm_n=gemm_n, shapes=shapes, gemv=gemv))

    def turn(self) -> None:
        self._time(BANDWIDTH_RUNS // passes(), GEMM_RUNS // passes(), STREAM_ROUND_S)

    def figures(self, timer) -> RunRoofs:
        """The figures the ceiling benchmarks record, and every derived figure divides by."""
        c = timer.ceilings()
        hw = c.hardware
        # the roof is the figure hardware_from() makes of the roof kernel (its fastest round); the others alike
        self.warnings += [w for k, bw in c.bandwidth.items() for w in guards.noisy_passes(bw.spread, f"{k} bandwidth")]
        bandwidth = {**c.bandwidth, CEILING_KERNEL: read_roof(c.bandwidth)}  # read: the fastest read kernel's
        roofs = fastest_gemms(c.peaks, c.shaped.values())
        return RunRoofs(
            {k: bw.roof / 1e9 for k, bw in bandwidth.items()},
            {d: hw.peak_flops[by_numpy(d).name] / 1e9 for d in c.peaks},
            {k: bw.spread for k, bw in c.bandwidth.items()},
            {d: g.kernel for d, g in roofs.items()},
            {d: g.n for d, g in c.peaks.items()},
        )


class _Referee(Part):
    """likwid-bench's figures for the run's roofs (:class:`~roofline.measure.likwid.RefereeRounds`): its
    load kernel at a working set inside each memory level (:func:`~roofline.measure.likwid.referee_sizes`;
    DRAM's ≥ 4× the LLC) and its FMA peaks. Each roof is timed right beside the parts of the run that
    measure it (:meth:`turn_of`), so that both see the same seconds of a shared machine: a roof that
    moves with the machine can be told from one that moves alone. Where likwid-bench cannot run here
    it keeps why (skipped); one that stops in a later round fails, with a warning (the referee is not
    the suite's figure: the run goes on)."""

    name = "referees"

    def __init__(self):
        #: the roofs by where they bound the run's figures: DRAM, the FMA peaks, the cache levels
        self.dram: tuple[str, ...] = ()
        self.peaks: tuple[str, ...] = ()
        self.caches: tuple[str, ...] = ()
        if not params.referee():
            self.warnings, self.timer = [], None
            self.stopped = Skipped("the referees are off (ROOFLINE_REFEREE=off)")
            return
        sizes = referee_sizes(capacities(cache_topology()))
        self.dram, self.peaks = (REFEREE_OUTER,), REFEREE_PEAKS
        self.caches = tuple(level for level in sizes if level != REFEREE_OUTER)
        super().__init__(lambda: RefereeRounds(sizes, REFEREE_PEAKS, cpu_count()), optional=True)

    def turn(self, roofs: tuple[str, ...] | None = None) -> None:
        """One likwid-bench run of each of ``roofs`` (None: every roof)."""
        try:
            self._time(roofs)
        except BackendUnavailable as exc:  # it ran before, in this run: a later round that cannot is a failure
            self.warnings.append(f"the roofs' referee stopped: {exc}")
            self.stop(Failed(str(exc)))

    def turn_of(self, roofs: tuple[str, ...]) -> Callable[[], None]:
        """A turn of the run that times ``roofs`` (one of :attr:`dram`, :attr:`peaks`, :attr:`caches`)."""
        return lambda: self.turn(roofs)

    def figures(self, timer) -> dict[str, float]:
        self.warnings += timer.shared()
        return timer.figures()


class _Compute(Part):
    """The torch dtypes' compute roofs in rounds (:class:`~roofline.measure.compute.ComputeRounds`), at
    the run's GEMM size (ROOFLINE_GEMM_N, else the torch default) and, for the dtype models.ModelDecode
    decodes in, at the model's own layer (``linear``: :func:`model_shapes`): {dtype: its roof's outcome},
    a dtype that cannot run here skipped with why."""

    name = "compute"

    def __init__(self, gemm_n: int | None, linear: Mapping[str, tuple[list, tuple[int, ...]]] | None = None):
        super().__init__(lambda: ComputeRounds(n=gemm_n, linear=linear))

    def turn(self) -> None:
        self._time(COMPUTE_ROUND_S)

    def figures(self, timer) -> dict[str, Outcome]:
        skipped = {d: Skipped(why) for d, why in timer.skipped.items()}
        return {**skipped, **{r.dtype: Measured(r) for r in timer.roofs()}}


class _Sweep(Part):
    """The crossover sweep in rounds (:class:`~roofline.measure.sweep.SweepRounds`), a batch's samples
    split among them as the ceilings' passes are (so the large batches, a call of which lasts longest,
    cost what they did at one moment): the observed crossover (the knee of every round's samples)."""

    name = "crossover"

    def __init__(self, n: int, batches: Sequence[int] = SWEEP_BATCHES):
        self.batches = tuple(batches)
        super().__init__(
            lambda: SweepRounds(n, batches, repeats=-(-SWEEP_REPEATS // passes()), min_total_s=MIN_TOTAL_S / passes())
        )

    def turn(self) -> None:
        self._time()

    def figures(self, timer) -> Crossover:
        s = timer.result()
        if not s.knee.within_sweep:
            swept = f"{self.batches[0]}..{self.batches[-1]}"
            self.warnings.append(f"the knee ({s.knee.batch:.0f}) lies outside the sweep {swept}: extrapolated")
        return Crossover(float(s.knee.batch), tuple(s.points))


#: Rounds of the level sweep in each pass: three in all, each size's figure their median (five at one
#: moment). At two a pass it took 9.5 s of a run's 96 here.
LEVEL_PASS_ROUNDS = 1


class _Levels(Part):
    """The working-set sweep of the memory levels in rounds (:class:`~roofline.measure.levels.LevelRounds`),
    :data:`LEVEL_PASS_ROUNDS` in each of the run's passes: {level: (GB/s, aggregate bytes)}; without
    numba, or switched off (``ROOFLINE_LEVELS=off``), it keeps why (skipped). Its threads end with it."""

    name = "levels"

    def __init__(self):
        if not params.levels():
            self.warnings, self.timer = [], None
            self.stopped = Skipped("the level sweep is off (ROOFLINE_LEVELS=off)")
            return
        super().__init__(lambda: LevelRounds(kernel_names=(ROOF_KERNEL,)), optional=True)

    def turn(self) -> None:
        self._time(LEVEL_PASS_ROUNDS)

    def figures(self, timer) -> dict[str, LevelRoof]:
        return {r.level: r for r in timer.result().roofs}

    def close(self) -> None:
        if self.timer is not None:
            self.timer.close()


#: Rows of models.ModelDecode's layers its compute roof is always timed at beside its chosen batches': a
#: 1-row F.linear is no roof of a batch-1 step (the same kernel; 0.89-1.10 of the bound in five quick looks
#: here, which chose batch 1 alone), Llama-3-8B's layers ran fastest at 8 rows (ComputeRounds).
MODEL_ROOF_ROWS = 8


def model_shapes(chosen: Mapping[str, tuple]) -> dict[str, tuple[list[tuple[int, int]], tuple[int, ...]]]:
    """models.ModelDecode's layers as (k, out) weights (q, k and v, o, the MLP's gate and up, its down; not
    the 1 GB output head) at each batch this run chose for it and :data:`MODEL_ROOF_ROWS`, in the dtype it
    decodes in: the F.linear its bound's compute roof is timed at (none where the run chose no model batch,
    as the live report)."""
    batches = tuple(chosen.get("ROOFLINE_MODEL_BATCH", ()))
    if not batches:
        return {}
    batches = tuple(dict.fromkeys((*batches, MODEL_ROOF_ROWS)))
    m = params.model_decode()
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    layers = [(m.hidden, q), (m.hidden, kv), (q, m.hidden), (m.hidden, m.intermediate), (m.intermediate, m.hidden)]
    return {params.MODEL_DTYPE: (list(dict.fromkeys(layers)), batches)}


def roof_shapes(chosen: Mapping[str, tuple]) -> list[tuple[int, int]]:
    """The (n, batch) GEMMs the compute roof is timed at beside the square one (:func:`point_shapes`)."""
    return point_shapes([n for var in REGIME_N.values() for n in chosen.get(var, ())], chosen.get("ROOFLINE_BATCH", ()))


def _steps(chosen: Mapping[str, tuple], grid: Mapping[str, Sequence[int]]) -> tuple[dict, dict]:
    """Build every chosen step; the rest of the grid keeps why not: ({key: step}, {key: Skipped or Failed})."""
    points: dict[tuple[str, int, int], Outcome] = {}
    steps = {}
    for regime, var in REGIME_N.items():
        for n in grid.get(var, ()):
            for b in grid.get("ROOFLINE_BATCH", ()):
                key = (regime, n, b)
                if n not in chosen.get(var, ()) or b not in chosen.get("ROOFLINE_BATCH", ()):
                    points[key] = Skipped(f"not chosen this run ({var}, ROOFLINE_BATCH)")
                    continue
                built = attempt(lambda n=n, b=b, regime=regime: decode_step(n, b, SUITE.numpy, regime))
                if built.ok:
                    steps[key] = built.value
                else:
                    points[key] = built
    return steps, points


def _judge(measured: Mapping[tuple, DecodeMeasurement], hw: Hardware | None, llc: tuple[int, str]) -> dict:
    """Each measured point with its fraction of this run's roof and its guards: {key: Measured(Timed)}."""
    threads = guards.blas_threads_below_cores(blas_threads(), cpu_count())
    points = {}
    for key, m in measured.items():
        regime, n, b = key
        label = f"{'cache-resident ' if regime == 'cache' else ''}n={n} batch={b}"
        warnings = list(threads)
        fraction = None
        if regime == "dram":
            warnings += guards.working_set_fits_llc(m.pool_bytes, m.llc_bytes, label)
            warnings += guards.llc_overridden(m.llc_bytes, llc[1])
        if hw is not None:
            # a cache-resident step beats the DRAM roof by design: only the DRAM steps answer to it
            if regime == "dram":
                warnings += guards.above_ceiling(m.gbps, hw.bandwidth / 1e9, f"{label} bandwidth", "GB/s")
                fraction = roofline_fraction(m.gflops * 1e9, hw, gemm_intensity(n, b, m.bytes_per_param), SUITE.name)
            warnings += guards.above_ceiling(m.gflops, hw.peak(SUITE.name) / 1e9, f"{label} FLOP rate", "GFLOP/s")
        points[key] = Measured(Timed(m, fraction, tuple(warnings)))
    return points


def _noisy(points: Mapping[tuple, Outcome], crossover: Outcome) -> tuple[str, ...]:
    """One line naming every timed step of the run (point or sweep batch) whose samples spread beyond the
    noise threshold: asv's output carried one line a step (more than a dozen in a run here)."""
    spreads = []
    for (regime, n, b), p in sorted(points.items()):
        if p.ok:
            spreads.append(
                (f"{'cache-resident ' if regime == 'cache' else ''}n={n} batch={b}", p.value.measurement.spread)
            )
    if crossover.ok:
        spreads += [(f"sweep n={m.n} batch={m.batch}", m.spread) for m in crossover.value.points]
    return tuple(guards.noisy_points(spreads))


def measure_run(
    grid: Mapping[str, Sequence[object]],
    sample_s: float = 1.5,
    chosen: Mapping[str, tuple] | None = None,
    sweep: tuple[int, Sequence[int]] | None = None,
    progress: Callable[..., Any] | None = None,
) -> RunState:
    """Measure everything this run's benchmarks read, once (see the module's docstring).

    ``grid``: benchmarks/common.py's GRID; the variables' choices (``chosen``: given instead, as the live
    report does) must lie in it (BadInput otherwise). ``sweep``: the crossover sweep's (n, batches)
    (default: ROOFLINE_SWEEP_N, 1..1024). ``progress``: a bar for the run's turns, made as
    ``progress(total=...)`` (tqdm's interface; the caller shows it). When the sample before measuring
    finds other threads runnable, the BLAS runs on the cores they leave
    (:func:`~roofline.model.conditions.blas_threads_for`) and the run says so: it is flagged.
    """
    chosen = params.chosen(grid) if chosen is None else chosen
    sweep = sweep or (params.sweep_n(), SWEEP_BATCHES)
    gemm_n, llc = params.gemm_n(), llc_bytes()
    before = sample_cpu(sample_s)
    cores = blas_threads() or cpu_count()
    threads = blas_threads_for(cores, before.run_queue)
    watch = Watch(replace(before, blas_threads=threads, cores=cores))
    with blas_limit(threads if threads < cores else None):
        state = _measure(chosen, grid, sweep, gemm_n, llc, watch, progress)
    sizes = state["ceilings"].value.gemm_sizes if state["ceilings"].ok else {}
    gemm_n = gemm_n or sizes.get(SUITE.numpy) or default_gemm_n(SUITE.numpy)
    return RunState(chosen, llc[0], llc[1], sweep[0], blas_threads=threads, gemm_n=gemm_n, **state)


#: The pass in which likwid-bench referees the cache levels (DRAM's and the FMA peaks': every pass, each
#: referee's figure its fastest run that had the cores to itself). Each likwid-bench run sleeps a second
#: calibrating its clock: 18 runs cost a run 23 s of its 96 here. DRAM moves within seconds on this VM and its
#: referee stands beside every pass of the points and the ceilings; a peak timed once read half its rate in
#: one run on the Xeon (149 GFLOP/s, 298 in another), so it has three tries; the caches move with the cores'
#: share, which the contention watch checks.
REFEREE_PASS = 1


def _turns(timed, ceilings, referee, compute, sweeping, levels, i: int) -> tuple[tuple[str, Callable[[], None]], ...]:
    """Pass ``i`` over the parts: the ceilings (their read kernels first) right after the points, since this
    machine's DRAM moves within seconds; each referee right beside the parts it referees: DRAM's after the
    ceilings (whose read kernels make the DRAM roof) and the FMA peaks' after it, every pass, the caches'
    after the levels, in :data:`REFEREE_PASS` only."""
    others = i == REFEREE_PASS
    return (
        ("points", timed.turn),
        ("ceilings", ceilings.turn),
        ("DRAM referee", referee.turn_of(referee.dram)),
        ("peak referee", referee.turn_of(referee.peaks)),
        ("compute roofs", compute.turn),
        ("crossover sweep", sweeping.turn),
        ("level sweep", levels.turn),
        *((("cache referees", referee.turn_of(referee.caches)),) if others else ()),
    )


def _passes(parts, progress: Callable[..., Any] | None) -> None:
    """Every part's turns, :func:`passes` times (:func:`_turns`), each once the last turn's BLAS workers are
    asleep (they would spin beside this one's threads)."""
    every = [_turns(*parts, i) for i in range(passes())]
    bar = progress(total=sum(map(len, every))) if progress else None
    try:
        for i, turns in enumerate(every):
            for label, turn in turns:
                if bar is not None:
                    bar.set_postfix_str(f"{label}, pass {i + 1} of {len(every)}")
                settle()
                turn()
                if bar is not None:
                    bar.update()
    finally:
        if bar is not None:
            bar.close()


def _measure(chosen, grid, sweep, gemm_n: int | None, llc: tuple[int, str], watch: Watch, progress=None) -> dict:
    watch.start()
    steps, points = _steps(chosen, grid)
    timed, ceilings = _Points(steps), _Ceilings(gemm_n, roof_shapes(chosen), chosen.get("ROOFLINE_N", ()))
    sweeping = _Sweep(*sweep)
    referee, compute, levels = _Referee(), _Compute(gemm_n, model_shapes(chosen)), _Levels()
    parts = (timed, ceilings, referee, compute, sweeping, levels)
    try:
        _passes(parts, progress)
        state: dict = {part.name: part.outcome() for part in reversed(parts)}
    finally:
        for part in parts:
            part.close()
    measured = state.pop("points")
    if not measured.ok:
        points.update({key: measured for key in steps})
    else:
        c = state["ceilings"]
        referees = state["referees"].value if state["referees"].ok else {}
        hw = roofs(c.value.bandwidth_gbps, c.value.peak_gflops, referees) if c.ok else None
        points.update(_judge(measured.value, hw, llc))
    state["points"] = points
    state["warnings"] = tuple(w for part in parts for w in part.warnings) + _noisy(points, state["crossover"])
    figures = [p.value.measurement for p in points.values() if p.ok]
    state["conditions"] = watch.stop(flat_timing([m.work for m in figures]))
    return state
