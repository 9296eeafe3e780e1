"""Measured roofs at tiny sizes: the working-set sweep, compute roofs per dtype, and the referees.

Nothing here asserts a speed: figures are positive, validated, one per level, and compared only by
ratios of things measured alternately. Agreement with the referees (likwid-bench ±15 % per level,
tools/stream_triad.c ±10 %) needs a quiet machine: those assertions run where ROOFLINE_QUIET=1
(tools/roofs_vs_likwid.sh sets it) and the machinery they use runs everywhere.
"""

import os
import re
import shutil
import statistics
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest

from roofline.errors import BackendUnavailable, BadInput, KernelMismatch
from roofline.host import cache_topology
from roofline.measure import compute, levels, likwid
from roofline.measure.ceilings import stream_bandwidth
from roofline.measure.pools import escape_bytes
from roofline.model.dtypes import COMPUTE_DTYPES
from roofline.model.hierarchy import CEILING_KERNEL, DRAM
from roofline.model.plateaus import find_plateaus
from roofline.outcome import Failed, Measured, Skipped

pytest.importorskip("numba", reason="numba is not installed: no compiled kernel for the cache levels")

QUIET = os.environ.get("ROOFLINE_QUIET") == "1"
TRIAD = Path(__file__).resolve().parents[1] / "tools" / "stream_triad.c"


