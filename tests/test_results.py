"""Reading asv results directories: the layout, and every kind of bad file turned into a warning or n/a."""

from __future__ import annotations

import json

import pytest

from roofline.errors import BadInput
from roofline.suite.names import RETIRED_MEANINGS
from roofline.suite.results import combine, meaning, parse_param, read_results

from .asv_fixtures import full_values, snapshot, two_machines, write_benchmarks, write_machine, write_run

A, B = "a" * 40, "b" * 40


def test_reads_machines_commits_and_values(tmp_path):
    before = snapshot(two_machines(tmp_path))
    res = read_results(tmp_path)
    assert res.warnings == []
    assert list(res.machines) == ["alpha", "beta"]
    alpha = res.machines["alpha"]
    assert alpha.info["cpu"] == "Test CPU" and "version" not in alpha.info
    assert alpha.commits() == [A, B] and alpha.latest() == B
    run = alpha.run(B)
    assert run.value("decode.DecodeDRAM.track_gflops", n=256, batch=8) == 52.0
    assert run.value("ceilings.MemoryBandwidth.track_bandwidth_ceiling", kind="add") == 30.0
    # results from before read was measured: add is their roof
    assert run.stream_gbps() == {"copy": 27.0, "add": 30.0, "triad": 28.5}
    assert run.bandwidth_roof() == ("add", 30.0)
    assert run.value("decode.DecodeDRAM.track_gflops", n=256) is None  # all parameters, by name
    assert run.points("decode.DecodeDRAM.track_gflops") == [
        ({"n": 256, "batch": 1}, 11.0),
        ({"n": 256, "batch": 8}, 52.0),
    ]
    assert run.points("crossover.Crossover.track_observed_crossover_batch") == [({}, 24.0)]
    assert res.benchmarks["decode.DecodeDRAM.track_gflops"].unit == "GFLOP/s"
    assert snapshot(tmp_path) == before  # read only


def test_parse_param():
    assert parse_param("256") == 256 and parse_param("'add'") == "add" and parse_param("<lambda>") == "<lambda>"


def test_missing_or_empty_directory_is_bad_input(tmp_path):
    with pytest.raises(BadInput, match="does not exist"):
        read_results(tmp_path / "nope")
    with pytest.raises(BadInput, match="no asv results in"):
        read_results(tmp_path)
    (tmp_path / "file").write_text("x")
    with pytest.raises(BadInput, match="is not a directory"):
        read_results(tmp_path / "file")


def test_corrupt_and_truncated_files_are_skipped_with_a_warning(tmp_path):
    two_machines(tmp_path)
    good = tmp_path / "alpha" / f"{B[:8]}-existing-py.json"
    good.write_text(good.read_text()[:200])  # truncated
    (tmp_path / "beta" / "garbage.json").write_text("{not json")
    (tmp_path / "beta" / "empty.json").write_text("")
    res = read_results(tmp_path)
    text = "\n".join(res.warnings)
    assert (
        "truncated?" in text
        and "garbage.json: skipped: not valid JSON" in text
        and "empty.json: skipped: empty" in text
    )
    assert res.machines["alpha"].commits() == [A]  # the valid parts are still there
    assert res.machines["beta"].commits() == [A, B]


def test_failed_benchmark_reads_as_none(tmp_path):
    write_benchmarks(tmp_path)
    write_machine(tmp_path, "alpha")
    values = full_values()
    values["decode.DecodeDRAM.track_gflops"] = [None, 50.0]  # one parameter combination failed
    values["decode.DecodeDRAM.track_bandwidth"] = None  # the whole benchmark failed
    values["decode.DecodeDRAM.time_decode_step"] = [float("nan"), 1e-5]  # skipped
    write_run(tmp_path, "alpha", A, values)
    res = read_results(tmp_path)
    run = res.machines["alpha"].run(A)
    assert run.value("decode.DecodeDRAM.track_gflops", n=256, batch=1) is None
    assert run.value("decode.DecodeDRAM.track_gflops", n=256, batch=8) == 50.0
    assert run.value("decode.DecodeDRAM.track_bandwidth", n=256, batch=8) is None
    assert run.value("decode.DecodeDRAM.time_decode_step", n=256, batch=1) is None
    assert any("3 value(s) failed," in w for w in res.warnings)  # the skipped one is no failure


