"""asv's results folder has one reader and writer (roofline.suite.asv_files), and each command reads the folder
once: ``roofline bench`` once before asv runs and once after, ``roofline compare`` and a plain ``asv publish``
(roofline.publish.finish) once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from roofline import asv_driver, bench, publish
from roofline.cli import main
from roofline.errors import BadInput
from roofline.suite import asv_files, machine_file
from roofline.suite.results import read_results

from .asv_fixtures import full_values, machine_info, two_machines, write_benchmarks, write_machine, write_run

A, B = "a" * 40, "b" * 40


# ---- the reader and writer -------------------------------------------------------------------


def test_a_folder_is_read_once_file_by_file_and_each_bad_file_says_why(tmp_path, monkeypatch):
    root = two_machines(tmp_path / "results")
    bad = root / "alpha"
    (bad / "cutcutcu-existing-py.json").write_text('{"results": {')  # a crash cut it short
    (bad / "emptyemp-existing-py.json").write_text("")
    (bad / "listlist-existing-py.json").write_text("[1]")
    (bad / "oldoldol-existing-py.json").write_text(json.dumps({"version": 1, "commit_hash": A}))
    (bad / "nocommit-existing-py.json").write_text(json.dumps({"version": 2}))
    (bad / "notes.txt").write_text("a person's note")
    (bad / ".hidden.json").write_text("{")
    (root / "stray").mkdir()
    reads: list[Path] = []
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: reads.append(p) or real(p))
    folder = asv_files.load(root)
    assert sorted(reads) == sorted(set(reads))  # each file once
    assert len(reads) == 1 + 2 * 3 + 5  # benchmarks.json; machine.json and two runs each; the five bad files
    problems = {f.path.name[:8]: f.problem for f in folder.machines["alpha"].files}
    assert problems["cutcutcu"].startswith("not valid JSON") and problems["emptyemp"] == "empty file"
    assert problems["listlist"] == "not a JSON object" and problems["nocommit"] == "no commit_hash"
    assert problems["oldoldol"].startswith("asv result format version 1, expected 2")
    assert problems["aaaaaaaa"] is None and problems["bbbbbbbb"] is None
    assert folder.machines["alpha"].others == [bad / "notes.txt"]
    assert folder.machines["stray"].info is None and folder.machine("gamma").files == []
    assert folder.file("alpha/machine.json").data["machine"] == "alpha"
    with pytest.raises(BadInput, match="does not exist"):
        asv_files.load(tmp_path / "none")


def test_rows_are_zipped_with_the_columns_asv_names_not_by_position():
    data = {"result_columns": ["params", "result"], "results": {"x": [[["1"]], [2.5]], "bad": 3}}
    assert asv_files.rows(data) == {"x": {"params": [["1"]], "result": [2.5]}, "bad": None}
    assert asv_files.rows({"results": {"x": [1]}}) == {}  # no columns: no rows
    back = asv_files.with_rows(data, {"x": {"result": [2.5], "params": [["1"]]}}, ["result", "params"])
    assert back["results"] == {"x": [[2.5], [["1"]]]} and back["result_columns"] == ["result", "params"]
    file = asv_files.AsvFile(Path("f.json"), b"", {**data, "results": {"x": [[["1"]], [None]]}}, parsed=True)
    assert not file.measured()  # asv's null: failed
    assert asv_files.AsvFile(Path("f.json"), b"", data, parsed=True).measured()


def test_files_are_written_as_asv_writes_them(tmp_path):
    from asv import util

    result = {"commit_hash": A, "params": {"machine": "m", "cpu": "x"}, "results": {"b": [[1.0]]}, "version": 2}
    util.write_json(str(tmp_path / "r.json"), result, compact=True)
    assert asv_files.result_text(result) == (tmp_path / "r.json").read_text()
    info = machine_info("m")
    util.write_json(str(tmp_path / "machine.json"), info, 1)
    assert asv_files.machine_text({**info, "version": 1}) == (tmp_path / "machine.json").read_text()
    asv_files.write(tmp_path / "r.json", "{}")
    assert (tmp_path / "r.json").read_text() == "{}" and [p.name for p in tmp_path.iterdir() if p.name[0] == "."] == []


def test_one_fact_says_which_hardware_a_machine_is():
    info = machine_info("m")
    assert asv_files.identity(info) == {"arch": "x86_64", "cpu": "Test CPU", "num_cpu": "2", "ram": "1"}
    assert asv_files.identity({**info, "ram": " "}) == {"arch": "x86_64", "cpu": "Test CPU", "num_cpu": "2"}
    loaded = asv_files.ResultsFolder(Path("r"))
    assert machine_file.earlier_names(loaded, info) == []


# ---- each command reads the folder once -------------------------------------------------------


@pytest.fixture
def loads(monkeypatch):
    """Every folder asv_files.load reads, in order."""
    seen: list[Path] = []
    real = asv_files.load

    def counting(path):
        seen.append(Path(path).resolve())
        return real(path)

    monkeypatch.setattr(asv_files, "load", counting)
    return seen


def test_roofline_bench_reads_the_results_once_before_asv_runs_and_once_after(tmp_path, monkeypatch, loads, capsys):
    """A fake asv: run_bench's own reading of the folder, the gallery path included (the gallery is another
    folder, read by the merge and the comparison page)."""
    monkeypatch.chdir(tmp_path)
    results, html, gallery = tmp_path / "results", tmp_path / "html", tmp_path / "gallery"
    write_benchmarks(results)
    write_machine(results, "box")
    write_run(results, "box", A, full_values(), date=1)  # an earlier run
    entry = machine_info("box")
    monkeypatch.setattr(bench, "preflight", lambda r: [])
    monkeypatch.setattr(bench, "head_commit", lambda: B)
    monkeypatch.setattr(asv_driver, "busy_before", lambda allow: None)
    monkeypatch.setattr(asv_driver, "asv_selection", lambda b: [])
    monkeypatch.setattr(machine_file, "register", lambda name, gpu=None: ("box", entry, []))
    monkeypatch.setattr(publish, "offline", lambda h: 0)
    at_asv = []

    def asv_run(*args, env=None):
        at_asv.append(len(loads))
        write_run(results, "box", B, full_values(gflops=(11.0, 52.0)), date=2)
        return 0, None

    def asv_publish(*args, env=None):
        html.mkdir(exist_ok=True)
        (html / "index.html").write_text("<html></html>")
        return 0

    monkeypatch.setattr(asv_driver, "run_asv_watched", asv_run)
    monkeypatch.setattr(asv_driver, "run_asv", asv_publish)
    status = bench.run_bench(results, html, same_python=True, gallery=gallery, trial=True)
    out = capsys.readouterr()
    assert status == 0, out.err
    mine = [p for p in loads if p == results.resolve()]
    assert at_asv == [1] and len(mine) == 2  # one read before asv ran, one after
    assert (html / "compare.html").is_file() and "gallery: merged" in out.out
    assert sorted(read_results(gallery).machines["box"].runs) == [B]


def test_roofline_compare_reads_each_folder_once(tmp_path, loads, capsys):
    one, two = two_machines(tmp_path / "one"), tmp_path / "two"
    write_benchmarks(two)
    write_machine(two, "gamma")
    write_run(two, "gamma", A, full_values())
    assert main(["compare", str(one), str(two)]) == 0
    assert loads == [one.resolve(), two.resolve()]
    assert main(["compare", str(one), "--commits", A, B]) in (0, 1)
    assert loads[2:] == [one.resolve()]


def test_a_plain_asv_publish_reads_the_results_once(tmp_path, monkeypatch, loads, capsys):
    results, html = two_machines(tmp_path / "results"), tmp_path / "html"
    html.mkdir()
    (html / "index.html").write_text("<html></html>")
    monkeypatch.setattr(publish, "offline", lambda h: 0)
    newest = results / "beta" / f"{B[:8]}-existing-py.json"
    os.utime(newest, (newest.stat().st_mtime + 60,) * 2)
    assert publish.finish(html, results, gallery=tmp_path / "no-gallery") == 0
    assert loads == [results.resolve()]
    assert publish.last_recorded(asv_files.load(results)) == ("beta", B)
    assert "beta" in (html / "index.html").read_text()
    assert capsys.readouterr().err == ""


def test_roofline_regress_reads_the_results_once_before_asv_runs_and_once_after(tmp_path, monkeypatch, loads):
    from roofline import host, regress
    from roofline.suite.revisions import env_names

    root, env = tmp_path / "results", next(iter(env_names("3.12")))  # asv's virtualenv, the one regress gates
    write_benchmarks(root)
    write_machine(root, "alpha")
    write_run(root, "alpha", B, full_values(), date=2, env=env)
    at_asv = []

    def asv_ran(*args):  # commit cccc recorded; the gate reads it
        at_asv.append(len(loads))
        write_run(root, "alpha", "c" * 40, full_values(gflops=(5.0, 25.0)), date=3, env=env)
        return "3.12", 1, None  # asv said a benchmark failed: what it wrote is looked at too

    monkeypatch.setattr(regress, "_commits", lambda *a: (B, "c" * 40))
    monkeypatch.setattr(regress, "preflight", lambda results: [])
    monkeypatch.setattr(asv_driver, "busy_before", lambda allow_busy: None)
    monkeypatch.setattr(asv_driver, "asv_selection", lambda bench: [])
    monkeypatch.setattr(host, "gpu_facts", lambda: None)
    monkeypatch.setattr(machine_file, "register", lambda name, gpu=None: ("alpha", {}, []))
    monkeypatch.setattr(regress, "_run_both", asv_ran)
    done = regress.run_regress("HEAD~1", "HEAD", results=root, machine="alpha")
    assert done.status == 1 and done.gate is not None  # asv's failure; the gate ran on what it recorded
    assert at_asv == [1] and loads == [root.resolve()] * 2


def test_an_interrupted_asv_gets_back_what_it_left_unreadable(tmp_path):
    """kept_results compares with the folder as read before asv ran: a file asv cut short is written back whole,
    atomically; a file asv wrote is named."""
    folder = write_machine(tmp_path, "box")
    old = write_run(tmp_path, "box", A, full_values())
    before = asv_files.load_machine(folder)
    held = old.read_bytes()
    old.write_text('{"results": {')  # asv stopped while writing it
    new = write_run(tmp_path, "box", B, full_values())
    line = asv_driver.kept_results(folder, before)
    assert old.read_bytes() == held
    assert line == (
        f"results kept in {folder}: 2 result file(s), 1 untouched; written by this run: {new.name}; "
        f"restored from before the run: {old.name}"
    )
