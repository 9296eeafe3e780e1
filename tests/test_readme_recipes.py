"""The README's "asv by hand" recipes, read from the README itself and run as printed, at tiny sizes.

A recipe that stops working (a flag asv no longer takes, a revision the gate cannot read, a page plain
``asv publish`` undoes) fails here. The commands run in order in one scratch repository of four commits,
with ``.venv`` beside it as the README assumes (a link to this one) and asv's machine file written as
``make bench`` writes it; ``ROOFLINE_BENCH`` keeps each asv command to the few benchmarks the report and
the gate read, at batch 1 only (each asv round of a commit measures the run once and times each twin
in three rounds: about 20 s here, where batches 1 and 8 took 28), and
``ROOFLINE_ALLOW_BUSY=1`` lets them measure beside other work. ``roofline serve`` gets ``--port 0`` (another
test may hold 8080) and is stopped once it has answered.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from .asvtools import RUN_TIMEOUT_S, asv_env, git, scratch_repo

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
#: The benchmarks every recipe needs: DecodeDRAM (the gate's, asv find's), and the ceilings and crossover the
#: report and the picture on the page are built from.
NARROW = r"^(?:decode\.DecodeDRAM\.|ceilings\.(?:MemoryBandwidth|GemmPeak)\.|crossover\.)"


def recipes(readme: Path = ROOT / "README.md") -> list[str]:
    """The commands of the README's "asv by hand" code block, comments dropped, in order."""
    text = readme.read_text(encoding="utf-8")
    section = text.split("\n## asv by hand\n", 1)[1]
    block = re.search(r"^```sh\n(.*?)^```", section, re.M | re.S)
    assert block, "no sh block under ## asv by hand"
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_recipes_are_the_readme_s():
    commands = recipes()
    assert commands[0].startswith(".venv/bin/asv run --python=same")
    assert any(c.startswith(".venv/bin/roofline regress ") for c in commands)
    assert any(c.startswith(".venv/bin/roofline compare .asv/results --commits ") for c in commands)
    assert all(c.startswith(".venv/bin/") for c in commands), commands


@pytest.fixture
def project(tmp_path):
    repo = scratch_repo(tmp_path / "repo")
    for i in range(3):  # HEAD~3 exists: asv find's range in the README
        (repo / "NOTE").write_text(f"{i}\n")
        git(repo, "add", "NOTE")
        git(repo, "commit", "-q", "-m", f"note {i}")
    (repo / ".venv").symlink_to(Path(sys.executable).parents[1])
    (tmp_path / "home").mkdir()
    env = asv_env(
        repo, tmp_path / "home", tmp_path / "cache", ROOFLINE_BENCH=NARROW, ROOFLINE_ALLOW_BUSY="1", ROOFLINE_BATCH="1"
    )
    env.pop("ASV_PYTHONPATH")  # asv's virtualenv must import each commit's own package, not the working tree
    subprocess.run([".venv/bin/roofline", "machine", "--machine", "box"], cwd=repo, env=env, check=True)
    return repo, env


def run(repo: Path, env: dict[str, str], command: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", command],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
        stdin=subprocess.DEVNULL,
    )


def serve(repo: Path, env: dict[str, str], command: str) -> str:
    """Start the printed ``roofline serve`` on a free port, fetch the page it serves, stop it."""
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command} --port 0"], cwd=repo, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        line = proc.stdout.readline()
        url = re.search(r"http://127\.0\.0\.1:\d+/", line)
        assert url, line
        for _ in range(50):
            try:
                with urllib.request.urlopen(url.group(0), timeout=10) as page:
                    return page.read().decode()
            except OSError:
                time.sleep(0.2)
        raise AssertionError(f"{url.group(0)} never answered")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def results(repo: Path) -> dict[str, set[str]]:
    """{commit: the environments it has results from} on machine box."""
    out: dict[str, set[str]] = {}
    for path in (repo / ".asv" / "results" / "box").glob("*.json"):
        if path.name != "machine.json":
            doc = json.loads(path.read_text())
            out.setdefault(doc["commit_hash"], set()).add(doc["env_name"])
    return out


def test_the_asv_by_hand_recipes_work_as_printed(project):
    repo, env = project
    head, before = git(repo, "rev-parse", "HEAD"), git(repo, "rev-parse", "HEAD~1")
    for command in recipes():
        if " serve" in command:
            page = serve(repo, env, command)
            assert "<title>roofline: box at" in page
            continue
        proc = run(repo, env, command)
        said = f"{command}\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
        gate = " regress " in command or " --commits " in command
        assert proc.returncode in ((0, 1) if gate else (0,)), said  # a gate answers: 0, or 1 on a regression
        html = repo / ".asv" / "html"
        if command.startswith(".venv/bin/asv run --python=same"):
            assert any(e.startswith("existing-py") for e in results(repo)[head]), said
        elif command.startswith(".venv/bin/asv run"):
            assert any(e.startswith("virtualenv-py") for e in results(repo)[head]), said
        elif command.startswith(".venv/bin/asv publish"):  # roofline's page in front, offline, with its picture
            landing = (html / "index.html").read_text()
            assert '<img src="roofline.png"' in landing and 'href="asv.html' in landing, said
            assert (html / "asv.html").is_file() and (html / "vendor").is_dir() and (html / "roofline.png").is_file()
            assert "https://cdn" not in (html / "asv.html").read_text()
        elif " regress " in command:
            assert f"commits {before[:8]} → {head[:8]}" in proc.stdout, said
            assert "decode.DecodeDRAM.track_gflops" in proc.stdout and "regress took" in proc.stderr, said
            assert results(repo)[before] == {e for e in results(repo)[head] if e.startswith("virtualenv")}
        elif " --commits " in command:  # HEAD has two environments, HEAD~1 one: the shared one is read, and said
            assert re.search(r"environment virtualenv-py\S+ .*: the one make bench", proc.stdout), said
        elif command.startswith(".venv/bin/asv find"):
            assert "Greatest improvement found" in proc.stdout, said  # --invert: the largest drop of a GFLOP/s
