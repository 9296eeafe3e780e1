import math

import numpy as np
import pytest

from roofline.errors import BadInput, KernelMismatch
from roofline.measure import ceilings
from roofline.model.hierarchy import CEILING_KERNEL, roof_kernel


def test_bandwidth_at_a_tiny_size_is_plausible():
    bw = ceilings.stream_bandwidth(total_bytes=3 * 2**20, runs=3)
    assert set(bw) == {"copy", "add", "triad", "read"}
    for b in bw.values():
        assert math.isfinite(b.best) and 1e8 < b.best < 1e13  # 0.1 GB/s .. 10 TB/s
        assert b.best >= b.high >= b.median >= b.low > 0 and b.spread >= 1


def test_gemm_peak_is_plausible_and_records_blas():
    p = ceilings.gemm_peak("float32", n=256, runs=2)
    assert 1e8 < p.best < 1e14
    assert "thread" in p.blas


def test_a_wrong_gemm_reports_no_peak(monkeypatch):
    real = np.matmul

    def wrong(a, b, out=None):
        res = real(a, b, out=out)
        res *= 1.01
        return res

    monkeypatch.setattr(ceilings.np, "matmul", wrong)
    with pytest.raises(KernelMismatch, match="no peak"):
        ceilings.gemm_peak("float32", n=128, runs=1)


def test_a_wrong_bandwidth_kernel_reports_nothing(monkeypatch):
    monkeypatch.setattr(ceilings.np, "add", lambda a, b, out=None: out)  # does nothing
    with pytest.raises(KernelMismatch):
        ceilings.stream_bandwidth(kinds=("add",), total_bytes=3 * 2**20, runs=1)


@pytest.mark.parametrize("off", [1.0 + 1e-6, 0.0])
def test_a_read_kernel_that_sums_wrong_reports_nothing(monkeypatch, off):
    real = np.dot
    monkeypatch.setattr(ceilings.np, "dot", lambda a, b: real(a, b) * off)
    with pytest.raises(KernelMismatch, match="read"):
        ceilings.stream_bandwidth(kinds=("read",), total_bytes=3 * 2**20, runs=1)


def test_a_round_takes_the_kernels_in_turn_until_it_has_lasted_round_s(monkeypatch):
    """Every kernel sampled at the same moments, as many turns as fill the round (the warm-up turn
    says how long one lasts), each kernel's result checked once, after its last pass."""
    clock = {"t": 0.0}

    def perf_counter():  # each read comes a second after the one before
        clock["t"] += 1.0
        return clock["t"]

    arrays = ceilings.StreamArrays(total_bytes=3 * 2**20)
    order, checked = [], []
    for kind in arrays.kinds:
        real = getattr(arrays, f"_{kind}")
        monkeypatch.setattr(arrays, f"_{kind}", lambda s, kind=kind, real=real: order.append(kind) or real(s))
    real_check = arrays._check
    monkeypatch.setattr(arrays, "_check", lambda kind, out: checked.append((kind, len(order))) or real_check(kind, out))
    monkeypatch.setattr(ceilings.time, "perf_counter", perf_counter)
    arrays.time(2, round_s=4.0)  # the warm-up turn reads 1 s: 4 turns, more than the 2 asked
    parts, kinds = len(arrays.parts), list(arrays.kinds)
    turns = [order[i : i + parts * len(kinds)] for i in range(0, len(order), parts * len(kinds))]
    assert len(turns) == 1 + 4 and all(t == [k for k in kinds for _ in range(parts)] for t in turns)
    assert [len(times) for times in arrays.times.values()] == [4] * len(kinds)
    last_turn = len(order) - parts * len(kinds)
    assert [k for k, _ in checked] == kinds and all(at > last_turn for _, at in checked)
    assert [at for _, at in checked] == [last_turn + parts * (i + 1) for i in range(len(kinds))]


def test_a_round_of_small_arrays_stops_at_the_most_passes():
    arrays = ceilings.StreamArrays(("read",), total_bytes=3 * 2**20)
    arrays.time(3, round_s=3600.0)
    assert len(arrays.times["read"]) == ceilings.STREAM_MAX_PASSES
    arrays.time(3)  # no round_s: the passes asked for
    assert len(arrays.times["read"]) == ceilings.STREAM_MAX_PASSES + 3
    with pytest.raises(BadInput, match="round_s"):
        arrays.time(3, round_s=-1.0)


