"""Shared fixtures: small, private data so unit tests never touch the real 2 GiB pool; and the tiers' guard.

The tiers (setup.cfg's markers): ``make test-fast`` runs ``-m "not e2e and not slow"``, ``make test`` that and
then ``-m "e2e or slow"``. A test that launches asv, `roofline bench`, Chromium or ReFrame (tests/launches.py)
without ``@pytest.mark.e2e`` fails, in its setup, call or teardown, so that the fast tier stays fast.
"""

from __future__ import annotations

import subprocess

import pytest

from . import launches
from .asvtools import asv_env, bench, scratch_repo

pytest_plugins = ["pytester"]  # test_tiers runs a pytest of its own

#: The item whose setup, call or teardown runs now, while it carries no e2e marker (None otherwise).
_UNMARKED: list[pytest.Item] = []
_LAUNCHED = pytest.StashKey[list[str]]()
_popen_init = subprocess.Popen.__init__


def _guarded_init(self, args, *rest, **kwargs):
    if _UNMARKED:
        found = launches.program(args)
        if found is not None:
            item = _UNMARKED[-1]
            line = f"{item.nodeid} launches {found} ({args!r:.200}) but is not marked @pytest.mark.e2e"
            item.stash.setdefault(_LAUNCHED, []).append(line)
            pytest.fail(line, pytrace=False)
    _popen_init(self, args, *rest, **kwargs)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    marked = item.get_closest_marker("e2e") is not None
    if not marked:
        _UNMARKED.append(item)
    subprocess.Popen.__init__ = _guarded_init
    try:
        return (yield)
    finally:
        if not marked:
            _UNMARKED.pop()
        subprocess.Popen.__init__ = _popen_init


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A launch the test swallowed (caught the failure, or made in another thread) still fails it."""
    report = yield
    launched = item.stash.get(_LAUNCHED, [])
    if launched:
        if not report.failed:
            report.outcome, report.longrepr = "failed", "\n".join(launched)
        launched.clear()  # one failed report per launch
    return report


#: The e2e groups that take longest, longest first (seconds of their tests and fixtures in a fresh-clone run on
#: two workers: about 340, 260, 130, 75); xdist hands groups out in this order, and the rest after them, so
#: that no long group starts last (the README's recipes, 260 s alone, once did: 591 s where 470 s would do).
LONGEST_FIRST = ("made_bench", "tests.test_readme_recipes", "tests.test_bench_faults")


def _group(item: pytest.Item) -> str | None:
    if item.get_closest_marker("e2e") is None:
        return None
    return "made_bench" if "made_bench" in getattr(item, "fixturenames", ()) else item.module.__name__


def _marked(item: pytest.Item, *names: str) -> bool:
    return any(item.get_closest_marker(name) is not None for name in names)


@pytest.hookimpl(tryfirst=True)  # after pytest-randomly's shuffle, before xdist files each item under its group
def pytest_collection_modifyitems(config, items):
    """Under xdist (``make test``'s e2e tier, ``--dist loadgroup --no-loadscope-reorder``) tests that share a costly
    fixture run on one worker: those reading the session's :func:`made_bench` together, every other e2e test with
    its module (its module-scoped fixture: the kill matrix's runs). An ``alone`` test must be e2e or slow. The
    groups of :data:`LONGEST_FIRST` come first, in its order; the order within a group stays the shuffled one."""
    loose = [i.nodeid for i in items if i.get_closest_marker("alone") and not _marked(i, "e2e", "slow")]
    if loose:
        raise pytest.UsageError(f"@pytest.mark.alone without e2e or slow runs in the fast tier, beside others: {loose}")
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    for item in items:
        group = _group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: rank.get(_group(item) or "", len(rank)))


@pytest.fixture
def small_machine(monkeypatch, tmp_path):
    """A pretend 1 MiB LLC and a private data cache: pools of a few MiB."""
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


@pytest.fixture(scope="session")
def made_bench(tmp_path_factory):
    """One `roofline bench` (what `make bench` runs after installing) at small sizes in a scratch repository,
    shared by the tests that read what it leaves (test_bench_faults, test_bench_html, test_suite_asv): its
    output and folders."""
    tmp = tmp_path_factory.mktemp("made-bench")
    repo = scratch_repo(tmp / "repo")
    (tmp / "home").mkdir()
    env = asv_env(repo, tmp / "home", tmp / "cache", ROOFLINE_REFEREE="on", ROOFLINE_LEVELS="on")
    proc = bench(repo, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"proc": proc, "repo": repo, "env": env, "html": repo / ".asv" / "html", "tmp": tmp}
