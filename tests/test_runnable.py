"""What asv runs of the suite, and what it spares: the chosen combinations, the classes that cannot run here
(roofline's asv plugin, suite.runnable), ROOFLINE_BENCH; and what a run says once, exits with, or gates."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from roofline import asv_driver, asv_plugin, regress
from roofline.errors import BadInput
from roofline.suite import harness, params, runnable
from roofline.suite.results import Benchmark

from .clitools import one_line_error

ROOT = Path(__file__).resolve().parents[1]
GRID = params.read_grid(ROOT / "benchmarks")


def asv_matches(regexes: list[str], label: str) -> bool:
    """asv's own rule: a combination runs when any --bench regex is found in ``name(params)``."""
    return any(re.search(r, label) for r in regexes)


def test_without_a_cuda_device_the_cuda_class_and_combinations_are_left_out_with_one_line():
    left = runnable.cannot_run([set()], device=lambda: False)
    assert [x.what for x in left] == ["backends.CudaDecode", "backends.CallOverhead (torch-cuda)"]
    (line,) = runnable.summary(left)
    assert line.startswith("not run: backends.CudaDecode, backends.CallOverhead (torch-cuda): no CUDA device")
    regexes = params.selection(GRID, exclude=[x.regex for x in left])
    assert not asv_matches(regexes, "backends.CudaDecode.track_gflops('torch-cuda', 'bf16', 8192, 1)")
    assert not asv_matches(regexes, "backends.CallOverhead.track_single_call('torch-cuda')")
    assert asv_matches(regexes, "backends.CallOverhead.track_single_call('numpy')")
    assert asv_matches(regexes, "ceilings.GemmPeak.track_gemm_ceiling('float32')")
    assert runnable.cannot_run([set()], device=lambda: True) == []


def test_a_quick_look_leaves_out_every_time_twin_and_nothing_else(monkeypatch):
    monkeypatch.setenv(params.QUICK_VARIABLE, "1")
    left = runnable.cannot_run([set()], device=lambda: True)
    assert [x.what for x in left] == ["the time_ twins"]
    assert runnable.summary(left) == [
        "not run: the time_ twins: a quick look (ROOFLINE_QUICK=1) times none; asv starts no process for it"
    ]
    regexes = params.selection(GRID, exclude=[x.regex for x in left])
    assert not asv_matches(regexes, "decode.DecodeDRAM.time_decode_step(1024, 1)")
    assert not asv_matches(regexes, "backends.BackendDecode.time_decode_step('numpy', 'fp32', 256, 1)")
    assert asv_matches(regexes, "decode.DecodeDRAM.track_gflops(1024, 1)")
    assert asv_matches(regexes, "models.ModelDecode.track_tokens_per_s(1)")
    monkeypatch.setenv(params.QUICK_VARIABLE, "0")
    assert runnable.cannot_run([set()], device=lambda: True) == []


def test_a_class_is_left_out_only_when_every_environment_lacks_what_it_needs():
    def names(missing):
        return [x.what for x in runnable.cannot_run(missing, device=lambda: True)]

    assert names([{"llama_cpp"}, {"llama_cpp", "torch"}]) == ["engines.LlamaCppDecode"]
    assert names([{"llama_cpp"}, set()]) == []  # one environment has it: it runs there
    assert names([{"torch"}]) == ["models.ModelDecode"]
    assert names([{"llama_cpp"}, None]) == []  # an environment that could not be asked leaves everything in
    (why,) = {x.why for x in runnable.cannot_run([{"torch", "transformers"}], device=lambda: True)}
    assert why == "torch, transformers not installed where the benchmarks run"


