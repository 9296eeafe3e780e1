"""`roofline machine --migrate RESULTS`: the retired keys out of the machine file and every recorded result,
one history per machine afterwards (as asv files graphs), nothing lost (a backup), nothing half done."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.suite import asv_files, machine_file
from roofline.suite.results import read_results

from .asv_fixtures import full_values, snapshot, write_benchmarks, write_machine, write_run
from .clitools import EXAMPLE_MACHINE, one_line_error

ROOT = Path(__file__).resolve().parents[1]
A, B, C = "a" * 40, "b" * 40, "c" * 40
#: what earlier versions wrote: measured figures, the LLC's source, the catalogue match
OLD = {"blas": "openblas", "blas_threads": "2", "gpu": "none", "device": "none", "llc_source": "/sys (L3)"}


def asv_graph_keys(results: Path, machine: str) -> set[frozenset]:
    """The keys asv publish files this machine's graphs under: one per distinct result-file ``params``."""
    from asv.results import iter_results_for_machine

    return {frozenset(r.params.items()) for r in iter_results_for_machine(str(results), machine)}


@pytest.fixture
def old_results(tmp_path):
    """A machine measured twice by `roofline machine` (a remeasure): its history split in two, as asv files it."""
    root = tmp_path / "results"
    write_benchmarks(root)
    write_machine(root, "box", **OLD, measured_bandwidth="30 GB/s", measured_peak_fp32="200 GFLOP/s")
    write_run(
        root, "box", A, full_values(), date=1, **OLD, measured_bandwidth="28 GB/s", measured_peak_fp32="97 GFLOP/s"
    )
    write_run(
        root, "box", B, full_values(), date=2, **OLD, measured_bandwidth="30 GB/s", measured_peak_fp32="200 GFLOP/s"
    )
    return root


def migrate(root: Path, *extra: str) -> int:
    return main(["machine", "--migrate", str(root), "--file", str(root.parent / "machines.json"), *extra])


def test_migration_heals_a_split_history_and_keeps_a_backup(old_results, capsys):
    assert len(asv_graph_keys(old_results, "box")) == 2  # the remeasure split it
    before = snapshot(old_results)
    assert migrate(old_results) == 0
    out = capsys.readouterr().out
    assert (
        "box: took out measured_bandwidth='30 GB/s' / '28 GB/s', measured_peak_fp32='200 GFLOP/s' / '97 GFLOP/s'" in out
    )
    assert len(asv_graph_keys(old_results, "box")) == 1  # one machine, one line per benchmark again
    info = json.loads((old_results / "box" / "machine.json").read_text())
    assert not set(info) & set(machine_file.RETIRED_KEYS) and info["blas"] == "openblas" and info["version"] == 1
    (backup,) = old_results.parent.glob("results.pre-migration-*")
    assert {k: v[2] for k, v in snapshot(backup).items()} == {
        k: v[2] for k, v in before.items() if k != "benchmarks.json"
    }
    res = read_results(old_results)  # the readers see the same values
    assert (
        res.warnings == []
        and res.machines["box"].runs[B].value("decode.DecodeDRAM.track_gflops", n=256, batch=1) == 10.0
    )
    assert migrate(old_results) == 0  # again: nothing left to do, nothing written
    assert "nothing to migrate" in capsys.readouterr().out
    assert len(list(old_results.parent.glob("results.pre-migration-*"))) == 1


def test_dry_run_writes_nothing(old_results, capsys):
    before = snapshot(old_results)
    assert migrate(old_results, "--dry-run", "--json") == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["dry_run"] and len(plan["files"]) == 3 and plan["backup"] is None
    assert snapshot(old_results) == before and not list(old_results.parent.glob("*.pre-migration-*"))


def test_a_corrupt_file_stops_it_before_anything_is_written(old_results, capsys):
    (old_results / "box" / f"{C[:8]}-existing-py.json").write_text('{"commit_hash": "cc')
    before = snapshot(old_results)
    assert migrate(old_results) == 2
    assert "nothing was migrated" in one_line_error(capsys.readouterr().err)
    assert snapshot(old_results) == before and not list(old_results.parent.glob("*.pre-migration-*"))


