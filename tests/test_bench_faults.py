"""`roofline bench` (what `make bench` runs) end to end, and the faults it must survive:
a benchmark that raises, and an asv run killed mid-suite (SIGINT, SIGKILL)."""

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from roofline.asv_driver import NOTHING_MEASURED

from .asvtools import BENCH, RUN_TIMEOUT_S, asv_env, bench, git, load_results, result_files, scratch_repo


@pytest.fixture
def project(tmp_path):
    repo = scratch_repo(tmp_path / "repo")
    (tmp_path / "home").mkdir()
    env = asv_env(repo, tmp_path / "home", tmp_path / "cache")
    return repo, env


def snapshot(folder):
    return {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.e2e
def test_bench_runs_publishes_reports_and_plots(made_bench):
    repo, proc = made_bench["repo"], made_bench["proc"]  # exit 0: the fixture holds it to that
    assert "FLOPs per byte at the ridge" in proc.stdout
    assert "decode, weights from DRAM" in proc.stdout
    # the report from asv's results knows the LLC the pools were sized from, and guards it
    assert "last-level cache: 1 MiB (ROOFLINE_LLC_BYTES)" in proc.stdout
    assert "comes from ROOFLINE_LLC_BYTES, not the OS" in proc.stdout.split("warnings:")[1]
    assert (repo / ".asv" / "html" / "index.html").is_file()
    assert (repo / ".asv" / "html" / "roofline.png").read_bytes()[:4] == b"\x89PNG"
    # the roofs' referees ran in the run's rounds (floats in asv's file, and in the report), or every
    # one of them was skipped where likwid-bench cannot run here
    results = load_results(result_files(repo, "box")[0])
    dram, peaks = (
        results["ceilings.BandwidthReferee.track_referee_bandwidth"],
        results["ceilings.PeakReferee.track_referee_peak"],
    )
    assert dram[1] == [["'L1'", "'L2'", "'L3'", "'DRAM'"]] and peaks[1] == [["'float32'", "'float64'"]]
    if shutil.which("likwid-bench"):
        assert dram[0][-1] > 0 and all(v > 0 for v in peaks[0]), (dram, peaks)
        refereed = proc.stdout.split("referees (likwid-bench in the run's rounds")[1]
        for roof in ("DRAM", "fp32", "fp64"):  # each roof's own figure beside its referee's, as a ratio
            line = rf"\n    {roof}\s+own\s+[\d.]+\s+referee\s+[\d.]+ \S+\s+own ÷ referee [\d.]+"
            assert re.search(line, refereed), roof
    else:
        assert all(v is None or v != v for v in dram[0] + peaks[0])


@pytest.mark.e2e
def test_a_busy_machine_stops_bench_before_it_measures(project):
    """Beside two busy processes, without --allow-busy: one line naming the share lost, exit 3, nothing run."""
    repo, env = project
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        time.sleep(0.3)
        proc = subprocess.run(
            BENCH[:-1], cwd=repo, env=env, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
        )
    finally:
        for p in loops:
            p.kill()
            p.wait()
    assert proc.returncode == 3, proc.stdout[-2000:] + proc.stderr[-2000:]
    busy = [line for line in proc.stderr.splitlines() if "busy machine" in line]
    assert len(busy) == 1 and "% of the CPU time" in busy[0] and "--allow-busy" in busy[0], proc.stderr
    assert not result_files(repo, "box")


BROKEN = "class Broken:\n    def track_broken(self):\n        raise RuntimeError('deliberately broken')\n"


@pytest.mark.e2e
def test_a_project_that_does_not_build_is_one_line_and_claims_nothing(project):
    """asv: "Failed to build the project and import the benchmark suite"; roofline: one line, exit 1, no
    traceback, nothing published or reported (it used to say the others were recorded, then die in the report)."""
    repo, env = project
    (repo / "benchmarks" / "decode.py").write_text("def broken(:\n")
    git(repo, "commit", "-q", "-am", "a suite that does not import")
    proc = bench(repo, env)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    watch = "roofline: before measuring, "  # the contention watch's line, quiet or busy
    ours = [x for x in proc.stderr.splitlines() if x.startswith("roofline: ") and not x.startswith(watch)]
    assert ours == [f"roofline: {NOTHING_MEASURED}"], proc.stderr[-2000:]
    assert proc.stderr.rstrip().splitlines()[-1] == f"roofline: {NOTHING_MEASURED}"
    assert "roofline/cli/" not in proc.stderr and "roofline/bench.py" not in proc.stderr  # asv's traceback alone
    assert "recorded" not in proc.stdout
    assert "FLOPs per byte" not in proc.stdout and not (repo / ".asv" / "html").exists()


# The second commit's suite: benchmarks that say when they run (the marker holds their pid), then take
# their time, so a signal lands inside setup_cache or mid-benchmark; and a quick one to reach publish.
# They wait far longer than every run of the matrix takes to reach its moment (the runs start together).
MOMENT_BENCHMARKS = """
import os, pathlib, time


def _arrived():
    pathlib.Path(os.environ["ROOFLINE_TEST_MARKER"]).write_text(str(os.getpid()))
    time.sleep(1200)


class SlowCache:
    timeout = 1500

    def setup_cache(self):
        _arrived()

    def track_after_cache(self, _):
        return 1.0


class Slow:
    timeout = 1500

    def track_slow(self):
        _arrived()
        return 1.0


class Quick:
    def track_quick(self):
        return 1.0
"""

# `python -m asv publish` announces itself and takes its time (imported at start-up via PYTHONPATH).
SLOW_PUBLISH = """
import os, pathlib, signal, sys, time

if sys.orig_argv[1:4] == ["-m", "asv", "publish"] and os.environ.get("ROOFLINE_TEST_MARKER"):
    signal.signal(signal.SIGINT, lambda *_: os._exit(1))  # as asv would stop, minus its traceback
    pathlib.Path(os.environ["ROOFLINE_TEST_MARKER"]).write_text(str(os.getpid()))
    time.sleep(1200)
"""

MOMENTS = {"setup_cache": r"slow\.SlowCache\.", "mid-benchmark": r"slow\.Slow\.", "publish": r"slow\.Quick\."}
TWICE = "SIGINT twice"
HOWS = ["SIGINT", "SIGTERM", "SIGKILL", TWICE]
#: A run started with SIGINT ignored (nohup, a background job), sent SIGINT and then SIGTERM.
IGNORED = "SIGINT ignored, then SIGTERM"
CASES = [(moment, how) for moment in MOMENTS for how in HOWS] + [("mid-benchmark", IGNORED)]
#: Seconds every run of the matrix may take to reach its moment, all of them starting together.
ARRIVAL_S = 600


@pytest.fixture(scope="module")
def interrupted_project(tmp_path_factory):
    """A repo whose first commit has results, and whose second commit holds the benchmarks above.

    The first commit's run is `roofline bench` on DecodeDRAM beside a benchmark that raises
    (test_a_raising_benchmark_fails_the_run_but_keeps_the_others reads it): the results it keeps are
    the earlier results every killed run must leave intact."""
    tmp = tmp_path_factory.mktemp("interrupt")
    repo = scratch_repo(tmp / "repo")
    (tmp / "home").mkdir()
    env = asv_env(repo, tmp / "home", tmp / "cache")
    (repo / "benchmarks" / "broken.py").write_text(BROKEN)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a broken benchmark")
    first = bench(repo, env, "--bench", "DecodeDRAM|Broken")
    files = result_files(repo, "box")
    (repo / "benchmarks" / "slow.py").write_text(MOMENT_BENCHMARKS)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "second")
    (tmp / "site").mkdir()
    (tmp / "site" / "sitecustomize.py").write_text(SLOW_PUBLISH)
    return {"tmp": tmp, "first": first, "first_files": [f.relative_to(repo) for f in files]}


