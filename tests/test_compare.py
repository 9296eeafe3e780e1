"""`roofline compare`: machines side by side, the two-commit gate, and every bad input the issue lists."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from roofline import units
from roofline.cli import main
from roofline.model.intervals import median_ci
from roofline.report import summary
from roofline.suite.names import OVERHEAD, PEAK_CEILING, RETIRED_MEANINGS
from roofline.suite.results import read_results

from .asv_fixtures import SUITE, full_values, snapshot, two_machines, write_benchmarks, write_machine, write_run
from .clitools import EXAMPLE_MACHINE, one_line_error

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "results"
OVERHEAD = OVERHEAD.format("single")

A, B, C = "a" * 40, "b" * 40, "c" * 40


@pytest.fixture
def results(tmp_path):
    return two_machines(tmp_path / "results")


def rows_of(out: str) -> dict[str, list[str]]:
    """The table's lines by label: [unit, cell, cell, ...] (columns are two or more spaces apart)."""
    rows = {}
    for line in out.splitlines():
        parts = re.split(r"\s{2,}", line.strip())
        rows.setdefault(parts[0], parts[1:])
    return rows


def test_summary_reads_ceilings_ridge_crossover_and_points(results):
    (alpha, beta), warnings = summary.summarize(read_results(results))
    assert warnings == []
    assert alpha.commit == B and alpha.bandwidth == 30e9 and alpha.peak == 300e9
    assert alpha.ridge == pytest.approx(10.0) and beta.ridge == pytest.approx(5.0)
    assert alpha.predicted_crossover == pytest.approx(20.0)  # float32: 2 · ridge
    assert alpha.observed_crossover == [({}, 24.0)]
    assert alpha.decode["DRAM"] == {(256, 1): 11.0, (256, 8): 52.0}
    assert alpha.device is None and alpha.bandwidth_fraction() is None


def test_cli_table_has_a_column_per_machine_and_says_which_way_is_better(results, capsys):
    before = snapshot(results)
    assert main(["compare", str(results)]) == 0
    rows = rows_of(capsys.readouterr().out)
    assert rows["machine"] == ["alpha", "beta"]
    assert rows["ridge point"] == ["FLOP/B", "10.0", "5.00"]  # a ratio of rates: no better way
    assert rows["n=256 batch=8"] == ["↑ GFLOP/s", "52.0", "104"]
    assert rows["crossover batch, observed"] == ["batch", "24", "24"]
    assert rows["bandwidth (measured)"] == ["↑ GB/s", "30.0", "60.0"]
    assert rows["bandwidth per core"] == ["↑ GB/s per core", "15.0", "30.0"]  # 2 cores each
    assert "↑ higher is better, ↓ lower is better" in rows
    assert snapshot(results) == before  # compare never writes into the results directory


def test_rows_no_machine_has_a_figure_for_are_left_out(results, capsys):
    assert main(["compare", str(results)]) == 0
    out = capsys.readouterr().out
    for absent in ("catalogue device", "datasheet", "cache-resident", "last-level cache", "call overhead", "n/a"):
        assert absent not in out, absent


def test_a_lower_is_better_row(tmp_path, capsys):
    suite = {**SUITE, OVERHEAD: ("track", "µs", ["backend"], [["'numpy'"]], "v-o")}
    root = tmp_path / "r"
    write_benchmarks(root, suite)
    write_machine(root, "alpha")
    write_run(root, "alpha", A, {**full_values(), OVERHEAD: [2.5]}, suite=suite)
    assert main(["compare", str(root), "--json"]) == 0
    row = next(r for r in json.loads(capsys.readouterr().out)["table"] if r["key"] == "overhead/single")
    assert row["better"] == "lower" and row["unit"] == "µs" and row["cells"]["alpha"]["value"] == 2.5
    assert main(["compare", str(root)]) == 0
    assert rows_of(capsys.readouterr().out)["call overhead, single"] == ["↓ µs", "2.50"]


