"""The test tiers hold: a test that launches asv, `roofline bench`, Chromium or ReFrame without the e2e
marker fails (conftest.py), markers are strict, and the Makefile's two tiers together run every test."""

from __future__ import annotations

import configparser
import re
import sys
from pathlib import Path

import pytest

from .launches import program

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


@pytest.mark.parametrize(
    "argv, found",
    [
        ([PY, "-m", "asv", "run", "--python=same"], "asv"),
        (["/x/.venv/bin/asv", "publish"], "asv"),
        ("asv machine --yes", "asv"),
        ([PY, "-u", "-X", "importtime", "-m", "asv", "continuous"], "asv"),
        ([PY, "-c", "from asv.commands.setup import Setup; Setup.perform_setup([])"], "asv"),
        ([PY, "-m", "roofline", "bench", "--python-same"], "roofline bench"),
        (["/x/bin/roofline", "bench"], "roofline bench"),
        ([PY, "/repo/fleet/run.py", "--out", "o"], "ReFrame"),
        (["/x/bin/reframe", "-C", "fleet/config/local.py"], "ReFrame"),
        (["/usr/bin/chromium", "--headless"], "Chromium"),
        (["/x/playwright/driver/node", "/x/playwright/driver/package/cli.js", "run-driver"], "Chromium"),
        ([PY, "-m", "roofline", "report", "--results", "bench"], None),
        ([PY, "-m", "roofline", "serve", "--port", "0"], None),
        ([PY, "-c", "from asv.plugins.virtualenv import Virtualenv"], None),  # asv's code, not its commands
        (["git", "rev-parse", "HEAD"], None),
        (["likwid-bench", "-t", "load"], None),
        ([], None),
    ],
)
def test_the_programs_of_the_e2e_tier_are_recognised(argv, found):
    assert program(argv) == found


INNER = """
import subprocess, sys
import pytest

ASV = {asv!r}


def test_unmarked_launch():
    subprocess.run([ASV, "run"])


@pytest.mark.e2e
def test_marked_launch():
    assert subprocess.run([ASV, "run"]).returncode == 0


def test_unmarked_launch_swallowed():
    try:
        subprocess.run([sys.executable, "-m", "roofline", "bench", "--python-same"])
    except BaseException:
        pass


@pytest.fixture(scope="module")
def launched_in_a_fixture():
    subprocess.run([ASV, "machine"])


def test_unmarked_fixture(launched_in_a_fixture):
    pass


def test_unmarked_other_program():
    assert subprocess.run([sys.executable, "-c", "pass"]).returncode == 0
"""


@pytest.fixture
def inner(pytester, monkeypatch, tmp_path):
    """A pytest of its own with this suite's guard and setup.cfg, and an `asv` that only exits 0."""
    asv = tmp_path / "bin" / "asv"
    asv.parent.mkdir()
    asv.write_text("#!/bin/sh\nexit 0\n")
    asv.chmod(0o755)
    pytester.makeconftest("from tests.conftest import pytest_runtest_makereport, pytest_runtest_protocol  # noqa\n")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    return pytester, asv


def test_a_launch_without_the_e2e_marker_fails_the_test_and_markers_are_strict(inner):
    pytester, asv = inner
    pytester.makepyfile(test_inner=INNER.format(asv=str(asv)))
    pytester.makepyfile(test_typo="import pytest\n\n@pytest.mark.e2ee\ndef test_typo():\n    pass\n")
    config = ("-c", str(ROOT / "setup.cfg"), "--rootdir", str(pytester.path), "-p", "no:randomly")
    result = pytester.runpytest_subprocess(*config, "--continue-on-collection-errors")
    result.assert_outcomes(passed=2, failed=2, errors=2)  # errors: the fixture's setup, the typo's module
    text = result.stdout.str()
    for name in ("test_unmarked_launch", "test_unmarked_launch_swallowed", "test_unmarked_fixture"):
        assert re.search(rf"{name}\b.* launches (asv|roofline bench) .*not marked @pytest.mark.e2e", text), text
    assert "ERROR at setup of test_unmarked_fixture" in text
    assert "'e2ee' not found in `markers` configuration option" in text


