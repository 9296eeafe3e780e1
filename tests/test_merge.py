"""`roofline merge`: sharded asv results into one folder, on hand-made shards in asv's layout.

The real thing (ReFrame jobs' shards, asv publish of the merge) is in test_fleet.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.suite import asv_files
from roofline.suite import merge as merge_mod
from roofline.suite.merge import merge, union_params
from roofline.suite.results import read_results

from .asv_fixtures import SUITE, full_values, snapshot, write_benchmarks, write_machine, write_run

A, B = "a" * 40, "b" * 40


def shard(root: Path, machine: str, commit: str = A, suite: dict = SUITE) -> Path:
    write_benchmarks(root, suite)
    write_machine(root, machine)
    write_run(root, machine, commit, full_values(), suite=suite)
    return root


def cli(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(["merge", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def one_line_exit_2(capsys, *args: str) -> str:
    rc, out, err = cli(capsys, *args)
    assert rc == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("roofline: error: "), err
    return err


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---- the happy path ----------------------------------------------------------------------------


def test_two_shards_into_a_new_dest(tmp_path, capsys):
    a, b = shard(tmp_path / "a", "alpha"), shard(tmp_path / "b", "beta")
    before = {p: snapshot(p) for p in (a, b)}
    dest = tmp_path / "merged"
    rc, out, err = cli(capsys, a, b, dest)
    assert rc == 0, err
    assert "merged 2 shard(s)" in out and "alpha: 1 commit(s) (aaaaaaaa)" in out
    res = read_results(dest)
    assert sorted(res.machines) == ["alpha", "beta"] and res.benchmarks_problem is None
    for src, machine in ((a, "alpha"), (b, "beta")):
        for rel, data in files(src / machine).items():
            assert (dest / machine / rel).read_bytes() == data  # copied byte for byte
        assert snapshot(src) == before[src]  # sources never written
    assert not list(tmp_path.glob(".merged.merging-*"))  # no temporary folder left


def test_merging_into_dest_keeps_everything_it_held(tmp_path, capsys):
    dest = shard(tmp_path / "dest", "alpha")
    write_run(dest, "alpha", B, full_values())  # a second commit
    (dest / "alpha" / "notes.txt").write_text("kept")  # something merge does not read
    (dest / ".hidden").write_text("kept too")
    held = snapshot(dest)
    rc, _, err = cli(capsys, shard(tmp_path / "b", "beta"), dest)
    assert rc == 0, err
    after = snapshot(dest)
    for rel, (size, mtime, data) in held.items():
        assert after[rel] == (size, mtime, data), rel  # size, mtime and bytes as they were
    assert "beta/machine.json" in after


def test_the_same_files_again_change_nothing(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    dest = tmp_path / "dest"
    assert cli(capsys, a, dest)[0] == 0
    held, inode = snapshot(dest), dest.stat().st_ino
    rc, out, _ = cli(capsys, a, dest)
    assert rc == 0 and "nothing new: DEST left untouched" in out
    assert snapshot(dest) == held and dest.stat().st_ino == inode


def test_one_machine_two_commits_from_two_shards(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha", A)
    b = shard(tmp_path / "b", "alpha", B)
    dest = tmp_path / "dest"
    assert cli(capsys, a, b, dest)[0] == 0
    assert read_results(dest).machines["alpha"].commits() == [A, B]


def test_parameter_values_are_widened_to_the_union(tmp_path, capsys):
    wide = dict(SUITE)
    name = "decode.DecodeDRAM.track_gflops"
    t, u, pn, _, v = SUITE[name]
    wide[name] = (t, u, pn, [["256", "1024"], ["1", "64"]], v)
    a = shard(tmp_path / "a", "alpha")
    b = tmp_path / "b"
    write_benchmarks(b, wide)
    write_machine(b, "beta")
    write_run(b, "beta", A, {**full_values(), name: [1.0, 2.0, 3.0, 4.0]}, suite=wide)
    dest = tmp_path / "dest"
    rc, out, err = cli(capsys, a, b, dest)
    assert rc == 0, err
    assert f"parameter values widened to the union for {name}" in out
    merged = json.loads((dest / "benchmarks.json").read_text())
    assert merged[name]["params"] == [["256", "1024"], ["1", "8", "64"]]  # numeric axes sorted
    assert merged["decode.DecodeDRAM.track_bandwidth"]["params"] == [["256"], ["1", "8"]]
    res = read_results(dest)
    assert res.machines["alpha"].run(A).value(name, n=256, batch=8) == 50.0
    assert res.machines["beta"].run(A).value(name, n=1024, batch=64) == 4.0


def test_union_keeps_a_text_axis_in_first_seen_order():
    assert union_params([["'b'", "'a'"]], [["'c'", "'a'"]], "x") == [["'b'", "'a'", "'c'"]]
    assert union_params([["8", "1"]], [["8", "1"]], "x") == [["8", "1"]]  # unchanged: not re-sorted


def test_a_file_the_reader_skips_is_left_out_with_a_warning(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    (a / "alpha" / "deadbeef-existing-py.json").write_text('{"truncated": ')
    dest = tmp_path / "dest"
    rc, _, err = cli(capsys, a, dest)
    assert rc == 0
    assert "deadbeef-existing-py.json: not copied (not valid JSON" in err
    assert not (dest / "alpha" / "deadbeef-existing-py.json").exists()


def test_dry_run_writes_nothing(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    rc, out, _ = cli(capsys, a, tmp_path / "dest", "--dry-run")
    assert rc == 0 and out.startswith("would merge 1 shard(s)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a"]


# ---- conflicts ---------------------------------------------------------------------------------


def test_a_conflict_between_shards_is_refused_and_nothing_written(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    b = shard(tmp_path / "b", "alpha")
    write_run(b, "alpha", A, full_values(gflops=(99.0, 99.0)))  # same machine, commit, env: other bytes
    err = one_line_exit_2(capsys, a, b, tmp_path / "dest")
    assert "conflict: alpha/aaaaaaaa-existing-py.json differs between shards" in err
    assert not (tmp_path / "dest").exists()


def test_a_conflict_with_dest_is_refused_and_dest_untouched(tmp_path, capsys):
    dest = shard(tmp_path / "dest", "alpha")
    held = snapshot(dest)
    b = shard(tmp_path / "b", "alpha")
    write_run(b, "alpha", A, full_values(gflops=(99.0, 99.0)))
    err = one_line_exit_2(capsys, b, dest)
    assert "differs from DEST's" in err and "--force" in err
    assert snapshot(dest) == held


def test_force_takes_the_shard_and_keeps_dests_file_aside(tmp_path, capsys):
    dest = shard(tmp_path / "dest", "alpha")
    old = (dest / "alpha" / "aaaaaaaa-existing-py.json").read_bytes()
    b = shard(tmp_path / "b", "alpha")
    write_run(b, "alpha", A, full_values(gflops=(99.0, 99.0)))
    rc, out, err = cli(capsys, b, dest, "--force")
    assert rc == 0 and "DEST's copy replaced" in err
    result = "alpha/aaaaaaaa-existing-py.json"
    assert (dest / result).read_bytes() == (b / result).read_bytes()
    displaced = list(tmp_path.glob("dest.displaced-*"))
    assert len(displaced) == 1 and f"kept in {displaced[0]}" in out
    assert (displaced[0] / result).read_bytes() == old  # nothing lost


def test_a_machine_json_that_differs_is_a_conflict(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    b = shard(tmp_path / "b", "alpha", B)
    write_machine(b, "alpha", cpu="Another CPU")  # two machine types under one name
    err = one_line_exit_2(capsys, a, b, tmp_path / "dest")
    assert "alpha/machine.json differs" in err and "two different machines under one name" in err


# ---- bad input: one line, exit 2, nothing written --------------------------------------------


def test_incompatible_suites_are_refused(tmp_path, capsys):
    name = "decode.DecodeDRAM.track_gflops"
    t, u, pn, p, v = SUITE[name]
    a = shard(tmp_path / "a", "alpha")
    for change, what in ((("track", "tokens/s", pn, p, v), "unit"), ((t, u, ["size", "batch"], p, v), "param_names")):
        b = shard(tmp_path / what, "beta", suite={**SUITE, name: change})
        err = one_line_exit_2(capsys, a, b, tmp_path / "dest")
        assert f"incompatible suites: {name} has {what}" in err and "not the same quantity" in err
    assert not (tmp_path / "dest").exists()


def test_other_versions_of_the_same_quantity_merge_and_the_latest_definition_is_kept(tmp_path, capsys):
    name = "decode.DecodeDRAM.track_gflops"
    t, u, pn, p, _ = SUITE[name]
    newer = {**SUITE, name: (t, u, pn, p, "v2")}
    old = shard(tmp_path / "old", "alpha")
    new = tmp_path / "new"
    write_benchmarks(new, newer)
    write_machine(new, "beta")
    write_run(new, "beta", B, full_values(gflops=(20.0, 90.0)), date=2_000_000_000_000, suite=newer)
    dest = tmp_path / "dest"
    rc, out, err = cli(capsys, new, old, dest)  # the older shard last: still the newer definition
    assert rc == 0, err
    assert "1 benchmark(s) recorded under several versions, the latest definition kept" in out
    res = read_results(dest)
    assert res.benchmarks[name].version == "v2"
    alpha = res.machines["alpha"].run(A)
    assert alpha.value(name, n=256, batch=1) is None  # as asv publish shows it: another version
    assert alpha.recorded[name][(256, 1)] == 10.0 and alpha.versions[name] == SUITE[name][4]  # kept, with its version
    assert res.machines["beta"].run(B).value(name, n=256, batch=8) == 90.0
    assert (dest / "alpha" / "aaaaaaaa-existing-py.json").read_bytes() == (
        old / "alpha" / "aaaaaaaa-existing-py.json"
    ).read_bytes()


def test_two_files_of_one_run_with_other_benchmarks_are_joined(tmp_path, capsys):
    values = full_values()
    decode = {k: v for k, v in values.items() if k.startswith("decode.")}
    rest = {k: v for k, v in values.items() if not k.startswith("decode.")}
    a, b = tmp_path / "a", tmp_path / "b"
    for root, part in ((a, decode), (b, rest)):
        write_benchmarks(root)
        write_machine(root, "alpha")
        write_run(root, "alpha", A, part)
    write_machine(b, "alpha", os="Linux 6.2")  # another kernel: the same machine
    rc, out, err = cli(capsys, a, b, tmp_path / "dest")
    assert rc == 0, err
    run = read_results(tmp_path / "dest").machines["alpha"].run(A)
    assert set(run.values) == set(values)
    assert run.value("ceilings.GemmPeak.track_gemm_ceiling", dtype="float32") == 300.0
    assert run.value("decode.DecodeDRAM.track_gflops", n=256, batch=8) == 50.0
    assert json.loads((tmp_path / "dest" / "alpha" / "machine.json").read_text())["os"] == "Linux 6.2"


def test_update_suite_lets_the_shards_replace_dests_definition(tmp_path, capsys):
    dest = shard(tmp_path / "dest", "alpha")
    name = "decode.DecodeDRAM.track_gflops"
    t, u, pn, p, _ = SUITE[name]
    b = shard(tmp_path / "b", "beta", suite={**SUITE, name: (t, "tokens/s", pn, p, "v2")})
    assert "--update-suite" in one_line_exit_2(capsys, b, dest)
    rc, out, _ = cli(capsys, b, dest, "--update-suite")
    assert rc == 0 and f"definitions taken from the sources for {name}" in out
    res = read_results(dest)
    assert res.benchmarks[name].version == "v2"
    assert res.machines["alpha"].run(A).value(name, n=256, batch=1) is None  # older version: n/a, as asv shows it
    assert res.machines["beta"].run(A).value(name, n=256, batch=1) == 10.0


@pytest.mark.parametrize(
    "case",
    ["missing", "file", "no-benchmarks", "bad-benchmarks", "no-machine-json", "not-results", "dest-file"],
)
def test_bad_shards_and_dests(tmp_path, capsys, case):
    a = shard(tmp_path / "a", "alpha")
    dest = tmp_path / "dest"
    args = [a, dest]
    if case == "missing":
        args = [a, tmp_path / "nowhere", dest]
    elif case == "file":
        (tmp_path / "f").write_text("x")
        args = [tmp_path / "f", dest]
    elif case == "no-benchmarks":
        (a / "benchmarks.json").unlink()
    elif case == "bad-benchmarks":
        (a / "benchmarks.json").write_text("{")
    elif case == "no-machine-json":
        (a / "alpha" / "machine.json").unlink()
    elif case == "not-results":
        dest.mkdir()
        (dest / "thesis.tex").write_text("mine")
    elif case == "dest-file":
        dest.write_text("a file")
    held = snapshot(tmp_path)
    err = one_line_exit_2(capsys, *args)
    expected = {
        "missing": "does not exist",
        "file": "is not a directory",
        "no-benchmarks": "benchmarks.json: missing",
        "bad-benchmarks": "not valid JSON",
        "no-machine-json": "machine.json is missing or unreadable",
        "not-results": "holds no asv results",
        "dest-file": "is not a directory",
    }[case]
    assert expected in err, err
    assert snapshot(tmp_path) == held  # nothing written anywhere


@pytest.mark.parametrize("where", ["dest-in-src", "src-in-dest", "same"])
def test_dest_and_sources_must_not_nest(tmp_path, capsys, where):
    a = shard(tmp_path / "a", "alpha")
    if where == "dest-in-src":
        args = [a, a / "merged"]
    elif where == "src-in-dest":
        args = [a, tmp_path]
    else:
        args = [a, a]
    held = snapshot(tmp_path)
    err = one_line_exit_2(capsys, *args)
    assert {"dest-in-src": "inside the shard", "src-in-dest": "inside DEST", "same": "is the shard"}[where] in err
    assert snapshot(tmp_path) == held


def test_an_unwritable_dest_is_one_line(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    assert "cannot write in /proc" in one_line_exit_2(capsys, a, "/proc/roofline-merged")
    assert "does not exist" in one_line_exit_2(capsys, a, tmp_path / "no" / "such" / "dest")
    assert "SRC and a DEST" in one_line_exit_2(capsys, a)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_parent_is_one_line(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        assert "cannot write" in one_line_exit_2(capsys, a, ro / "dest")
    finally:
        ro.chmod(0o755)


# ---- crashes and concurrency ------------------------------------------------------------------


def test_a_failure_while_building_leaves_dest_as_it_was(tmp_path, capsys, monkeypatch):
    dest = shard(tmp_path / "dest", "alpha")
    held = snapshot(dest)
    b = shard(tmp_path / "b", "beta")
    calls, real_copy = [], shutil.copy2

    def failing_copy(src, dst, **kw):
        calls.append(src)
        if len(calls) > 1:  # the disk fills up half way through
            raise OSError(28, "No space left on device", str(dst))
        return real_copy(src, dst, **kw)

    monkeypatch.setattr(merge_mod.shutil, "copy2", failing_copy)
    err = one_line_exit_2(capsys, b, dest)
    assert "No space left on device" in err and "DEST left as it was" in err
    assert snapshot(dest) == held
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".dest.merging-")] == []


def test_without_an_atomic_exchange_two_renames_still_merge(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(asv_files, "exchange", lambda a, b: False)
    dest = shard(tmp_path / "dest", "alpha")
    held = snapshot(dest)
    assert cli(capsys, shard(tmp_path / "b", "beta"), dest)[0] == 0
    after = snapshot(dest)
    assert all(after[k] == v for k, v in held.items()) and "beta/machine.json" in after
    assert not list(tmp_path.glob(".dest.previous-*"))


def test_an_interrupted_swap_is_named_not_papered_over(tmp_path, capsys):
    a = shard(tmp_path / "a", "alpha")
    (tmp_path / ".dest.previous-123").mkdir()  # what a crash between the two renames leaves
    err = one_line_exit_2(capsys, a, tmp_path / "dest")
    assert "earlier merge was interrupted" in err and ".dest.previous-123" in err


def test_the_exchange_really_swaps_on_linux(tmp_path):
    if not sys.platform.startswith("linux"):
        pytest.skip("renameat2 is Linux's")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("x")
    (tmp_path / "y").mkdir()
    if not asv_files.exchange(tmp_path / "x", tmp_path / "y"):
        pytest.skip("this filesystem does not support RENAME_EXCHANGE")
    assert (tmp_path / "y" / "f").read_text() == "x" and not (tmp_path / "x" / "f").exists()


CONCURRENT = """
import sys
from roofline.suite.merge import merge
merge([sys.argv[1]], sys.argv[2])
"""


def test_concurrent_merges_into_one_dest_lose_nothing(tmp_path):
    shards = [shard(tmp_path / f"s{i}", f"m{i}") for i in range(4)]
    dest = tmp_path / "dest"
    procs = [
        subprocess.Popen([sys.executable, "-c", CONCURRENT, str(s), str(dest)], stderr=subprocess.PIPE, text=True)
        for s in shards
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    assert sorted(read_results(dest).machines) == ["m0", "m1", "m2", "m3"]  # every job's shard, none lost


def test_the_python_api_refuses_nothing_to_merge(tmp_path):
    with pytest.raises(BadInput):
        merge([], tmp_path / "dest")
