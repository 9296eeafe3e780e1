"""The hierarchical roofline without a clock: plateaus, the roof each point lives under, the report and plot."""

import json
import math
import random
from dataclasses import replace

import pytest

from roofline.errors import BackendUnavailable, BadInput
from roofline.measure import likwid
from roofline.measure.compute import native_reason
from roofline.model.hierarchy import DRAM, LIKELY_TOO_LOW, ComputeRoof, Hierarchy, LevelRoof, Refereed, refereed_levels
from roofline.model.intervals import fastest_round_median, median_ci, order_statistic_rank
from roofline.model.plateaus import find_plateaus, level_of
from roofline.report.cpu import build_report
from roofline.report.text import render_text

from .test_report import FACTS, ROOFS, point, sample_report

KIB, MIB = 2**10, 2**20
CAPS = [("L1", 64 * KIB), ("L2", 1 * MIB), ("L3", 8 * MIB)]


def staircase(steps, noise=0.03, seed=1):
    """A sweep from 8 KiB to 64 MiB, 2 sizes per doubling: ``steps`` as (last bytes of the level, GB/s)."""
    rng = random.Random(seed)
    sizes = [int(8 * KIB * 2 ** (i / 2)) for i in range(27)]
    rates = [next(g for end, g in steps if s <= end) * (1 + rng.uniform(-noise, noise)) for s in sizes]
    return sizes, rates


def test_plateaus_come_from_the_data_not_the_os_sizes():
    # L2 really spills at 2 MiB (twice what the "OS" says): the plateau must end there, not at 1 MiB
    sizes, rates = staircase([(64 * KIB, 300), (2 * MIB, 150), (8 * MIB, 90), (math.inf, 20)])
    found = find_plateaus(sizes, rates, CAPS, "load")
    assert [p.level for p in found] == ["L1", "L2", "L3", DRAM]
    for p, want in zip(found, (300, 150, 90, 20), strict=True):
        assert p.gbps == pytest.approx(want, rel=0.05)
        assert p.low_gbps <= p.gbps <= p.high_gbps
    l2 = found[1]
    assert l2.last_bytes == 2 * MIB and l2.ends_bytes > 2 * MIB and l2.capacity_bytes == 1 * MIB
    assert found[-1].ends_bytes is None and found[-1].capacity_bytes is None
    assert sum(p.points for p in found) == len(sizes)


def test_the_outer_plateau_is_read_from_its_far_points_its_extent_from_the_fit():
    # just past the 8 MiB L3 the sets are still partly served by it (40, then 30 GB/s); from 32 MiB, DRAM (20)
    sizes, rates = staircase(
        [(64 * KIB, 300), (1 * MIB, 150), (8 * MIB, 90), (16 * MIB, 40), (24 * MIB, 30), (math.inf, 20)]
    )
    whole = find_plateaus(sizes, rates, CAPS, "load")[-1]
    far = find_plateaus(sizes, rates, CAPS, "load", outer_from=32 * MIB)[-1]
    assert far.level == whole.level == DRAM
    assert (far.first_bytes, far.last_bytes, far.points) == (whole.first_bytes, whole.last_bytes, whole.points)
    assert far.first_bytes < 16 * MIB  # the fit's extent holds the transition ...
    assert far.gbps == pytest.approx(20, rel=0.05) and far.high_gbps < 21  # ... its height does not
    assert whole.gbps > 1.2 * far.gbps
    # a sweep that never reaches outer_from keeps every point; the inner levels never change
    assert find_plateaus(sizes, rates, CAPS, "load", outer_from=2**40)[-1] == whole
    assert (
        find_plateaus(sizes, rates, CAPS, "load", outer_from=32 * MIB)[:-1]
        == find_plateaus(sizes, rates, CAPS, "load")[:-1]
    )


def test_plateaus_refuse_bad_sweeps():
    with pytest.raises(BadInput, match="cannot show 4 levels"):
        find_plateaus([1, 2, 3], [1.0, 2.0, 3.0], CAPS, "load")
    with pytest.raises(BadInput, match="positive and finite"):
        find_plateaus([1, 2, 3, 4], [1.0, 0.0, 3.0, 4.0], CAPS, "load")


def test_level_of_is_the_innermost_level_that_holds_the_set():
    assert level_of(64 * KIB, CAPS) == "L1"
    assert level_of(64 * KIB + 1, CAPS) == "L2"
    assert level_of(8 * MIB, CAPS) == "L3"
    assert level_of(8 * MIB + 1, CAPS) == DRAM


