"""`roofline machine`: asv's keys plus ours, merged into the machine file without losing anything."""

from __future__ import annotations

import json

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.host import host_facts
from roofline.measure.ceilings import gemm_peak, hardware_from, stream_bandwidth
from roofline.suite import machine_file

from .clitools import one_line_error

HOST = {
    "cpu": "AMD EPYC 9654 96-Core Processor",
    "arch": "x86_64",
    "os": "Linux 6",
    "num_cpu": 96,
    "ram_bytes": 2**40,
    "blas": "openblas",
    "blas_threads": 96,
}


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_machine_keys_are_asvs_plus_ours_all_strings():
    keys = machine_file.machine_keys("box1", HOST)
    asv_keys = {"machine", "os", "arch", "cpu", "num_cpu", "ram"}
    ours = {"blas", "blas_threads", "gpu", "device", "llc_bytes", "llc_source", *machine_file.MEASURED_KEYS}
    assert asv_keys | ours <= set(keys)
    assert all(isinstance(v, str) for v in keys.values())
    assert keys["machine"] == "box1" and keys["num_cpu"] == "96" and keys["ram"] == str(2**40)
    assert keys["device"] == "EPYC 9654" and keys["gpu"] == "none"
    assert keys["measured_bandwidth"] == machine_file.NOT_MEASURED


def test_a_gpu_wins_the_catalogue_match():
    keys = machine_file.machine_keys("box1", HOST, gpu={"name": "NVIDIA H100 80GB HBM3"})
    assert keys["gpu"] == "NVIDIA H100 80GB HBM3" and keys["device"] == "H100 SXM"


def test_measured_keys_round_trip(monkeypatch):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    bw = stream_bandwidth(("add",), total_bytes=3 * 2**20, runs=2)
    peak = gemm_peak("float32", n=128, runs=2)
    ceilings = type("C", (), {"hardware": hardware_from(bw["add"], {"float32": peak})})()
    keys = machine_file.machine_keys("box1", host_facts(), ceilings=ceilings)
    back = machine_file.read_measured(keys)
    assert back["measured_bandwidth"] == pytest.approx(bw["add"].median, rel=0.01)
    assert back["measured_peak_fp32"] == pytest.approx(peak.median, rel=0.01)


@pytest.mark.parametrize("name", ["", "a/b", ".hidden", "x" * 101, "sp ace", "..", "-dash"])
def test_bad_machine_names(name):
    with pytest.raises(BadInput):
        machine_file.check_machine_name(name)


def test_cli_merges_and_never_loses_other_entries(home, capsys):
    path = home / ".asv-machine.json"
    other = {"machine": "other", "cpu": "x", "custom": "kept"}
    path.write_text(
        json.dumps(
            {
                "other": other,
                "box1": {
                    "machine": "box1",
                    "note": "mine",
                    "measured_bandwidth": "10 GB/s",
                    "measured_peak_fp32": "100 GFLOP/s",
                },
                "version": 1,
            }
        )
    )
    assert main(["machine", "--machine", "box1"]) == 0  # has measured figures: keeps them, measures nothing
    data = json.loads(path.read_text())
    assert data["version"] == 1 and data["other"] == other
    box = data["box1"]
    assert box["note"] == "mine" and box["measured_bandwidth"] == "10 GB/s" and box["blas"]
    assert box["cpu"] == host_facts()["cpu"]
    assert "measured figures kept" in capsys.readouterr().out


def test_cli_no_measure_and_dry_run(home, capsys):
    path = home / ".asv-machine.json"
    assert main(["machine", "--machine", "box2", "--no-measure", "--dry-run", "--json"]) == 0
    assert not path.exists()
    assert json.loads(capsys.readouterr().out)["measured_peak_fp32"] == machine_file.NOT_MEASURED
    assert main(["machine", "--machine", "box2", "--no-measure"]) == 0
    assert set(json.loads(path.read_text())) == {"box2", "version"}


@pytest.mark.parametrize("content", ["{broken", "[1, 2]", '{"version": 7}'])
def test_cli_refuses_a_bad_machine_file_and_leaves_it_alone(home, capsys, content):
    path = home / ".asv-machine.json"
    path.write_text(content)
    assert main(["machine", "--machine", "box1", "--no-measure"]) == 2
    err = capsys.readouterr().err
    assert "nothing was written" in one_line_error(err)
    assert path.read_text() == content


def test_cli_bad_name_is_exit_2(home, capsys):
    assert main(["machine", "--machine", "../evil", "--no-measure"]) == 2
    assert "machine name '../evil'" in capsys.readouterr().err


def test_gpu_keys_are_flat_strings():
    facts = {
        "name": "NVIDIA H200",
        "gpu_memory_bytes": 150 * 2**30,
        "gpu_sm_count": 132,
        "gpu_capability": "9.0",
        "driver": "580.1",
        "cuda": "13.0",
        "torch": "2.11.0",
        "clocks": {"clocks.max.sm": 1980.0},
    }
    keys = machine_file.gpu_keys(facts)
    assert "gpu" not in keys  # machine_keys files the name
    assert keys["gpu_sm_count"] == "132" and keys["gpu_memory"] == "150 GiB"
    assert keys["gpu_max_sm_clock_mhz"] == "1980"
    assert all(isinstance(v, str) for v in keys.values())
    assert machine_file.gpu_keys(None) == {}