def test_intervals_come_from_the_samples_asv_recorded_of_the_twin(tmp_path, capsys):
    root = tmp_path / "r"
    write_benchmarks(root)
    write_machine(root, "alpha")
    twin = "decode.DecodeDRAM.time_decode_step"
    samples = [[1e-5 * (1 + i / 100) for i in range(-10, 11)], [2e-5] * 3]
    write_run(root, "alpha", A, full_values(), samples={twin: samples})
    (s,), _ = summary.summarize(read_results(root))
    ci = median_ci(samples[0])
    low, high, source = s.intervals["DRAM"][(256, 1)]
    assert (low, high) == pytest.approx((10.0 * ci.median / ci.high, 10.0 * ci.median / ci.low))
    assert (
        low < 10.0 < high and source == f"{ci.confidence:.0%} of the median of asv's samples" and ci.confidence >= 0.95
    )
    assert s.intervals["DRAM"][(256, 8)][:2] == pytest.approx((50.0, 50.0))  # three equal samples
    assert main(["compare", str(root)]) == 0
    out = capsys.readouterr().out
    assert rows_of(out)["n=256 batch=1"] == ["↑ GFLOP/s", f"10.0 {units.interval(10.0, low, high)}"]
    assert "± the interval of a decode point's median from its asv time_ twin" in out


def test_without_samples_asvs_own_interval_is_used(tmp_path):
    root = tmp_path / "r"
    write_benchmarks(root)
    write_machine(root, "alpha")
    path = write_run(root, "alpha", A, full_values(), samples={"decode.DecodeDRAM.time_decode_step": [[1e-5], [2e-5]]})
    data = json.loads(path.read_text())
    row = data["results"]["decode.DecodeDRAM.time_decode_step"]
    cols = data["result_columns"]
    row[cols.index("stats_ci_99_a")], row[cols.index("stats_ci_99_b")] = [0.8e-5, 1.8e-5], [1.25e-5, 2.2e-5]
    path.write_text(json.dumps(data))
    (s,), _ = summary.summarize(read_results(root))
    assert s.intervals["DRAM"][(256, 1)] == pytest.approx((8.0, 12.5, "asv's 99% interval"))


# ---- several folders, versions, conflicts ------------------------------------------------------

GFLOPS = "decode.DecodeDRAM.track_gflops"


def folder(root, machine, suite=SUITE, date=1, **values):
    write_benchmarks(root, suite)
    write_machine(root, machine)
    write_run(root, machine, A, full_values(**values), date=date, suite=suite)
    return root


def test_several_folders_side_by_side(tmp_path, capsys):
    a = folder(tmp_path / "a", "alpha")
    b = folder(tmp_path / "b", "beta", gflops=(20.0, 100.0))
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"results: {a}, {b} (2 machine(s))")
    assert rows_of(out)["n=256 batch=8"] == ["↑ GFLOP/s", "50.0", "100"]


def test_another_version_of_the_same_quantity_is_shown_and_flagged(tmp_path, capsys):
    t, u, pn, p, _ = SUITE[GFLOPS]
    newer = {**SUITE, GFLOPS: (t, u, pn, p, "v2")}
    a = folder(tmp_path / "a", "alpha", date=1)
    b = folder(tmp_path / "b", "beta", suite=newer, date=2, gflops=(20.0, 100.0))
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert rows_of(out)["n=256 batch=8"] == ["↑ GFLOP/s", "50.0 ‡", "100"]  # beta's is the latest version
    assert "‡ recorded by another version of the benchmark: the same quantity" in out
    assert main(["compare", str(a), str(b), "--json"]) == 0
    cells = next(r for r in json.loads(capsys.readouterr().out)["table"] if r["key"] == "decode/DRAM/256/8")["cells"]
    assert cells["alpha"]["status"] == "other version" and cells["beta"]["status"] == "current"


def test_one_folder_merged_across_versions_reads_the_same(tmp_path, capsys):
    t, u, pn, p, _ = SUITE[GFLOPS]
    a = folder(tmp_path / "a", "alpha", date=1)
    b = folder(tmp_path / "b", "beta", suite={**SUITE, GFLOPS: (t, u, pn, p, "v2")}, date=2, gflops=(20.0, 100.0))
    assert main(["merge", str(a), str(b), str(tmp_path / "m")]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "m")]) == 0
    captured = capsys.readouterr()
    assert rows_of(captured.out)["n=256 batch=8"] == ["↑ GFLOP/s", "50.0 ‡", "100"]
    assert "another suite version" not in captured.err  # the table says it, not a warning