def tiny_sizes() -> list[int]:
    """Two working sets inside each level of this machine and two beyond the LLC (≥ 2 per plateau)."""
    caps = levels.capacities(cache_topology())
    out, inner = [], caps[0][1] // 8
    for _, cap in caps:
        out += [max(inner, cap // 4), cap // 2]
        inner = cap
    return sorted(set(out + [4 * caps[-1][1], 6 * caps[-1][1]]))


@pytest.fixture(scope="module")
def sweep():
    return levels.cache_sweep(tiny_sizes(), rounds=3, min_sample_s=0.004)


def test_the_sweep_gives_one_roof_per_level(sweep):
    want = levels.level_names()
    roofs, read_write = sweep.roofs, sweep.plateau_roofs("update")
    assert [r.level for r in roofs] == want and [r.level for r in read_write] == want
    assert want[-1] == DRAM and tuple(sweep.capacities) == tuple(levels.capacities(cache_topology()))
    for r in (*roofs, *read_write):
        assert r.gbps > 0 and r.plateau is not None and r.plateau.points >= 1 and "numba" in r.kernel
    # L1 and DRAM differ ~10× on any CPU; measured in interleaved rounds, a neighbour slows both alike
    assert roofs[0].gbps > 1.5 * roofs[-1].gbps


def test_each_dtypes_compute_roof_is_measured_or_skipped_with_why():
    for dtype in COMPUTE_DTYPES:
        try:
            c = compute.compute_roof(dtype, n=128, runs=3)
        except BackendUnavailable as exc:
            assert len(str(exc)) > 20
            continue
        assert c.dtype == dtype and c.gflops > 0 and c.low_gflops <= c.gflops <= c.high_gflops


def test_the_dram_roof_is_read_where_the_pools_are_not_just_past_the_llc(monkeypatch):
    llc = levels.capacities(cache_topology())[-1][1]
    asked = []

    def spy(*args, **kwargs):
        asked.append(kwargs.get("outer_from"))
        return find_plateaus(*args, **kwargs)

    monkeypatch.setattr(levels, "find_plateaus", spy)
    s = levels.cache_sweep(sizes=[*tiny_sizes(), 2 * llc], kernel_names=("load",), rounds=1, min_sample_s=0.004)
    assert asked == [escape_bytes(llc)]
    dram = s.plateaus[-1]
    far = [p.gbps for p in s.points if p.bytes >= dram.first_bytes and p.bytes >= escape_bytes(llc)]
    assert dram.level == DRAM and far  # the 2× LLC set never counts; 4× (rounded to whole lines) and 6× may
    assert (dram.gbps, dram.low_gbps, dram.high_gbps) == (statistics.median(far), min(far), max(far))


def test_the_load_kernel_sums_every_element_of_any_length_each_pass():
    """Four quarters summed side by side, then the last few elements: every length, including 0 and 1."""
    load = levels.kernels()["load"]
    rng = np.random.default_rng(7)
    for n in [*range(0, 40), 1023, 4097]:
        a = rng.random(n) + 0.5
        assert load(a, 3) == pytest.approx(3 * float(np.sum(a, dtype=np.float64)), rel=1e-12, abs=0)


def test_each_threads_buffer_is_random_and_starts_on_a_cache_line():
    for seed in range(8):
        a = levels._random_on_a_line(seed, 1000 + seed)
        assert a.size == 1000 + seed and a.ctypes.data % levels.LINE == 0
        assert np.all(a > 0) and len(np.unique(a)) == a.size  # drawn, not zero pages
    assert levels.ALIGN * 8 % (levels.PARTS * levels.LINE) == 0  # a share's quarters start on lines too


def test_small_working_sets_get_buffers_of_their_own_within_twice_the_largest():
    shares = [512, 724, 1024, 1448, 2048, 4096, 8192, 16384]
    own = levels.own_buffers(shares)
    assert own == [512, 724, 1024, 1448, 2048, 4096, 16384]  # 8192 would take them past 16384
    assert sum(own) <= 2 * max(shares)
    assert levels.own_buffers([64]) == [64]
    team = levels._Team(2, [16, 32, 48, 64])  # 16 + 32 + 48 > 64: 48 reads a prefix of 64
    try:
        assert sorted(team.buffers) == [16, 32, 64]
        for n, owner in ((16, 16), (32, 32), (48, 64), (64, 64)):
            views = team.views(n)
            assert [v.size for v in views] == [n, n] and views[0].ctypes.data != views[1].ctypes.data
            assert [v.ctypes.data for v in views] == [b.ctypes.data for b in team.buffers[owner]]
        elapsed, sums = team.run(levels.kernels()["load"], 48, 2)
        assert elapsed > 0 and sums == pytest.approx([2 * float(np.sum(v)) for v in team.views(48)], rel=1e-12)
    finally:
        team.close()


def test_each_task_of_the_team_runs_on_its_own_pinned_thread():
    """Thread i runs task i, never two at once, even when a task ends before the next thread wakes."""
    cpus = sorted(os.sched_getaffinity(0))
    threads = min(2, len(cpus))
    team = levels._Team(threads, [64])
    try:
        for _ in range(200):  # an instant task: a pool without the barrier hands both to one thread
            got = team._on_every_thread(lambda i: (i, threading.get_ident(), sorted(os.sched_getaffinity(0))))
            assert [i for i, _, _ in got] == list(range(threads))
            assert len({ident for _, ident, _ in got}) == threads
            assert [cpu for _, _, cpu in got] == [[cpus[i]] for i in range(threads)]
    finally:
        team.close()


def test_the_level_rounds_pool_every_round_and_end_their_threads():
    """Rounds timed at separate moments pool into one median per working set, calibrated once; no
    figure before a round, no round after close()."""
    sizes = tiny_sizes()
    sweep = levels.LevelRounds(sizes=sizes, kernel_names=("load",), min_sample_s=0.004)
    try:
        with pytest.raises(BadInput, match="never timed"):
            sweep.result()
        sweep.time()
        reps = dict(sweep.reps)
        sweep.time(2)
        assert sweep.reps == reps and sweep.rounds == 3
        s = sweep.result()
    finally:
        sweep.close()
    assert len(s.points) == len(sizes) and all(p.rounds == 3 for p in s.points)
    for p in s.points:
        rates = sweep.samples[next(k for k in sweep.samples if sweep.shares[k[0]] * 8 * sweep.threads == p.bytes)]
        assert len(rates) == 3 and p.gbps == statistics.median(rates)
    assert [r.level for r in s.roofs] == levels.level_names()
    assert sweep.team is None
    with pytest.raises(BadInput, match="close"):
        sweep.time()
    sweep.close()  # twice: nothing left to end


def test_a_wrong_kernel_fails_loudly(monkeypatch):
    good = levels.kernels()
    monkeypatch.setattr(levels, "kernels", lambda: {**good, "load": lambda a, reps: 1.0})
    with pytest.raises(KernelMismatch, match="load kernel"):
        levels.cache_sweep(sizes=[8192, 16384], kernel_names=("load",), rounds=1, min_sample_s=0.001)


def test_sweep_refuses_bad_arguments():
    with pytest.raises(BadInput, match="unknown bandwidth kernel"):
        levels.cache_sweep(sizes=[8192], kernel_names=("triad",))
    with pytest.raises(BadInput, match="rounds"):
        levels.cache_sweep(sizes=[8192], rounds=0)


def test_sweep_sizes_span_a_fraction_of_l1_to_beyond_the_llc():
    caps = [("L1", 64 * 1024), ("L2", 2**20), ("L3", 8 * 2**20)]
    sizes = levels.sweep_sizes(caps)
    assert sizes[0] <= 64 * 1024 / 8 and sizes[-1] >= 4 * 8 * 2**20
    assert all(b / a <= 2**0.5 * 1.01 for a, b in zip(sizes, sizes[1:], strict=False))


def test_torch_dtypes_are_validated_or_skipped_with_the_reason():
    pytest.importorskip("torch")
    roof = compute.compute_roof("bf16", n=64, runs=1, require_native=False)  # validated against float64
    assert roof.dtype == "bf16" and roof.gflops > 0 and "torch" in roof.library
    reason = compute.native_reason("bf16")
    if reason:
        with pytest.raises(BackendUnavailable, match="amx_bf16"):
            compute.compute_roof("bf16", n=64, runs=1)
    with pytest.raises(BadInput, match="no compute roof"):
        compute.compute_roof("fp8")


def _likwid_or_skip(threads: int) -> None:
    try:
        likwid.available(threads)
    except BackendUnavailable as exc:
        pytest.skip(f"likwid-bench cannot run here: {exc}")


@pytest.mark.slow
def test_likwid_bench_referees_each_level_alternately():
    """Each level's roof beside likwid-bench's figure measured between the sweep's rounds (±15 % when quiet)."""
    _likwid_or_skip(levels.cpu_count())
    from roofline.suite.run import RoofAsk, measure_roofs

    # the one entry point: the level sweep and likwid-bench's load kernel inside each level, in the same rounds
    m = measure_roofs(RoofAsk(kinds=(CEILING_KERNEL,), dtypes=("float32",), gemm_n=256, levels=True, referee=True))
    assert m.levels.ok and m.referees.ok, (m.levels, m.referees)
    ratios = {level: r.gbps / m.referees.value[level] for level, r in m.levels.value.items()}
    assert list(ratios) == levels.level_names() and all(r > 0 for r in ratios.values())
    if QUIET:
        off = {level: round(r, 3) for level, r in ratios.items() if not 0.85 <= r <= 1.15}
        assert not off, f"level roofs disagree with likwid-bench beyond ±15 %: {off}"


def _native_triad(tmp_path: Path) -> Path:
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler for tools/stream_triad.c")
    exe = tmp_path / "stream_triad"
    out = subprocess.run(
        [cc, "-O3", "-march=native", "-fopenmp", str(TRIAD), "-o", str(exe)], capture_output=True, text=True
    )
    if out.returncode != 0:
        pytest.skip(f"tools/stream_triad.c does not build here (OpenMP?): {out.stderr.strip()[:200]}")
    return exe


#: The suite's kernel → tools/stream_triad.c's kernel that referees it.
NATIVE = {CEILING_KERNEL: "read", "add": "triad"}


@pytest.mark.slow
def test_the_bandwidth_ceiling_agrees_with_a_native_kernel_measured_alternately(tmp_path):
    """STREAM-sized arrays (each ≥ 4× the aggregate LLC) and, on a quiet machine, ±10 % of tools/stream_triad.c:
    the roof (read) against its read, add against its triad."""
    exe = _native_triad(tmp_path)
    total = 3 * escape_bytes()
    suite: dict[str, list[float]] = {k: [] for k in NATIVE}
    native: dict[str, list[float]] = {k: [] for k in NATIVE}
    for _ in range(3):  # alternately, in one process
        bw = stream_bandwidth(tuple(NATIVE), total_bytes=total, runs=7)
        line = subprocess.run(
            [str(exe), str(total), "7"], capture_output=True, text=True, check=True, timeout=120
        ).stdout
        assert int(re.search(r"bytes (\d+)", line).group(1)) >= total - 24
        for kind, theirs in NATIVE.items():
            suite[kind].append(bw[kind].median)
            native[kind].append(float(re.search(rf"{theirs} ([0-9.]+)", line).group(1)) * 1e9)
    assert bw[CEILING_KERNEL].array_bytes >= escape_bytes() >= 4 * levels.capacities(cache_topology())[-1][1]
    for kind, theirs in NATIVE.items():
        assert all(v > 0 for v in suite[kind] + native[kind]), kind
        ratio = statistics.median(suite[kind]) / statistics.median(native[kind])
        if QUIET:
            assert 0.9 <= ratio <= 1.1, f"{kind} {np.median(suite[kind]) / 1e9:.1f} GB/s, native {theirs}: {ratio:.3f}"


def test_a_torch_roof_is_timed_once_the_float64_checks_blas_workers_stop_spinning(monkeypatch):
    """The check's numpy matmul leaves OpenBLAS's workers spinning ~0.1 s; a torch GEMM timed
    meanwhile shares a core with them (int8 read 0.8 against 1.6 TOP/s on a 2-core VM). After the
    settle, one untimed GEMM wakes torch's own threads before the timed ones."""
    pytest.importorskip("torch")
    import dataclasses
    import time as real_time
    import types

    events = []
    monkeypatch.setattr(compute, "settle", lambda: events.append("settle"))
    clock = types.SimpleNamespace(perf_counter=lambda: events.append("clock") or real_time.perf_counter())
    monkeypatch.setattr(compute, "time", clock)
    made = compute._torch_gemm

    def counted(dtype, n):
        gemm = made(dtype, n)
        return dataclasses.replace(gemm, op=lambda: events.append("gemm") or gemm.op())

    monkeypatch.setattr(compute, "_torch_gemm", counted)
    compute.compute_roof("int8", n=64, runs=2, require_native=False)
    assert events == ["settle", "gemm"] + ["clock", "gemm", "clock"] * 2


def test_compute_rounds_pool_every_rounds_gemms_into_one_roof_per_dtype():
    """The run's torch roofs: built once (validated), timed at several moments, each dtype's roof its fastest
    round's median, the interval of every round's GEMMs beside; a dtype that cannot run here keeps why, no
    roof before a round."""
    pytest.importorskip("torch")
    rounds = compute.ComputeRounds(("bf16", "int8", "fp16"), n=64, require_native=False)
    assert {g.dtype for g in rounds.gemms.values()} | set(rounds.skipped) == {"bf16", "int8", "fp16"}
    with pytest.raises(BadInput, match="never timed"):
        rounds.roofs()
    with pytest.raises(BadInput, match="positive length"):
        rounds.time(0)
    rounds.time(0.01)
    first = {d: len(s) for d, s in rounds.samples.items()}
    rounds.time(0.01)
    roofs = {r.dtype: r for r in rounds.roofs()}
    assert set(roofs) == {g.dtype for g in rounds.gemms.values()} >= {"bf16", "int8"}
    for dtype, r in roofs.items():
        label = f"{dtype} 64³"  # a square GEMM is named by its size
        samples = rounds.samples[label]
        assert r.runs == len(samples) > first[label] >= 1  # both rounds' GEMMs, pooled
        two = (samples[: first[label]], samples[first[label] :])
        assert r.gflops == max(map(statistics.median, two))  # the fastest round's median
        assert r.low_gflops <= statistics.median(samples) <= r.high_gflops  # the interval of all
        assert r.n == 64 and "torch" in r.library


def test_a_models_dtype_is_measured_at_its_layer_with_or_without_instructions_and_checked(monkeypatch):
    """A model's dtype gets a roof from F.linear at its own layer, validated against float64, even where
    the square GEMM is skipped for want of instructions; a wrong F.linear fails loudly."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(compute, "native_reason", lambda d: f"no {d} instructions here")
    rounds = compute.ComputeRounds(("bf16",), n=64, linear={"bf16": ([(64, 96), (96, 64), (64, 96)], (1, 4))})
    shapes = {"1×64·64×96", "4×64·64×96", "1×96·96×64", "4×96·96×64"}  # each layer once, at each batch
    assert rounds.skipped == {} and set(rounds.gemms) == {f"bf16 F.linear {s}" for s in shapes}
    rounds.time(0.01)
    (roof,) = rounds.roofs()
    assert roof.dtype == "bf16" and roof.gflops > 0 and "F.linear" in roof.library
    real = torch.nn.functional.linear
    monkeypatch.setattr(torch.nn.functional, "linear", lambda x, w: real(x, w) * 1.5)
    with pytest.raises(KernelMismatch, match="F.linear is wrong"):
        compute.ComputeRounds(("bf16",), n=64, linear={"bf16": ([(64, 96)], (1,))})
    with pytest.raises(BadInput, match="no F.linear roof for dtype 'int8'"):
        compute.ComputeRounds((), linear={"int8": ([(64, 96)], (1,))})


def test_a_round_of_compute_roofs_settles_warms_then_takes_the_gemms_in_turn_each_for_its_share(monkeypatch):
    """One GEMM of each in turn, each until it has lasted its share of the round: a dtype's round split among
    its GEMMs (the square one and a model's F.linear shapes), so a slow shape costs no more calls of the others."""
    events = []
    monkeypatch.setattr(compute, "settle", lambda: events.append("settle"))
    monkeypatch.setattr(compute, "native_reason", lambda d: "no bf16 here" if d == "bf16" else None)
    now = [0.0]
    cost = {"int8 8³": 0.125, "fp16 8³": 0.25, "bf16 F.linear 1×8·8×16": 0.0625, "bf16 F.linear 4×8·8×16": 0.25}

    def gemm(dtype, n, rows=None, out=None):
        def op():
            events.append(label)
            now[0] += cost[label]

        g = compute._TorchGemm(dtype, n, op, "fake", rows, out)
        label = g.label
        return g

    monkeypatch.setattr(compute, "_torch_gemm", gemm)
    monkeypatch.setattr(compute, "_torch_linears", lambda dtype, k, out, rows: [gemm(dtype, k, r, out) for r in rows])
    monkeypatch.setattr(compute.time, "perf_counter", lambda: now[0])
    rounds = compute.ComputeRounds(("bf16", "int8", "fp16"), n=8, linear={"bf16": ([(8, 16)], (1, 4))})
    assert rounds.skipped == {}  # bf16 has no square GEMM here, but the model's shapes run
    rounds.time(0.5)
    one, four = "bf16 F.linear 1×8·8×16", "bf16 F.linear 4×8·8×16"
    i8, f16 = "int8 8³", "fp16 8³"  # a square GEMM is named by its size
    warm = ["settle", one]  # the smallest GEMM wakes torch's threads
    # int8 0.125 s a call: 4 calls for its 0.5 s; fp16 0.25 s: 2; each bf16 shape its half of bf16's 0.5 s
    assert events == warm + [i8, f16, one, four] + [i8, f16, one] + [i8, one] * 2
    assert {k: len(v) for k, v in rounds.samples.items()} == {i8: 4, f16: 2, one: 4, four: 1}
    rates = {i8: 99.0, f16: 5.0, one: 10.0, four: 12.0}
    rounds.samples = {k: [rates[k]] * len(v) for k, v in rounds.samples.items()}
    roofs = {r.dtype: r for r in rounds.roofs()}
    assert roofs["bf16"].gflops == 12.0 and roofs["bf16"].runs == 1  # the fastest of its shapes


def test_the_runs_compute_roofs_are_what_computepeak_records_or_why_not(monkeypatch):
    import types

    from roofline.suite import harness, run

    class Rounds:
        skipped = {"fp16": "no fp16 instructions"}

        def __init__(self, dtypes, n, linear):
            assert n == 512  # the run's GEMM size
            # the model's layers at its chosen batches: q and o, k and v, the MLP's gate and up, its down
            layers = [(4096, 4096), (4096, 1024), (4096, 14336), (14336, 4096)]
            assert linear == {"bf16": (layers, (1, 8))}

        def time(self, round_s):
            assert round_s == compute.COMPUTE_ROUND_S

        def roofs(self):
            return (compute.ComputeRoof("bf16", 612.345678, "fake"),)

    monkeypatch.setattr(run, "ComputeRounds", Rounds)
    monkeypatch.delenv("ROOFLINE_MODEL", raising=False)  # Llama-3-8B: hidden 4096, MLP 14336
    part = run._Compute(512, run.model_shapes({"ROOFLINE_MODEL_BATCH": (1, 8)}))
    assert run.model_shapes({"ROOFLINE_N": (256,)}) == {}  # the live report chooses no model batch
    # a quick look's batch 1 alone: its roof is timed at 8 rows too, not only at the GEMV it bounds
    assert run.model_shapes({"ROOFLINE_MODEL_BATCH": (1,)})["bf16"][1] == (1, run.MODEL_ROOF_ROWS) == (1, 8)
    part.turn()
    got = part.outcome()
    bf16 = compute.ComputeRoof("bf16", 612.345678, "fake")
    assert got == Measured({"fp16": Skipped("no fp16 instructions"), "bf16": Measured(bf16)})
    quiet = types.SimpleNamespace(headline=lambda: "")
    done = run.RunState({}, 1, "test", 256, quiet, compute=got)
    assert harness.compute_peak(done, "bf16") == 612.3 and type(harness.compute_peak(done, "bf16")) is float
    with pytest.raises(BackendUnavailable, match="no fp16 instructions"):
        harness.compute_peak(done, "fp16")
    with pytest.raises(BackendUnavailable, match="no compute roof for int8"):
        harness.compute_peak(done, "int8")

    def wrong(dtypes, n, linear):
        raise KernelMismatch("torch bf16 GEMM is wrong")

    monkeypatch.setattr(run, "ComputeRounds", wrong)
    part = run._Compute(None)
    part.turn()
    got = part.outcome()
    assert got == Failed("torch bf16 GEMM is wrong")
    with pytest.raises(KernelMismatch, match="is wrong"):
        harness.compute_peak(run.RunState({}, 1, "test", 256, quiet, compute=got), "bf16")


def test_a_torch_dtype_climbs_its_square_sizes_where_no_size_is_fixed(monkeypatch):
    """Without ROOFLINE_GEMM_N each torch dtype's square GEMMs are the sizes the climb keeps, each probed with
    a validated GEMM and named by its size."""
    made = []

    def gemm(dtype, n):
        made.append(n)
        return compute._TorchGemm(dtype, n, lambda: None, "fake")

    def climb(probe):
        assert probe(512) > 0 and probe(1024) > 0
        return [1024]

    monkeypatch.setattr(compute, "_torch_gemm", gemm)
    monkeypatch.setattr(compute, "settle", lambda: None)
    monkeypatch.setattr(compute, "climb", climb)
    got = compute.square_gemms("int8", require_native=False)
    assert made == [512, 1024] and [g.label for g in got] == ["int8 1024³"]
    assert [g.n for g in compute.square_gemms("int8", 64, require_native=False)] == [64] and made[-1] == 64