def test_measured_hardware_uses_the_read_roof():
    """A decode step reads its weights and writes next to nothing: the roof is the read kernel's."""
    rounds = ceilings.CeilingRounds(dtypes=("float32",), total_bytes=3 * 2**20, gemm_n=128)
    rounds.time(2, 2, ceilings.STREAM_ROUND_S)
    c = rounds.ceilings()
    assert CEILING_KERNEL == "read" and c.bandwidth["read"].kind == "read"
    # The roofs are medians of their passes (of one round here), not the best pass.
    assert c.hardware.bandwidth == c.bandwidth["read"].median == c.bandwidth["read"].best_round
    assert c.hardware.peak("fp32") == c.peaks["float32"].median
    assert "measured" in c.hardware.source


def test_the_bandwidth_roof_is_the_fastest_rounds_median_as_stream_reports_its_best():
    """Issue 39: this VM's DRAM moves between a run's rounds; the median of every pass read 27.3 GB/s where
    the decode points of the same rounds read 31.6. The roof is the fastest round's median: never one
    lucky pass, and a round the machine slowed moves nothing."""
    arrays = ceilings.StreamArrays(("read",), total_bytes=3 * 2**20)
    moved = 2 * arrays.n * 8
    slow, fast = [moved / 20e9] * 5, [moved / 30e9] * 4 + [moved / 60e9]  # a lucky 60 GB/s pass
    arrays.times["read"] = slow + fast + slow
    arrays.round_starts = [0, 5, 10]
    bw = arrays.bandwidth()["read"]
    assert bw.roof == bw.best_round == pytest.approx(30e9) and bw.median == pytest.approx(20e9)
    assert bw.best == pytest.approx(60e9)
    peak = ceilings.GemmPeak("float32", 8, 1e9, 1e9, 1.0, "blas", 1, 1)
    assert ceilings.hardware_from(bw, {"float32": peak}, "vm").bandwidth == bw.roof
    assert ceilings.Bandwidth("read", 1.0, 2.0, 1.0, 8, 1, 3).roof == 2.0  # kept from before rounds: the median


def test_a_gemm_roof_is_its_fastest_rounds_median_and_the_fastest_of_the_gemms():
    """Issue 39: the median of all six GEMMs of a run's passes read 142.3 GFLOP/s where the batch-512 points
    of the same passes ran 161.6 (1.14×): a GEMM's roof is its fastest round's median, as a bandwidth's."""
    gemm = ceilings.GemmOperands("float32", 64)
    flops = 2.0 * 64**3
    gemm.times = [flops / 100e9] * 2 + [flops / 140e9] * 2 + [flops / 100e9] * 2
    gemm.round_starts = [0, 2, 4]
    peak = gemm.peak()
    assert peak.roof == peak.best_round == pytest.approx(140e9) and peak.median == pytest.approx(100e9)
    shaped = ceilings.GemmPeak("float32", 64, 1.0, 120e9, 1.0, "b", 1, 1, cols=8)  # a median, no rounds kept
    assert ceilings.fastest_gemms({"float32": peak}, [shaped])["float32"] is peak
    bw = ceilings.Bandwidth("read", 1.0, 2e10, 1.0, 8, 1, 3)
    assert ceilings.hardware_from(bw, {"float32": peak}, "vm").peak("fp32") == peak.roof


