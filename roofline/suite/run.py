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

from .. import host
from ..errors import BackendUnavailable, BadInput, KernelMismatch
from ..host import blas_summary, blas_threads, cache_topology, cpu_count, llc_bytes
from ..measure.ceilings import (
    ARRAYS_MOVED,
    BANDWIDTH_RUNS,
    GEMM_RUNS,
    STREAM_ROUND_S,
    CeilingRounds,
    default_gemm_n,
    fastest_gemms,
    point_shapes,
    read_roof,
)
from ..measure.compute import COMPUTE_ROUND_S, LINEAR_DTYPES, TORCH_DTYPES, ComputeRounds
from ..measure.contention import Watch, blas_limit, sample_cpu
from ..measure.cuda_ceilings import GEMM_N as GPU_GEMM_N
from ..measure.cuda_ceilings import CudaCeilingRounds
from ..measure.levels import ROOF_KERNEL, LevelRounds, capacities
from ..measure.likwid import REFEREE_OUTER, RefereeRounds, referee_sizes
from ..measure.numpy_step import decode_step
from ..measure.step import MIN_TOTAL_S, DecodeMeasurement, StepRounds
from ..measure.sweep import SWEEP_BATCHES, SWEEP_REPEATS, SweepRounds
from ..measure.timing import settle
from ..model import guards
from ..model.arithmetic import gemm_intensity, predicted_crossover, roofline_fraction
from ..model.conditions import Conditions, blas_threads_for, flat_timing
from ..model.dtypes import SUITE, by_numpy
from ..model.hardware import Hardware
from ..model.hierarchy import CEILING_KERNEL, LevelRoof, roof_kernel
from ..model.knee import Knee
from ..model.llm import ModelShape
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
    """The crossover sweep's knee (a batch) and the points it was fitted to, every round's samples pooled;
    ``knee``: the fit itself (None in a state pickled before it was kept)."""

    batch: float
    points: tuple[DecodeMeasurement, ...] = ()
    knee: Knee | None = None


#: What a state pickled before a part existed says of it.
BEFORE = Skipped("not in this run (a state from before it)")
#: What a roof part not asked for (:class:`RoofAsk`) says of itself.
NOT_ASKED = "not asked for"


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
        return None if hw is None else predicted_crossover(hw.peak_flops.get(SUITE.name), hw.bandwidth, SUITE.bytes)