def test_a_part_make_bench_was_told_to_leave_out_is_left_out_even_where_installed(monkeypatch):
    """make bench ENGINES_REQUIREMENTS= sets ROOFLINE_WITHOUT=engines: llama.cpp, though an earlier run left it
    installed in asv's environment, runs no process; the line names the variable. Names and params stay."""
    monkeypatch.setenv(runnable.WITHOUT_VARIABLE, "engines")
    left = runnable.cannot_run([set()], device=lambda: True)  # everything installed
    assert [x.what for x in left] == ["engines.LlamaCppDecode"]
    assert runnable.summary(left) == [
        "not run: engines.LlamaCppDecode: left out: make bench ENGINES_REQUIREMENTS= (ROOFLINE_WITHOUT=engines); "
        "llama_cpp installed where the benchmarks run, but not chosen; asv starts no process for it"
    ]
    regexes = params.selection(GRID, exclude=[x.regex for x in left])
    assert not asv_matches(regexes, "engines.LlamaCppDecode.track_tokens_per_s('Q4_0', 1)")
    assert asv_matches(regexes, "models.ModelDecode.track_tokens_per_s(1)")
    monkeypatch.setenv(runnable.WITHOUT_VARIABLE, "models,engines")
    left = runnable.cannot_run([{"llama_cpp", "torch", "transformers"}], device=lambda: True)  # none installed
    assert [(x.what, x.why) for x in left] == [
        ("models.ModelDecode", "left out: make bench MODELS_REQUIREMENTS= (ROOFLINE_WITHOUT=models)"),
        ("engines.LlamaCppDecode", "left out: make bench ENGINES_REQUIREMENTS= (ROOFLINE_WITHOUT=engines)"),
    ]  # the choice is the reason, said once, not "not installed" beside it
    monkeypatch.setenv(runnable.WITHOUT_VARIABLE, "engine")
    with pytest.raises(BadInput, match="ROOFLINE_WITHOUT: 'engine' is none of models, engines"):
        runnable.cannot_run([set()], device=lambda: True)
    monkeypatch.setenv(runnable.WITHOUT_VARIABLE, "")
    assert runnable.cannot_run([set()], device=lambda: True) == []


@pytest.mark.parametrize(
    "make_args, without",
    [
        ([], ""),
        (["ENGINES_REQUIREMENTS="], "engines"),
        (["MODELS_REQUIREMENTS=", "ENGINES_REQUIREMENTS="], "models,engines"),
    ],
)
def test_make_bench_turns_an_empty_requirements_variable_into_roofline_without(tmp_path, make_args, without):
    show = tmp_path / "show.mk"
    show.write_text('show:\n\t@echo "[$$ROOFLINE_WITHOUT]"\n')
    env = {k: v for k, v in os.environ.items() if k != runnable.WITHOUT_VARIABLE}
    proc = subprocess.run(
        ["make", "-s", "-f", "Makefile", "-f", str(show), "show", *make_args], cwd=ROOT, env=env, capture_output=True,
        text=True,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"[{without}]"


def test_roofline_bench_narrows_every_selection_and_a_bad_one_is_one_line(monkeypatch):
    monkeypatch.setenv("ROOFLINE_N", "256")
    monkeypatch.setenv("ROOFLINE_BATCH", "1")
    monkeypatch.setenv(params.BENCH_VARIABLE, r"^decode\.DecodeDRAM\.track_gflops")
    regexes = params.selection(GRID, only=["track_", "time_"])
    assert asv_matches(regexes, "decode.DecodeDRAM.track_gflops(256, 1)")
    assert not asv_matches(regexes, "decode.DecodeDRAM.track_gflops(256, 8)")  # not chosen
    assert not asv_matches(regexes, "decode.DecodeDRAM.time_decode_step(256, 1)")  # not ROOFLINE_BENCH's
    assert not asv_matches(regexes, "ceilings.GemmPeak.track_gemm_ceiling('float32')")
    monkeypatch.setenv(params.BENCH_VARIABLE, "decode(")
    with pytest.raises(BadInput, match=r"ROOFLINE_BENCH 'decode\(' is not a regular expression"):
        params.selection(GRID)


class _Env:
    def __init__(self, missing):
        self.missing = missing

    def run(self, args, **kwargs):
        asked = args[2:]
        return "".join(f"{m}\n" for m in asked if m in self.missing)


def test_the_asv_plugin_narrows_discovery_and_says_what_it_leaves_out(monkeypatch, capsys, tmp_path):
    from roofline.suite.notes import NOTES_VARIABLE, read_notes, reason_for

    monkeypatch.setattr(runnable, "gpu_present", lambda: False)
    monkeypatch.setenv(NOTES_VARIABLE, str(tmp_path / "notes.jsonl"))
    conf = SimpleNamespace(benchmark_dir=str(ROOT / "benchmarks"))
    found = {
        "backends.CudaDecode.track_gflops": {"params": [["'torch-cuda'"], ["'bf16'"], ["8192"], ["1"]]},
        "engines.LlamaCppDecode.track_tokens_per_s": {"params": [["'F16'"], ["1"]]},
        "decode.DecodeDRAM.track_gflops": {"params": [["256"], ["1"]]},
    }
    regexes = asv_plugin.narrowed(conf, [_Env({"llama_cpp"})], None, found)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "roofline: not run: backends.CudaDecode: no CUDA device here (no NVIDIA device node); asv starts no process "
        "for it",  # CallOverhead was not asked for
        "roofline: not run: engines.LlamaCppDecode: llama_cpp not installed where the benchmarks run; asv starts no "
        "process for it",
    ]
    assert not asv_matches(regexes, "engines.LlamaCppDecode.track_tokens_per_s('F16', 1)")
    assert asv_matches(regexes, "models.ModelDecode.track_tokens_per_s(1)")  # torch is there
    said = read_notes(tmp_path / "notes.jsonl")  # roofline bench's report gives each row of the class this reason
    assert reason_for(said, "engines.LlamaCppDecode", ("F16", 8)) == (
        "skipped: llama_cpp not installed where the benchmarks run"
    )
    dram = {k: v for k, v in found.items() if k.startswith("decode.")}
    only = asv_plugin.narrowed(conf, [_Env(set())], r"^decode\.", dram)
    assert capsys.readouterr().err == ""  # nothing it leaves out was asked for
    assert not asv_matches(only, "ceilings.GemmPeak.track_gemm_ceiling('float32')")
    assert asv_plugin.narrowed(SimpleNamespace(benchmark_dir="/nowhere"), [], None, {}) is None  # not this suite