@pytest.mark.e2e
def test_a_raising_benchmark_fails_the_run_but_keeps_the_others(interrupted_project):
    proc, (path,) = interrupted_project["first"], interrupted_project["first_files"]
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "some benchmarks failed" in proc.stderr
    assert "deliberately broken" in proc.stdout + proc.stderr
    results = load_results(interrupted_project["tmp"] / "repo" / path)
    assert results["broken.Broken.track_broken"][0] in ([None], None)
    values, _ = results["decode.DecodeDRAM.track_gflops"]
    ran = [v for v in values if v is None or v == v]  # the fixed grid's unchosen combinations are NaN
    assert ran and all(v and v > 0 for v in ran)
    assert "decode, weights from DRAM" in proc.stdout  # the report still comes


def _default_signals():
    # The test must not depend on how pytest was started (a background job starts with SIGINT ignored).
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _ignore_sigint():
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()[0] != "Z"


def _gone(pid: int, within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@dataclass
class Started:
    """One run of the matrix: `roofline bench` on a copy of the prepared project, on its second commit."""

    repo: Path
    proc: subprocess.Popen
    marker: Path


def start(prepared: Path, work: Path, moment: str, preexec=_default_signals) -> Started:
    shutil.copytree(prepared, work, symlinks=True)
    repo, marker = work / "repo", work / "marker"
    env = asv_env(repo, work / "home", work / "cache", ROOFLINE_TEST_MARKER=str(marker), PYTHONPATH=str(work / "site"))
    proc = subprocess.Popen(
        [*BENCH, "--bench", MOMENTS[moment]],
        cwd=repo,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=preexec,
    )
    return Started(repo, proc, marker)


def arrived(runs: dict[tuple[str, str], Started]) -> None:
    """Wait until every run is inside its moment (its marker written); fail naming any that stopped first."""
    deadline = time.monotonic() + ARRIVAL_S
    waiting = dict(runs)
    while waiting and time.monotonic() < deadline:
        for case, run in list(waiting.items()):
            if run.marker.exists() or run.proc.poll() is not None:
                del waiting[case]
        time.sleep(0.05)
    late = {case: run for case, run in runs.items() if not run.marker.exists()}
    for run in runs.values():
        if late:
            run.proc.kill()
    for case, run in late.items():
        out, err = run.proc.communicate()
        pytest.fail(f"{case} never reached its moment: exit {run.proc.returncode}\n{out[-2000:]}\n{err[-2000:]}")
    time.sleep(0.2)  # the marker is written first thing: let the last pid's sleep begin


@dataclass
class Killed:
    """What a killed run did: its exit status and output, how long it took to stop after the signal, whether
    the process inside the moment outlived it, and the first commit's results before and after."""

    returncode: int
    out: str
    err: str
    elapsed: float
    outlived: bool
    before: dict
    after: dict
    ignored_sigint: bool = False
    repo: Path | None = None


def kill(run: Started, how: str) -> Killed:
    busy = int(run.marker.read_text())
    results = run.repo / ".asv" / "results" / "box"
    before = snapshot(results)
    ignored = False
    if how == IGNORED:
        os.killpg(run.proc.pid, signal.SIGINT)
        try:  # nohup and background jobs ask for SIGINT to be ignored
            run.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            ignored = True
    t0 = time.monotonic()
    os.killpg(run.proc.pid, signal.SIGTERM if how == IGNORED else getattr(signal, how, signal.SIGINT))
    if how == TWICE:
        time.sleep(0.3)
        os.killpg(run.proc.pid, signal.SIGINT)
    out, err = run.proc.communicate(timeout=30)
    elapsed = time.monotonic() - t0
    outlived = not _gone(busy)
    return Killed(run.proc.returncode, out, err, elapsed, outlived, before, snapshot(results), ignored, run.repo)


@pytest.fixture(scope="module")
def killed(interrupted_project, tmp_path_factory):
    """Every case of the matrix, from one start: the runs start together and each waits inside its moment
    (a benchmark or asv publish that sleeps) until all are there; then they are killed one at a time, so
    each stops while the others sleep, as a run alone would."""
    prepared, tmp = interrupted_project["tmp"], tmp_path_factory.mktemp("killed")
    runs = {}
    try:
        for i, (moment, how) in enumerate(CASES):
            preexec = _ignore_sigint if how == IGNORED else _default_signals
            runs[moment, how] = start(prepared, tmp / f"run{i}", moment, preexec)
        arrived(runs)
        return {case: kill(run, case[1]) for case, run in runs.items()}
    finally:
        for run in runs.values():
            if run.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(run.proc.pid, signal.SIGKILL)
                run.proc.wait()


@pytest.mark.e2e
@pytest.mark.parametrize("moment", list(MOMENTS))
@pytest.mark.parametrize("how", HOWS)
def test_a_killed_run_stops_promptly_and_leaves_earlier_results_intact(killed, moment, how):
    k = killed[moment, how]
    print(f"{moment}, {how}: exit {k.returncode} after {k.elapsed:.2f} s")
    assert k.elapsed <= 10, f"{how} during {moment}: still running after {k.elapsed:.1f} s"
    assert k.returncode == {"SIGINT": 130, "SIGTERM": 143, "SIGKILL": -9, TWICE: 130}[how], k.err[-2000:]
    if how != "SIGKILL":
        assert "Traceback" not in k.err, k.err[-3000:]
        assert f"during {'asv publish' if moment == 'publish' else 'asv run'}" in k.err, k.err[-2000:]
        assert "results kept in" in k.err and "1 untouched" in k.err, k.err[-2000:]
    # asv and the benchmark it ran are gone too, whichever process group they were in
    assert not k.outlived, f"the process inside {moment} outlived the run"
    assert k.before and all(k.after.get(path) == data for path, data in k.before.items()), "earlier results changed"
    if moment == "mid-benchmark" and how == "SIGINT":
        again = bench(k.repo, asv_env(k.repo, k.repo.parent / "home", k.repo.parent / "cache"), "--bench", "Quick")
        assert again.returncode == 0, again.stdout[-2000:] + again.stderr[-2000:]
        assert len(result_files(k.repo, "box")) == 2


@pytest.mark.e2e
def test_a_run_started_with_sigint_ignored_keeps_ignoring_it_and_stops_on_sigterm(killed):
    k = killed["mid-benchmark", IGNORED]
    assert k.ignored_sigint, f"exit {k.returncode} on SIGINT, which it was started ignoring"
    assert k.elapsed <= 10
    assert k.returncode == 143, k.err[-2000:]
    assert not k.outlived


# ---- asv's virtualenv is built by the interpreter that made this environment --------------------

SHIM = '#!/bin/sh\necho "pyenv: $(basename "$0"): command not found" >&2\nexit 127\n'


def broken_shims(folder):
    """A PATH entry whose python3 and python3.X fail as a pyenv shim does for a version it lacks."""
    folder.mkdir()
    for name in ("python3", f"python{sys.version_info.major}.{sys.version_info.minor}"):
        (folder / name).write_text(SHIM)
        (folder / name).chmod(0o755)
    return folder


def test_asv_finds_the_exact_interpreter_before_a_broken_shim(tmp_path, monkeypatch):
    from roofline.asv_driver import asv_python, base_interpreter

    monkeypatch.setenv("PATH", f"{broken_shims(tmp_path / 'shims')}{os.pathsep}{os.environ['PATH']}")
    (tmp_path / "link").mkdir()
    version, env = asv_python(tmp_path / "link")
    assert version == f"{sys.version_info.major}.{sys.version_info.minor}"
    # asv's own lookup, in the environment roofline bench gives asv
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            f"from asv.plugins.virtualenv import Virtualenv; print(Virtualenv._find_python({version!r}))",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert os.path.realpath(found) == os.path.realpath(base_interpreter())


def test_an_interpreter_that_does_not_run_is_one_line(tmp_path, monkeypatch):
    from roofline import asv_driver
    from roofline.errors import BadInput

    monkeypatch.setattr(asv_driver, "base_interpreter", lambda: tmp_path / "gone" / "python3.13")
    with pytest.raises(BadInput, match=r"gone/python3.13.* does not run"):
        asv_driver.asv_python(tmp_path)


def test_a_requirement_that_does_not_install_is_one_line_and_what_is_there_installs_nothing(tmp_path, monkeypatch):
    from roofline.asv_driver import install_requirements

    monkeypatch.setenv("PIP_NO_INDEX", "1")  # pip answers from what is installed, reading no package index
    req, stamps = tmp_path / "req.txt", tmp_path / "stamps"
    req.write_text("roofline-no-such-package==0.0.1\n")
    (line,) = install_requirements([sys.executable], req, stamps)
    assert "did not install into asv's environment" in line and "roofline-no-such-package" in line
    assert "\n" not in line and not stamps.exists()  # a failure leaves no stamp: the next run tries again
    req.write_text("numpy\n")  # already here: pip leaves it, nothing to say
    assert install_requirements([sys.executable], req, stamps) == []
    assert len(list(stamps.rglob("*"))) == 2  # its folder and its stamp


def test_a_requirements_file_an_environment_installed_is_not_asked_of_pip_again(tmp_path, monkeypatch):
    from roofline import asv_driver

    calls = []
    monkeypatch.setattr(asv_driver, "run_child", lambda cmd, **kw: calls.append(cmd) or 0)
    req, stamps = tmp_path / "req.txt", tmp_path / "stamps"
    req.write_text("numpy\n")
    for _ in range(2):
        assert asv_driver.install_requirements(["/env/bin/python", "/other/bin/python"], req, stamps) == []
    assert len(calls) == 2  # each environment once
    req.write_text("numpy\ntorch\n")  # the file changed: pip is asked again
    asv_driver.install_requirements(["/env/bin/python"], req, stamps)
    assert len(calls) == 3
    assert asv_driver.requirements_stamp("/env/bin/python", req).parent == Path("/env/.roofline-requirements")


@pytest.mark.e2e
def test_make_bench_path_builds_asv_virtualenv_despite_a_broken_shim(project, tmp_path):
    """`make bench PYTHON=...` under pyenv: python3.X on PATH is a shim that fails; asv must not use it.

    make bench also installs its requirements file into asv's virtualenv (there: torch and transformers;
    here a small package from the local wheels)."""
    repo, env = project
    env = {**env, "PATH": f"{broken_shims(tmp_path / 'shims')}{os.pathsep}{env['PATH']}"}
    req = tmp_path / "req.txt"
    req.write_text("iniconfig\n")
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "roofline", "bench", "--machine", "box", "--allow-busy"),
            *("--bench", r"decode\.DecodeDRAM\.track_gflops", "--asv-env-requirements", str(req)),
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    files = result_files(repo, "box")
    assert [f.name.split("-", 1)[1] for f in files] == [
        f"virtualenv-py{sys.version_info.major}.{sys.version_info.minor}.json"
    ]
    values, _ = load_results(files[0])["decode.DecodeDRAM.track_gflops"]
    ran = [v for v in values if v is None or v == v]  # the fixed grid's unchosen combinations are NaN
    assert ran and all(v and v > 0 for v in ran)
    assert "decode, weights from DRAM" in proc.stdout
    (python,) = (repo / ".asv" / "env").glob("*/bin/python")
    assert subprocess.run([python, "-c", "import iniconfig"], capture_output=True).returncode == 0
    assert "did not install" not in proc.stderr