def test_median_interval_is_an_order_statistic_with_its_coverage():
    k, coverage = order_statistic_rank(15)
    assert k == 4 and coverage == pytest.approx(0.9648, abs=1e-4)
    ci = median_ci([5, 1, 4, 2, 3, 100, 3.5, 2.5, 4.5, 3.2, 3.1, 2.9, 3.3, 3.4, 2.8])
    assert ci.median == 3.2 and ci.low == 2.8 and ci.high == 4.0 and ci.samples == 15  # the outlier moves nothing
    assert ci.relative_half_width == pytest.approx((4.0 - 2.8) / 6.4)
    with pytest.raises(BadInput):
        median_ci([])
    # thousands of samples (a round of tiny kernels): the binomial tail in exact integers, no overflow
    k, coverage = order_statistic_rank(3000)
    assert 1400 < k < 1500 and 0.95 <= coverage < 0.96


def test_a_roof_is_its_fastest_rounds_median():
    rates = [10, 11, 30, 9, 20, 21, 22]  # rounds [10, 11, 30], [9, 20], [21, 22]: one fast pass is not a round
    assert fastest_round_median(rates, [0, 3, 5]) == 21.5
    assert fastest_round_median(rates, []) == 20  # no rounds marked: the median of all


HIER = Hierarchy(
    levels=(
        LevelRoof("L1", 64 * KIB, 300.0, "load"),
        LevelRoof("L2", 1 * MIB, 150.0, "load"),
        LevelRoof("L3", 8 * MIB, 90.0, "load"),
        LevelRoof(DRAM, 16 * 2**30, 25.0, "load"),
    ),
    compute=(ComputeRoof("fp64", 150.0, "blas"), ComputeRoof("fp32", 300.0, "blas")),
    caches=tuple(CAPS),
    skipped={"bf16": "no amx_bf16"},
)


def test_each_point_is_held_to_its_own_level_and_dtype():
    own = HIER.own_roof(4 * MIB, 0.5, "fp32", 40.0)  # in L3: 0.5 FLOP/B × 90 GB/s = 45 GFLOP/s
    assert (own.level, own.gbps, own.bound) == ("L3", 90.0, "bandwidth")
    assert own.attainable_gflops == pytest.approx(45.0) and own.fraction == pytest.approx(40 / 45)
    assert not own.error
    high = HIER.own_roof(4 * MIB, 0.5, "fp32", 50.0)  # 111 % of its roof
    assert high.error
    compute = HIER.own_roof(32 * MIB, 64.0, "fp64", 140.0)  # DRAM: 64 × 25 = 1600 > the fp64 roof
    assert (compute.level, compute.bound, compute.attainable_gflops) == (DRAM, "compute", 150.0)
    unknown = HIER.own_roof(4 * MIB, 0.5, "bf16", 40.0)  # no bf16 roof: no share claimed
    assert unknown.fraction is None and not unknown.error


def test_the_report_divides_by_each_points_own_roof_and_flags_what_is_above_it():
    cache = (point(1024, 1, 0.1e-3, "cache", pool=4 * MIB), point(256, 1, 2e-6, "cache", pool=None))
    rep = build_report(FACTS, ROOFS, decode=(point(2048, 1, 0.7e-3),), cache_resident=cache, hierarchy=HIER)
    rows = {(r["n"], r["batch"]): r for r in rep.as_dict()["cache_resident"]}
    # n=1024 fp32: 4.2 MB → L3; 21 GFLOP/s of 45 attainable
    assert rows[1024, 1]["roof"] == "L3" and rows[1024, 1]["roof_gbps"] == 90.0
    assert rows[1024, 1]["roof_fraction"] == pytest.approx(
        2 * 1024**2 / 0.1e-3 / 1e9 / (90 * rows[1024, 1]["intensity"])
    )
    assert rows[1024, 1]["measurement_error"] is False
    # n=256: 262 KiB → L2 at 150 GB/s; 65.5 GFLOP/s at 0.5 FLOP/B is 87 % of 75
    assert rows[256, 1]["roof"] == "L2"
    # the DRAM point keeps its meaning: roofline_fraction against the DRAM roof and the fp32 peak
    d = rep.as_dict()["decode"][0]
    assert d["roof"] == DRAM and d["roofline_fraction"] == pytest.approx(d["gflops"] / d["attainable_gflops"])
    text = render_text(rep)
    assert "roof: L3" in text and "roof: L2" in text and "roof: DRAM" in text
    assert "bf16" in text and "skipped: no amx_bf16" in text
    assert "above 110%" not in text and not any("read too low" in w for w in rep.warnings)
    j = rep.as_dict()
    assert [r["level"] for r in j["roofs"]] == ["L1", "L2", "L3", DRAM]
    assert {c["dtype"] for c in j["compute_roofs"]} == {"fp32", "fp64"}
    assert set(j["roofs"][0]) >= {"level", "bytes", "gbps", "kernel"}
    assert set(j["compute_roofs"][0]) >= {"dtype", "gflops", "library"}
    json.dumps(j, allow_nan=False)