def test_a_file_changed_after_planning_is_refused(old_results):
    plan = machine_file.plan_migration(old_results)
    target = old_results / "box" / f"{A[:8]}-existing-py.json"
    target.write_text(target.read_text().replace('"97 GFLOP/s"', '"98 GFLOP/s"'))
    before = snapshot(old_results)
    with pytest.raises(BadInput, match="changed while the migration was planned"):
        machine_file.apply_migration(plan)
    assert snapshot(old_results) == before


def test_the_machine_file_too_and_a_stable_key_filled_in_only_on_the_same_hardware(tmp_path, capsys):
    root = tmp_path / "results"
    write_benchmarks(root)
    host = machine_file.this_host()
    mine = machine_file.machine_keys("box", host)
    same = {k: mine[k] for k in ("arch", "cpu", "num_cpu", "ram")}
    write_machine(root, "box", **same, **OLD)  # older than the llc_bytes key
    write_run(root, "box", A, full_values(), **same, **OLD)
    write_machine(root, "elsewhere", **OLD)  # other hardware: nothing of this host's is filled in
    write_run(root, "elsewhere", A, full_values(), **OLD)
    entries = {"box": {**mine, "device": "none", "measured_bandwidth": "9 GB/s", "custom": "kept"}, "version": 1}
    (tmp_path / "machines.json").write_text(json.dumps(entries))
    assert migrate(root) == 0
    capsys.readouterr()
    entry = json.loads((tmp_path / "machines.json").read_text())["box"]
    assert entry["custom"] == "kept" and not set(entry) & set(machine_file.RETIRED_KEYS)
    (params,) = [json.loads(p.read_text())["params"] for p in (root / "box").glob("aaaa*.json")]
    assert params["llc_bytes"] == mine["llc_bytes"]
    assert json.loads((root / "box" / "machine.json").read_text())["llc_bytes"] == mine["llc_bytes"]
    (params,) = [json.loads(p.read_text())["params"] for p in (root / "elsewhere").glob("aaaa*.json")]
    assert "llc_bytes" not in params and "device" not in params
    (backup,) = tmp_path.glob("results.pre-migration-*")
    assert json.loads((backup / "machine-file" / "machines.json").read_text()) == entries


def test_the_example_results_migrate_into_one_machine_and_still_report(tmp_path, capsys):
    root = tmp_path / "results"
    shutil.copytree(ROOT / "examples" / "results", root)
    assert main(["compare", str(root)]) == 0
    table = capsys.readouterr().out
    assert main(["report", "--results", str(root), "--machine", EXAMPLE_MACHINE, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert migrate(root) == 0
    capsys.readouterr()
    assert len(asv_graph_keys(root, "xeon-2core-vm")) == 1
    assert main(["compare", str(root)]) == 0
    assert capsys.readouterr().out == table
    assert main(["report", "--results", str(root), "--machine", EXAMPLE_MACHINE, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == report


def test_a_missing_results_folder_is_exit_2(tmp_path, capsys):
    assert migrate(tmp_path / "none") == 2
    one_line_error(capsys.readouterr().err)


def test_results_that_lack_a_key_the_machine_now_records_are_named_before_asv_splits_them(tmp_path):
    """A new stable key (cpu_core, cpu_clock) in the machine entry files the next run apart from the earlier
    ones in asv's graphs: make bench names the keys and the migration that fills them in."""
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "machine.json").write_text("{}")
    (folder / "old.json").write_text(json.dumps({"params": {"machine": "m", "blas": "openblas"}}))
    (folder / "new.json").write_text(json.dumps({"params": {"machine": "m", "blas": "openblas", "cpu_core": "zen4"}}))
    (folder / "broken.json").write_text("{")
    entry = {"blas": "openblas", "cpu_core": "zen4", "cpu_clock": "", "gpu": ""}
    assert machine_file.keys_results_lack(asv_files.load_machine(folder), entry) == ["cpu_core"]
    assert machine_file.keys_results_lack(asv_files.load_machine(tmp_path / "absent"), entry) == []