def test_results_from_an_older_suite_version_read_as_none(tmp_path):
    write_benchmarks(tmp_path)
    write_machine(tmp_path, "alpha")
    write_run(tmp_path, "alpha", A, full_values(), versions={"decode.DecodeDRAM.track_gflops": "old-version"})
    res = read_results(tmp_path)
    run = res.machines["alpha"].run(A)
    assert run.value("decode.DecodeDRAM.track_gflops", n=256, batch=8) is None
    assert run.value("decode.DecodeDRAM.track_bandwidth", n=256, batch=8) == 12.0
    assert any("another suite version" in w and "track_gflops" in w for w in res.warnings)
    assert res.version_notes and res.version_notes[0] in res.warnings
    # kept with the version that recorded it, for compare and for the run's own report
    assert run.recorded["decode.DecodeDRAM.track_gflops"][(256, 8)] == 50.0
    assert run.versions["decode.DecodeDRAM.track_gflops"] == "old-version"
    assert run.recorded_run().value("decode.DecodeDRAM.track_gflops", n=256, batch=8) == 50.0


def test_a_run_s_own_figures_leave_out_a_version_whose_meaning_changed(tmp_path):
    name = "ceilings.GemmPeak.track_gemm_ceiling"
    retired = next(iter(RETIRED_MEANINGS[name])) + "0" * 48
    write_benchmarks(tmp_path)
    write_machine(tmp_path, "alpha")
    write_run(tmp_path, "alpha", A, full_values(), versions={name: retired})
    run = read_results(tmp_path).machines["alpha"].run(A)
    assert meaning(name, retired) == RETIRED_MEANINGS[name][retired[:16]] and meaning(name, "v-peak") is None
    assert run.recorded[name][("float32",)] == 300.0
    assert run.recorded_run().value(name, dtype="float32") is None  # best pass beside medians: not the same figure


def test_combine_joins_folders_and_refuses_conflicts(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for root in (a, b):
        write_benchmarks(root)
        write_machine(root, "alpha")
        write_run(root, "alpha", A, full_values(), date=1)
    write_run(b, "alpha", B, full_values(gflops=(1.0, 2.0)), date=2)
    both = combine([read_results(a), read_results(b)])
    assert both.paths == [a, b] and set(both.machines["alpha"].runs) == {A, B}
    write_run(b, "alpha", A, full_values(gflops=(1.0, 2.0)), date=1)
    with pytest.raises(BadInput, match="the same machine, commit and benchmark with different values"):
        combine([read_results(a), read_results(b)])


def test_old_result_format_and_bad_machine_json(tmp_path):
    two_machines(tmp_path)
    old = tmp_path / "alpha" / f"{A[:8]}-existing-py.json"
    data = json.loads(old.read_text())
    data["version"] = 1
    old.write_text(json.dumps(data))
    (tmp_path / "beta" / "machine.json").write_text("[1, 2")
    res = read_results(tmp_path)
    assert res.machines["alpha"].commits() == [B]
    assert any("format version 1, expected 2 (`asv update`)" in w for w in res.warnings)
    assert res.machines["beta"].info == {} and res.machines["beta"].commits() == [A, B]
    assert any("beta/machine.json: not valid JSON" in w for w in res.warnings)


def test_without_benchmarks_json_parameters_are_positional(tmp_path):
    two_machines(tmp_path)
    (tmp_path / "benchmarks.json").unlink()
    res = read_results(tmp_path)
    run = res.machines["alpha"].run(B)
    assert run.value("decode.DecodeDRAM.track_gflops", param1=256, param2=8) == 52.0
    assert any("benchmarks.json: missing" in w for w in res.warnings)


def test_resolve_commit(tmp_path):
    two_machines(tmp_path)
    write_run(tmp_path, "alpha", "ab" + "c" * 38, full_values(), date=3)
    res = read_results(tmp_path)
    assert res.resolve_commit("bbbb") == B and res.resolve_commit("ABC", "alpha").startswith("abc")
    with pytest.raises(BadInput, match="ambiguous"):
        res.resolve_commit("a")
    with pytest.raises(BadInput, match=r"unknown commit 'abc'.*machine 'beta'"):
        res.resolve_commit("abc", "beta")
    with pytest.raises(BadInput, match="not a hexadecimal"):
        res.resolve_commit("main")