def test_a_point_above_110_percent_of_its_roof_is_flagged_never_silent():
    too_fast = point(1024, 1, 0.04e-3, "cache", pool=4 * MIB)  # 52 GFLOP/s under a 45 GFLOP/s L3 roof
    rep = build_report(FACTS, ROOFS, cache_resident=(too_fast,), hierarchy=HIER)
    row = rep.as_dict()["cache_resident"][0]
    assert row["measurement_error"] is True and row["roof_fraction"] > 1.10
    # issue 39: the roof's measurement is what was wrong (the point is an honest measurement), and it is named
    assert any(
        "n=1024 batch=1 (cache-resident)" in w and "the L3 bandwidth roof's measurement read too low" in w
        for w in rep.warnings
    ), rep.warnings
    assert "above 110% of its roof: the L3 bandwidth roof read too low" in render_text(rep)


def test_without_a_hierarchy_a_cache_point_is_not_divided_by_dram():
    rep = sample_report()  # asv results: the LLC's size (32 MiB), no level roofs
    row = rep.as_dict()["cache_resident"][0]
    assert row["roof"] == "L3" and row["roof_fraction"] is None and row["measurement_error"] is False
    assert "roof% n/a under L3" in render_text(rep)
    bare = build_report({k: v for k, v in FACTS.items() if k != "llc_bytes"}, ROOFS, cache_resident=rep.cache_resident)
    assert bare.as_dict()["cache_resident"][0]["roof"] == "LLC"  # sized for an LLC of unknown size: not DRAM


def test_plot_draws_every_roof_labelled(tmp_path):
    import matplotlib

    from roofline.report.plot import plot_report

    matplotlib.rcParams["svg.fonttype"] = "none"
    svg = plot_report([sample_report(hierarchy=HIER)], tmp_path / "h.svg").read_text()
    for label in ("L1 300 GB/s", "L2 150 GB/s", "L3 90 GB/s", "DRAM 25 GB/s", "fp32 300 GFLOP/s", "fp64 150 GFLOP/s"):
        assert label in svg
    assert "working set in DRAM" in svg


def test_native_dtypes_follow_the_cpu_flags():
    assert native_reason("fp32", frozenset()) is None
    assert native_reason("bf16", frozenset({"avx512_bf16"})) is None
    assert native_reason("bf16", frozenset({"amx_bf16"})) is None
    why = native_reason("bf16", frozenset({"avx2", "fma"}))
    assert "amx_bf16" in why and "avx512_bf16" in why
    assert native_reason("int8", frozenset({"avx_vnni"})) is None


LIKWID_OUT = """
Cycles:                 1234
Time:                   1.0 s
MByte/s:                150761.92
Cycles per update:      0.5
"""


def test_likwid_output_kernels_and_sizes():
    assert likwid.parse(LIKWID_OUT) == (pytest.approx(150.76192), "GB/s")
    peak = "MFlops/s:   114000.5\nMByte/s:   2617.55\n"  # a peakflops kernel prints both
    assert likwid.parse(peak, flops=True) == (pytest.approx(114.0005), "GFLOP/s")
    assert likwid.parse(peak) == (pytest.approx(2.61755), "GB/s")
    with pytest.raises(BackendUnavailable, match="no MFlops/s"):
        likwid.parse(LIKWID_OUT, flops=True)
    with pytest.raises(BackendUnavailable, match="no MByte/s"):
        likwid.parse("nothing here")
    assert likwid.kernel_for("load", frozenset({"avx512f", "avx", "sse2"})) == "load_avx512"
    assert likwid.kernel_for("load", frozenset({"avx", "avx2", "sse2"})) == "load_avx"
    assert likwid.kernel_for("fp32", frozenset({"avx", "fma"})) == "peakflops_sp_avx_fma"
    assert likwid.kernel_for("fp64", frozenset()) == "peakflops"
    with pytest.raises(BadInput):
        likwid.kernel_for("int8")
    sizes = likwid.referee_sizes(CAPS)
    assert list(sizes) == ["L1", "L2", "L3", DRAM]
    assert sizes["L1"] == 32 * KIB and sizes[DRAM] == 32 * MIB
    assert 64 * KIB < sizes["L2"] < MIB and MIB < sizes["L3"] < 8 * MIB