def test_the_dram_roof_is_the_fastest_read_kernel_the_points_own_gemv_among_them(small_machine):
    """Issue 39: the BLAS dot read 25.1 GB/s where the batch-1 decode points' own GEMV read 26.4 and 27.8 in
    the same run. The GEMV over a pool ≥ 4× the LLC is timed in turn with the STREAM kernels; the roof is
    the fastest read kernel, as read's figure."""
    rounds = ceilings.CeilingRounds(dtypes=("float32",), total_bytes=3 * 2**20, gemm_n=64, gemv=[64, 96, 64])
    rounds.time(3, 1)
    c = rounds.ceilings()
    assert {"gemv n=64", "gemv n=96"} <= set(c.bandwidth) and c.bandwidth["gemv n=96"].runs == 3
    roof = ceilings.read_roof(c.bandwidth)
    assert roof.kind == "read" and c.hardware.bandwidth == roof.roof
    assert roof.roof == max(b.roof for k, b in c.bandwidth.items() if k == "read" or k.startswith("gemv"))
    assert c.bandwidth["gemv n=96"].array_bytes >= 4 * 2**20  # a DRAM pool: ≥ 4× the 1 MiB LLC here
    arrays = rounds.stream
    arrays.rows["gemv n=96"] = arrays.rows["gemv n=96"][:1]  # a thread's rows left out: not the product
    with pytest.raises(KernelMismatch, match="gemv n=96 kernel computed wrong values"):
        arrays.time(1)
    slow, fast = (ceilings.Bandwidth(k, 1.0, r, 1.0, 8, 1, 3) for k, r in (("read", 2.0), ("gemv n=64", 3.0)))
    assert ceilings.read_roof({"read": slow, "gemv n=64": fast}).median == 3.0
    assert ceilings.read_roof({"read": slow, "copy": ceilings.Bandwidth("copy", 9.0, 9.0, 1.0, 8, 1, 3)}) == slow


@pytest.mark.parametrize(
    ("kinds", "roof"),
    [(("copy", "add", "triad", "read"), "read"), (("copy", "add", "triad"), "add"), (("copy", "triad"), None)],
)
def test_the_roof_is_read_or_add_in_results_from_before_read(kinds, roof):
    assert roof_kernel(kinds) == roof
    assert roof_kernel({k: 1.0 for k in kinds}) == roof


@pytest.mark.parametrize("kwargs", [{"kinds": ("scale",)}, {"runs": 0}])
def test_bad_bandwidth_arguments(kwargs):
    with pytest.raises(BadInput):
        ceilings.stream_bandwidth(total_bytes=2**20, **kwargs)


def test_bad_gemm_dtype():
    with pytest.raises(BadInput):
        ceilings.gemm_peak("int8")


def test_default_ceilings_take_enough_passes_for_a_95_percent_interval():
    from roofline.model.intervals import order_statistic_rank

    assert order_statistic_rank(ceilings.BANDWIDTH_RUNS)[1] >= 0.95
    assert order_statistic_rank(ceilings.GEMM_RUNS)[1] >= 0.95
    p = ceilings.gemm_peak("float64", n=96)
    assert p.runs == ceilings.GEMM_RUNS and p.confidence >= 0.95
    assert p.low <= p.median <= p.high <= p.best


def test_each_stream_array_holds_four_times_the_aggregate_llc(monkeypatch):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "256K")
    bw = ceilings.stream_bandwidth(kinds=("copy",), runs=1)
    assert bw["copy"].array_bytes >= 4 * 256 * 2**10


def test_ceiling_rounds_pool_every_round_and_a_slow_round_moves_no_median(monkeypatch):
    """Three rounds of 5 passes (2 GEMMs) make one figure of 15 (6); the slow round's sit above its median."""
    clock = {"t": 0.0, "pass": 1.0}

    def perf_counter():  # each read comes clock["pass"] seconds after the one before: a pass lasts that long
        clock["t"] += clock["pass"]
        return clock["t"]

    rounds = ceilings.CeilingRounds(dtypes=("float32",), total_bytes=3 * 2**20, gemm_n=64)
    with pytest.raises(BadInput, match="no round"):
        rounds.ceilings()
    monkeypatch.setattr(ceilings.time, "perf_counter", perf_counter)
    for seconds in (1.0, 3.0, 1.0):
        clock["pass"] = seconds
        rounds.time(5, 2)
    c = rounds.ceilings()
    for bw in c.bandwidth.values():
        assert bw.runs == 15 and bw.median == bw.best == ceilings.ARRAYS_MOVED[bw.kind] * bw.array_bytes
        assert bw.low < bw.median  # the interval says some passes were slower
    peak = c.peaks["float32"]
    assert peak.runs == 6 and peak.median == peak.best == 2.0 * 64**3
    assert c.hardware.bandwidth == c.bandwidth[CEILING_KERNEL].median