def test_a_version_whose_meaning_changed_is_not_mixed_in(tmp_path, capsys):
    retired = next(iter(RETIRED_MEANINGS[PEAK_CEILING]))
    t, u, pn, p, _ = SUITE[PEAK_CEILING]
    old = folder(tmp_path / "old", "old", suite={**SUITE, PEAK_CEILING: (t, u, pn, p, retired + "0" * 48)}, date=1)
    new = folder(tmp_path / "new", "new", date=2)
    assert main(["compare", str(new), str(old)]) == 0
    out = capsys.readouterr().out
    rows = rows_of(out)
    assert rows["fp32 peak (measured)"] == ["↑ GFLOP/s", "300", "≠"]
    assert rows["ridge point"] == ["FLOP/B", "10.0", "≠"]  # made from the peak: not mixed either
    assert rows["n=256 batch=1"] == ["↑ GFLOP/s", "10.0", "10.0"]
    why = RETIRED_MEANINGS[PEAK_CEILING][retired]
    assert f"≠ not tabled beside the others, its meaning changed: old's GemmPeak.track_gemm_ceiling ({why})" in out
    assert main(["compare", str(old)]) == 0  # alone it mixes with nothing: shown, and what it measured said
    out = capsys.readouterr().out
    assert rows_of(out)["fp32 peak (measured)"] == ["↑ GFLOP/s", "300"]
    assert "as recorded by old: GemmPeak.track_gemm_ceiling measured the best of its passes" in out


def test_the_registry_names_versions_of_benchmarks_of_the_suite():
    inventory = json.loads((Path(__file__).parent / "golden" / "benchmarks.json").read_text())
    for name, versions in RETIRED_MEANINGS.items():
        assert name in inventory, name
        assert inventory[name]["version"][:16] not in versions, f"{name}: the current version cannot be retired"
        assert all(len(v) == 16 and int(v, 16) >= 0 for v in versions), name


def test_the_same_machine_in_two_folders_is_one_column(tmp_path, capsys):
    a = folder(tmp_path / "a", "alpha")
    b = tmp_path / "b"
    shutil.copytree(a, b)
    write_run(b, "alpha", B, full_values(gflops=(12.0, 60.0)), date=2)  # a later commit
    assert main(["compare", str(a), str(b)]) == 0
    rows = rows_of(capsys.readouterr().out)
    assert rows["machine"] == ["alpha"] and rows["commit"] == ["bbbbbbbb"] and rows["n=256 batch=1"][1] == "12.0"


def test_a_conflict_between_folders_is_one_line_exit_2_and_nothing_written(tmp_path, capsys):
    a = folder(tmp_path / "a", "alpha")
    b = folder(tmp_path / "b", "alpha", gflops=(99.0, 50.0))
    args = ["compare", str(a), str(b), "--html", str(tmp_path / "page"), "--plot", str(tmp_path / "x.png")]
    assert main(args) == 2
    message = one_line_error(capsys.readouterr().err)
    assert f"{GFLOPS} (n=256, batch=1) is 10 in one folder but 99 in {b}" in message
    assert "the same machine, commit and benchmark with different values" in message
    assert not (tmp_path / "page").exists() and not (tmp_path / "x.png").exists()


def test_two_machines_of_one_name_stand_side_by_side_the_later_labelled(tmp_path, capsys):
    """Results are filed under what a machine is: this machine and the gallery's of the same CPU model share a
    name (their RAM differed by 12 kB on two Zen 4 VMs), and the comparison shows both rather than refusing."""
    a = folder(tmp_path / "a", "alpha")
    c = folder(tmp_path / "c", "alpha")
    write_machine(c, "alpha", cpu="Another CPU")
    assert main(["compare", str(a), str(c)]) == 0
    out, err = capsys.readouterr()
    assert rows_of(out)["machine"] == ["alpha", f"alpha [{c}]"]
    assert "two machines are named alpha: cpu" in out + err and "Another CPU" in out + err


# ---- baseline and prices ----------------------------------------------------------------------


