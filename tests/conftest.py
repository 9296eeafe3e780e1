"""Shared fixtures: small, private data so unit tests never touch the real 2 GiB pool."""

from __future__ import annotations

import pytest


@pytest.fixture
def small_machine(monkeypatch, tmp_path):
    """A pretend 1 MiB LLC and a private data cache: pools of a few MiB."""
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path
