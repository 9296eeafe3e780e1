"""One run's measurement (roofline.suite.run) and what the benchmarks read of it (suite.harness).

Measured once for the module at tiny sizes: every figure of a point comes from one timing, every
derived figure from the one set of ceilings the ceiling benchmarks record.
"""

from __future__ import annotations

import pickle
import re
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from roofline.errors import BackendUnavailable, BadInput, KernelMismatch
from roofline.measure.step import DecodeMeasurement
from roofline.model.arithmetic import attainable, crossover_batch, gemm_intensity
from roofline.model.hardware import Hardware
from roofline.model.hierarchy import LevelRoof
from roofline.outcome import Failed, Measured, Skipped
from roofline.suite import harness, params, run

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.common import GRID  # noqa: E402

SMALL = {
    "ROOFLINE_N": "256",
    "ROOFLINE_BATCH": "1,8",
    "ROOFLINE_CACHE_N": "256",
    "ROOFLINE_SWEEP_N": "256",
    "ROOFLINE_LLC_BYTES": "1M",
    "ROOFLINE_GEMM_N": "256",
    # each likwid-bench run sleeps 1 s calibrating its clock: the session's one `roofline bench` runs the
    # referees for real (test_bench_faults.test_bench_runs_publishes_reports_and_plots)
    "ROOFLINE_REFEREE": "off",
    # the level sweep was half of this measurement: that run measures the levels too
    # (test_suite_asv.test_the_run_measures_each_memory_level_once)
    "ROOFLINE_LEVELS": "off",
}


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        for k, v in SMALL.items():
            mp.setenv(k, v)
        mp.setenv("ROOFLINE_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        state = run.measure_run(GRID, sample_s=0.2)
    return state  # the variables as they were: no test of the module sees them by its place in the order


def test_every_chosen_point_is_measured_and_the_rest_say_why_not(measured):
    ok = {k for k, p in measured.points.items() if isinstance(p, Measured)}
    assert ok == {("dram", 256, 1), ("dram", 256, 8), ("cache", 256, 1), ("cache", 256, 8)}
    assert isinstance(measured.points[("dram", 2048, 64)], Skipped)
    assert "not chosen" in measured.points[("dram", 2048, 64)].reason
    assert measured.chosen["ROOFLINE_N"] == (256,) and measured.sweep_n == 256
    with pytest.raises(BackendUnavailable, match="not chosen"):
        harness.decode_point(measured, "dram", 2048, 64)


def test_one_timing_per_point_gbps_times_intensity_is_gflops(measured):
    for (regime, n, b), p in measured.points.items():
        if not p.ok:
            continue
        point = harness.decode_point(measured, regime, n, b)
        m = p.value.measurement
        assert point.gflops == harness.tracked(2 * n * n * b / m.seconds / 1e9)  # as asv records it
        assert point.gbps * gemm_intensity(n, b, 4) == pytest.approx(point.gflops, rel=1e-3)  # 4 digits each
        assert isinstance(point.gflops, float) and isinstance(point.gbps, float)
        assert point.calls_per_sample == m.calls_per_sample >= 1


def test_the_run_measures_each_torch_dtypes_compute_roof_or_says_why_not(measured):
    assert measured.compute.ok and set(measured.compute.value) == {"bf16", "fp16", "int8"}
    for dtype, roof in measured.compute.value.items():
        if isinstance(roof, Skipped):
            with pytest.raises(BackendUnavailable, match=re.escape(roof.reason)):
                harness.compute_peak(measured, dtype)
        else:
            assert harness.compute_peak(measured, dtype) == harness.tracked(roof.value.gflops) > 0


def test_the_roof_is_read_or_add_in_a_state_from_before_read():
    both = run.roofs({"copy": 20.0, "add": 30.0, "triad": 25.0, "read": 36.0}, {"float32": 300.0})
    before = run.roofs({"copy": 20.0, "add": 30.0, "triad": 25.0}, {"float32": 300.0})
    assert both.bandwidth == 36e9 and before.bandwidth == 30e9
    assert run.roofs({"copy": 20.0}, {"float32": 300.0}) is None


def test_one_set_of_ceilings_for_every_derived_figure(measured):
    hw = measured.hardware
    roof = harness.bandwidth_gbps(measured, "read")  # the roof: a decode step reads its weights
    peak = harness.gemm_gflops(measured, "float32")
    # the run's figures, as asv records them (4 significant digits)
    assert harness.tracked(hw.bandwidth / 1e9) == roof and harness.tracked(hw.peak("fp32") / 1e9) == peak
    assert harness.predicted_crossover(measured) == harness.tracked(crossover_batch(hw, 4, "fp32"))
    for b in (1, 8):
        point = harness.decode_point(measured, "dram", 256, b)
        want = point.gflops * 1e9 / attainable(hw, gemm_intensity(256, b, 4), "fp32")
        assert harness.roofline_fraction(point) == pytest.approx(want, rel=1e-3)
    with pytest.raises(KernelMismatch, match="not a DRAM point"):
        harness.roofline_fraction(harness.decode_point(measured, "cache", 256, 1))


def test_the_run_records_its_conditions_and_sizes(measured):
    c = measured.conditions
    assert c.reference_drift is not None and c.reference_drift > 0
    if c.lost_share is not None:  # Linux
        assert 0.0 <= harness.quietness(measured) <= 1.0
    assert harness.sweep_n(measured) == 256.0 and harness.gemm_n(measured) == 256.0
    assert harness.llc_bytes(measured) == 2.0**20
    assert harness.blas_threads(measured) >= 1
    assert harness.observed_crossover(measured) > 0


def test_the_level_roofs_reach_asv_as_the_harness_gives_them(measured):
    """Each level's roof (4 significant digits) and size, as asv records them, and a level the machine
    lacks named. This module's run has the level sweep off; the session's one `roofline bench` measures
    the levels (test_suite_asv.test_the_run_measures_each_memory_level_once)."""
    why = "the level sweep is off (ROOFLINE_LEVELS=off)"
    assert measured.levels == Skipped(why)
    with pytest.raises(BackendUnavailable, match=re.escape(why)):
        harness.level_entry(measured, "L1")
    figures = {"L1": (401.23456, 2**16), "L2": (210.98765, 2**21), "DRAM": (31.55555, 2**26)}
    roofs = {level: LevelRoof(level, size, gbps, "load") for level, (gbps, size) in figures.items()}
    swept = replace(measured, levels=Measured(roofs))
    for level, (gbps, size) in figures.items():
        assert harness.level_entry(swept, level) == (harness.tracked(gbps), size)
        assert type(harness.level_entry(swept, level)[0]) is float
    with pytest.raises(BackendUnavailable, match="no L9"):
        harness.level_entry(swept, "L9")


def test_the_levels_skip_without_numba_and_fail_on_a_wrong_kernel(measured):
    with pytest.raises(BackendUnavailable, match="numba is not installed"):
        harness.level_entry(replace(measured, levels=Skipped("numba is not installed")), "L1")
    with pytest.raises(KernelMismatch, match="wrong sum"):
        harness.level_entry(replace(measured, levels=Failed("a wrong sum")), "L1")


def test_the_state_pickles_for_asv(measured):
    again = pickle.loads(pickle.dumps(measured))
    assert again.points == measured.points and again.conditions == measured.conditions


def test_the_time_twin_builds_the_same_step_on_its_first_call(measured, monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    point = harness.decode_point(measured, "dram", 256, 8)
    twin = harness.decode_twin(point)
    out = twin()
    assert out.shape == (256, 8)
    assert harness.decode_twin(point).steps[point.key] is twin.steps[point.key]  # built once per process
    # back to back for ≥ 0.1 s a sample (a neighbour's scheduler slices average out), never fewer than the
    # measurement's own samples ran
    assert twin.calls == harness.twin_calls(point) >= point.calls_per_sample >= 1
    assert twin.calls * point.seconds >= harness.TWIN_SAMPLE_SECONDS


def test_a_twin_sample_lasts_a_tenth_of_a_second_or_the_measurements_own_sample():
    def twin_of(seconds, calls):
        return harness.twin_calls(harness.Point(("dram", 256, 1), seconds, 1.0, 1.0, calls))

    assert twin_of(1e-5, 500) == 10_000  # 5 ms samples of 10 µs steps: 0.1 s of them
    assert twin_of(1e-5, 20_000) == 20_000  # the measurement's samples were longer
    assert twin_of(0.3, 1) == 1  # one step lasts longer than 0.1 s


def test_one_call_of_a_time_twin_is_its_steps_back_to_back_and_its_clock_counts_per_step(monkeypatch):
    """asv times the twin with number = 1 and the twin's clock: its samples are seconds per step, of
    steps with nothing between them (asv-runner runs setup between calls when number > 1)."""
    from benchmarks.common import Benchmark

    ran = []
    monkeypatch.setattr(harness, "settle", lambda: ran.append("settled"))
    twin = harness._Twin(("test", 1), lambda: lambda: ran.append(1) or len(ran) - 1, None, calls=7)
    assert twin() == 7 and ran == ["settled"] + [1] * 7  # built, its check's BLAS workers asleep, then timed
    assert twin() == 14 and ran.count("settled") == 1
    monkeypatch.setattr(harness.time, "perf_counter", lambda: 70.0)
    assert twin.clock() == 10.0
    bench = Benchmark()
    bench.steps_back_to_back(twin, 7)
    assert (bench.number, bench.timer) == (1, twin.clock)

    class OldTwin:  # an older package's twin: one step a call, no clock; asv's number then
        def __call__(self):
            pass

    bench.steps_back_to_back(OldTwin(), 7)
    assert bench.number == 7 and bench.timer is not twin.clock


def test_a_reason_instead_of_a_state_skips_every_benchmark():
    with pytest.raises(NotImplementedError, match="no roofline.suite.harness"):
        harness.require("roofline at this commit has no roofline.suite.harness")
    with pytest.raises(NotImplementedError):
        harness.decode_point("skipped: why", "dram", 256, 1)


def test_failed_ceilings_fail_what_divides_by_them(measured):
    broken = run.RunState(
        measured.chosen, 1, "x", 256, measured.conditions, ceilings=Failed("the add kernel computed wrong values")
    )
    with pytest.raises(KernelMismatch, match="wrong values"):
        harness.bandwidth_gbps(broken, "add")
    with pytest.raises(KernelMismatch, match="wrong values"):
        harness.predicted_crossover(broken)


def test_a_choice_off_the_grid_is_one_line_naming_the_variable(monkeypatch):
    monkeypatch.setenv("ROOFLINE_N", "3000")
    with pytest.raises(BadInput, match=r"ROOFLINE_N: 3000 not in the suite's fixed grid \(256, 1024, 2048, 8192"):
        params.chosen(GRID)


def test_the_grid_is_read_without_importing_the_benchmarks():
    assert params.read_grid(ROOT / "benchmarks") == GRID
    assert params.read_grid(ROOT / "no-such-folder") is None


def test_an_older_package_skips_its_benchmarks_instead_of_failing():
    """benchmarks/ comes from the working tree, the package from the commit: what it lacks means skipped."""
    from asv_runner.benchmarks.mark import SkipNotImplemented

    from benchmarks import common

    # asv skips on SkipNotImplemented in setup and in a benchmark's body (a plain NotImplementedError
    # there fails it): a track that calls a function this commit lacks, say conditions' track_gemm_n
    absent = common._Guarded("roofline.no_such_module")
    with pytest.raises(SkipNotImplemented, match="no roofline.no_such_module"):
        getattr(absent, "anything")  # noqa: B009
    with pytest.raises(SkipNotImplemented, match=r"no roofline.suite.harness.no_such_function"):
        getattr(common.suite, "no_such_function")  # noqa: B009
    assert "no_such_function" in common.measured("no_such_function")  # setup_cache: a reason, not a failure
    with pytest.raises(NotImplementedError):
        harness.require(common.measured("no_such_function"))


def test_self_timed_steps_alone_are_measured_each_on_its_own(monkeypatch):
    from roofline.measure import step as step_module

    class SelfTimed:
        n, batch, dtype, regime, backend, itemsize, pool_bytes, llc_bytes = 64, 1, "float32", "dram", "x", 4, 0, 0
        flops, bytes_moved = 2.0 * 64 * 64, 4.0 * 64 * 66

        def time(self, repeats, warmup):
            from roofline.measure.timing import Timing

            return Timing(per_call=(1e-5,) * repeats, number=1, single_call=1e-5), "device"

    got = step_module.measure_steps([SelfTimed(), SelfTimed()])
    assert [m.seconds for m in got] == [1e-5, 1e-5]


def test_only_a_dram_step_beyond_the_dram_roof_is_warned_of():
    """A cache-resident step beats the DRAM roof by design; a DRAM step that does was measured in a cache."""
    hw = Hardware("box", {"fp32": 1e12}, 20e9)
    n, b, seconds = 1024, 1, 1024 * 1024 * 4 / 80e9  # reads its weights at 80 GB/s: 4× the roof
    points = {}
    for regime in ("dram", "cache"):
        m = DecodeMeasurement(
            n, b, "fp32", regime, seconds, 2 * n * n * b / seconds / 1e9, 80.0, 0.01, seconds, 10, 1,
            64 << 20, 8 << 20, bytes_per_param=4,
        )  # fmt: skip
        points[(regime, n, b)] = m
    judged = {key: p.value for key, p in run._judge(points, hw, (8 << 20, "measured")).items()}
    dram, cache = (judged[(r, n, b)].warnings for r in ("dram", "cache"))
    assert [w for w in dram if "bandwidth" in w and "4.00× the measured ceiling" in w], dram
    assert not [w for w in cache if "measured ceiling" in w], cache
    assert judged[("dram", n, b)].fraction is not None and judged[("cache", n, b)].fraction is None


def test_the_gemm_ceilings_are_measured_at_roofline_gemm_n(monkeypatch):
    seen = {}

    def stop(dtypes, **kwargs):
        assert dtypes == ("float32", "float64")
        seen.update(kwargs)
        raise BadInput("stopped after the call")

    monkeypatch.setattr(run, "CeilingRounds", stop)
    monkeypatch.setenv("ROOFLINE_GEMM_N", "512")
    ceilings = run._Ceilings(params.gemm_n())
    ceilings.turn()  # no rounds to time: the reason stays
    assert seen == {"gemm_n": 512, "kinds": ("copy", "add", "triad", "read"), "shapes": (), "gemv": ()}
    assert ceilings.outcome() == Failed("stopped after the call")


def test_a_ceiling_that_fails_in_a_later_round_reports_no_figure(monkeypatch):
    class Rounds:
        def __init__(self, dtypes, gemm_n, kinds, shapes=(), gemv=()):
            self.timed = 0

        def time(self, runs, gemm_runs, round_s):
            self.timed += 1
            if self.timed == 2:
                raise KernelMismatch("the add kernel computed wrong values")

        def ceilings(self):
            raise AssertionError("no figure from a failed round")

    monkeypatch.setattr(run, "CeilingRounds", Rounds)
    ceilings = run._Ceilings(None)
    for _ in range(run.PASSES):
        ceilings.turn()
    assert ceilings.outcome() == Failed("the add kernel computed wrong values") and not ceilings.warnings


def test_a_slow_round_moves_no_pooled_median():
    from roofline.measure.timing import Timing, pooled

    rounds = [Timing((1.0,) * 7, 3, 1.1), Timing((3.0,) * 7, 5, 3.0), Timing((1.02,) * 7, 4, 1.0)]
    t = pooled(rounds)
    assert len(t.per_call) == 21 and (t.number, t.single_call) == (3, 1.1)
    assert t.median == 1.02  # the slow round's seven samples sit above the median of twenty-one
    assert t.spread > 1.0  # and the spread says the moments differed
    with pytest.raises(BadInput):
        pooled([])


def test_step_rounds_pool_every_round_and_refuse_none(monkeypatch):
    from roofline.measure import step as step_module
    from roofline.measure.timing import Timing

    class Host:
        n, batch, dtype, regime, itemsize, pool_bytes, llc_bytes = 64, 1, "float32", "dram", 4, 0, 0
        flops, bytes_moved = 2.0 * 64 * 64, 4.0 * 64 * 66

    seconds = iter([1e-5, 9e-5, 1e-5])  # the second round ran at a slow moment

    def interleaved(fns, repeats, warmup, **kwargs):
        s = next(seconds)
        return [Timing((s,) * repeats, 2, s) for _ in fns]

    monkeypatch.setattr(step_module, "time_interleaved", interleaved)
    rounds = step_module.StepRounds([Host(), Host()], repeats=5)
    with pytest.raises(BadInput, match="no round"):
        rounds.measurements()
    for _ in range(3):
        rounds.time()
    got = rounds.measurements()
    assert rounds.rounds == 3 and [m.samples for m in got] == [15, 15]
    assert [m.seconds for m in got] == [1e-5, 1e-5] and all(m.calls_per_sample == 2 for m in got)


class _FakeStep:
    """What StepRounds and measurement() read of a host-timed step; ``pool`` stands for its weights."""

    def __init__(self, n=64, batch=1, dtype="float32"):
        self.n, self.batch, self.dtype, self.regime, self.itemsize = n, batch, dtype, "dram", 4
        self.pool_bytes, self.llc_bytes, self.pool = 0, 0, bytearray(16)
        self.flops, self.bytes_moved = 2.0 * n * n * batch, 4.0 * n * (n + 2 * batch)


def _fake_timing(monkeypatch, seconds=1e-5):
    from roofline.measure import step as step_module
    from roofline.measure.timing import Timing

    timed = []

    def interleaved(fns, repeats, warmup, **kwargs):
        timed.append([(id(f), getattr(f, "backend", None)) for f in fns])  # no reference kept
        return [Timing((seconds,) * repeats, 2, seconds) for _ in fns]

    monkeypatch.setattr(step_module, "time_interleaved", interleaved)
    return timed


def test_step_rounds_on_fresh_builds_pool_their_samples_and_let_each_builds_pools_go(monkeypatch):
    import gc
    import weakref

    from roofline.measure.step import StepRounds

    timed = _fake_timing(monkeypatch)
    first = _FakeStep()
    gone = weakref.ref(first)
    rounds = StepRounds([first], repeats=5)
    rounds.time()
    rounds.release()
    del first
    gc.collect()
    assert gone() is None  # released: the first build's pool is free before the next is built
    fresh = _FakeStep()
    rounds.time([fresh])
    assert timed[-1] == [(id(fresh), None)]  # the round timed the fresh build
    (m,) = rounds.measurements()
    assert m.samples == 10 and (m.n, m.batch, m.dtype, m.bytes_per_param) == (64, 1, "float32", 4)
    assert m.gflops == pytest.approx(2.0 * 64 * 64 / 1e-5 / 1e9)
    with pytest.raises(BadInput, match="same steps"):
        rounds.time([_FakeStep(n=128)])


@pytest.mark.parametrize("quick,passes", [("0", run.PASSES), ("1", run.QUICK_PASSES)])
def test_the_backend_grid_times_fresh_builds_in_every_round_and_a_later_failure_leaves_no_figure(
    monkeypatch, quick, passes
):
    """In each of the run's passes (a quick look's two); a step that fails in the last one has no figure."""
    monkeypatch.setenv("ROOFLINE_QUICK", quick)
    assert run.passes() == passes
    monkeypatch.setenv("ROOFLINE_BACKEND_N", "256")
    monkeypatch.setenv("ROOFLINE_BACKEND_BATCH", "1")
    timed = _fake_timing(monkeypatch)
    builds = []

    def build(backend, dtype, n, batch):
        builds.append((backend, dtype))
        if backend == "numpy" and dtype == "bf16":
            raise BackendUnavailable("numpy has no bf16")
        if (backend, dtype) == ("torch-cpu", "bf16") and builds.count((backend, dtype)) == passes:
            raise KernelMismatch("bf16 went wrong in the last round")
        step = _FakeStep(n, batch, dtype)
        step.backend = backend
        return step

    monkeypatch.setattr(harness, "build_step", build)
    monkeypatch.setattr(harness, "settle", lambda: timed.append("settle"))
    grid = harness.backend_grid(GRID)
    ok = {k: p for k, p in grid.items() if isinstance(p, Measured)}
    assert sorted(ok) == [("numpy", "fp32", 256, 1), ("torch-cpu", "fp32", 256, 1)]
    assert all(p.value.measurement.samples == 7 * passes for p in ok.values())  # every round's samples
    assert grid["torch-cpu", "bf16", 256, 1] == Failed("bf16 went wrong in the last round")
    assert grid["numpy", "bf16", 256, 1] == Skipped("numpy has no bf16")
    assert isinstance(grid["numpy", "fp32", 2048, 1], Skipped)  # not chosen
    # each round builds every step afresh, the backends one after another, never timed together
    assert builds.count(("numpy", "fp32")) == builds.count(("torch-cpu", "fp32")) == passes
    # each backend's round starts once the builds' checks and the last round's BLAS workers stop spinning
    assert timed[::2] == ["settle"] * 2 * passes
    timed = timed[1::2]
    assert len(timed) == 2 * passes and all(len({b for _, b in fns}) == 1 for fns in timed)
    assert [len(fns) for fns in timed] == [1, 2] * (passes - 1) + [1, 1]


WHY = {"built": "the sweep's GEMV is wrong", "timed": "the clock went backwards", "fitted": "no knee in these times"}


@pytest.mark.parametrize("where", list(WHY))
def test_a_sweep_that_cannot_be_built_timed_or_fitted_keeps_its_reason(monkeypatch, where):
    class Sweeping:
        rounds = 0

        def __init__(self, n, batches, repeats, min_total_s):
            if where == "built":
                raise KernelMismatch(WHY["built"])

        def time(self):
            Sweeping.rounds += 1
            if where == "timed" and Sweeping.rounds == 2:
                raise BadInput(WHY["timed"])

        def result(self):
            raise BadInput(WHY["fitted"])

    monkeypatch.setattr(run, "SweepRounds", Sweeping)
    sweeping = run._Sweep(256)
    for _ in range(run.PASSES):
        sweeping.turn()
    assert sweeping.outcome() == Failed(WHY[where]) and not sweeping.warnings and sweeping.timer is None
    assert Sweeping.rounds == {"built": 0, "timed": 2, "fitted": run.PASSES}[where]  # no round after a failed one


def test_an_absent_backend_skips_an_optional_part_and_stops_the_run_otherwise():
    """A part whose backend is absent here keeps why only when it is optional (the level sweep, the
    referee); the ceilings, the compute roofs and the sweep handle their own absences, so there it
    is a defect and reaches the caller."""

    def absent():
        raise BackendUnavailable("numba is not installed")

    part = run.Part(absent, optional=True)
    assert (part.timer, part.stopped) == (None, Skipped("numba is not installed"))
    part._time()  # nothing to time: no round, no error
    assert part.outcome() == Skipped("numba is not installed")
    with pytest.raises(BackendUnavailable, match="numba"):
        run.Part(absent)


LEVEL_WHY = {
    "unavailable": "numba is not installed",
    "built": "the compiled load kernel summed 1.0",
    "timed": "the compiled load kernel returned a wrong sum while timed",
}


@pytest.mark.parametrize("where", list(LEVEL_WHY))
def test_a_level_sweep_that_cannot_run_keeps_its_reason_and_ends_its_threads(monkeypatch, where):
    """Without numba the levels are skipped; a kernel wrong when built or in a later round fails
    them: no round after the failed one, and the sweep's threads end at once."""
    events = []

    class Levels:
        def __init__(self, kernel_names):
            if where == "unavailable":
                raise BackendUnavailable(LEVEL_WHY[where])
            if where == "built":
                raise KernelMismatch(LEVEL_WHY[where])
            events.append(f"made {kernel_names}")

        def time(self, rounds):
            events.append(f"timed {rounds}")
            if len(events) == 3:
                raise KernelMismatch(LEVEL_WHY[where])

        def result(self):
            raise AssertionError("no roofs from a failed round")

        def close(self):
            events.append("closed")

    monkeypatch.setattr(run, "LevelRounds", Levels)
    levels = run._Levels()
    for _ in range(run.PASSES):
        levels.turn()
    got = levels.outcome()
    levels.close()
    assert got == (Skipped if where == "unavailable" else Failed)(LEVEL_WHY[where]) and not levels.warnings
    per_round = f"timed {run.LEVEL_PASS_ROUNDS}"
    assert events == ([] if where != "timed" else ["made ('load',)", per_round, per_round, "closed"])


def test_the_points_the_ceilings_and_the_sweeps_take_turns_over_the_run(monkeypatch):
    """Points, ceilings, their referee, compute roofs, sweep, levels, theirs, three times: each point's samples,
    each ceiling's passes, each sweep batch's samples and each working set's samples come from three
    moments of the run, not from
    one; the ceilings' passes are split among their rounds (15 bandwidth passes and 6 GEMMs in all, as
    at one moment), and a sweep step's samples in a round add up to a third of a point's."""
    from roofline.measure import ceilings, step

    events = []
    monkeypatch.setattr(run.StepRounds, "time", lambda self: events.append("points"))
    monkeypatch.setattr(run.StepRounds, "measurements", lambda self: [])

    class Rounds:
        def __init__(self, dtypes, gemm_n, kinds, shapes=(), gemv=()):
            events.append("made")

        def time(self, runs, gemm_runs, round_s):
            events.append(f"ceilings {runs}+{gemm_runs} {round_s}s")

        def ceilings(self):
            events.append("pooled")
            raise BadInput("stop here")

    class Sweeping:
        def __init__(self, n, batches, repeats, min_total_s):
            events.append(f"sweep made n={n} {repeats}x {min_total_s:.4f}s")

        def time(self):
            events.append("sweep")

        def result(self):
            events.append("knee")
            raise BadInput("no knee")

    class Levels:
        def __init__(self, kernel_names):
            events.append(f"levels made {kernel_names}")

        def time(self, rounds):
            events.append(f"levels {rounds}x")

        def result(self):
            events.append("plateaus")
            raise BadInput("no plateau")

        def close(self):
            events.append("levels closed")

    monkeypatch.setattr(run, "CeilingRounds", Rounds)
    monkeypatch.setattr(run, "SweepRounds", Sweeping)

    class Compute:
        def __init__(self, dtypes, n, linear):
            events.append(f"compute made n={n}")

        def time(self, round_s):
            events.append(f"compute {round_s}s")

        skipped: dict = {}

        def roofs(self):
            events.append("compute pooled")
            return ()

    class Referee:
        def __init__(self, loads, peaks, threads):
            events.append(f"referee made {sorted(loads)} {peaks}")

        def time(self, roofs):
            events.append(f"referee {list(roofs)}")

        def figures(self):
            events.append("referee pooled")
            return {"DRAM": 1.0}

        def shared(self):
            return []

    monkeypatch.setattr(run, "LevelRounds", Levels)
    monkeypatch.setattr(run, "ComputeRounds", Compute)
    monkeypatch.setattr(run, "RefereeRounds", Referee)
    monkeypatch.setattr(run, "cache_topology", lambda: [])
    monkeypatch.setattr(run, "_steps", lambda chosen, grid: ({}, {}))
    monkeypatch.setattr(run, "settle", lambda: events.append("settle"))

    class Watch:
        def start(self):
            events.append("start")

        def stop(self, flat):
            events.append("stop")

    state = run._measure({}, {}, (256, run.SWEEP_BATCHES), None, (1 << 20, "test"), Watch())
    runs, gemm_runs = ceilings.BANDWIDTH_RUNS // run.PASSES, ceilings.GEMM_RUNS // run.PASSES
    per = f"ceilings {runs}+{gemm_runs} {ceilings.STREAM_ROUND_S}s"
    made = ["start", "made", "referee made ['DRAM', 'LLC'] ('fp32', 'fp64')"]
    made += ["compute made n=None", "levels made ('load',)", f"sweep made n=256 2x {step.MIN_TOTAL_S / 3:.4f}s"]
    # the level sweep: one round in each of the run's three passes (five at one moment)
    # and each turn starts once the last turn's BLAS workers have stopped spinning
    compute = f"compute {run.COMPUTE_ROUND_S}s"

    # the ceilings right after the points (DRAM moves within seconds); each roof's referee right beside the
    # parts that measure it: DRAM's after the ceilings and the peaks' after it, every pass; the cache levels'
    # after the level sweep, in the middle pass (each likwid-bench run sleeps a second)
    def turns(others):
        peaks = ["settle", "referee ['fp32', 'fp64']"]
        caches = ["settle", "referee ['LLC']"] * others
        out = ["settle", "points", "settle", per, "settle", "referee ['DRAM']", *peaks, "settle", compute]
        return out + ["settle", "sweep", "settle", "levels 1x", *caches]

    pooled = ["plateaus", "levels closed", "knee", "compute pooled", "referee pooled", "pooled"]
    assert run.REFEREE_PASS == 1
    assert events == made + turns(False) + turns(True) + turns(False) + pooled + ["stop"]
    # a part that cannot pool its rounds fails alone, saying why: the run and the other parts go on
    assert (state["ceilings"], state["crossover"], state["levels"]) == (
        Failed("stop here"),
        Failed("no knee"),
        Failed("no plateau"),
    )
    assert state["referees"] == Measured({"DRAM": 1.0}) and state["compute"] == Measured({})
    assert run.PASSES == 3 and ceilings.BANDWIDTH_RUNS // 3 * 3 == 15 and ceilings.GEMM_RUNS // 3 * 3 == 6


def test_asv_times_the_twins_in_as_many_rounds_as_the_run_times_its_points():
    """asv runs a time_ benchmark once per round, every benchmark of a round before the next: the
    twins' samples then come from as many moments of the asv run as the run's own points."""
    from benchmarks import backends, common, decode

    for cls in (decode.DecodeDRAM, decode.DecodeCacheResident, backends.BackendDecode):
        assert issubclass(cls, common.Benchmark) and cls.rounds == run.PASSES


def test_the_run_referees_its_roofs_or_says_why_not(measured):
    """likwid-bench's figures (GB/s at each level, GFLOP/s of the FMA peaks) reach asv as floats, or each
    referee benchmark is skipped with the reason. This module's run has them off; the session's one
    `roofline bench` runs them in the run's rounds (test_bench_faults.test_bench_runs_publishes_reports_and_plots)."""
    assert measured.referees == Skipped("the referees are off (ROOFLINE_REFEREE=off)")
    for roof in ("DRAM", "L1"):
        with pytest.raises(BackendUnavailable, match=re.escape(measured.referees.reason)):
            harness.referee(measured, roof)
    figures = {"L1": 401.23456, "DRAM": 31.98765, "fp32": 229.11111, "fp64": 114.55555}
    refereed = replace(measured, referees=Measured(figures))
    for roof, want in figures.items():
        value = harness.referee(refereed, roof)
        assert type(value) is float and value == harness.tracked(want) > 0
    assert harness.peak_referee(refereed, "float64") == harness.tracked(figures["fp64"]) == 114.6
    with pytest.raises(BackendUnavailable, match="no referee for L9"):
        harness.referee(refereed, "L9")


def test_the_referees_switched_off_are_skipped_saying_so(monkeypatch):
    def never(*args):
        raise AssertionError("no likwid-bench run when the referees are off")

    monkeypatch.setattr(run, "RefereeRounds", never)
    monkeypatch.setenv("ROOFLINE_REFEREE", "off")
    referee = run._Referee()
    referee.turn()
    assert referee.outcome() == Skipped("the referees are off (ROOFLINE_REFEREE=off)") and not referee.warnings


def test_the_level_sweep_switched_off_is_skipped_saying_so(monkeypatch):
    def never(*args, **kwargs):
        raise AssertionError("no level sweep when it is off")

    monkeypatch.setattr(run, "LevelRounds", never)
    monkeypatch.setenv("ROOFLINE_LEVELS", "off")
    levels = run._Levels()
    levels.turn()
    got = levels.outcome()
    levels.close()
    why = "the level sweep is off (ROOFLINE_LEVELS=off)"
    assert got == Skipped(why) and not levels.warnings
    s = run.RunState({}, 1, "test", 256, run.Conditions(), levels=got)
    with pytest.raises(BackendUnavailable, match=re.escape(why)):
        harness.level_entry(s, "L1")


@pytest.mark.parametrize("where", ["absent", "later round"])
def test_a_referee_that_cannot_run_keeps_why_and_a_later_failure_is_warned_of(monkeypatch, where):
    """No likwid-bench: skipped, saying why; one that stops after its first round: no figure from the
    rounds it ran, a warning, and the benchmarks skipped with the reason (the referee is not the suite's
    figure: the run goes on)."""
    timed = []

    class Referee:
        def __init__(self, loads, peaks, threads):
            if where == "absent":
                raise BackendUnavailable("likwid-bench is not installed")

        def time(self, roofs):
            timed.append(1)
            if len(timed) == 2:
                raise BackendUnavailable("likwid-bench load_x failed (exit 1): no topology")

        def figures(self):
            raise AssertionError("no figure from a stopped referee")

    monkeypatch.setattr(run, "RefereeRounds", Referee)
    referee = run._Referee()
    for _ in range(run.PASSES):
        for roofs in (referee.dram, referee.peaks, referee.caches):
            referee.turn_of(roofs)()
    got = referee.outcome()
    if where == "absent":
        assert got == Skipped("likwid-bench is not installed") and not referee.warnings
        assert timed == []
    else:
        why = "likwid-bench load_x failed (exit 1): no topology"
        assert got == Failed(why) and referee.warnings == [f"the roofs' referee stopped: {why}"]
        assert timed == [1, 1]  # no round after the one that failed
    s = run.RunState({}, 1, "test", 256, run.Conditions(), referees=got)
    with pytest.raises(BackendUnavailable, match="likwid-bench"):
        harness.referee(s, "DRAM")
    old = run.RunState({}, 1, "test", 256, run.Conditions())  # a state pickled before the referee
    with pytest.raises(BackendUnavailable, match="a state from before it"):
        harness.peak_referee(old, "float32")


def test_a_steps_work_is_one_rule_for_the_run_and_the_live_report():
    """Issue 39: the run's and the live report's flat-timing checks computed bytes per parameter two ways;
    now each step says its (seconds, FLOPs, bytes): the backend's bytes per parameter, else its dtype's."""
    n, b = 256, 8
    m = DecodeMeasurement(n, b, "float32", "dram", 1e-4, 0.0, 0.0, 0.0, 1e-4, 10, 1, 1 << 20, 1 << 20)
    assert m.work == (1e-4, 2.0 * n * n * b, 4.0 * (n * n + 2 * n * b))
    assert replace(m, dtype="float64").work[2] == 8.0 * (n * n + 2 * n * b)
    assert replace(m, bytes_per_param=2).work[2] == 2.0 * (n * n + 2 * n * b)  # bf16 weights of torch


def test_the_live_report_is_the_report_of_the_run_asv_records(measured):
    """Issue 39: ``roofline report`` measured with a copy of the method (its ceilings once, no rounds, no
    referees); now it reads the same RunState asv's setup_cache returns: each figure is the state's own."""
    from roofline.report.from_run import report_from_run

    report = report_from_run(measured, {"host": "test"})
    dram = {(p.n, p.batch): p.gflops for p in report.decode}
    cache = {(p.n, p.batch): p.gflops for p in report.cache_resident}
    for (regime, n, b), p in measured.points.items():
        if p.ok:
            assert {"dram": dram, "cache": cache}[regime][(n, b)] == p.value.measurement.gflops
    assert report.roofs.bandwidth == {k: v * 1e9 for k, v in measured.bandwidth_gbps.items()}
    assert report.roofs.peaks == {d: v * 1e9 for d, v in measured.peak_gflops.items()}
    assert report.roofs.as_dict()["bandwidth_spread"] == dict(measured.ceilings.value.spreads)  # the JSON keeps them
    assert report.recorded_crossover == measured.crossover.value.batch
    assert report.knee is measured.crossover.value.knee  # the run's one fit, not the report's own
    assert report.crossover()["observed_batch"] == measured.crossover.value.knee.batch
    assert [p.batch for p in report.sweep] == [m.batch for m in measured.crossover.value.points]
    assert report.conditions == measured.conditions
    # the parts SMALL switched off say so, once each
    assert "no level sweep in this run: the level sweep is off (ROOFLINE_LEVELS=off)" in report.warnings
    assert "no referees in this run: the referees are off (ROOFLINE_REFEREE=off)" in report.warnings
    assert len(report.warnings) == len(set(report.warnings))


def test_the_live_report_measures_with_the_runs_orchestrator_at_its_sizes(measured, monkeypatch):
    """``measure_live`` is a thin caller: the run's orchestrator at the report's sizes, then the overhead asv's
    tracks record (one function, :func:`harness.overhead_seconds`); the report renders what it returns."""
    from roofline.measure import overhead
    from roofline.measure.overhead import Overhead
    from roofline.report.from_run import report_from_run
    from roofline.suite import live

    calls = []

    def fake_run(grid, chosen=None, sweep=None, progress=None, **kw):
        calls.append((dict(grid), dict(chosen), sweep, progress))
        return measured

    monkeypatch.setattr(live, "measure_run", fake_run)
    monkeypatch.setattr(overhead, "measure_overhead", lambda *a: Overhead("numpy", "fp32", 64, 1, "t", 5e-6, 2e-6))
    got = live.measure_live(sizes=[256], batches=[1, 8], cache_sizes=[], sweep_n=512, sweep_batches=[1, 4])
    chosen = {"ROOFLINE_N": (256,), "ROOFLINE_CACHE_N": (), "ROOFLINE_BATCH": (1, 8)}
    assert calls == [(chosen, chosen, (512, (1, 4)), None)]
    assert got.state is measured and got.overhead == (2e-6, 5e-6) and "host" in got.facts
    report = report_from_run(got.state, got.facts, got.overhead)
    assert (report.overhead_seconds, report.overhead_single_seconds) == (2e-6, 5e-6)
    assert report.decode and all(p.gflops for p in report.decode)


def test_the_runs_noisy_steps_are_one_line_for_asv_not_one_a_step(measured):
    """Issue 39: asv's output carried a "spread … (noisy machine?)" line for every noisy point and sweep batch;
    the run says it once, naming each, and no point repeats it."""
    m = next(p.value.measurement for p in measured.points.values() if p.ok)
    noisy, quiet = replace(m, spread=0.25), replace(m, spread=0.05)
    points = {("dram", 2048, 1): Measured(run.Timed(noisy)), ("cache", 1024, 8): Measured(run.Timed(noisy))}
    points |= {("dram", 2048, 8): Measured(run.Timed(quiet)), ("dram", 8192, 1): Skipped("not chosen")}
    sweep = Measured(run.Crossover(9.0, (replace(noisy, n=4096, batch=4), replace(quiet, n=4096, batch=8))))
    (line,) = run._noisy(points, sweep)
    assert line.endswith(": cache-resident n=1024 batch=8 25%, n=2048 batch=1 25%, sweep n=4096 batch=4 25%")
    assert run._noisy({("dram", 2048, 8): Measured(run.Timed(quiet))}, Failed("no sweep")) == ()
    assert not any("spread" in w for p in measured.points.values() if p.ok for w in p.value.warnings)


# ---- the one entry point that measures this machine's roofs ----------------------------------------------


def _fake_ceilings(timed: list, asked: dict):
    """CeilingRounds whose read kernel's best sample (50 GB/s) and median of all (20) are not its roof (its fastest
    round's median, 30), and whose batch-1 GEMV is the faster honest read kernel (32); the fp32 GEMM's best 300
    GFLOP/s, its roof 150."""
    from roofline.measure.ceilings import Bandwidth, Ceilings, GemmPeak, hardware_from, read_roof

    read = Bandwidth("read", 50e9, 20e9, 1.1, 1 << 20, 2, 9, best_round=30e9)
    bw = {"read": read, "gemv n=64": replace(read, kind="gemv n=64", best=60e9, best_round=32e9)}
    peak = GemmPeak("float32", 64, 300e9, 100e9, 1.1, "fake BLAS", 2, 6, best_round=150e9)

    class Rounds:
        def __init__(self, dtypes, gemm_n, kinds, shapes=(), gemv=()):
            asked.update(dtypes=dtypes, gemm_n=gemm_n, kinds=kinds, gemv=tuple(gemv))

        def time(self, runs, gemm_runs, round_s):
            timed.append((runs, gemm_runs, round_s))

        def ceilings(self):
            if not timed:
                raise BadInput("no round was timed")
            return Ceilings(bw, {"float32": peak}, 1 << 20, hardware_from(read_roof(bw), {"float32": peak}))

    return Rounds


def test_measure_roofs_times_what_is_asked_in_the_runs_passes_by_the_one_roof_rule(monkeypatch):
    """Every command that measures this machine gets its roofs from measure_roofs: the run's passes, each roof the
    fastest round's median of the fastest honest kernel (never a best sample, never the median of all)."""
    timed, asked = [], {}
    monkeypatch.setattr(run, "CeilingRounds", _fake_ceilings(timed, asked))
    monkeypatch.setattr(run, "settle", lambda: None)
    m = run.measure_roofs(run.RoofAsk(kinds=("read",), dtypes=("float32",), gemm_n=64, gemv=(64,)))
    assert asked == {"dtypes": ("float32",), "gemm_n": 64, "kinds": ("read",), "gemv": (64,)}
    assert len(timed) == run.passes() and timed[0] == (15 // run.passes(), 6 // run.passes(), 1.0)
    hw = m.require()
    assert (hw.bandwidth, hw.peak("fp32")) == (32e9, 150e9) and hw.memory_bytes and "fastest GEMM" in hw.source
    assert m.compute == m.levels == m.referees == Skipped(run.NOT_ASKED)
    with pytest.raises(BadInput, match="roof backend"):
        run.RoofAsk(backend="tpu")


def test_an_engines_own_roofs_are_the_entry_points_rounds_a_turn_per_engine_round(monkeypatch):
    timed, asked = [], {}
    monkeypatch.setattr(run, "CeilingRounds", _fake_ceilings(timed, asked))
    rounds = run.engine_roofs(128)
    assert asked == {"dtypes": ("float32",), "gemm_n": 128, "kinds": ("read",), "gemv": ()}
    with pytest.raises(BadInput, match="no round"):
        rounds.hardware_now()
    rounds.turn()
    assert rounds.hardware_now().bandwidth == 32e9
    rounds.turn()
    assert len(timed) == 2 and rounds.result().require().bandwidth == 32e9


def test_the_run_measures_its_roofs_through_the_same_parts(monkeypatch):
    """measure_run's roofs are RoofRounds of what it asks (run_ask): every roof, at its chosen points' sizes."""
    chosen = {"ROOFLINE_N": (1024,), "ROOFLINE_BATCH": (1, 64), "ROOFLINE_MODEL_BATCH": (1,)}
    ask = run.run_ask(chosen, 512)
    assert (ask.levels, ask.referee, ask.compute, ask.gemm_n, ask.gemv) == (True, True, run.TORCH_DTYPES, 512, (1024,))
    assert ask.shapes == ((1024, 64),) and set(ask.linear) == {params.MODEL_DTYPE}
    made = []
    monkeypatch.setattr(run, "RoofRounds", lambda ask: made.append(ask) or (_ for _ in ()).throw(BadInput("stop")))
    with pytest.raises(BadInput, match="stop"):
        run._measure(chosen, {}, (256, (1, 2)), 512, (1 << 20, "test"), type("W", (), {"start": lambda self: 0})())
    assert made == [ask]


def test_a_torch_compute_roof_joins_the_gemms_as_the_faster_of_the_two():
    from roofline.model.hierarchy import ComputeRoof

    hw = Hardware("h", {"fp32": 100e9, "fp64": 50e9}, 1e9)
    compute = {"fp32": Measured(ComputeRoof("fp32", 80.0, "torch")), "bf16": Measured(ComputeRoof("bf16", 20.0, "t"))}
    got = run.with_compute(hw, Measured({**compute, "int8": Skipped("no VNNI")}))
    assert got.peak_flops == {"fp32": 100e9, "fp64": 50e9, "bf16": 20e9}
    assert run.with_compute(hw, Skipped("off")) is hw
