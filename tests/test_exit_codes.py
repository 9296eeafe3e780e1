"""The exit codes the README documents, one case per documented outcome, through the real entry point.

0: answered. 1: a regression (``compare --commits``) or a failure. 2: bad input, one line on
stderr. 130: interrupted. The flags themselves are pinned in tests/golden/cli-flags.json.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.cli import COMMANDS, main

from .asv_fixtures import full_values, two_machines, write_run
from .clitools import EXAMPLE_MACHINE

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = str(ROOT / "examples" / "results")
DECODE = ["decode", "--model", "llama-3-8b", "--hardware", "h100"]

ANSWERED = [
    ["specs", "h100", "mi300x"],
    ["specs", "--json"],
    ["compare", EXAMPLES],
    ["compare", EXAMPLES, "--json"],
    ["report", "--results", EXAMPLES, "--machine", EXAMPLE_MACHINE],
    ["report", "--results", EXAMPLES, "--machine", EXAMPLE_MACHINE, "--json"],
    [*DECODE, "--batch", "1,8"],
    ["backends"],
]

BAD_INPUT = [
    [],  # no subcommand
    ["no-such-command"],
    *[[command, "--no-such-flag"] for command in sorted(COMMANDS)],
    ["plot"],  # -o is required
    ["decode", "--hardware", "h100"],  # --model is required
    ["compare"],  # RESULTS_DIR is required
    ["report", "--batch", "x"],
    ["report", "--n", "1e3"],
    ["report", "--batch", "1,,8"],
    ["report", "--batch", ""],
    ["report", "--n", "0"],
    ["report", "--batch", "-1"],
    ["report", "--n", "99999999"],
    ["report", "--sweep-n", "nan"],
    ["report", "--batch", "inf"],
    [*DECODE, "--context", "0"],
    [*DECODE, "--interconnect", "nan"],
    [*DECODE, "--interconnect", "inf"],
    ["decode", "--model", "no-such-model", "--hardware", "h100"],
    ["decode", "--model", "llama-3-70b", "--hardware", "h100", "--batch", "512", "--require-fit"],  # does not fit
    ["decode", "--model", "llama-3-8b", "--hardware", "h100", "--tp", "3"],  # does not divide the KV heads
    ["specs", "no-such-device"],
    ["plot", "-o", "roofline.jpg", "--n", "64"],
    ["plot", "-o", "/no/such/folder/roofline.png"],
    ["report", "--plot", "/proc/roofline.png"],
    ["report", "--results", "/no/such/results"],
    ["compare", "/no/such/results"],
    ["compare", "--threshold", "-5%", EXAMPLES],
    ["machine", "--machine", ""],
    ["gpu", "--dtypes", "fp7"],
]


def run(capsys, argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv", ANSWERED, ids=" ".join)
def test_answered_is_0(capsys, argv):
    code, _, err = run(capsys, argv)
    assert code == 0, err


def test_version_is_0(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("roofline ")


@pytest.mark.parametrize("argv", BAD_INPUT, ids=lambda a: " ".join(a) or "(nothing)")
def test_bad_input_is_one_line_and_2(capsys, argv):
    code, out, err = run(capsys, argv)
    assert code == 2, (out, err)
    assert re.match(r"roofline( [a-z]+)?: error: ", err) and err.count("\n") == 1 and "Traceback" not in err


def test_bad_environment_variable_is_2(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    bad = (
        ("ROOFLINE_N", "0"),
        ("ROOFLINE_BATCH", "-1"),
        ("ROOFLINE_LLC_BYTES", "lots"),
        ("ROOFLINE_GEMM_N", "256,512"),
        ("ROOFLINE_REFEREE", "maybe"),
        ("ROOFLINE_LEVELS", "maybe"),
    )
    for name, value in bad:
        with monkeypatch.context() as m:
            m.setenv(name, value)
            code, _, err = run(capsys, ["preflight"])
            assert code == 2 and name in err and err.count("\n") == 1


def test_compare_commits_is_1_on_a_regression_and_0_without(capsys, tmp_path):
    root = two_machines(tmp_path / "results")
    code, _, err = run(capsys, ["compare", str(root), "--commits", "aaaa", "bbbb"])
    assert code == 0, err
    write_run(root, "alpha", "c" * 40, full_values(gflops=(5.0, 25.0)), date=3)
    code, out, _ = run(capsys, ["compare", str(root), "--machine", "alpha", "--commits", "bbbb", "cccc"])
    assert code == 1 and "REGRESSION" in out
    code, _, err = run(capsys, ["compare", str(root), "--commits", "aaaa", "ffff"])
    assert code == 2 and err.count("\n") == 1


def test_bench_outside_a_git_checkout_is_2(capsys, tmp_path, monkeypatch, small_machine):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))
    code, _, err = run(capsys, ["bench", "--results", str(tmp_path / "results")])
    assert code == 2 and "git" in err and err.count("\n") == 1


def test_bench_refuses_a_requirements_file_it_cannot_use_in_one_line(capsys, tmp_path, small_machine):
    missing = tmp_path / "nope.txt"
    code, _, err = run(capsys, ["bench", "--results", str(tmp_path / "r"), "--asv-env-requirements", str(missing)])
    assert code == 2 and "no file" in err and str(missing) in err and err.count("\n") == 1
    present = tmp_path / "req.txt"
    present.write_text("iniconfig\n")
    argv = ["bench", "--results", str(tmp_path / "r"), "--python-same", "--asv-env-requirements", str(present)]
    code, _, err = run(capsys, argv)
    assert code == 2 and "--python-same" in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()  # refused before anything was written


def test_interrupted_is_130(capsys, monkeypatch):
    import roofline.cli as cli

    def interrupt(args):
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "specs", (cli.COMMANDS["specs"][0], interrupt))
    code, _, err = run(capsys, ["specs"])
    assert code == 130 and err == "roofline: interrupted\n"


def test_a_real_process_exits_2_with_one_line(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "roofline", "report", "--n", "abc"],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_busy_is_3_unless_accepted_and_never_lowers_a_status():
    """The one rule every measuring command applies (report, plot, bench, regress)."""
    from roofline.errors import EXIT_BUSY, busy_exit

    assert busy_exit(0, True, False) == EXIT_BUSY == 3
    assert busy_exit(1, True, False) == 3
    assert busy_exit(130, True, False) == 130
    assert busy_exit(0, True, True) == 0 and busy_exit(1, True, True) == 1
    assert busy_exit(0, False, False) == 0 and busy_exit(1, False, False) == 1


@pytest.fixture
def regress_without_asv(monkeypatch, tmp_path):
    """roofline regress with asv's part replaced: asv records commit cccc of machine alpha, gated against bbbb (a
    regression); asv's exit status and the share of CPU time others took are settable (``said["rc"]``,
    ``said["lost"]``)."""
    from roofline import asv_driver, host, regress
    from roofline.suite import machine_file

    root = two_machines(tmp_path / "results")
    said = {"rc": 0, "lost": None, "runs": 0}

    def asv_ran(*args):  # commit cccc measured again (slower): a regression
        said["runs"] += 1
        write_run(root, "alpha", "c" * 40, full_values(gflops=(5.0, 25.0)), date=2 + said["runs"])
        return "3.12", said["rc"], said["lost"]

    monkeypatch.setattr(regress, "_commits", lambda *a: ("b" * 40, "c" * 40))
    monkeypatch.setattr(regress, "preflight", lambda results: [])
    monkeypatch.setattr(asv_driver, "busy_before", lambda allow_busy: None)
    monkeypatch.setattr(host, "gpu_facts", lambda: None)
    monkeypatch.setattr(machine_file, "register", lambda name, gpu=None: ("alpha", {}, []))
    monkeypatch.setattr(regress, "_run_both", asv_ran)
    monkeypatch.setattr(regress, "_gate", lambda *a: _alpha_gate(root))
    return root, said


def _alpha_gate(root):
    from roofline.report import gate
    from roofline.suite.results import read_results

    res = read_results(root)
    cmp = gate.compare_commits(res, "b" * 40, "c" * 40, machines=["alpha"])
    return cmp, ["a warning of reading the results"]


def test_regress_shows_its_gate_then_the_lines_that_end_the_run(capsys, regress_without_asv):
    """regress returns what it found; the command prints the gate (table or JSON), then the run's closing
    lines, the contention line last, and exits 1 on a regression, 3 where others took the machine."""
    import json

    root, said = regress_without_asv
    argv = ["regress", "HEAD~1", "HEAD", "--results", str(root)]
    code, out, err = run(capsys, argv)
    assert code == 1 and "REGRESSION" in out
    lines = err.splitlines()
    assert lines[0] == "roofline: warning: a warning of reading the results"
    assert lines[1].startswith("roofline: regress took ") and len(lines) == 2
    said.update(rc=1, lost=0.5)
    code, out, err = run(capsys, [*argv, "--json"])
    assert code == 3 and json.loads(out)["regressed"]
    lines = err.splitlines()
    assert lines[2] == "roofline: some benchmarks failed (see above): exit 1 at least"
    assert lines[3].startswith("roofline: measured under contention (") and lines[3].endswith("exit 3")
    code, _, err = run(capsys, [*argv, "--allow-busy"])
    assert code == 1 and err.splitlines()[-1].endswith("(--allow-busy)")
