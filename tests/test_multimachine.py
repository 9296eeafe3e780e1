"""The multi-machine workflow for real: two machines, one results directory, asv publish, compare, a browser.

The first machine, box, is the session's one `roofline bench` (conftest.made_bench: the whole suite at
tiny sizes, its results and machine entry), copied. `roofline machine` writes beta's entry (HOME is a temp
dir) and asv runs the classes these tests read under beta at the same commit (--python=same,
--set-commit-hash); a second commit deliberately slows the kernel and runs on box; `asv publish` builds
the HTML, `roofline compare` tables the machines and gates the commits, and headless Chromium renders the
published GFLOP/s graph with both machines.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.suite import machine_file
from roofline.suite.offline_html import ASV_PAGE, local_server

from .asv_fixtures import snapshot
from .asvtools import RUN_TIMEOUT_S, asv_env, git, load_results, selection
from .browser import SERIES_WITH_POINTS, errors_then_screenshot, offline_page, serving
from .test_agreement import assert_agree

ROOT = Path(__file__).resolve().parents[1]
ARTIFACTS = ROOT / "artifacts"
#: The machine that ran both commits (the session's `roofline bench` files its results under box).
ALPHA = "box"
MACHINES = ("beta", ALPHA)  # in asv's order (sorted)
GFLOPS_TRACK = "decode.DecodeDRAM.track_gflops"
#: What beta runs: the figures these tests read of it (the decode points' tracks, the bandwidth and GEMM
#: ceilings and so the ridge, the crossovers, the run's conditions). Its time_ twins (box's are the gate's),
#: the referees, level roofs and torch peaks (off or skipped in these runs) and the fraction tracks are
#: box's whole run's: a process each, the twins one a round.
ONLY = (
    r"^(?:decode\.Decode(?:DRAM|CacheResident)\.track_|ceilings\.(?:MemoryBandwidth|GemmPeak)\."
    r"|crossover\.|conditions\.)"
)
#: Appended to the throwaway copy's measure/numpy_step.py in the second commit: every step does its work 4 times.
SLOWDOWN = """

# Deliberate regression (test_multimachine): every decode step does the same work four times.
_step_once = DecodeStep.__call__


def _four_times(self):
    start = self._next
    for _ in range(3):
        self._next = start
        _step_once(self)
    self._next = start
    return _step_once(self)


DecodeStep.__call__ = _four_times
"""

pytestmark = pytest.mark.e2e


def run(cmd: list[str], cwd: Path, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


@pytest.fixture(scope="module")
def suite(made_bench, tmp_path_factory):
    """Runs everything once; yields paths, commits and the environment."""
    tmp = tmp_path_factory.mktemp("multimachine")
    repo, home = tmp / "repo", tmp / "home"
    shutil.copytree(made_bench["repo"], repo, symlinks=True, ignore=shutil.ignore_patterns("html"))
    shutil.copytree(made_bench["tmp"] / "home", home)  # box's machine entry
    first = git(repo, "rev-parse", "HEAD")
    env = asv_env(repo, home, tmp / "cache")
    py = sys.executable
    asv = [py, "-m", "asv"]
    run([py, "-m", "roofline", "machine", "--machine", "beta"], repo, env)
    only = selection(repo, env, ONLY)
    run([*asv, "run", "--python=same", "--set-commit-hash", first, "--machine", "beta", *only], repo, env)
    step = repo / "roofline" / "measure" / "numpy_step.py"
    step.write_text(step.read_text() + SLOWDOWN)
    git(repo, "commit", "-q", "-am", "slow kernel")
    second = git(repo, "rev-parse", "HEAD")
    # only the decode class on the second commit: noisy ceilings at tiny sizes must not blur the gate
    run(
        [
            *asv,
            "run",
            "--python=same",
            "--set-commit-hash",
            second,
            "--machine",
            ALPHA,
            *selection(repo, env, "DecodeDRAM"),
        ],
        repo,
        env,
    )
    run([*asv, "publish"], repo, env)
    ARTIFACTS.mkdir(exist_ok=True)
    results = repo / ".asv" / "results"
    yield {
        "repo": repo,
        "results": results,
        "html": repo / ".asv" / "html",
        "first": first,
        "second": second,
        "env": env,
        "snapshot": snapshot(results),
    }


def compare(suite, *args: str) -> subprocess.CompletedProcess:
    """`roofline compare` on the suite's results; every call must leave them as they were."""
    out = run(
        [sys.executable, "-m", "roofline", "compare", str(suite["results"]), *args],
        suite["repo"],
        suite["env"],
        check=False,
    )
    assert snapshot(suite["results"]) == suite["snapshot"], f"compare {' '.join(args)} wrote into the results"
    return out