def test_the_two_tiers_of_make_test_run_every_test_once():
    """The fast tier, then the e2e and slow tests: those that may share the machine, then those that run alone."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    pytest_cfg = cfg["tool:pytest"]
    assert "--strict-markers" in pytest_cfg["addopts"].split()
    markers = {line.split(":")[0].strip() for line in pytest_cfg["markers"].strip().splitlines()}
    assert markers == {"e2e", "slow", "alone"}
    makefile = (ROOT / "Makefile").read_text()
    fast = re.findall(r'-m "([^"]+)"', makefile.split("\ntest-fast:")[1].split("\n\n")[0])
    rest = re.findall(r'-m "([^"]+)"', makefile.split("\ntest:")[1].split("\n\n")[0])
    assert fast == ["not e2e and not slow"], fast
    assert rest == ["(e2e or slow) and not alone", "(e2e or slow) and alone"], rest  # the two split "e2e or slow"
    assert "test-fast" in makefile.split("\ntest:")[1].split("\n")[0]  # make test runs the fast tier first
    assert "exec make test " in (ROOT / ".ci" / "run").read_text()


SESSION = """
import os
import pytest

from tests.conftest import pytest_collection_modifyitems  # noqa


@pytest.fixture(scope="session")
def made_bench():
    with open(os.environ["BUILT"], "a") as f:
        f.write(f"{os.getpid()}\\n")
"""

SHARED = """
import pytest


@pytest.mark.e2e
@pytest.mark.parametrize("i", range(4))
def test_reads_it(made_bench, i):
    pass
"""

ALONE = """
import os
import pytest


@pytest.fixture(scope="module")
def two_commits():
    with open(os.environ["BUILT"], "a") as f:
        f.write("{name} " + f"{{os.getpid()}}\\n")


@pytest.mark.e2e
@pytest.mark.parametrize("i", range(3))
def test_reads_its_module_fixture(two_commits, i):
    pass
"""


def test_on_two_workers_each_shared_fixture_is_built_once(inner, tmp_path, monkeypatch):
    """make test's e2e tier runs on two xdist workers; a fixture the tests share is still built once."""
    pytester, _ = inner
    monkeypatch.setenv("BUILT", str(tmp_path / "built"))
    pytester.makeconftest(SESSION)
    pytester.makepyfile(test_a=SHARED, test_b=SHARED.replace("test_reads_it", "test_reads_it_too"))
    pytester.makepyfile(test_c=ALONE.format(name="c"), test_d=ALONE.format(name="d"))
    built = tmp_path / "built"
    config = ("-c", str(ROOT / "setup.cfg"), "--rootdir", str(pytester.path), "-p", "randomly")
    result = pytester.runpytest_subprocess(*config, "-n", "2", "--dist", "loadgroup", f"--basetemp={tmp_path / 'b'}")
    result.assert_outcomes(passed=14)
    lines = built.read_text().splitlines()
    assert len([x for x in lines if " " not in x]) == 1, lines  # made_bench: once, for both modules
    assert sorted(x.split()[0] for x in lines if " " in x) == ["c", "d"], lines  # each module's: once


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_longest_groups_come_first_whatever_the_shuffle(inner, tmp_path, seed):
    """xdist hands groups out in collection order (--no-loadscope-reorder): the long ones must not start last."""
    pytester, _ = inner
    pytester.makeconftest(SESSION)
    pytester.makepyfile(test_a=ALONE.format(name="a"), test_z=SHARED, test_m=ALONE.format(name="m"))
    config = ("-c", str(ROOT / "setup.cfg"), "--rootdir", str(pytester.path), "-p", "randomly")
    result = pytester.runpytest_subprocess(*config, f"--randomly-seed={seed}", "--collect-only", "-q")
    ids = [line for line in result.stdout.lines if "::" in line]
    assert len(ids) == 10 and all(i.startswith("test_z.py::") for i in ids[:4]), ids  # made_bench's group first
