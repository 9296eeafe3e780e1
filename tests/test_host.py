import stat

import pytest

from roofline import host
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
    size, source = host.llc_bytes(sysfs)
    assert size == 32 * 2**20
    assert "L3" in source


def test_llc_override_and_fallback(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "4M")
    assert host.llc_bytes(tmp_path) == (4 * 2**20, "ROOFLINE_LLC_BYTES")
    monkeypatch.delenv("ROOFLINE_LLC_BYTES")
    monkeypatch.setattr(host.platform, "system", lambda: "Linux")
    size, source = host.llc_bytes(tmp_path / "missing")
    assert size == host.FALLBACK_LLC_BYTES and "fallback" in source


@pytest.mark.parametrize("bad", ["", "abc", "-4M", "0", "4T", "1.5M"])
def test_bad_llc_override(monkeypatch, bad):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", bad)
    with pytest.raises(BadInput, match="ROOFLINE_LLC_BYTES"):
        host.llc_bytes()


def test_parse_size():
    assert host.parse_size("491520K") == 480 * 2**20
    assert host.parse_size("1G") == 2**30
    assert host.parse_size("65536") == 65536


def test_host_facts_records_blas_and_threads():
    facts = host.host_facts()
    assert facts["num_cpu"] >= 1
    assert facts["llc_bytes"] > 0
    assert "thread" in facts["blas"]
    assert facts["blas_threads"] is None or facts["blas_threads"] >= 1


def test_parse_smi_reads_numbers_and_not_available():
    text = "NVIDIA H200, 580.159.04, 1980, 3201, 1980, 3201, 41, 121.50, P0\nbroken line\n"
    rows = host.parse_smi(text)
    assert rows == [
        {
            "name": "NVIDIA H200",
            "driver_version": "580.159.04",
            "clocks.sm": 1980.0,
            "clocks.mem": 3201.0,
            "clocks.max.sm": 1980.0,
            "clocks.max.mem": 3201.0,
            "temperature.gpu": 41.0,
            "power.draw": 121.5,
            "pstate": "P0",
        }
    ]
    assert host.parse_smi("X, 1, [N/A], N/A, 1, 1, 1, 1, P8")[0]["clocks.mem"] is None


def test_gpu_clocks_from_a_fake_nvidia_smi(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'NVIDIA H200, 580.1, 345, 3201, 1980, 3201, 30, 75.0, P0'\n")
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    clocks = host.gpu_clocks(smi=str(smi))
    assert clocks["clocks.sm"] == 345.0 and clocks["clocks.max.sm"] == 1980.0
    assert host.gpu_clocks(smi=str(tmp_path / "absent")) is None


def test_gpu_facts_none_without_cuda():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present: this checks the CPU-only answer")
    assert host.gpu_facts() is None