def fake_likwid(folder, rate_mbyte_s: str = "50000"):
    """A likwid-bench on PATH that logs its arguments and prints ``rate_mbyte_s`` as its MByte/s and its
    MFlops/s (or fails on "fail")."""
    log = folder / "calls.txt"
    exe = folder / "likwid-bench"
    exe.write_text(
        "#!/bin/sh\n"
        f'echo "$@" >> "{log}"\n'
        f'[ "{rate_mbyte_s}" = fail ] && {{ echo "no topology" >&2; exit 1; }}\n'
        f'echo "MByte/s:  {rate_mbyte_s}"\n'
        f'echo "MFlops/s:  {rate_mbyte_s}"\n'
    )
    exe.chmod(0o755)
    return log


def test_the_referee_times_one_likwid_run_per_roof_a_round_sized_from_the_last(tmp_path, monkeypatch):
    """Each round is one likwid-bench run per roof: the load kernel at each working set given, the FMA
    peak on 16 KiB a thread, on all threads, each lasting about the seconds asked (its iterations from the
    last round's data rate, the first's from a discarded probe run sized from 10 GB/s, every roof's probe
    at once when the referee is made); each figure is its fastest run, none before the first."""
    log = fake_likwid(tmp_path)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    monkeypatch.setattr(likwid, "cpu_flags", lambda: frozenset({"avx512f"}))
    r = likwid.RefereeRounds({"DRAM": 256 * MIB}, ("fp32",), threads=2, seconds=0.5)
    probes = sorted(log.read_text().splitlines())  # side by side: in either order
    assert [c.split(" -i ")[0] for c in probes] == [
        f"-t load_avx512 -W N:{256 * MIB}B:2",
        f"-t peakflops_sp_avx512_fma -W N:{32 * KIB}B:2",
    ]
    assert [int(c.split("-i ")[1]) for c in probes] == [
        likwid.iterations_for(256 * MIB, 10.0, 0.05),  # 10 GB/s for a tenth of the run
        likwid.iterations_for(32 * KIB, 10.0, 0.05),
    ]
    with pytest.raises(BadInput, match="no round"):
        r.figures()
    r.time()
    r.time()
    assert r.figures() == {"DRAM": 50.0, "fp32": 50.0}  # the fake prints 50000 MByte/s and MFlops/s
    calls = log.read_text().split("\n")
    dram = [c for c in calls[2:] if c.startswith("-t load_avx512")]
    peak = [c for c in calls[2:] if c.startswith("-t peakflops_sp_avx512_fma")]
    assert [c.split(" -i ")[0] for c in dram] == [f"-t load_avx512 -W N:{256 * MIB}B:2"] * 2
    assert [c.split(" -i ")[0] for c in peak] == [f"-t peakflops_sp_avx512_fma -W N:{32 * KIB}B:2"] * 2
    first, second = (int(c.split("-i ")[1]) for c in dram)
    assert first == second == math.ceil(0.5 * 50e9 / (256 * MIB))  # both sized from a rate measured here
    assert int(peak[0].split("-i ")[1]) == math.ceil(0.5 * 50e9 / (32 * KIB))
    r.time(("fp32",))  # one roof's round alone: beside the part of the run that measures it
    assert log.read_text().split("\n")[len(calls) - 1 :][0].startswith("-t peakflops_sp_avx512_fma ")
    assert [len(v) for v in r.results.values()] == [2, 3]
    with pytest.raises(BadInput, match="no referee for L9 .this one times DRAM, fp32"):
        r.time(("L9", "fp32"))
    assert len(log.read_text().split("\n")) == len(calls) + 1  # nothing ran
    for bad in (({"DRAM": 0}, 2, 0.5), ({"DRAM": MIB}, 0, 0.5), ({"DRAM": MIB}, 2, 0.0)):
        with pytest.raises(BadInput, match="positive"):
            likwid.RefereeRounds(bad[0], threads=bad[1], seconds=bad[2])


