import pytest

from roofline import host as system
from roofline.errors import BadInput


def _cache(tmp_path, entries):
    for i, (level, kind, size) in enumerate(entries):
        d = tmp_path / f"index{i}"
        d.mkdir()
        (d / "level").write_text(f"{level}\n")
        (d / "type").write_text(f"{kind}\n")
        (d / "size").write_text(f"{size}\n")
    return tmp_path


def test_llc_is_the_highest_level(tmp_path, monkeypatch):
    monkeypatch.delenv("ROOFLINE_LLC_BYTES", raising=False)
    sysfs = _cache(
        tmp_path, [(1, "Data", "48K"), (1, "Instruction", "64K"), (2, "Unified", "2048K"), (3, "Unified", "32M")]
    )
    size, source = system.llc_bytes(sysfs)
    assert size == 32 * 2**20
    assert "L3" in source


def test_llc_override_and_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "4M")
    assert system.llc_bytes(tmp_path) == (4 * 2**20, "ROOFLINE_LLC_BYTES")
    monkeypatch.delenv("ROOFLINE_LLC_BYTES")
    monkeypatch.setattr(system.platform, "system", lambda: "Linux")
    size, source = system.llc_bytes(tmp_path / "missing")
    assert size == system.FALLBACK_LLC_BYTES and "fallback" in source


@pytest.mark.parametrize("bad", ["", "abc", "-4M", "0", "4T", "1.5M"])
def test_bad_llc_override(monkeypatch, bad):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", bad)
    with pytest.raises(BadInput, match="ROOFLINE_LLC_BYTES"):
        system.llc_bytes()


def test_parse_size():
    assert system.parse_size("491520K") == 480 * 2**20
    assert system.parse_size("1G") == 2**30
    assert system.parse_size("65536") == 65536


def test_host_facts_records_blas_and_threads():
    facts = system.host_facts()
    assert facts["num_cpu"] >= 1
    assert facts["llc_bytes"] > 0
    assert "thread" in facts["blas"]
    assert facts["blas_threads"] is None or facts["blas_threads"] >= 1