def test_machine_keys_reach_asv_results_and_html(suite):
    for machine in MACHINES:
        info = json.loads((suite["results"] / machine / "machine.json").read_text())
        assert info["machine"] == machine and info["blas"] and int(info["llc_bytes"]) > 0
        assert not set(info) & set(machine_file.RETIRED_KEYS), info  # only stable facts: no measured figure
    index = json.loads((suite["html"] / "index.json").read_text())
    assert index["params"]["machine"] == list(MACHINES)
    assert {"blas", "blas_threads", "gpu", "llc_bytes"} <= set(index["params"])


def test_compare_tables_both_machines(suite):
    out = compare(suite, "--commit", suite["first"][:10])
    assert out.returncode == 0, out.stderr
    (ARTIFACTS / "compare-two-machines.txt").write_text(out.stdout)
    rows = {line.strip().split("  ")[0]: line.split() for line in out.stdout.splitlines()}
    assert rows["machine"][-2:] == list(MACHINES)
    assert rows["commit"][-2:] == [suite["first"][:8]] * 2
    for label in ("n=256 batch=1", "n=256 batch=8", "ridge point", "bandwidth (measured)"):
        assert "n/a" not in rows[label], (label, out.stdout)
    data = json.loads(compare(suite, "--commit", suite["first"][:10], "--json").stdout)
    for m in data["machines"]:
        gflops = {p["batch"]: p["gflops"] for p in m["decode_gflops"]["DRAM"]}
        # batches 1 and 8 were timed alternately in one run, so a busy spell lands on both alike
        assert gflops[8] > 1.25 * gflops[1] > 0  # the same weights do 8× the work at batch 8


def test_report_and_compare_agree_on_real_results(suite):
    """asv's own results of beta (one commit): every figure report and compare both show is the same."""
    compared = compare(suite, "--machine", "beta", "--json")
    assert compared.returncode == 0, compared.stderr
    report = run(
        [sys.executable, "-m", "roofline", "report", "--results", str(suite["results"]), "--machine", "beta",
         "--json", "--allow-busy"], suite["repo"], suite["env"],
    )  # fmt: skip
    assert snapshot(suite["results"]) == suite["snapshot"]
    machine = json.loads(compared.stdout)["machines"][0]
    assert assert_agree(machine, json.loads(report.stdout), one_timing=True) >= 8


def test_compare_plot_overlays_both(suite):
    path = ARTIFACTS / "compare-two-machines.png"
    out = compare(suite, "--commit", suite["first"][:10], "--plot", str(path))
    assert out.returncode == 0, out.stderr
    assert path.read_bytes()[:4] == b"\x89PNG"


