"""`roofline machine`: asv's keys plus stable facts, merged into the machine file without losing anything."""

from __future__ import annotations

import json

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.host import host_facts, llc_bytes
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


def test_machine_keys_are_asvs_plus_stable_facts_all_strings():
    keys = machine_file.machine_keys("box1", {**HOST, "llc_bytes": 32 * 2**20})
    assert set(keys) == set(machine_file.ASV_KEYS) | set(machine_file.STABLE_KEYS)
    assert not set(keys) & set(machine_file.RETIRED_KEYS)  # nothing measured, no device, no llc_source
    assert all(isinstance(v, str) for v in keys.values())
    assert keys["machine"] == "box1" and keys["num_cpu"] == "96" and keys["ram"] == str(2**40)
    assert keys["gpu"] == "none" and keys["llc_bytes"] == str(32 * 2**20)


def test_a_gpu_is_filed_by_its_name():
    keys = machine_file.machine_keys("box1", HOST, gpu={"name": "NVIDIA H100 80GB HBM3"})
    assert keys["gpu"] == "NVIDIA H100 80GB HBM3"


def test_the_llc_key_is_the_oss_figure_never_an_override(monkeypatch):
    monkeypatch.delenv("ROOFLINE_LLC_BYTES", raising=False)
    own = llc_bytes()[0]
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    assert llc_bytes()[0] == 2**20  # the run's setting
    assert machine_file.this_host()["llc_bytes"] == own  # the machine's fact
    assert machine_file.machine_keys("b", machine_file.this_host())["llc_bytes"] == str(own)


def test_retired_keys_and_a_hand_set_device():
    old = {"cpu": "AMD EPYC 9654 96-Core Processor", "gpu": "none", "measured_bandwidth": "1 GB/s", "llc_source": "x"}
    assert machine_file.retired_keys({**old, "device": "EPYC 9654"}) == ["measured_bandwidth", "llc_source", "device"]
    assert "device" in machine_file.retired_keys({**old, "device": "none"})
    assert "device" not in machine_file.retired_keys({**old, "device": "H100 SXM"})  # set by hand: kept
    assert machine_file.read_measured({"measured_bandwidth": "25 GB/s"})["measured_bandwidth"] == 25e9


@pytest.mark.parametrize("name", ["", "a/b", ".hidden", "x" * 101, "sp ace", "..", "-dash"])
def test_bad_machine_names(name):
    with pytest.raises(BadInput):
        machine_file.check_machine_name(name)


def test_cli_merges_and_never_loses_other_entries(home, capsys):
    path = home / ".asv-machine.json"
    other = {"machine": "other", "cpu": "x", "custom": "kept"}
    old = {"machine": "box1", "note": "mine", "measured_bandwidth": "10 GB/s", "measured_peak_fp32": "100 GFLOP/s"}
    path.write_text(json.dumps({"other": other, "box1": old, "version": 1}))
    assert main(["machine", "--machine", "box1"]) == 0  # measures nothing: a second, not ten
    captured = capsys.readouterr()
    data = json.loads(path.read_text())
    assert data["version"] == 1 and data["other"] == other
    box = data["box1"]
    assert box["note"] == "mine" and box["blas"] and box["cpu"] == host_facts()["cpu"]
    # the retired keys stay until a migration takes them out of the results too: no split history
    assert box["measured_bandwidth"] == "10 GB/s"
    assert "kept keys roofline no longer writes (measured_bandwidth, measured_peak_fp32)" in captured.err
    assert "--migrate" in captured.err


def test_cli_dry_run_and_the_old_measure_flags(home, capsys):
    path = home / ".asv-machine.json"
    assert main(["machine", "--machine", "box2", "--dry-run", "--json"]) == 0
    assert not path.exists()
    assert set(json.loads(capsys.readouterr().out)) == set(machine_file.ASV_KEYS) | set(machine_file.STABLE_KEYS)
    for flag in ("--no-measure", "--remeasure"):  # scripts written for earlier versions still run
        assert main(["machine", "--machine", "box2", flag]) == 0
        assert "measures nothing now" in capsys.readouterr().err
    assert set(json.loads(path.read_text())) == {"box2", "version"}


@pytest.mark.parametrize("content", ["{broken", "[1, 2]", '{"version": 7}'])
def test_cli_refuses_a_bad_machine_file_and_leaves_it_alone(home, capsys, content):
    path = home / ".asv-machine.json"
    path.write_text(content)
    assert main(["machine", "--machine", "box1"]) == 2
    err = capsys.readouterr().err
    assert "nothing was written" in one_line_error(err)
    assert path.read_text() == content


def test_cli_bad_name_is_exit_2(home, capsys):
    assert main(["machine", "--machine", "../evil"]) == 2
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


def test_a_first_run_under_the_new_name_says_where_the_host_named_runs_are(tmp_path, capsys):
    """Results filed under the host name ('vm') before runs were named by what the machine is stay readable:
    the first run under the new name says where they are, once; other hardware's folders are not named."""
    from roofline.bench import _say_earlier_names
    from roofline.suite.asv_files import load

    from .asv_fixtures import machine_info, write_machine

    results = tmp_path / "results"
    write_machine(results, "vm")  # this hardware, filed under its host name
    write_machine(results, "elsewhere", cpu="Other CPU")
    entry = machine_info("epyc-zen4-2core-32mib-l3")
    assert machine_file.earlier_names(load(results), entry) == ["vm"]
    _say_earlier_names(load(results), entry)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"earlier runs are in {results / 'vm'}" in err[0] and "MACHINE=vm" in err[0]
    write_machine(results, entry["machine"])  # the second run under it says nothing more
    _say_earlier_names(load(results), entry)
    assert capsys.readouterr().err == ""


def test_report_and_compare_read_a_folder_holding_the_old_and_the_new_name(tmp_path, capsys):
    from .asv_fixtures import full_values, write_benchmarks, write_machine, write_run

    results = tmp_path / "results"
    write_benchmarks(results)
    for name, commit in (("vm", "a" * 40), ("epyc-zen4-2core-32mib-l3", "b" * 40)):
        write_machine(results, name)
        write_run(results, name, commit, full_values())
    assert main(["compare", str(results)]) == 0
    out = capsys.readouterr().out
    assert "vm" in out and "epyc-zen4-2core-32mib-l3" in out
    assert main(["report", "--results", str(results), "--machine", "epyc-zen4-2core-32mib-l3"]) == 0
    assert "epyc-zen4-2core-32mib-l3" in capsys.readouterr().out