def roofs(
    bandwidth_gbps: Mapping[str, float],
    peak_gflops: Mapping[str, float],
    referees: Mapping[str, float] | None = None,
    source: str = "measured in this run",
) -> Hardware | None:
    """The Hardware of recorded ceilings (GB/s per STREAM kernel, GFLOP/s per numpy dtype); None without both.

    The roof is :func:`~roofline.model.hierarchy.roof_kernel`'s: read, or add in a state from before read;
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
    return Hardware(platform.node() or "this machine", peaks, roof * 1e9, source=source)


def with_compute(hw: Hardware, compute: Outcome) -> Hardware:
    """``hw`` with the torch compute roofs of ``compute`` (:class:`_Compute`'s outcome) beside its GEMMs': each
    dtype's roof the fastest of the two (a model's fp32 layers in torch against numpy's fp32 GEMM)."""
    if not compute.ok:
        return hw
    peaks = dict(hw.peak_flops)
    for dtype, o in compute.value.items():
        if o.ok:
            peaks[dtype] = max(peaks.get(dtype, 0.0), o.value.gflops * 1e9)
    return replace(hw, peak_flops=peaks)


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

    def __init__(
        self,
        gemm_n: int | None,
        shapes: Sequence[tuple[int, int]] = (),
        gemv: Sequence[int] = (),
        kinds: tuple[str, ...] = tuple(ARRAYS_MOVED),
        dtypes: tuple[str, ...] = ("float32", "float64"),
    ):
        super().__init__(lambda: CeilingRounds(dtypes, gemm_n=gemm_n, kinds=kinds, shapes=shapes, gemv=gemv))

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

    def __init__(self, asked: bool = True):
        #: the roofs by where they bound the run's figures: DRAM, the FMA peaks, the cache levels
        self.dram: tuple[str, ...] = ()
        self.peaks: tuple[str, ...] = ()
        self.caches: tuple[str, ...] = ()
        if not asked or not params.referee():
            self.warnings, self.timer = [], None
            self.stopped = Skipped("the referees are off (ROOFLINE_REFEREE=off)" if asked else NOT_ASKED)
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

    def __init__(
        self,
        gemm_n: int | None,
        linear: Mapping[str, tuple[list, tuple[int, ...]]] | None = None,
        dtypes: Sequence[str] = TORCH_DTYPES,
    ):
        if not dtypes and not linear:
            self.warnings, self.timer, self.stopped = [], None, Skipped(NOT_ASKED)
            return
        super().__init__(lambda: ComputeRounds(dtypes, n=gemm_n, linear=linear))

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
        return Crossover(float(s.knee.batch), tuple(s.points), s.knee)


#: Rounds of the level sweep in each pass: three in all, each size's figure their median (five at one
#: moment). At two a pass it took 9.5 s of a run's 96 here.
LEVEL_PASS_ROUNDS = 1


class _Levels(Part):
    """The working-set sweep of the memory levels in rounds (:class:`~roofline.measure.levels.LevelRounds`),
    :data:`LEVEL_PASS_ROUNDS` in each of the run's passes: {level: (GB/s, aggregate bytes)}; without
    numba, or switched off (``ROOFLINE_LEVELS=off``), it keeps why (skipped). Its threads end with it."""

    name = "levels"

    def __init__(self, asked: bool = True):
        if not asked or not params.levels():
            self.warnings, self.timer = [], None
            self.stopped = Skipped("the level sweep is off (ROOFLINE_LEVELS=off)" if asked else NOT_ASKED)
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


def model_linear(
    shape: ModelShape, dtype: str, batches: Sequence[int]
) -> dict[str, tuple[list[tuple[int, int]], tuple[int, ...]]]:
    """A model's layers as (k, out) weights (q, k and v, o, the MLP's gate and up, its down; not the output
    head) at each of ``batches`` and :data:`MODEL_ROOF_ROWS`, in ``dtype``: the F.linear its bound's compute
    roof is timed at (:class:`RoofAsk`'s ``linear``); none without batches or in a dtype F.linear is not timed in."""
    if not batches or dtype not in LINEAR_DTYPES:
        return {}
    rows = tuple(dict.fromkeys((*batches, MODEL_ROOF_ROWS)))
    m = shape
    q, kv = m.heads * m.head_dim, m.kv_heads * m.head_dim
    layers = [(m.hidden, q), (m.hidden, kv), (q, m.hidden), (m.hidden, m.intermediate), (m.intermediate, m.hidden)]
    return {dtype: (list(dict.fromkeys(layers)), rows)}


def model_shapes(chosen: Mapping[str, tuple]) -> dict[str, tuple[list[tuple[int, int]], tuple[int, ...]]]:
    """models.ModelDecode's layers (:func:`model_linear`) at each batch this run chose for it, in the dtype it
    decodes in (none where the run chose no model batch, as the live report)."""
    batches = tuple(chosen.get("ROOFLINE_MODEL_BATCH", ()))
    return model_linear(params.model_decode(), params.MODEL_DTYPE, batches) if batches else {}


def roof_shapes(chosen: Mapping[str, tuple]) -> list[tuple[int, int]]:
    """The (n, batch) GEMMs the compute roof is timed at beside the square one (:func:`point_shapes`)."""
    return point_shapes([n for var in REGIME_N.values() for n in chosen.get(var, ())], chosen.get("ROOFLINE_BATCH", ()))


class _CudaCeilings(Part):
    """A GPU's ceilings in rounds (:class:`~roofline.measure.cuda_ceilings.CudaCeilingRounds`): the device copy
    and a square GEMM per dtype, each roof its fastest round's median: a
    :class:`~roofline.measure.ceilings.Ceilings`. BackendUnavailable where torch-cuda cannot run here."""

    name = "ceilings"

    def __init__(self, dtypes: Sequence[str], gemm_n: int | None):
        super().__init__(lambda: CudaCeilingRounds(tuple(dtypes), gemm_n or GPU_GEMM_N))

    def turn(self) -> None:
        self._time()

    def figures(self, timer):
        return timer.ceilings()


#: The backends :func:`measure_roofs` measures: this CPU through numpy and torch, or a CUDA GPU through torch.
ROOF_BACKENDS = ("cpu", "torch-cuda")


@dataclass(frozen=True)
class RoofAsk:
    """Which of this machine's roofs :func:`measure_roofs` measures, and at what.

    ``kinds``: the bandwidth kernels (with ``read``: the DRAM roof is the fastest honest read kernel, ``read``
    or a batch-1 GEMV of ``gemv``, :func:`~roofline.measure.ceilings.read_roof`); ``dtypes``: numpy's GEMM
    ceilings, each also timed at ``shapes`` ((n, batch) of decode points), square at ``gemm_n`` (None: the
    sizes :func:`~roofline.measure.ceilings.climb` keeps); ``compute``: the torch dtypes whose compute roofs are
    timed, and ``linear`` a model's layers timed as F.linear (:func:`model_linear`); ``levels``: the memory
    levels' working-set sweep; ``referee``: likwid-bench beside each roof. ``backend`` "torch-cuda": a GPU's
    ceilings instead (copy bandwidth, a GEMM in each of ``gpu_dtypes``), nothing else.
    """

    kinds: tuple[str, ...] = tuple(ARRAYS_MOVED)
    dtypes: tuple[str, ...] = ("float32", "float64")
    gemm_n: int | None = None
    shapes: tuple[tuple[int, int], ...] = ()
    gemv: tuple[int, ...] = ()
    compute: tuple[str, ...] = ()
    linear: Mapping[str, tuple[list, tuple[int, ...]]] = field(default_factory=dict)
    levels: bool = False
    referee: bool = False
    backend: str = "cpu"
    gpu_dtypes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.backend not in ROOF_BACKENDS:
            raise BadInput(f"unknown roof backend {self.backend!r} (use {', '.join(ROOF_BACKENDS)})")


def run_ask(chosen: Mapping[str, tuple], gemm_n: int | None) -> RoofAsk:
    """The roofs an asv run measures (:func:`measure_run`): every one, at the sizes of its chosen points."""
    return RoofAsk(
        gemm_n=gemm_n,
        shapes=tuple(roof_shapes(chosen)),
        gemv=tuple(chosen.get("ROOFLINE_N", ())),
        compute=TORCH_DTYPES,
        linear=model_shapes(chosen),
        levels=True,
        referee=True,
    )


@dataclass(frozen=True)
class MachineRoofs:
    """This machine's roofs as :func:`measure_roofs` measured them, each part an
    :data:`~roofline.outcome.Outcome` as :class:`RunState`'s: ``ceilings`` (:class:`RunRoofs` on the CPU, a
    :class:`~roofline.measure.ceilings.Ceilings` on a GPU), ``compute``, ``levels``, ``referees``."""

    ceilings: Outcome
    compute: Outcome = Skipped(NOT_ASKED)
    levels: Outcome = Skipped(NOT_ASKED)
    referees: Outcome = Skipped(NOT_ASKED)
    warnings: tuple[str, ...] = ()

    @property
    def hardware(self) -> Hardware | None:
        """The roofs as one Hardware: the DRAM roof and every compute roof (numpy's GEMMs, each the faster of it
        and its referee; torch's dtypes), with this machine's RAM as memory (a GPU's: its own); None without
        a DRAM roof and a compute roof."""
        if not self.ceilings.ok:
            return None
        c = self.ceilings.value
        if not isinstance(c, RunRoofs):
            return c.hardware
        name = platform.node() or "this machine"
        source = f"measured on {name}: read bandwidth, the fastest GEMM ({blas_summary()}); memory: total RAM"
        hw = roofs(c.bandwidth_gbps, c.peak_gflops, self.referees.value if self.referees.ok else {}, source)
        return None if hw is None else replace(with_compute(hw, self.compute), memory_bytes=host.total_memory_bytes())

    def require(self) -> Hardware:
        """:attr:`hardware`, or what stopped it raised (KernelMismatch: failed; BackendUnavailable: skipped)."""
        self.ceilings.get()
        hw = self.hardware
        if hw is None:
            raise KernelMismatch("the ceilings gave no DRAM roof and compute roof")
        return hw


class RoofRounds:
    """The roof parts of a run (:class:`RoofAsk`): the ceilings (CPU or GPU), their referee, the torch dtypes'
    compute roofs, the level sweep, each a :class:`Part` that times one round a turn. :func:`measure_run` times
    them between its points and its sweep; :func:`measure_roofs` alone; an engine's run (:meth:`turn`) between
    its own rounds."""

    def __init__(self, ask: RoofAsk):
        if ask.backend == "torch-cuda":
            self.ceilings: Part = _CudaCeilings(ask.gpu_dtypes, ask.gemm_n)
        else:
            self.ceilings = _Ceilings(ask.gemm_n, ask.shapes, ask.gemv, ask.kinds, ask.dtypes)
        cpu = ask.backend == "cpu"
        self.referee = _Referee(cpu and ask.referee)
        self.compute = _Compute(ask.gemm_n, ask.linear if cpu else None, ask.compute if cpu else ())
        self.levels = _Levels(cpu and ask.levels)
        self.rounds = 0

    @property
    def parts(self) -> tuple[Part, ...]:
        return (self.ceilings, self.referee, self.compute, self.levels)

    def turn(self) -> None:
        """One pass over the parts (:func:`_turns`), each once the last turn's BLAS workers are asleep."""
        for _label, turn in _turns(self, self.rounds):
            settle()
            turn()
        self.rounds += 1

    def hardware_now(self) -> Hardware:
        """The Hardware of the ceilings' rounds timed so far, the parts kept for more; what stopped them raised
        (BadInput before the first round)."""
        timer = self.ceilings.timer
        if timer is None:
            (self.ceilings.stopped or Failed("never measured")).get()
        return timer.ceilings().hardware

    def result(self) -> MachineRoofs:
        """Every part's rounds pooled (their operands go)."""
        got = {part.name: part.outcome() for part in reversed(self.parts)}
        warnings = tuple(w for part in self.parts for w in part.warnings)
        return MachineRoofs(got["ceilings"], got["compute"], got["levels"], got["referees"], warnings)

    def close(self) -> None:
        for part in self.parts:
            part.close()


def measure_roofs(ask: RoofAsk | None = None, progress: Callable[..., Any] | None = None) -> MachineRoofs:
    """This machine's roofs, the one way every command measures them: the parts ``ask`` names (default: the
    CPU's ceilings), in :func:`passes` rounds (:func:`_passes`, as :func:`measure_run` times them), each roof its
    fastest round's median of the fastest honest kernel (:attr:`~roofline.measure.ceilings.Bandwidth.roof`,
    :func:`~roofline.measure.ceilings.read_roof`, :func:`~roofline.measure.ceilings.fastest_gemms`).
    ``progress``: as :func:`measure_run`'s. The contention watch is the caller's
    (:func:`~roofline.measure.contention.watched`)."""
    rounds = RoofRounds(ask or RoofAsk())
    try:
        _passes([_turns(rounds, i) for i in range(passes())], progress)
        return rounds.result()
    finally:
        rounds.close()


def engine_roofs(gemm_n: int | None) -> RoofRounds:
    """The roofs an engine's run times in its own rounds where no run of its asv run left them
    (:func:`~roofline.measure.engine_decode.measure_engine_decode`): the DRAM roof (the read kernel) and the fp32
    GEMM ceiling (at ``gemm_n``), a turn of them per engine round."""
    return RoofRounds(RoofAsk(kinds=(CEILING_KERNEL,), dtypes=(SUITE.numpy,), gemm_n=gemm_n))


def model_roofs(shape: ModelShape, dtype: str, batches: Sequence[int]) -> MachineRoofs:
    """The roofs a real model's bound divides by, measured here and now (:func:`measure_roofs`): the DRAM roof
    (the read kernel), numpy's fp32 GEMM ceiling and the model's own layers as F.linear in ``dtype`` at its
    ``batches`` (:func:`model_linear`), the compute roof the run times for models.ModelDecode. ``roofline decode
    --measure`` and models.ModelDecode where no run of its asv run left its roofs."""
    ask = RoofAsk(
        kinds=(CEILING_KERNEL,),
        dtypes=(SUITE.numpy,),
        gemm_n=params.gemm_n(),
        linear=model_linear(shape, dtype, batches),
    )
    return measure_roofs(ask)


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


Turns = tuple[tuple[str, Callable[[], None]], ...]


def _turns(roofs: RoofRounds, i: int, timed: Part | None = None, sweeping: Part | None = None) -> Turns:
    """Pass ``i`` over the parts: the ceilings (their read kernels first) right after the points, since this
    machine's DRAM moves within seconds; each referee right beside the parts it referees: DRAM's after the
    ceilings (whose read kernels make the DRAM roof) and the FMA peaks' after it, every pass, the caches'
    after the levels, in :data:`REFEREE_PASS` only. A run without points or a sweep (:func:`measure_roofs`)
    times its roofs in the same order."""
    others = i == REFEREE_PASS
    referee = roofs.referee
    turns = (
        ("points", timed.turn if timed is not None else None),
        ("ceilings", roofs.ceilings.turn),
        ("DRAM referee", referee.turn_of(referee.dram)),
        ("peak referee", referee.turn_of(referee.peaks)),
        ("compute roofs", roofs.compute.turn),
        ("crossover sweep", sweeping.turn if sweeping is not None else None),
        ("level sweep", roofs.levels.turn),
        *((("cache referees", referee.turn_of(referee.caches)),) if others else ()),
    )
    return tuple((label, turn) for label, turn in turns if turn is not None)


def _passes(every: Sequence[Turns], progress: Callable[..., Any] | None) -> None:
    """Each pass's turns (:func:`_turns`), each once the last turn's BLAS workers are asleep (they would spin
    beside this one's threads)."""
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
    timed, machine, sweeping = _Points(steps), RoofRounds(run_ask(chosen, gemm_n)), _Sweep(*sweep)
    parts = (timed, machine.ceilings, machine.referee, machine.compute, sweeping, machine.levels)
    try:
        _passes([_turns(machine, i, timed, sweeping) for i in range(passes())], progress)
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
