"""Shared fixtures: small, private data so unit tests never touch the real 2 GiB pool."""

from __future__ import annotations

import pytest

from .asvtools import asv_env, bench, scratch_repo


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
    env = asv_env(repo, tmp / "home", tmp / "cache", ROOFLINE_REFEREE="on")
    proc = bench(repo, env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"proc": proc, "repo": repo, "env": env, "html": repo / ".asv" / "html", "tmp": tmp}
