"""`roofline bench` (what `make bench` runs) end to end, and the faults it must survive:
a benchmark that raises, and an asv run killed mid-suite (SIGINT, SIGKILL)."""

import os
import signal
import subprocess
import sys
import time

import pytest

from .asvtools import asv_env, git, load_results, result_files, scratch_repo

pytestmark = pytest.mark.slow

BENCH = [sys.executable, "-m", "roofline", "bench", "--python-same", "--machine", "box"]


@pytest.fixture
def project(tmp_path):
    repo = scratch_repo(tmp_path / "repo")
    (tmp_path / "home").mkdir()
    env = asv_env(repo, tmp_path / "home", tmp_path / "cache")
    return repo, env


def bench(repo, env, *extra, timeout=300):
    return subprocess.run(
        [*BENCH, *extra], cwd=repo, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_bench_runs_publishes_reports_and_plots(project):
    repo, env = project
    proc = bench(repo, env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "FLOPs per byte at the ridge" in proc.stdout
    assert "decode, weights from DRAM" in proc.stdout
    assert (repo / ".asv" / "html" / "index.html").is_file()
    assert (repo / ".asv" / "html" / "roofline.png").read_bytes()[:4] == b"\x89PNG"


def test_a_raising_benchmark_fails_the_run_but_keeps_the_others(project):
    repo, env = project
    (repo / "benchmarks" / "broken.py").write_text(
        "class Broken:\n    def track_broken(self):\n        raise RuntimeError('deliberately broken')\n"
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a broken benchmark")
    proc = bench(repo, env, "--bench", "DecodeDRAM|Broken")
    assert proc.returncode == 1, proc.stdout[-2000:]
    assert "some benchmarks failed" in proc.stderr
    assert "deliberately broken" in proc.stdout + proc.stderr
    results = load_results(result_files(repo, "box")[0])
    assert results["broken.Broken.track_broken"][0] in ([None], None)
    values, _ = results["decode.DecodeDRAM.track_gflops"]
    assert all(v and v > 0 for v in values)
    assert "decode, weights from DRAM" in proc.stdout  # the report still comes


SLOW_BENCHMARK = """
import os, pathlib, time


class Slow:
    timeout = 300

    def track_slow(self):
        pathlib.Path(os.environ["ROOFLINE_TEST_MARKER"]).write_text("inside the suite")
        time.sleep(120)
        return 1.0
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_a_killed_run_leaves_earlier_results_intact(project, sig, tmp_path):
    repo, env = project
    first = bench(repo, env, "--bench", "DecodeDRAM")
    assert first.returncode == 0, first.stdout[-2000:]
    before = snapshot(repo / ".asv" / "results" / "box")
    # a second commit whose suite holds a benchmark that says when it runs, then takes its time
    (repo / "benchmarks" / "slow.py").write_text(SLOW_BENCHMARK)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "second")
    marker = tmp_path / "marker"
    proc = subprocess.Popen(
        [*BENCH, "--bench", "DecodeDRAM|Slow"],
        cwd=repo,
        env={**env, "ROOFLINE_TEST_MARKER": str(marker)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not marker.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert marker.exists(), "the slow benchmark never started"
    os.killpg(proc.pid, sig)
    proc.wait(timeout=60)
    assert proc.returncode != 0
    after = snapshot(repo / ".asv" / "results" / "box")
    for path, data in before.items():
        assert after.get(path) == data, f"{path} changed after the killed run"
    again = bench(repo, env, "--bench", "DecodeDRAM")
    assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
    assert len(result_files(repo, "box")) == 2
