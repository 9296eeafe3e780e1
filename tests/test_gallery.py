"""The gallery (examples/results): machines named by what they are, full default runs only, one run merged
in without touching what is there; and that it holds a machine recorded at the suite as it is now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.host import cpu_signature
from roofline.model import microarch
from roofline.suite import gallery, machine_file
from roofline.suite.names import DECODE_TRACKS, PEAK_CEILING
from roofline.suite.results import meaning, read_results

from .asv_fixtures import full_values, snapshot, write_benchmarks, write_machine, write_run
from .clitools import one_line_error
from .machine_profiles import PROFILES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "results"
A, B = "a" * 40, "b" * 40

ZEN1 = {"vendor": "AuthenticAMD", "cpu family": 23, "model": 1}


@pytest.mark.parametrize(
    "cpu, cores, llc, signature, name",
    [
        ("AMD EPYC", 2, 8 * 2**20, ZEN1, "epyc-zen1-2core-8mib-l3"),  # this VM: the model number hidden
        ("AMD EPYC 7B13 64-Core Processor", 2, 32 * 2**20, {**ZEN1, "cpu family": 25}, "epyc-7b13-zen3-2core-32mib-l3"),
        ("AMD EPYC 9654 96-Core Processor", 96, 384 * 2**20, {**ZEN1, "cpu family": 25, "model": 17},
         "epyc-9654-zen4-96core-384mib-l3"),
        ("Intel(R) Xeon(R) Processor", 2, 480 * 2**20, {"vendor": "GenuineIntel"}, "xeon-2core-480mib-l3"),
        ("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", 12, 12 * 2**20, None, "i7-8700-12core-12mib-l3"),
    ],
)  # fmt: skip
def test_a_machine_is_named_by_what_it_is(cpu, cores, llc, signature, name):
    assert machine_file.gallery_name(cpu, cores, llc, 3, signature) == name


#: What every profile's results are filed under by default (make bench, make gallery, regress, roofline machine).
FILED_UNDER = {
    "xeon-amx": "xeon-emerald-rapids-2core-300mib-l3",
    "epyc-zen4": "epyc-zen4-2core-32mib-l3",
    "epyc-zen3": "epyc-zen3-2core-32mib-l3",
}


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_each_machine_files_its_results_under_what_it_is(profile, monkeypatch, tmp_path):
    from roofline.suite.machine_file import default_name, register

    profile.as_this_machine(monkeypatch, tmp_path)
    monkeypatch.setattr("platform.node", lambda: "vm")
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")  # a run's setting, not the machine: the name keeps the OS's LLC
    assert machine_file.this_machine() == default_name() == FILED_UNDER[profile.name]
    name, entry, _ = register(None, tmp_path / "asv-machine.json")
    assert name == entry["machine"] == FILED_UNDER[profile.name]
    assert entry["llc_bytes"] == str(profile.llc_bytes) and entry["cpu"] == profile.model_name


INTEL = {"vendor": "GenuineIntel", "cpu family": 6}
SKYLAKE_FLAGS = frozenset({"avx512f", "avx512bw"})


@pytest.mark.parametrize(
    "model, flags, core",
    [
        (85, SKYLAKE_FLAGS, "skylake-sp"),
        (85, SKYLAKE_FLAGS | {"avx512_vnni"}, "cascade-lake"),
        (85, SKYLAKE_FLAGS | {"avx512_vnni", "avx512_bf16"}, "cooper-lake"),
        (106, frozenset(), "ice-lake-sp"),
        (143, frozenset(), "sapphire-rapids"),
        (207, frozenset(), "emerald-rapids"),
        (173, frozenset(), "granite-rapids"),
        (158, frozenset(), None),  # a desktop Coffee Lake: its model name says what it is
    ],
)
def test_intel_server_cores_from_family_6_and_model(model, flags, core):
    assert microarch.intel_core({**INTEL, "model": model}, flags) == core
    assert microarch.intel_core({**INTEL, "cpu family": 15, "model": model}, flags) is None
    named = machine_file.gallery_name("Intel(R) Xeon(R) Processor", 2, 2**30, 3, {**INTEL, "model": model}, flags)
    assert named == "-".join(["xeon", *([core] if core else []), "2core-1024mib-l3"])


def test_a_core_the_model_name_already_says_is_not_said_twice():
    sig = {**INTEL, "model": 143}
    named = machine_file.gallery_name("Intel Xeon Sapphire Rapids", 4, 2**20, 3, sig)
    assert named == "xeon-sapphire-rapids-4core-1mib-l3"


def test_the_names_are_results_folder_names_and_this_machine_has_one():
    from roofline.suite.machine_file import check_machine_name

    assert check_machine_name(machine_file.this_machine()) == machine_file.this_machine()
    assert "core" in machine_file.this_machine()
    assert machine_file.gallery_name("", None, None) == "cpu"


def test_cpu_signature_reads_the_first_processor():
    text = "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 1\n\nprocessor\t: 1\nmodel\t: 9\n"
    assert cpu_signature(text) == ZEN1
    assert cpu_signature("") == {}


def test_only_a_full_default_run_goes_into_the_gallery():
    gallery.check_default_run({"HOME": "/root"})
    with pytest.raises(BadInput, match="ROOFLINE_N='256' is set .*--trial"):
        gallery.check_default_run({"ROOFLINE_N": "256"})
    with pytest.raises(BadInput, match="ROOFLINE_QUICK='1' is set"):  # a quick look is no gallery run
        gallery.check_default_run({"ROOFLINE_QUICK": "1"})


def test_bench_refuses_a_smaller_run_for_the_gallery_before_measuring(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_N", "256")
    assert main(["bench", "--gallery", str(tmp_path / "g"), "--results", str(tmp_path / "r")]) == 2
    assert "the gallery holds full default runs" in one_line_error(capsys.readouterr().err)
    assert main(["bench", "--trial", "--results", str(tmp_path / "r")]) == 2
    assert "--trial goes with --gallery" in one_line_error(capsys.readouterr().err)
    assert not (tmp_path / "g").exists() and not (tmp_path / "r").exists()


def test_one_run_is_merged_in_and_nothing_there_is_lost(tmp_path):
    results = tmp_path / "results"
    write_benchmarks(results)
    write_machine(results, "box")
    write_run(results, "box", A, full_values(), date=1)
    write_run(results, "box", B, full_values(gflops=(1.0, 2.0)), date=2)  # an earlier, smaller run
    write_machine(results, "other")
    write_run(results, "other", A, full_values())
    shelf = tmp_path / "gallery"
    write_benchmarks(shelf)
    write_machine(shelf, "old")
    write_run(shelf, "old", "d" * 40, full_values())
    held = snapshot(shelf)
    plan = gallery.add_run(read_results(results), "box", A, shelf)
    assert plan.written and set(plan.machines) == {"box"}
    merged = read_results(shelf)
    assert set(merged.machines) == {"old", "box"} and set(merged.machines["box"].runs) == {A}
    assert all(snapshot(shelf)[rel] == held[rel] for rel in held if rel != "benchmarks.json")
    with pytest.raises(BadInput, match="no results of machine 'box' at commit cccccccc"):
        gallery.add_run(read_results(results), "box", "c" * 40, shelf)


def test_the_gallery_is_never_edited_by_hand():
    """Every machine folder of examples/results holds asv's own files: machine.json and result files."""
    for folder in (p for p in EXAMPLES.iterdir() if p.is_dir()):
        info = json.loads((folder / "machine.json").read_text())
        assert info["machine"] == folder.name
        for result in folder.glob("*.json"):
            if result.name != "machine.json":
                assert json.loads(result.read_text())["params"]["machine"] == folder.name


def test_the_gallery_holds_a_machine_recorded_at_the_current_meaning_of_every_figure():
    """The gallery cannot fall behind the suite unnoticed: for each figure compare tables, some machine of the
    gallery recorded it at a version that means what the suite's version (tests/golden) means now."""
    inventory = json.loads((ROOT / "tests" / "golden" / "benchmarks.json").read_text())
    res = read_results(EXAMPLES)
    figures = ["ceilings.MemoryBandwidth.track_bandwidth_ceiling", PEAK_CEILING, *DECODE_TRACKS.values()]
    behind = []
    for name in figures:
        now = meaning(name, inventory[name]["version"])
        runs = [m.runs[m.latest()] for m in res.machines.values()]
        if not any(name in r.versions and meaning(name, r.versions[name]) == now for r in runs):
            behind.append(name)
    assert not behind, behind