def test_a_wrong_gemm_in_the_first_round_reports_no_peak(monkeypatch):
    gemm = ceilings.GemmOperands("float32", 64)
    gemm.c[:] = 0.0
    monkeypatch.setattr(ceilings.np, "matmul", lambda a, b, out=None: out)  # leaves C as it was
    with pytest.raises(KernelMismatch, match="no peak"):
        gemm.time(1)
    with pytest.raises(BadInput, match="no round"):
        gemm.peak()


def test_the_compute_roof_is_the_fastest_of_the_square_gemm_and_the_points_shapes(monkeypatch):
    """Issue 39: a square GEMM alone read 139.9 GFLOP/s where batch-512 points ran 154; the roof is also timed
    at the points' own shapes, in the same rounds, and the fastest median is the roof."""
    rates = {64: 1e9, 8: 4e9}  # FLOP/s by B's columns: here the shaped GEMM is the faster
    clock = {"t": 0.0, "cols": 64}

    def matmul(a, b, out=None):
        clock["cols"] = b.shape[1]
        return real(a, b, out=out)

    def perf_counter():  # a GEMM's timed span ends with this read: it lasts its FLOPs at its rate
        clock["t"] += 2.0 * 64 * 64 * clock["cols"] / rates[clock["cols"]]
        return clock["t"]

    real = np.matmul
    rounds = ceilings.CeilingRounds(dtypes=("float32",), total_bytes=3 * 2**20, gemm_n=64, shapes=[(64, 8), (64, 8)])
    assert list(rounds.shaped) == [(64, 8)]  # one GEMM per shape
    monkeypatch.setattr(ceilings.np, "matmul", matmul)
    monkeypatch.setattr(ceilings.time, "perf_counter", perf_counter)
    rounds.time(2, 2)
    c = rounds.ceilings()
    square, shaped = c.peaks["float32"], c.shaped[(64, 8)]
    assert square.cols is None and shaped.cols == 8
    assert square.median == pytest.approx(1e9) and shaped.median == pytest.approx(4e9)
    assert c.roof_gemm("float32") is shaped and c.hardware.peak("fp32") == pytest.approx(4e9)
    # where the square one is the faster, it stays the roof
    assert ceilings.hardware_from(c.bandwidth["read"], c.peaks, shaped=[]).peak("fp32") == pytest.approx(1e9)


def test_the_roof_is_timed_at_each_chosen_n_at_a_compute_bound_largest_batch():
    from roofline.suite.run import roof_shapes  # the run's choices, through ceilings.point_shapes

    chosen = {"ROOFLINE_N": (2048, 8192), "ROOFLINE_CACHE_N": (1024, 2048), "ROOFLINE_BATCH": (1, 64, 512)}
    assert roof_shapes(chosen) == [(1024, 512), (2048, 512), (8192, 512)]
    assert roof_shapes({**chosen, "ROOFLINE_BATCH": (64,)}) == [(1024, 64), (2048, 64), (8192, 64)]
    assert roof_shapes({**chosen, "ROOFLINE_BATCH": (1, 8)}) == []  # memory-bound shapes bound nothing


def test_the_square_gemm_climbs_until_its_rate_stops_rising_or_the_next_would_last_too_long():
    rates = {512: 50e9, 1024: 150e9, 2048: 200e9, 4096: 201e9, 8192: 100e9}
    probed = []

    def probe(n):
        probed.append(n)
        return rates[n]

    # 4096 barely beats 2048 (< GEMM_RISE): the climb stops there; 512 reads under GEMM_KEEP of the best
    assert ceilings.climb(probe, max_s=1e9) == [1024, 2048, 4096] and probed == [512, 1024, 2048, 4096]
    probed.clear()
    # at 200 GFLOP/s a 4096 GEMM lasts 0.69 s: over the cap, never tried
    assert ceilings.climb(probe, max_s=0.3) == [1024, 2048] and probed == [512, 1024, 2048]


def test_a_fixed_gemm_size_is_the_only_one_timed():
    assert [g.n for g in ceilings.square_gemms("float32", 64)] == [64]


def test_a_gemm_roof_is_named_with_its_size():
    square = ceilings.GemmPeak("float32", 2048, 1.0, 1.0, 1.0, "blas", 2, 6)
    assert square.kernel == "numpy BLAS GEMM 2048³"
    assert ceilings.GemmPeak("float32", 8192, 1.0, 1.0, 1.0, "blas", 2, 6, cols=512).kernel.endswith("8192×512")
