"""The hostile battery (issue 7): every entry point attacked, each outcome asserted.

Cases elsewhere in the suite belong to the battery too; docs/testing.md ("The hostile battery") lists them all.
Here: every subcommand against bad flags, hostile results folders for `report --results`, a
wrong BLAS seen through the CLI, and what must never happen (a traceback, a changed file).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from roofline.cli import COMMANDS, main

from .asv_fixtures import full_values, snapshot, two_machines, write_benchmarks, write_machine, write_run
from .clitools import one_line_error


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_exit_2(code, err):
    assert code == 2, err
    one_line_error(err)
    assert "Traceback" not in err


# ---- every subcommand, every kind of bad flag ------------------------------------------------


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_subcommand_refuses_an_unknown_flag(capsys, command):
    code, _, err = run(capsys, command, "--no-such-flag")
    one_line_exit_2(code, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "--n", "1e3"],
        ["report", "--n", "99999999"],
        ["report", "--batch", "inf"],
        ["report", "--batch", "1,,8"],
        ["report", "--sweep-batch", ""],
        ["plot", "-o"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--context", "-1"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--interconnect", "nan"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--interconnect", "inf"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--batch", "0"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--allreduce-latency", "inf"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--allreduce-latency", "-0.5"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--prompt", "-3", "--output", "5"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--prompt", "1", "--output", "1e3"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--prompt", "128"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--quant", "GPTQ"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--quant", "awq", "--dtype", "bf16"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--interconnect", "infiniband"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--reserve", "-1"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--reserve", "1e6"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--require-fit", "--batch", "1000"],
        ["decode", "--model", "deepseek-ai/DeepSeek-V3", "--hardware", "h100"],
        ["decode", "--model", "no-such-model", "--hardware", "h100"],
        ["decode", "--model", "llama-3-8b", "--hardware", "h1000"],
        ["specs", "no-such-device"],
        ["compare", "/no/such/results"],
        ["compare", "--threshold", "-5%", "/tmp"],
        ["machine", "--machine", ""],
        ["report", "--results", "/no/such/results"],
    ],
)
def test_ill_typed_zero_negative_huge_nan_infinite_and_unknown(capsys, argv):
    code, _, err = run(capsys, *argv)
    one_line_exit_2(code, err)


@pytest.mark.parametrize("target", ["/proc/roofline.png", "/sys/roofline.svg"])
def test_output_where_no_file_can_be_created_is_refused_before_measuring(capsys, target):
    """Root passes every permission check, so aim at filesystems that refuse new files."""
    code, out, err = run(capsys, "plot", "-o", target, "--n", "64")
    one_line_exit_2(code, err)
    assert "not writable" in err and out == ""
    assert not os.path.exists(target)


@pytest.mark.parametrize("cache", ["/proc/roofline-cache", "/sys/roofline-cache"])
def test_preflight_refuses_a_data_cache_folder_it_cannot_write(capsys, monkeypatch, small_machine, cache):
    """The data cache is checked like the results folder, before asv runs (not later, inside asv)."""
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", cache)
    code, out, err = run(capsys, "preflight", "--results", str(small_machine / "results"))
    one_line_exit_2(code, err)
    assert "data cache folder" in err and cache in err and out == ""


def test_a_subcommand_usage_error_has_one_prefix(capsys):
    code, _, err = run(capsys, "decode", "--model", "llama-3-8b", "--hardware", "h100", "--dtype", "fp4")
    one_line_exit_2(code, err)
    assert err.startswith("roofline decode: error: argument --dtype: invalid choice: 'fp4'"), err


@pytest.mark.parametrize("command", ["report", "plot"])
def test_machine_help_says_what_the_option_does(capsys, tmp_path, command):
    """--help and the behaviour agree: several machines without --machine is refused, never 'the newest'."""
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "required when RESULTS holds several" in text and "newest" not in text
    root = two_machines(tmp_path / "results")
    args = [command, "--results", str(root)] + (["-o", str(tmp_path / "r.png")] if command == "plot" else [])
    code, _, err = run(capsys, *args)
    one_line_exit_2(code, err)
    assert "pick one with --machine" in err


def test_bench_outside_a_git_checkout(capsys, tmp_path, monkeypatch, small_machine):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    code, _, err = run(capsys, "bench", "--results", str(tmp_path / "results"))
    one_line_exit_2(code, err)
    assert "git" in err


# ---- hostile results folders: `report --results` answers for the valid parts, writes nothing --


def hostile_results(root):
    """alpha and beta, then: a truncated file, garbage, a failed benchmark, an old suite version."""
    two_machines(root)
    (root / "alpha" / "cccccccc-existing-py.json").write_text('{"commit_hash": "cc')  # truncated
    (root / "alpha" / "dddddddd-existing-py.json").write_bytes(b"\x00\xff garbage")
    values = full_values()
    values["decode.DecodeDRAM.track_gflops"] = [None, 50.0]  # the batch-1 benchmark failed
    write_run(root, "beta", "e" * 40, values, date=3, versions={"decode.DecodeDRAM.track_bandwidth": "old"})
    return root


def test_report_from_hostile_results_answers_the_valid_parts(capsys, tmp_path):
    root = hostile_results(tmp_path / "results")
    before = snapshot(root)
    code, out, err = run(capsys, "report", "--results", str(root), "--machine", "beta", "--json")
    assert code == 0, err
    rep = json.loads(out)
    rows = {(r["n"], r["batch"]): r for r in rep["decode"]}
    assert rows[(256, 1)]["gflops"] is None  # failed → n/a
    assert rows[(256, 8)]["gflops"] == 50.0
    assert rows[(256, 8)]["gbps"] == 12.0  # an older version of the same quantity: the run's own figure
    assert rep["ceilings"]["bandwidth_roof_gbps"] == 30.0
    code, out, err = run(capsys, "report", "--results", str(root), "--machine", "alpha")
    assert code == 0 and "n/a" not in out.split("decode, weights from DRAM")[1].split("\n")[2]
    assert "not valid JSON" in out or "not UTF-8" in out  # the skipped files are named in the warnings
    assert snapshot(root) == before  # byte for byte, mtimes too


def test_report_with_two_machines_and_none_picked(capsys, tmp_path):
    root = two_machines(tmp_path / "results")
    code, _, err = run(capsys, "report", "--results", str(root))
    one_line_exit_2(code, err)
    assert "alpha" in err and "beta" in err


def test_report_from_an_empty_folder_and_a_machine_with_no_readable_results(capsys, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = run(capsys, "report", "--results", str(empty))
    one_line_exit_2(code, err)
    write_benchmarks(tmp_path / "r")
    write_machine(tmp_path / "r", "gamma")
    (tmp_path / "r" / "gamma" / "aaaaaaaa-x.json").write_text("[]")
    code, _, err = run(capsys, "report", "--results", str(tmp_path / "r"))
    one_line_exit_2(code, err)


def test_disjoint_machines_compare_and_report(capsys, tmp_path):
    root = tmp_path / "results"
    write_benchmarks(root)
    write_machine(root, "left")
    write_machine(root, "right")
    only_decode = {k: v for k, v in full_values().items() if k.startswith("decode.")}
    only_ceilings = {k: v for k, v in full_values().items() if not k.startswith("decode.")}
    write_run(root, "left", "a" * 40, only_decode)
    write_run(root, "right", "b" * 40, only_ceilings)
    before = snapshot(root)
    code, out, err = run(capsys, "compare", str(root))
    assert code == 0, err
    assert "left" in out and "right" in out and "n/a" in out
    code, out, _ = run(capsys, "report", "--results", str(root), "--machine", "left")
    assert code == 0 and "predicted from measured ceilings n/a" in out
    assert snapshot(root) == before


# ---- a wrong BLAS, seen from the command line: no figure, exit 1 --------------------------------


def test_a_wrong_blas_reports_no_figure(capsys, small_machine, monkeypatch):
    real = np.matmul

    def wrong(a, b, out=None):
        res = real(a, b, out=out)
        res[0] += 1.0
        return res

    monkeypatch.setattr(np, "matmul", wrong)
    code, out, err = run(
        capsys,
        "report",
        "--n",
        "64",
        "--batch",
        "1",
        "--cache-n",
        "64",
        "--sweep-n",
        "64",
        "--sweep-batch",
        "1,2",
        "--no-progress",
    )
    assert code == 1
    assert "no peak reported" in err or "no figure will be reported" in err
    assert "GFLOP/s" not in out and err.count("\n") == 1


# ---- never a traceback, from a real process -------------------------------------------------


@pytest.mark.parametrize(
    "argv,env",
    [
        (["report", "--n", "abc"], {}),
        (["preflight"], {"ROOFLINE_LLC_BYTES": "lots"}),
        (["preflight"], {"ROOFLINE_BATCH": "nan"}),
        (["machine", "--file", "/dev/null/x"], {}),
    ],
)
def test_no_traceback_from_a_real_process(argv, env, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "roofline", *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path), **env},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
