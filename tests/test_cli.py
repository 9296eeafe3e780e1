"""The command line end to end at small sizes, and its answers to bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.cli import main

from .clitools import EXAMPLE_MACHINE, one_line_error

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "results"
MACHINE = ["--machine", EXAMPLE_MACHINE]
SMALL = [
    "--n",
    "128",
    "--batch",
    "1,8",
    "--cache-n",
    "64",
    "--sweep-n",
    "128",
    "--sweep-batch",
    "1,4,16",
    "--no-progress",
    "--allow-busy",  # a loaded test machine is not what these tests are about (test_a_contended_report_exits_3)
]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def fast_ceilings(monkeypatch):
    """The run at tiny sizes, without its referees and level sweep: the CLI path is under test here, not the
    machine (the level sweep at this machine's own sizes took three quarters of a report's time)."""
    from roofline.suite import live

    for var, value in {"ROOFLINE_GEMM_N": "128", "ROOFLINE_REFEREE": "off", "ROOFLINE_LEVELS": "off"}.items():
        monkeypatch.setenv(var, value)
    real_measure = live.measure_live

    def once(**kw):  # the text, JSON and plot tests render one measurement of these sizes, whichever runs first
        key = repr(sorted((k, v) for k, v in kw.items() if k != "progress"))
        if key not in _MEASURED:
            _MEASURED[key] = real_measure(**kw)
        return _MEASURED[key]

    monkeypatch.setattr(live, "measure_live", once)


_MEASURED: dict = {}


def test_report_text(capsys, small_machine, fast_ceilings):
    code, out, err = run(capsys, "report", *SMALL)
    assert code == 0, err
    assert "296 FLOPs per byte at the ridge" in out
    assert "predicted from measured ceilings" in out
    assert "decode, weights from DRAM" in out


def test_report_json_holds_the_documented_keys(capsys, small_machine, fast_ceilings, tmp_path):
    code, out, err = run(capsys, "report", *SMALL, "--json", "--plot", str(tmp_path / "r.svg"))
    assert code == 0, err
    rep = json.loads(out)
    assert rep["schema"] == "roofline.report/1"
    assert {(r["n"], r["batch"]) for r in rep["decode"]} == {(128, 1), (128, 8)}
    assert rep["crossover"]["observed_batch"] > 0
    assert (tmp_path / "r.svg").read_text().startswith("<?xml")


def test_plot_png(capsys, small_machine, fast_ceilings, tmp_path):
    code, out, err = run(capsys, "plot", "-o", str(tmp_path / "r.png"), *SMALL)
    assert code == 0, err
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("command", ["report", "plot"])
def test_a_contended_report_exits_3_unless_allowed(capsys, monkeypatch, tmp_path, command):
    """Figures measured under contention: the report says so first, and the exit status says so too."""
    import dataclasses

    from roofline.model.conditions import Conditions
    from roofline.report import from_results

    real = from_results.report_from_results
    busy = Conditions(lost_share=0.5, cores=2, blas_threads=2)
    monkeypatch.setattr(
        from_results, "report_from_results", lambda *a, **kw: dataclasses.replace(real(*a, **kw), conditions=busy)
    )
    out_flag = ["-o", str(tmp_path / "r.png")] if command == "plot" else []
    for extra, status in (([], 3), (["--allow-busy"], 0)):
        code, out, err = run(capsys, command, "--results", str(EXAMPLES), *MACHINE, *out_flag, *extra)
        assert code == status, err
        if command == "report":
            assert out.startswith("MEASURED UNDER CONTENTION: 50% of CPU time lost to other processes"), out
        if status:
            assert err.count("\n") == 1 and "(--allow-busy accepts them): exit 3" in err, err
        else:
            assert err == ""
    # and a quiet run's report exits 0 without the flag
    monkeypatch.setattr(from_results, "report_from_results", real)
    code, _, err = run(capsys, command, "--results", str(EXAMPLES), *MACHINE, *out_flag)
    assert code == 0, err


def test_preflight_and_cache(capsys, small_machine):
    code, out, _ = run(capsys, "preflight", "--results", str(small_machine / "results"))
    assert code == 0 and "LLC 1 MiB" in out
    code, out, _ = run(capsys, "cache")
    assert code == 0


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["report", "--n", "0"], "not positive"),
        (["report", "--n", "-5"], "not positive"),
        (["report", "--batch", "x"], "not an integer"),
        (["report", "--sweep-n", "nan"], "not an integer"),
        (["report", "--bogus"], "unrecognized arguments"),
        (["plot"], "-o/--output"),
        (["plot", "-o", "/nonexistent-dir/r.png"], "does not exist"),
        (["plot", "-o", "r.jpg", "--n", "64"], "unsupported plot format"),
        (["report", "--plot", "r.gif"], "unsupported plot format"),
        (["nosuch"], "invalid choice"),
        ([], "required"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, small_machine, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    one_line_error(err)
    assert needle in err
    assert "Traceback" not in err


@pytest.mark.parametrize("var,value", [("ROOFLINE_N", "0"), ("ROOFLINE_BATCH", "-1"), ("ROOFLINE_CACHE_N", "2.5")])
def test_bad_environment_variables_are_named(capsys, small_machine, monkeypatch, var, value):
    monkeypatch.setenv(var, value)
    code, _, err = run(capsys, "preflight")
    assert code == 2 and var in err and err.count("\n") == 1


def test_unwritable_results_folder(capsys, small_machine):
    blocker = small_machine / "file"
    blocker.write_text("keep me")
    code, _, err = run(capsys, "preflight", "--results", str(blocker / "results"))
    assert code == 2 and "not writable" in err
    assert blocker.read_text() == "keep me"


def test_pool_that_does_not_fit_in_ram(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "100G")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    code, _, err = run(capsys, "preflight", "--results", str(tmp_path / "r"))
    assert code == 2 and "GiB" in err and "available" in err


def test_python_dash_m_entry_point(small_machine):
    env = {**os.environ, "ROOFLINE_N": "0"}
    proc = subprocess.run([sys.executable, "-m", "roofline", "preflight"], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "roofline: error: ROOFLINE_N: 0 is not positive"


def test_each_command_is_one_module_of_the_cli_package_with_its_flags_and_its_work():
    """roofline/cli/ holds a module per command (or small family): COMMANDS names, for each subcommand, the
    add_<name> and run_<name> of one module, never the package's face."""
    import importlib

    from roofline.cli import COMMANDS

    for name, (add, run_) in COMMANDS.items():
        assert (add.__name__, run_.__name__) == (f"add_{name}", f"run_{name}")
        assert add.__module__ == run_.__module__ != "roofline.cli", name
        assert getattr(importlib.import_module(add.__module__), f"run_{name}") is run_