def test_the_probes_run_side_by_side_and_sleep_their_second_once(tmp_path, monkeypatch):
    """likwid-bench sleeps 1 s calibrating its clock: the probes run at once, every one started before the
    first ends, so they sleep that second once."""
    log = tmp_path / "times.txt"
    exe = tmp_path / "likwid-bench"
    exe.write_text(f'#!/bin/sh\necho start >> "{log}"\nsleep 1\necho end >> "{log}"\necho "MByte/s:  1000"\n')
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    got = likwid.likwid_probes({f"L{i}": ("load", KIB, 10) for i in range(4)}, threads=1)
    assert log.read_text().split() == ["start"] * 4 + ["end"] * 4
    assert {k: v.rate for k, v in got.items()} == {f"L{i}": 1.0 for i in range(4)}


def test_the_referee_is_unavailable_without_a_working_likwid_bench(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BackendUnavailable, match="not installed"):
        likwid.RefereeRounds({"DRAM": MIB}, threads=2)
    fake_likwid(tmp_path, "fail")
    with pytest.raises(BackendUnavailable, match="failed .exit 1.: no topology"):
        likwid.RefereeRounds({"DRAM": MIB}, threads=2)


def test_the_report_sets_the_dram_roof_and_the_gemm_peaks_beside_their_referees(tmp_path):
    """From results that recorded the referees: DRAM's GB/s and the roof ÷ it, each FMA peak and the
    GEMM ÷ it, in the JSON and the text; results without them say nothing of one."""
    from roofline.report.from_results import report_from_results
    from roofline.suite.results import read_results

    from . import asv_fixtures as fx

    bw, peak = "ceilings.BandwidthReferee.track_referee_bandwidth", "ceilings.PeakReferee.track_referee_peak"
    suite = {
        **fx.SUITE,
        bw: ("track", "GB/s", ["level"], [["'L1'", "'DRAM'"]], "v-ref"),
        peak: ("track", "GFLOP/s", ["dtype"], [["'float32'", "'float64'"]], "v-refp"),
    }
    fx.write_benchmarks(tmp_path, suite)
    fx.write_machine(tmp_path, "box")
    values = {**fx.full_values(bw_ceiling=30.0, peak=300.0), bw: [500.0, 24.0], peak: [600.0, None]}
    fx.write_run(tmp_path, "box", "c" * 40, values, suite=suite)
    rep = report_from_results(read_results(tmp_path))
    c = rep.as_dict()["ceilings"]
    assert c["referee_gbps"] == 24.0 and c["roof_over_referee"] == pytest.approx(c["bandwidth_roof_gbps"] / 24.0)
    assert c["peak_referee_gflops"] == {"float32": 600.0} and c["peak_over_referee"] == {"float32": 0.5}
    text = render_text(rep)
    assert "    DRAM  own     30.0  referee     24.0 GB/s     own ÷ referee 1.25" in text
    assert "    fp32  own    300.0  referee    600.0 GFLOP/s  own ÷ referee 0.50" in text
    # below 0.7 of its referee a roof is likely too low, and the roof is the referee's, named
    assert "the fp32 roof's own kernel (numpy BLAS GEMM) read 0.50× its referee, below 0.7: likely too low" in text
    assert "    fp32     600.0  likwid-bench peakflops (the referee; numpy BLAS GEMM: 0.50× it)" in text
    assert rep.hardware.peak("fp32") == 600e9 and rep.hardware.bandwidth == 30e9  # the faster of the two
    bare = build_report(FACTS, ROOFS)
    assert bare.as_dict()["ceilings"]["referee_gbps"] is None and "referees (" not in render_text(bare)


