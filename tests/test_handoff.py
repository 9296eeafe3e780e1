"""The run's roofs left for a later setup_cache of the same asv run (roofline.suite.handoff): issue 39's
"every bound a roof", the model's bound dividing by the roofs the run measured in its rounds."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest

from roofline.outcome import Measured, Skipped
from roofline.suite import handoff, harness
from roofline.suite.run import RunRoofs, RunState


def test_the_roofs_one_asv_run_leaves_are_read_back_by_that_run_only(tmp_path):
    handoff.leave(31.5, {"fp32": 150.0, "bf16": 19.5}, tmp_path, key="1-100")
    hw = handoff.read("bf16", tmp_path, key="1-100")
    assert (hw.bandwidth, hw.peak_flops) == (31.5e9, {"bf16": 19.5e9})
    assert "the run's roofs" in hw.source
    assert handoff.read("bf16", tmp_path, key="1-101") is None  # another asv run: the same pid, started later
    assert handoff.read("fp16", tmp_path, key="1-100") is None  # no roof for the model's dtype
    (tmp_path / f"{handoff.PREFIX}1-100-roofs.json").write_text("{not json")
    assert handoff.read("bf16", tmp_path, key="1-100") is None


def test_an_ended_asv_runs_files_go_when_a_run_leaves_its_own(tmp_path):
    dead = 2**22 + 12345  # above any pid_max's default: no such process
    assert not os.path.exists(f"/proc/{dead}")
    handoff.leave(30.0, {"fp32": 1.0}, tmp_path, key=f"{dead}-7")
    alive = handoff.leave(31.0, {"fp32": 1.0}, tmp_path, key=f"{os.getpid()}-8")
    other = handoff.leave_json("overhead numpy fp32", [1.0, 2.0], tmp_path, key=f"{os.getppid()}-9")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, other.name])
    assert handoff.read_json("overhead numpy fp32", tmp_path, key=f"{os.getppid()}-9") == [1.0, 2.0]
    assert handoff.read_json("overhead numpy fp32", tmp_path, key=f"{os.getpid()}-8") is None


def test_the_key_is_the_parents_pid_and_start_time(tmp_path):
    (tmp_path / "42").mkdir()
    (tmp_path / "42" / "stat").write_text("42 (asv run (x)) S 1 42 42 0 -1 4194560" + " 0" * 12 + " 987654 rest")
    assert handoff.asv_run_key(42, tmp_path) == "42-987654"
    assert handoff.asv_run_key(43, tmp_path) is None  # the OS does not say
    assert (
        handoff.asv_run_key()
        == f"{os.getppid()}-{open(f'/proc/{os.getppid()}/stat').read().rpartition(')')[2].split()[19]}"
    )


def test_the_setup_cache_leaves_the_roofs_asv_records(tmp_path, monkeypatch):
    """The DRAM roof and every compute roof the run measured: numpy's GEMMs and torch's dtypes (bf16 here)."""
    quiet = types.SimpleNamespace(headline=lambda: "")
    ceilings = Measured(RunRoofs({"read": 30.0, "add": 28.0}, {"float32": 150.0, "float64": 75.0}))
    compute = Measured({"bf16": Measured(types.SimpleNamespace(gflops=19.5)), "fp16": Skipped("no fp16 here")})
    state = RunState({}, 1, "test", 256, quiet, ceilings=ceilings, compute=compute)
    assert harness.run_roofs(state) == (30.0, {"fp32": 150.0, "fp64": 75.0, "bf16": 19.5})
    monkeypatch.setattr(harness._run, "measure_run", lambda grid: state)
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    assert harness.measure_run({}) is state and not list(tmp_path.iterdir())  # outside asv: nothing left
    monkeypatch.setattr(harness, "_under_asv", lambda: True)
    assert harness.measure_run({}) is state
    hw = handoff.read("bf16")  # this process's parent is the "asv run" here
    assert (hw.bandwidth, hw.peak("bf16")) == (30e9, 19.5e9)
    assert harness.run_roofs(RunState({}, 1, "test", 256, quiet)) is None  # no ceilings: nothing to leave


def test_the_overhead_roofs_two_tracks_read_one_measurement_in_an_asv_run(tmp_path, monkeypatch):
    from roofline.measure import overhead

    made = []

    def measure(backend, dtype):
        made.append(backend)
        return overhead.Overhead(backend, dtype, 64, 1, "t", 5e-6, 2e-6)

    monkeypatch.setattr(overhead, "measure_overhead", measure)
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    harness.overhead_us("numpy", "fp32", "single")
    assert made == ["numpy"] and not list(tmp_path.iterdir())  # outside asv each call measures, nothing left
    made.clear()
    monkeypatch.setattr(harness, "_under_asv", lambda: True)
    assert harness.overhead_us("numpy", "fp32", "single") == 5.0
    assert harness.overhead_us("numpy", "fp32", "amortized") == 2.0 and made == ["numpy"]
    assert harness.overhead_us("torch-cpu", "fp32", "amortized") == 2.0 and made == ["numpy", "torch-cpu"]


def test_asv_runs_a_benchmark_or_a_setup_cache_through_asv_runner(monkeypatch):
    assert not harness._under_asv()  # pytest's own frames

    def _setup_cache():  # asv_runner's name for the function that runs a setup_cache
        return harness._under_asv()

    _setup_cache.__code__ = _setup_cache.__code__.replace(co_filename="/x/asv_runner/setup_cache.py")
    assert _setup_cache()


PRELOAD = """
import sys
from roofline.suite import harness

harness.preload_for_forks()
print("torch" in sys.modules)

def _run_server():  # asv_runner's forkserver, importing the benchmark modules
    harness.preload_for_forks()

_run_server.__code__ = _run_server.__code__.replace(co_filename="/x/asv_runner/server.py")
_run_server()
print("torch" in sys.modules)
"""


def test_asvs_forkserver_imports_torch_once_for_its_forks_and_nothing_else_does():
    pytest.importorskip("torch")
    proc = subprocess.run([sys.executable, "-c", PRELOAD], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.split() == ["False", "True"], proc.stdout + proc.stderr