@pytest.mark.e2e  # a child process loads asv's commands, as asv does
def test_asv_loads_the_plugin_from_the_config():
    conf = ROOT / "asv.conf.json"
    text = "\n".join(line for line in conf.read_text().splitlines() if not line.strip().startswith("//"))
    assert json.loads(text)["plugins"] == [".roofline.asv_plugin"]
    code = (
        "from asv.plugin_manager import plugin_manager; plugin_manager.import_plugin('.roofline.asv_plugin'); "
        "plugin_manager.import_plugin('.roofline.asv_plugin'); "
        "from asv.benchmarks import Benchmarks; from asv.commands.publish import Publish; "
        "inner = Benchmarks.discover.__func__.__closure__[0].cell_contents; "
        "print(Benchmarks.discover.__func__._roofline_wrapped, Publish.run.__func__._roofline_wrapped, "
        "getattr(inner, '_roofline_wrapped', False))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True", "False"]  # wrapped once however often asv loads it


def test_regress_gates_exactly_what_its_selection_ran():
    suite = {
        "decode.DecodeDRAM.track_gflops": Benchmark("x", raw={"params": [["256", "1024"], ["1", "8"]]}),
        "decode.DecodeDRAM.time_decode_step": Benchmark("x", raw={"params": [["256", "1024"], ["1", "8"]]}),
        "ceilings.GemmPeak.track_gemm_ceiling": Benchmark("x", raw={"params": [["'float32'"]]}),
        "crossover.Crossover.track_observed_crossover_batch": Benchmark("x", raw={}),
    }
    assert regress.selected_names(suite, [r"^decode\.DecodeDRAM\.[^.(]+\((?:256), (?:1|8)\)$"]) == {
        "decode.DecodeDRAM.track_gflops",
        "decode.DecodeDRAM.time_decode_step",
    }
    crossover = {"crossover.Crossover.track_observed_crossover_batch"}
    assert regress.selected_names(suite, [r"^(?=.*(?:crossover))"]) == crossover
    assert regress.selected_names(suite, []) == set(suite)


