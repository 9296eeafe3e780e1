"""`roofline compare`: machines side by side, the two-commit gate, and every bad input the issue lists."""

from __future__ import annotations

import json

import pytest

from roofline.cli import main
from roofline.report import compare
from roofline.suite.results import read_results

from .asv_fixtures import full_values, snapshot, two_machines, write_benchmarks, write_machine, write_run
from .clitools import one_line_error

A, B, C = "a" * 40, "b" * 40, "c" * 40


@pytest.fixture
def results(tmp_path):
    return two_machines(tmp_path / "results")


def test_summary_reads_ceilings_ridge_crossover_and_points(results):
    (alpha, beta), warnings = compare.summarize(read_results(results))
    assert warnings == []
    assert alpha.commit == B and alpha.bandwidth == 30e9 and alpha.peak == 300e9
    assert alpha.ridge == pytest.approx(10.0) and beta.ridge == pytest.approx(5.0)
    assert alpha.predicted_crossover == pytest.approx(20.0)  # float32: 2 · ridge
    assert alpha.observed_crossover == [({}, 24.0)]
    assert alpha.decode["DRAM"] == {(256, 1): 11.0, (256, 8): 52.0}
    assert alpha.device is None and alpha.bandwidth_fraction() is None


def test_cli_table_has_a_column_per_machine(results, capsys):
    before = snapshot(results)
    assert main(["compare", str(results)]) == 0
    out = capsys.readouterr().out
    assert "alpha" in out and "beta" in out
    lines = {line.strip().split("  ")[0]: line.split() for line in out.splitlines()}
    assert lines["ridge point"][-4:] == ["10.0", "FLOP/B", "5.00", "FLOP/B"]
    assert lines["n=256 batch=8"][-2:] == ["52.0", "104"]
    assert lines["crossover batch, observed"][-2:] == ["24.0", "24.0"]
    assert snapshot(results) == before  # compare never writes into the results directory


def test_pick_machine_and_commit(results, capsys):
    assert main(["compare", str(results), "--machine", "beta", "--commit", "aaaa", "--json"]) == 0
    (beta,) = json.loads(capsys.readouterr().out)["machines"]
    assert beta["machine"] == "beta" and beta["commit"] == A
    assert beta["decode_gflops"]["DRAM"][1] == {
        "n": 256,
        "batch": 8,
        "gflops": 100.0,
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
    rows = {line.strip().split("  ")[0]: line.split() for line in captured.out.splitlines()}
    assert rows["commit"][-2:] == ["cccccccc", "aaaaaaaa"]  # beta falls back to its readable commit
    assert rows["n=256 batch=1"][-2:] == ["n/a", "20.0"]
    assert rows["fp32 peak (measured)"][-3:] == ["n/a", "300", "GFLOP/s"]
    assert "not valid JSON" in captured.err and "failed, shown as n/a" in captured.err


def test_measured_figures_fall_back_to_the_machine_file(tmp_path, capsys):
    root = tmp_path / "r"
    write_benchmarks(root)
    write_machine(root, "box", measured_bandwidth="25 GB/s", measured_peak_fp32="250 GFLOP/s")
    write_run(root, "box", A, {"decode.DecodeDRAM.track_gflops": [5.0, 30.0]})
    (s,), _ = compare.summarize(read_results(root))
    assert s.bandwidth == 25e9 and s.peak == 250e9 and s.bandwidth_from == compare.FROM_MACHINE_FILE
    assert main(["compare", str(root)]) == 0
    assert "25.0 GB/s †" in capsys.readouterr().out


def test_datasheet_fraction_for_a_catalogue_cpu_and_unknown_device(tmp_path, capsys):
    root = tmp_path / "r"
    write_benchmarks(root)
    write_machine(root, "epyc", device="EPYC 9654")
    write_machine(root, "odd", device="Quantum 9000")
    write_machine(root, "gpu", device="H100 SXM", cpu="AMD EPYC 9654 96-Core Processor")
    for name in ("epyc", "odd", "gpu"):
        write_run(root, name, A, full_values(bw_ceiling=230.4, peak=3686.4))
    summaries, warnings = compare.summarize(read_results(root))
    s = {x.machine: x for x in summaries}
    assert s["epyc"].bandwidth_fraction() == pytest.approx(0.5) and s["epyc"].peak_fraction() == pytest.approx(0.5)
    # A GPU box: the device is the GPU, but CPU-measured ceilings are held against its CPU's datasheet.
    assert s["gpu"].device.name == "H100 SXM" and s["gpu"].datasheet.name == "EPYC 9654"
    assert s["odd"].device is None and s["odd"].bandwidth_fraction() is None
    assert any("unknown device 'Quantum 9000'" in w for w in warnings)
    assert main(["compare", str(root)]) == 0
    out = capsys.readouterr().out
    assert "50% of EPYC 9654" in out


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