def test_a_report_from_asv_results_holds_each_point_to_its_recorded_level(tmp_path):
    from roofline.report.from_results import report_from_results
    from roofline.suite.results import read_results

    from . import asv_fixtures as fx

    levels = [["'L1'", "'L2'", "'L3'", "'DRAM'"]]
    dtypes = [["'bf16'", "'fp16'", "'int8'"]]
    cache = [["1024"], ["1", "8"]]
    suite = {
        **fx.SUITE,
        "ceilings.CacheBandwidth.track_bandwidth": ("track", "GB/s", ["level"], levels, "v-lb"),
        "ceilings.CacheBandwidth.track_capacity": ("track", "bytes", ["level"], levels, "v-lc"),
        "ceilings.ComputePeak.track_peak": ("track", "GFLOP/s", ["dtype"], dtypes, "v-cp"),
        "decode.DecodeCacheResident.track_gflops": ("track", "GFLOP/s", ["n", "batch"], cache, "v-cg"),
    }
    fx.write_benchmarks(tmp_path, suite)
    fx.write_machine(tmp_path, "box")
    values = {
        **fx.full_values(),
        "ceilings.CacheBandwidth.track_bandwidth": [300.0, 150.0, 90.0, 25.0],
        "ceilings.CacheBandwidth.track_capacity": [64.0 * KIB, 1.0 * MIB, 8.0 * MIB, 16.0 * 2**30],
        "ceilings.ComputePeak.track_peak": [600.0, None, None],  # skipped dtypes are null
        "decode.DecodeCacheResident.track_gflops": [40.0, 200.0],
    }
    fx.write_run(tmp_path, "box", "c" * 40, values, suite=suite)
    rep = report_from_results(read_results(tmp_path))
    j = rep.as_dict()
    assert [(r["level"], r["gbps"]) for r in j["roofs"]] == [("L1", 300.0), ("L2", 150.0), ("L3", 90.0), (DRAM, 25.0)]
    # bf16 from ComputePeak, fp32 and fp64 from GemmPeak (full_values: 300 and 150), measured once per run
    compute = {(c["dtype"], c["gflops"]) for c in j["compute_roofs"]}
    assert compute == {("bf16", 600.0), ("fp32", 300.0), ("fp64", 150.0)}
    row = j["cache_resident"][0]  # n=1024 fp32, 4.2 MB: L3 at 90 GB/s; 40 GFLOP/s of 45 attainable
    assert row["roof"] == "L3" and row["roof_fraction"] == pytest.approx(40 / (90 * row["intensity"]))
    assert row["measurement_error"] is False
    assert "roof: L3" in render_text(rep) and "L1       300.0" in render_text(rep)


def test_a_read_only_decode_step_is_held_to_the_higher_dram_roof():
    """STREAM add reads and writes; a decode step only reads: above add but under the sweep's read-only
    DRAM plateau is no 'faster than the ceiling' warning, and above both still is."""
    levels = tuple(replace(r, gbps=32.0) if r.level == DRAM else r for r in HIER.levels)
    hier = replace(HIER, levels=levels)
    n = 2048
    at = {gbps: point(n, 1, 4 * (n * n + 2 * n) / (gbps * 1e9)) for gbps in (30.0, 40.0)}
    over_add = build_report(FACTS, ROOFS, decode=(at[30.0],), hierarchy=hier)  # 1.2× add, 0.94× the plateau
    assert not any("the measured ceiling" in w for w in over_add.warnings), over_add.warnings
    assert any("the measured ceiling" in w for w in build_report(FACTS, ROOFS, decode=(at[30.0],)).warnings)
    over_both = build_report(FACTS, ROOFS, decode=(at[40.0],), hierarchy=hier)
    assert any("n=2048 batch=1 bandwidth" in w and "the measured ceiling" in w for w in over_both.warnings)


def test_a_run_that_measured_read_has_one_dram_roof_for_roof_percent_and_its_fraction():
    """With read (the roof since it was measured) the DRAM level is the STREAM roof, not the sweep's plateau:
    a DRAM point's roof% is then asv's roofline fraction, and the ridge divides by the same figure."""
    roofs = replace(ROOFS, bandwidth={**ROOFS.bandwidth, "read": 34e9})
    levels = tuple(replace(r, gbps=32.0) if r.level == DRAM else r for r in HIER.levels)
    n = 2048
    rep = build_report(
        FACTS, roofs, decode=(point(n, 1, 4 * (n * n + 2 * n) / 30e9),), hierarchy=replace(HIER, levels=levels)
    )
    dram = rep.roofs_by_level.level(DRAM)
    assert (dram.gbps, dram.kernel, dram.bytes) == (34.0, "STREAM read", 16 * 2**30)
    assert [r.level for r in rep.roofs_by_level.levels] == ["L1", "L2", "L3", DRAM]
    row = rep.row(rep.decode[0])
    assert row.own.level == DRAM and row.own.fraction == pytest.approx(row.roofline_fraction, rel=1e-9)
    text = render_text(rep)
    assert rep.hardware.bandwidth == 34e9 and "DRAM      34.0  STREAM read" in text and "DRAM roof is read" in text
    # results from before read: the sweep's plateau stays the DRAM level beside add
    old = build_report(FACTS, ROOFS, decode=rep.decode, hierarchy=replace(HIER, levels=levels))
    assert old.roofs_by_level.level(DRAM).gbps == 32.0 and old.hardware.bandwidth == ROOFS.bandwidth["add"]