def test_a_run_that_wrote_no_value_measured_nothing(tmp_path):
    from roofline.suite.asv_files import load_machine

    folder = tmp_path / "box"
    folder.mkdir()
    (folder / "machine.json").write_text("{}")
    before = load_machine(folder)
    assert not asv_driver.measured_anything(load_machine(folder), before)  # asv wrote nothing (no build)
    row = {"result_columns": ["result", "params"], "results": {"a.B.track_x": [[None, float("nan")], [["1", "2"]]]}}
    (folder / "aaaaaaaa-existing-py.json").write_text(json.dumps(row))
    assert not asv_driver.measured_anything(load_machine(folder), before)  # every benchmark failed or skipped
    row["results"]["a.B.time_y"] = [[1.5e-5], [["1"]]]
    (folder / "aaaaaaaa-existing-py.json").write_text(json.dumps(row))
    assert asv_driver.measured_anything(load_machine(folder), before)
    assert not asv_driver.measured_anything(load_machine(folder), load_machine(folder))  # an old file is not this run's
    row["result_columns"] = ["params", "result"]  # asv names each column: the values are where it says
    (folder / "aaaaaaaa-existing-py.json").write_text(json.dumps(row).replace("1.5e-05", "null"))
    assert not asv_driver.measured_anything(load_machine(folder), before)


def test_roofline_allow_busy_is_the_flag_and_anything_else_is_one_line(monkeypatch, capsys):
    from roofline.cli import main

    for text, flag, want in (("", False, False), ("0", False, False), ("1", False, True), ("", True, True)):
        monkeypatch.setenv(asv_driver.ALLOW_BUSY_VARIABLE, text)
        assert asv_driver.allow_busy_from(flag) is want
    monkeypatch.setenv(asv_driver.ALLOW_BUSY_VARIABLE, "yes")
    assert main(["regress", "HEAD~1", "HEAD"]) == 2
    assert "ROOFLINE_ALLOW_BUSY='yes'" in one_line_error(capsys.readouterr().err)


def test_regress_names_an_unknown_revision_in_one_line(capsys, tmp_path, monkeypatch):
    from roofline.cli import main

    monkeypatch.chdir(tmp_path)  # no repository here
    assert main(["regress", "HEAD~1", "HEAD"]) == 2
    assert "git rev-parse does not know 'HEAD~1' as a commit" in one_line_error(capsys.readouterr().err)
    monkeypatch.chdir(ROOT)
    assert main(["regress", "HEAD", "HEAD"]) == 2
    assert "are the same commit" in one_line_error(capsys.readouterr().err)
    monkeypatch.setenv(params.QUICK_VARIABLE, "1")  # a quick look times no twins: nothing for the gate
    assert main(["regress", "HEAD~1", "HEAD"]) == 2
    assert "unset ROOFLINE_QUICK" in one_line_error(capsys.readouterr().err)


def test_a_warning_is_said_once_per_run_by_the_processes_sharing_a_setup_cache(tmp_path, monkeypatch):
    """asv runs every reader of a setup_cache in its folder, one after another: the first says a line."""
    (tmp_path / "cache.pickle").write_bytes(b"")
    code = "\n".join(
        [
            "from roofline.suite import harness as h",
            "h._warn(['a busy minute', 'a noisy point'])",
            "h._warn(['a noisy point'])",
        ]
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    outs = [
        subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True).stderr
        for _ in range(3)
    ]
    assert outs[0] == "roofline: warning: a busy minute\nroofline: warning: a noisy point\n"
    assert outs[1:] == ["", ""]
    (tmp_path / "cache.pickle").unlink()  # a setup_cache's own process (asv drops its stderr) notes nothing
    monkeypatch.chdir(tmp_path)
    harness._said.clear()
    harness._warn(["elsewhere"])
    assert not (tmp_path / harness.SAID_FILE).read_text().count("elsewhere")