def test_a_baseline_gives_every_figure_as_a_ratio(results, capsys):
    assert main(["compare", str(results), "--baseline", "alpha"]) == 0
    out = capsys.readouterr().out
    rows = rows_of(out)
    assert rows["machine"] == ["alpha", "beta", "ratio"]
    assert rows["n=256 batch=8"] == ["↑ GFLOP/s", "52.0", "104", "2.00×"]
    assert rows["ridge point"] == ["FLOP/B", "10.0", "5.00", "0.500×"]
    assert "ratio: each machine's figure ÷ alpha's" in out
    assert main(["compare", str(results), "--baseline", "beta"]) == 0  # the baseline's column comes first
    rows = rows_of(capsys.readouterr().out)
    assert rows["machine"] == ["beta", "alpha", "ratio"]
    assert rows["n=256 batch=8"] == ["↑ GFLOP/s", "104", "52.0", "0.500×"]
    assert main(["compare", str(results), "--baseline", "beta", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    row = next(r for r in data["table"] if r["key"] == "bandwidth")
    assert data["baseline"] == "beta" and row["cells"]["alpha"]["ratio"] == 0.5 and row["cells"]["beta"]["ratio"] == 1


def test_an_unknown_baseline_is_one_line_exit_2_and_nothing_written(results, tmp_path, capsys):
    assert main(["compare", str(results), "--baseline", "gamma", "--html", str(tmp_path / "page")]) == 2
    assert "unknown --baseline 'gamma': the machines compared are alpha, beta" in one_line_error(
        capsys.readouterr().err
    )
    assert not (tmp_path / "page").exists()


def prices(tmp_path, text: str) -> Path:
    path = tmp_path / "prices.toml"
    path.write_text(text)
    return path


def test_a_price_table_gives_figures_per_dollar_hour_and_per_watt(results, tmp_path, capsys):
    table = prices(tmp_path, "[alpha]\ndollars_per_hour = 0.5\nwatts = 100\n[beta]\nwatts = 200\n[gone]\nwatts = 1\n")
    assert main(["compare", str(results), "--prices", str(table)]) == 0
    captured = capsys.readouterr()
    rows = rows_of(captured.out)
    assert rows["bandwidth per $/hour"] == ["↑ GB/s per $/hour", "60.0", "n/a"]  # 30 GB/s for $0.5 an hour
    assert rows["bandwidth per W"] == ["↑ GB/s per W", "0.300", "0.300"]
    assert rows["decode DRAM n=256 batch=8 per W"] == ["↑ GFLOP/s per W", "0.520", "0.520"]
    assert "gone is not among the machines compared; ignored" in captured.err


@pytest.mark.parametrize(
    "text, message",
    [
        ("[gamma]\nwatts = 100\n", "names gamma, none of the machines compared (alpha, beta)"),
        ("[alpha]\nwats = 100\n", "[alpha] has 'wats'; the keys are dollars_per_hour, watts"),
        ("[alpha]\nwatts = -1\n", "[alpha] watts = -1 is not a positive number"),
        ("alpha = 3\n", "give a table per machine"),
        ("[alpha\n", "not TOML"),
    ],
)
def test_a_bad_price_table_is_one_line_exit_2_and_nothing_written(results, tmp_path, capsys, text, message):
    table = prices(tmp_path, text)
    assert main(["compare", str(results), "--prices", str(table), "--html", str(tmp_path / "page")]) == 2
    assert message in one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "page").exists()


def test_pick_machine_and_commit(results, capsys):
    assert main(["compare", str(results), "--machine", "beta", "--commit", "aaaa", "--json"]) == 0
    (beta,) = json.loads(capsys.readouterr().out)["machines"]
    assert beta["machine"] == "beta" and beta["commit"] == A
    assert beta["decode_gflops"]["DRAM"][1] == {
        "n": 256,
        "batch": 8,
        "gflops": 100.0,
        "interval": None,
        "datasheet_roofline_fraction": None,
    }


def test_one_machine_when_two_are_asked_for(results, capsys):
    assert main(["compare", str(results), "--machine", "alpha", "--machine", "gamma"]) == 0
    captured = capsys.readouterr()
    assert "no machine 'gamma'" in captured.err and "alpha" in captured.out
    assert main(["compare", str(results), "--machine", "gamma"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_missing_empty_and_unknown_commit_are_exit_2(tmp_path, results, capsys):
    for args in (
        ["compare", str(tmp_path / "none")],
        ["compare", str(tmp_path)],
        ["compare", str(results), "--commit", "cccc"],
        ["compare", str(results), "--commits", "aaaa", "cccc"],
        ["compare", str(results), str(results), "--commits", "aaaa", "bbbb", "--baseline", "alpha"],
        ["compare", str(results), str(tmp_path / "none")],
    ):
        assert main(args) == 2, args
        err = capsys.readouterr().err
        one_line_error(err)


def test_corrupted_files_and_failed_benchmarks_give_na_cells(results, capsys):
    (results / "beta" / f"{B[:8]}-existing-py.json").write_text('{"commit_hash": "bbbb')  # truncated
    values = full_values()
    values["decode.DecodeDRAM.track_gflops"] = [None, 50.0]
    values["ceilings.GemmPeak.track_gemm_ceiling"] = None
    write_run(results, "alpha", C, values, date=3)
    assert main(["compare", str(results)]) == 0
    captured = capsys.readouterr()
    rows = rows_of(captured.out)
    assert rows["commit"] == ["cccccccc", "aaaaaaaa"]  # beta falls back to its readable commit
    assert rows["n=256 batch=1"] == ["↑ GFLOP/s", "n/a", "20.0"]
    assert rows["fp32 peak (measured)"] == ["↑ GFLOP/s", "n/a", "300"]
    assert "not valid JSON" in captured.err and "failed, shown as n/a" in captured.err


def test_measured_figures_fall_back_to_the_machine_file(tmp_path, capsys):
    root = tmp_path / "r"
    write_benchmarks(root)
    write_machine(root, "box", measured_bandwidth="25 GB/s", measured_peak_fp32="250 GFLOP/s")
    write_run(root, "box", A, {"decode.DecodeDRAM.track_gflops": [5.0, 30.0]})
    (s,), _ = summary.summarize(read_results(root))
    assert s.bandwidth == 25e9 and s.peak == 250e9 and s.bandwidth_from == summary.FROM_MACHINE_FILE
    assert main(["compare", str(root)]) == 0
    out = capsys.readouterr().out
    assert rows_of(out)["bandwidth (measured)"] == ["↑ GB/s", "25.0 †"] and "† from the machine file" in out


def test_datasheet_fraction_for_a_catalogue_cpu_and_unknown_device(tmp_path, capsys):
    root = tmp_path / "r"
    write_benchmarks(root)
    write_machine(root, "epyc", device="EPYC 9654")
    write_machine(root, "odd", device="Quantum 9000")
    write_machine(root, "gpu", device="H100 SXM", cpu="AMD EPYC 9654 96-Core Processor")
    for name in ("epyc", "odd", "gpu"):
        write_run(root, name, A, full_values(bw_ceiling=230.4, peak=3686.4))
    summaries, warnings = summary.summarize(read_results(root))
    s = {x.machine: x for x in summaries}
    assert s["epyc"].bandwidth_fraction() == pytest.approx(0.5) and s["epyc"].peak_fraction() == pytest.approx(0.5)
    # A GPU box: the device is the GPU, but CPU-measured ceilings are held against its CPU's datasheet.
    assert s["gpu"].device.name == "H100 SXM" and s["gpu"].datasheet.name == "EPYC 9654"
    assert s["odd"].device is None and s["odd"].bandwidth_fraction() is None
    assert any("unknown device 'Quantum 9000'" in w for w in warnings)
    assert main(["compare", str(root)]) == 0
    rows = rows_of(capsys.readouterr().out)
    assert rows["datasheet bandwidth reached"] == ["↑ fraction", "50% of EPYC 9654", "50% of EPYC 9654", "n/a"]


def test_report_and_compare_print_the_crossover_the_same_way(capsys):
    assert main(["compare", str(EXAMPLES)]) == 0
    rows = rows_of(capsys.readouterr().out)
    assert main(["report", "--results", str(EXAMPLES), "--machine", EXAMPLE_MACHINE]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "crossover batch" in x)
    column = rows["machine"].index(EXAMPLE_MACHINE) + 1  # after the unit
    predicted, observed = rows["crossover batch, predicted"][column], rows["crossover batch, observed"][column]
    assert line.endswith(f"predicted from measured ceilings {predicted}, observed {observed}"), (line, rows)


# ---- two commits -----------------------------------------------------------------------------


def gate(tmp_path, after_values, threshold=None):
    root = tmp_path / "g"
    write_benchmarks(root)
    write_machine(root, "alpha")
    write_run(root, "alpha", A, full_values(), date=1)
    write_run(root, "alpha", B, after_values, date=2)
    args = ["compare", str(root), "--commits", "aaaa", "bbbb"] + (["--threshold", threshold] if threshold else [])
    return root, args


def test_gflops_drop_is_a_regression_exit_1(tmp_path, capsys):
    root, args = gate(tmp_path, full_values(gflops=(5.0, 50.0)))
    assert main(args) == 1
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "track_gflops" in x and "batch=1" in x)
    assert "-50.0%" in line and "REGRESSION (higher is better)" in line
    assert "track_gflops" in out and "REGRESSION: exit 1" in out


def test_time_rise_is_a_regression_and_time_drop_an_improvement(tmp_path, capsys):
    root, args = gate(tmp_path, full_values(seconds=(2e-5, 1e-5)))
    assert main(args + ["--json"]) == 1
    changes = json.loads(capsys.readouterr().out)["changes"]
    verdicts = {
        (c["benchmark"].rsplit(".", 1)[-1], c["params"]["batch"]): c["verdict"]
        for c in changes
        if c["benchmark"].endswith("time_decode_step")
    }
    assert verdicts == {("time_decode_step", 1): "regression", ("time_decode_step", 2 * 4): "improvement"}


def test_gflops_rise_is_an_improvement_exit_0(tmp_path, capsys):
    root, args = gate(tmp_path, full_values(gflops=(20.0, 100.0), bandwidth=(40.0, 24.0)))
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "IMPROVEMENT (higher is better)" in out and "REGRESSION" not in out.replace("no regression", "")


def test_threshold_and_unjudged_crossover(tmp_path, capsys):
    root, args = gate(tmp_path, full_values(gflops=(9.5, 47.0), crossover=40.0))
    assert main(args) == 0  # -5 % and -6 % are within 10 %
    out = capsys.readouterr().out
    assert "changed" in next(x for x in out.splitlines() if "crossover.Crossover" in x)
    assert main(args + ["--threshold", "2%"]) == 1
    capsys.readouterr()
    assert main(args + ["--threshold", "ten"]) == 2


def test_failed_values_in_the_new_commit_are_na_not_regressions(tmp_path, capsys):
    values = full_values()
    values["decode.DecodeDRAM.track_gflops"] = None
    root, args = gate(tmp_path, values)
    assert main(args + ["--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert {c["verdict"] for c in data["changes"] if c["benchmark"].endswith("track_gflops")} == {"n/a"}


def test_commits_compare_only_machines_that_have_both(results, capsys):
    write_run(results, "alpha", C, full_values(gflops=(1.0, 5.0)), date=3)
    assert main(["compare", str(results), "--commits", "aaaa", "cccc"]) == 1
    captured = capsys.readouterr()
    assert "machine beta: no results for commit cccccccc" in captured.err
    assert main(["compare", str(results), "--commits", "aaaa", "cccc", "--machine", "beta"]) == 2


# ---- --plot --------------------------------------------------------------------------------


def test_plot_overlays_every_machine(results, tmp_path, capsys):
    out = tmp_path / "cmp.png"
    assert main(["compare", str(results), "--plot", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000


def test_plot_never_writes_into_the_results_directory(results, capsys):
    before = snapshot(results)
    assert main(["compare", str(results), "--plot", str(results / "alpha" / "x.png")]) == 2
    assert "never writes into the results directory" in capsys.readouterr().err
    assert snapshot(results) == before


def test_benchmarks_run_at_only_one_commit_are_named_not_tabled(tmp_path, capsys):
    only_decode = {k: v for k, v in full_values(gflops=(10.0, 50.0)).items() if k.startswith("decode.")}
    root, args = gate(tmp_path, only_decode)
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "recorded at only one of the commits, not compared (ceilings.GemmPeak.track_gemm_ceiling" in captured.err
    assert "ceilings." not in captured.out and "decode.DecodeDRAM.track_gflops" in captured.out


def test_the_dram_roof_is_the_bandwidth_roof_wherever_that_is_stream_read(tmp_path):
    """Issue 39: compare's "DRAM roof" (the level sweep's plateau, 57.1 GB/s) and its bandwidth roof (STREAM read,
    32.7) disagreed 1.75× in one run; the report holds its points to read. One DRAM roof per run, as the report's."""
    kinds = [["'copy'", "'add'", "'triad'", "'read'"]]
    suite = {
        **SUITE,
        "ceilings.MemoryBandwidth.track_bandwidth_ceiling": ("track", "GB/s", ["kind"], kinds, "v-ceil-bw"),
        "ceilings.CacheBandwidth.track_bandwidth": ("track", "GB/s", ["level"], [["'L1'", "'DRAM'"]], "v-lb"),
    }
    write_benchmarks(tmp_path, suite)
    write_machine(tmp_path, "box")
    values = {
        **full_values(),
        "ceilings.MemoryBandwidth.track_bandwidth_ceiling": [30.4, 34.3, 30.6, 32.7],
        "ceilings.CacheBandwidth.track_bandwidth": [407.2, 57.1],
    }
    write_run(tmp_path, "box", "c" * 40, values, suite=suite)
    (s,), _ = summary.summarize(read_results(tmp_path))
    assert s.levels == {"L1": 407.2, "DRAM": 32.7} and s.bandwidth == pytest.approx(32.7e9)
    # results from before read (add the roof): the sweep's read-only plateau stays DRAM's, as the report's
    old = {**values, "ceilings.MemoryBandwidth.track_bandwidth_ceiling": [30.4, 34.3, 30.6, None]}
    write_run(tmp_path, "box", "c" * 40, old, suite=suite)
    (s,), _ = summary.summarize(read_results(tmp_path))
    assert s.levels["DRAM"] == 57.1


def test_the_report_and_compare_give_one_ridge_and_one_crossover_for_a_run():
    """One machine's run has one ridge and one predicted crossover, whichever answer shows it: the report and
    ``roofline compare`` call :func:`~roofline.model.arithmetic.measured_ridge` and ``predicted_crossover``."""
    from roofline.model.arithmetic import measured_ridge, predicted_crossover
    from roofline.report.from_results import report_from_results

    res = read_results(EXAMPLES)
    for name in res.machines:
        (s,), _ = summary.summarize(res, [name])
        report = report_from_results(read_results(EXAMPLES), machine=name)
        if s.bandwidth_from == summary.FROM_MACHINE_FILE or report.roofs is None:
            continue  # the report has no machine-file fallback: nothing to hold against each other
        ridge = report.roofs.as_dict()["ridge_flop_per_byte"]["float32"]
        assert s.ridge == ridge == measured_ridge(s.peak, s.bandwidth)
        predicted = predicted_crossover(s.peak, s.bandwidth, 4)
        assert s.predicted_crossover == report.crossover()["predicted_batch"] == predicted
        assert s.predicted_crossover == pytest.approx(ridge * 2)


def test_compare_reads_each_run_through_the_reports_one_reader(monkeypatch):
    """One summary of a machine's run: compare's columns are the run's report (``report_of_run``), its decode
    points, compute roofs and model tokens/s the report's own, plus what comparing adds."""
    from roofline.report.from_results import report_from_results

    read, real = [], summary.report_of_run
    monkeypatch.setattr(summary, "report_of_run", lambda run, info, name: read.append(name) or real(run, info, name))
    summaries, _ = summary.summarize(read_results(EXAMPLES))
    assert read == [s.machine for s in summaries]
    for s in summaries:
        report = report_from_results(read_results(EXAMPLES), machine=s.machine)
        assert s.decode["DRAM"] == {(p.n, p.batch): p.gflops for p in report.decode}
        assert s.decode.get("cache-resident", {}) == {(p.n, p.batch): p.gflops for p in report.cache_resident}
        assert s.tokens == {m.batch: m.tokens_per_s for m in report.model_decode}
        assert s.compute == ({c.dtype: c.gflops for c in report.hierarchy.compute} if report.hierarchy else {})