def test_commits_gate_catches_the_deliberate_regression(suite):
    before, after = suite["first"][:10], suite["second"][:10]
    out = compare(suite, "--commits", before, after)
    (ARTIFACTS / "compare-commits-regression.txt").write_text(out.stdout + out.stderr)
    assert out.returncode == 1, out.stdout + out.stderr
    gflops = [line for line in out.stdout.splitlines() if GFLOPS_TRACK in line]
    assert len(gflops) == 2 and all("REGRESSION (higher is better)" in line for line in gflops), out.stdout
    # The time_ twins of the two commits ran minutes apart, not alternately: a load that changed between
    # the runs can hide the 4× work of a row. So every row's verdict must follow its recorded times (the
    # direction, on real results; test_compare covers the logic on synthetic ones), and at least one
    # batch must show the regression.
    times = [line for line in out.stdout.splitlines() if "DecodeDRAM.time_decode_step" in line]
    recorded = {c: _times(suite, c) for c in ("first", "second")}
    assert len(times) == 2, out.stdout
    for line in times:
        batch = re.search(r"\bbatch=(\d+)\b", line).group(1)
        ratio = recorded["second"][batch] / recorded["first"][batch]
        if "not significant" in line:  # asv's test on the recorded samples: no verdict either way
            assert "REGRESSION" not in line and "IMPROVEMENT" not in line, (ratio, line)
        elif ratio > 1.11:
            assert "REGRESSION (lower is better)" in line, (ratio, line)
        elif ratio < 0.89:
            assert "IMPROVEMENT (lower is better)" in line, (ratio, line)
    assert any("REGRESSION (lower is better)" in line for line in times), out.stdout
    assert "machine beta: no results for commit" in out.stderr  # beta ran only the first commit
    back = compare(suite, "--commits", after, before, "--machine", ALPHA)
    back_gflops = [line for line in back.stdout.splitlines() if GFLOPS_TRACK in line]
    assert len(back_gflops) == 2 and all("IMPROVEMENT (higher is better)" in line for line in back_gflops)
    # the way back, a time_ row whose load happened to differ may read as a regression: exit 1 then, else 0
    assert back.returncode == (1 if any("REGRESSION (" in line for line in back.stdout.splitlines()) else 0)


def _times(suite, commit: str) -> dict[str, float]:
    """ALPHA's recorded DecodeDRAM.time_decode_step at n=256, by batch, for the suite's ``commit``."""
    files = [f for f in (suite["results"] / ALPHA).glob(f"{suite[commit][:8]}*.json")]
    assert len(files) == 1, files
    values, params = load_results(files[0])["decode.DecodeDRAM.time_decode_step"]
    return {b: values[params[0].index("256") * len(params[1]) + i] for i, b in enumerate(params[1]) if b in ("1", "8")}


# ---- the published HTML in a browser -----------------------------------------------------------


def test_published_html_renders_both_machines_in_chromium(suite, tmp_path):
    """asv publish's own folder, served by `roofline serve` (CDN libraries from roofline), the network blocked;
    asv's page is behind roofline's landing page, which roofline's asv plugin writes in publish."""
    assert (suite["html"] / ASV_PAGE).is_file()
    with (
        serving(local_server(suite["html"], 0)) as base,
        offline_page(base, tmp_path / "profile") as (page, errors, refused),
    ):
        page.goto(f"{base}/{ASV_PAGE}#{GFLOPS_TRACK}", wait_until="load")
        page.wait_for_selector("#main-graph canvas.flot-base", timeout=30_000)
        page.wait_for_function(SERIES_WITH_POINTS, arg=2, timeout=30_000)
        buttons = page.eval_on_selector_all(
            "#graphdisplay-state-params .panel",
            "panels => panels.filter(p => p.textContent.trim().startsWith('machine')).flatMap(p =>"
            " [...p.querySelectorAll('a.btn')].map(b => [b.textContent, b.classList.contains('active')]))",
        )
        labels = page.evaluate("() => $('#main-graph').data('plot').getData().map(s => s.label)")
        seen = errors_then_screenshot(page, errors, ARTIFACTS / "asv-html-two-machines.png")
    assert seen == [], seen
    assert refused == [], f"requests that would have left localhost: {refused}"
    assert sorted(buttons) == [[m, True] for m in MACHINES], buttons  # both machines selectable, selected
    for machine in MACHINES:  # a plotted series of each machine
        assert any(f"machine-{machine}" in (label or "") for label in labels), labels