def test_the_benchmark_that_said_a_line_says_it_in_each_of_its_rounds(tmp_path):
    """asv shows a benchmark's last round only: the one that said a line first says it again there, no other."""
    (tmp_path / "cache.pickle").write_bytes(b"")
    runner = tmp_path / "asv_runner"  # where asv_runner's _run holds the benchmark id
    runner.mkdir()
    (runner / "run.py").write_text(
        "def _run(benchmark_id):\n"
        "    from roofline.suite import harness as h\n"
        "    h._warn(['a busy minute'])\n"
        "import sys\n_run(sys.argv[1])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    rounds = ["d.T.time_step-0", "d.T.time_step-1"], ["d.T.time_step-0", "d.T.time_step-1", "d.T.track_gflops-0"]
    said = {}
    for r, ids in enumerate(rounds):
        for bid in ids:
            proc = subprocess.run([sys.executable, runner / "run.py", bid], cwd=tmp_path, env=env, capture_output=True)
            said[r, bid] = proc.stderr.decode()
    line = "roofline: warning: a busy minute\n"
    assert said == {k: line if k[1] == "d.T.time_step-0" else "" for k in said}
    assert (tmp_path / harness.SAID_FILE).read_text() == "d.T.time_step-0\twarning: a busy minute\n"


def test_make_writes_roofline_bench_s_own_exit_status_for_scripts(tmp_path):
    """make exits 2 whatever the recipe's status; the Makefile keeps roofline's (3: a busy machine)."""
    for name in ("Makefile", "setup.cfg", "pyproject.toml"):
        (tmp_path / name).write_bytes((ROOT / name).read_bytes())
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("")
    fake = bin_dir / "roofline"
    fake.write_text("#!/bin/sh\nexit 3\n")
    fake.chmod(0o755)
    installed = tmp_path / ".venv" / ".bench-installed"
    installed.write_text("")
    os.utime(installed, (2e9, 2e9))  # newer than setup.cfg: make installs nothing
    proc = subprocess.run(["make", "bench"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "Error 3" in proc.stderr
    assert (tmp_path / ".asv" / "exit-status").read_text().strip() == "3"
    fake.write_text("#!/bin/sh\nexit 0\n")
    assert subprocess.run(["make", "bench"], cwd=tmp_path, capture_output=True, timeout=60).returncode == 0
    assert (tmp_path / ".asv" / "exit-status").read_text().strip() == "0"
    os.utime(installed, (1e9, 1e9))  # older than setup.cfg: make installs first, and that fails here
    proc = subprocess.run(["make", "bench"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and not (tmp_path / ".asv" / "exit-status").exists()  # no stale status to misread


def test_the_backend_grid_runs_on_the_cores_its_watch_leaves_and_says_when_contended(monkeypatch):
    from contextlib import contextmanager

    from roofline.measure import contention
    from roofline.model.conditions import Conditions

    from .test_run import _fake_timing, _FakeStep

    @contextmanager
    def busy():
        watch = contention.Watched(1, 2)
        yield watch
        watch.conditions = Conditions(lost_share=0.5, run_queue=1.0, blas_threads=1, cores=2)

    monkeypatch.setenv("ROOFLINE_BACKEND_N", "256")
    monkeypatch.setenv("ROOFLINE_BACKEND_BATCH", "1")
    _fake_timing(monkeypatch)
    monkeypatch.setattr(harness, "watched", busy)
    monkeypatch.setattr(harness, "settle", lambda: None)

    def build(backend, dtype, n, batch):
        if dtype == "bf16":
            raise harness.BackendUnavailable("no bf16 here")
        step = _FakeStep(n, batch, dtype)
        step.backend = backend
        return step

    monkeypatch.setattr(harness, "build_step", build)
    grid = harness.backend_grid(params.read_grid(ROOT / "benchmarks"))
    ok = grid["numpy", "fp32", 256, 1]
    assert ok.ok and ok.value.threads == 1
    assert any(
        w.startswith("the backend class was measured under contention: 50% of CPU time") for w in ok.value.warnings
    )
    point = harness.backend_point(grid, "numpy", "fp32", 256, 1)
    assert point.blas_threads == 1 and harness.backend_twin(point).threads == 1  # the twin on as many


def test_regress_and_bench_file_results_under_what_the_machine_is_not_the_host(tmp_path, monkeypatch):
    """Unless told a name, the machine entry (and with it the results folder) is the gallery name."""
    from roofline.suite.machine_file import asv_machine_name, register, this_machine

    monkeypatch.setattr("platform.node", lambda: "vm")
    path = tmp_path / "machine.json"
    path.write_text(json.dumps({"vm": {"machine": "vm"}, "version": 1}))  # an entry of an earlier version
    assert register(None, path)[0] == this_machine() != "vm"
    assert register("vm", path)[0] == "vm"  # --machine NAME still files there
    # regress files where asv by hand does: the machine file's only entry (asv 0.6.6's rule), else what it is
    assert asv_machine_name(None, path) == this_machine()  # two entries now: vm and this machine's
    path.write_text(json.dumps({"box": {"machine": "box"}, "version": 1}))
    assert asv_machine_name(None, path) == "box" and asv_machine_name("other", path) == "other"
    path.unlink()
    assert asv_machine_name(None, path) == this_machine()  # no file