def test_a_roof_below_its_referee_becomes_the_referees_figure_with_its_name():
    """Fakes of the Xeon's run: the sweep's L1 read 165 where likwid-bench read 445; its L2 beat the referee."""
    l1 = LevelRoof("L1", 98304, 165.3, "load (numba 0.61, 256-bit vectors)")
    l2 = LevelRoof("L2", 4 << 20, 230.0, "load (numba 0.61, 256-bit vectors)")
    got = refereed_levels((l1, l2), {"L1": 445.5, "L2": 215.3, "L3": 46.9}, "likwid-bench load_avx512")
    assert got[0].gbps == 445.5 and got[0].bytes == 98304
    assert got[0].kernel == "likwid-bench load_avx512 (the referee; load (numba 0.61, 256-bit vectors): 0.37× it)"
    assert got[1] == l2  # the run's own kernel was faster: its roof stands
    r = Refereed("L1", 165.3, "load", 445.5, "likwid-bench load_avx512")
    assert r.figure == 445.5 and r.too_low and r.ratio == pytest.approx(0.371, abs=1e-3)
    ok = Refereed("fp32", 0.7 * 274.7, "numpy BLAS", 274.7, "likwid-bench peakflops_sp_avx512_fma")
    assert not ok.too_low and ok.ratio == pytest.approx(LIKELY_TOO_LOW)


def test_the_runs_hardware_takes_each_roof_its_referee_beats():
    from roofline.suite.run import roofs

    hw = roofs({"read": 22.6, "copy": 32.5}, {"float32": 186.4, "float64": 97.8}, {"DRAM": 25.4, "fp32": 274.7})
    assert hw.bandwidth == pytest.approx(25.4e9) and hw.peak("fp32") == pytest.approx(274.7e9)
    assert hw.peak("fp64") == pytest.approx(97.8e9)  # no referee beat it
    assert roofs({"read": 22.6}, {"float32": 186.4}).bandwidth == pytest.approx(22.6e9)


def _run(rate: float, share: float | None) -> likwid.LikwidResult:
    return likwid.LikwidResult("peakflops_sp_avx512_fma", 32768, 2, rate, "GFLOP/s", 10.0, share)


def test_a_referee_is_its_fastest_run_that_had_the_cores_to_itself():
    """The Xeon's fp32 referee read 149 in one run: a run whose threads shared their cores is no referee."""
    r = object.__new__(likwid.RefereeRounds)
    r.results = {"fp32": [_run(149.4, 0.5), _run(290.0, 0.98), _run(280.0, None)]}
    assert r.figures() == {"fp32": 290.0}
    assert r.shared() == [
        "the fp32 referee (peakflops_sp_avx512_fma) shared its cores in 1 of 3 runs (its threads' share of them: "
        "0.50); its figure is the fastest run that ran alone"
    ]
    r.results = {"fp32": [_run(149.4, 0.5), _run(150.0, 0.6)]}  # none alone: the fastest, said
    assert r.figures() == {"fp32": 150.0} and "in 2 of 2 runs" in r.shared()[0]
    assert "that ran alone" not in r.shared()[0]


def test_a_runs_share_of_its_cores_comes_from_its_cpu_time_and_likwids_own_time():
    out = "Time:\t\t\t2.000000e-01 sec\nMFlops/s:\t\t200000.0\nMByte/s:\t\t20000.0\n"
    got = likwid._result("peakflops_sp_avx512_fma", 32768, 2, 0, out, "", cpu_s=0.2)
    assert got.rate == 200.0 and got.cpu_share == pytest.approx(0.5) and not got.alone
    assert likwid._result("peakflops_sp_avx512_fma", 32768, 2, 0, out, "", cpu_s=0.41).alone
    assert likwid._result("load_avx512", 32768, 2, 0, "MByte/s: 1000\n", "", cpu_s=0.1).cpu_share is None
