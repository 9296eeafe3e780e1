"""The two-commit gate: one environment per side, a direction for every unit, the machine's figures apart,
asv's significance test on recorded samples, and --json."""

from __future__ import annotations

import json

import pytest

from roofline.cli import main
from roofline.report import gate
from roofline.suite.results import Benchmark, read_results

from .asv_fixtures import SUITE, full_values, snapshot, write_benchmarks, write_machine, write_run
from .clitools import one_line_error

A, B = "a" * 40, "b" * 40
TIME = "decode.DecodeDRAM.time_decode_step"
OVERHEAD = "backends.CallOverhead.track_single_call"
FRACTION = "decode.DecodeRooflineFraction.track_roofline_fraction"
#: the suite's units beside the fixtures' own
WIDER = {
    **SUITE,
    OVERHEAD: ("track", "µs", ["backend"], [["'numpy'"]], "v-over"),
    "backends.CudaDecode.track_seconds": ("track", "µs per call", ["backend"], [["'torch-cuda'"]], "v-cuda"),
    FRACTION: ("track", "fraction of roof", ["n", "batch"], [["256"], ["1", "8"]], "v-frac"),
}


def results_dir(tmp_path, after, before=None, suite=SUITE, **kw):
    root = tmp_path / "r"
    write_benchmarks(root, suite)
    write_machine(root, "alpha")
    write_run(root, "alpha", A, before or full_values(), date=1, suite=suite, **kw.get("before_kw", {}))
    write_run(root, "alpha", B, after, date=2, suite=suite, **kw.get("after_kw", {}))
    return root


def bench(unit: str, kind: str = "track") -> Benchmark:
    return Benchmark(name="x", type=kind, unit=unit)


@pytest.mark.parametrize(
    ("unit", "kind", "want"),
    [
        ("seconds", "time", "lower"),
        ("µs", "track", "lower"),
        ("µs per call", "track", "lower"),
        ("s", "track", "lower"),
        ("GB/s", "track", "higher"),
        ("GFLOP/s", "track", "higher"),
        ("fraction of roof", "track", "higher"),
        ("batch", "track", None),
    ],
)
def test_every_unit_of_the_suite_has_its_direction(unit, kind, want):
    assert gate.direction("m.C.track_x", bench(unit, kind)) == want


def test_without_benchmarks_json_the_name_decides():
    assert gate.direction("x.X.track_gflops", None) == "higher"
    assert gate.direction("x.X.time_step", None) == "lower"
    assert gate.direction("x.X.track_roofline_fraction", None) == "higher"
    assert gate.direction("x.X.track_observed_crossover_batch", None) is None


def test_a_microsecond_track_rising_is_a_regression(tmp_path, capsys):
    before = {**full_values(), OVERHEAD: [2.0], FRACTION: [0.9, 0.8]}
    after = {**full_values(), OVERHEAD: [4.0], FRACTION: [0.45, 0.8]}
    root = results_dir(tmp_path, after, before, suite=WIDER)
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb", "--json"]) == 1
    verdicts = {
        (c["benchmark"], tuple(c["params"].values())): c["verdict"]
        for c in json.loads(capsys.readouterr().out)["changes"]
    }
    assert verdicts[(OVERHEAD, ("numpy",))] == "regression"
    assert verdicts[(FRACTION, (1, 256))] == "regression"  # JSON keys sorted: batch, n


def test_the_machines_figures_are_apart_and_never_fail_the_gate(tmp_path, capsys):
    after = full_values(bw_ceiling=15.0, peak=600.0, crossover=80.0)  # the machine moved, the code did not
    root = results_dir(tmp_path, after)
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb"]) == 0
    out = capsys.readouterr().out
    code, machine = out.split("the machine's figures (")
    assert "ceilings." not in code and "crossover." not in code
    assert all(name in machine for name in ("track_bandwidth_ceiling", "track_gemm_ceiling", "crossover_batch"))
    assert "REGRESSION" not in out and "the machine's figures: 6 moved beyond 10%" in out
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == gate.SCHEMA and data["regressed"] is False
    assert {c["of"] for c in data["machine_figures"]} == {"machine"} and len(data["machine_figures"]) == 6
    assert all(not c["benchmark"].startswith(("ceilings.", "crossover.")) for c in data["changes"])


def test_two_environments_at_one_commit_read_the_one_both_share_and_say_so(tmp_path, capsys):
    root = results_dir(tmp_path, full_values(gflops=(5.0, 50.0)))
    write_run(root, "alpha", B, full_values(), date=2, env="virtualenv-py3.11")  # same commit, asv's virtualenv
    before = snapshot(root)
    args = ["compare", str(root), "--commits", "aaaa", "bbbb"]
    assert main(args) == 1  # existing-py: the only environment at both commits, the slow one
    out = capsys.readouterr().out
    assert (
        "machine alpha: environment existing-py (aaaaaaaa-existing-py.json, bbbbbbbb-existing-py.json): the only "
        "one recorded at both commits; also recorded: virtualenv-py3.11 (--env picks another)"
    ) in out
    assert main([*args, "--env", "existing", "--env", "virtualenv", "--json"]) == 0  # by prefix, per side
    captured = capsys.readouterr()
    (side,) = json.loads(captured.out)["machines"]
    assert (side["before_env"], side["after_env"]) == ("existing-py", "virtualenv-py3.11")
    assert "different environments" in captured.err
    for bad in (["--env", "conda"], ["--env", "a", "--env", "b", "--env", "c"]):
        assert main([*args, *bad]) == 2
        one_line_error(capsys.readouterr().err)
    assert main(["compare", str(root), "--env", "existing-py"]) == 2  # --env belongs to --commits
    one_line_error(capsys.readouterr().err)
    assert snapshot(root) == before


def test_of_environments_both_commits_share_the_one_this_interpreters_runs_use_is_read(tmp_path, capsys):
    from roofline.suite.revisions import env_names

    mine = next(iter(env_names()))  # make bench's: asv's virtualenv for this Python
    root = results_dir(tmp_path, full_values(gflops=(5.0, 50.0)))
    for commit, date, values in ((A, 1, full_values()), (B, 2, full_values())):
        write_run(root, "alpha", commit, values, date=date, env=mine)
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb"]) == 0  # not the slow existing-py
    assert f"machine alpha: environment {mine} " in capsys.readouterr().out
    other = tmp_path / "other"
    for commit, date in ((A, 1), (B, 2)):
        for env in ("conda-py3.11", "existing-py"):
            write_benchmarks(other)
            write_machine(other, "alpha")
            write_run(other, "alpha", commit, full_values(), date=date, env=env)
    assert main(["compare", str(other), "--commits", "aaaa", "bbbb"]) == 2  # two shared, neither this one's
    assert "2 environments (conda-py3.11, existing-py): pick one with --env" in one_line_error(capsys.readouterr().err)


def test_commits_are_git_revisions_resolved_in_the_project(tmp_path, capsys, monkeypatch):
    from .asvtools import git

    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    for i in (1, 2):
        (repo / "f").write_text(str(i))
        git(repo, "add", "f")
        git(repo, "commit", "-q", "-m", str(i))
    git(repo, "tag", "v1", "HEAD~1")
    first, second = git(repo, "rev-parse", "HEAD~1"), git(repo, "rev-parse", "HEAD")
    root = tmp_path / "r"
    write_benchmarks(root)
    write_machine(root, "alpha")
    write_run(root, "alpha", first, full_values(), date=1)
    write_run(root, "alpha", second, full_values(gflops=(5.0, 50.0)), date=2)
    monkeypatch.chdir(repo)
    for before, after in (("HEAD~1", "HEAD"), ("v1", "main"), (first[:7], "HEAD")):
        assert main(["compare", str(root), "--commits", before, after]) == 1, (before, after)
        assert f"commits {first[:8]} → {second[:8]}" in capsys.readouterr().out
    (repo / "f").write_text("3")
    git(repo, "commit", "-q", "-am", "3")  # HEAD now has no results
    assert main(["compare", str(root), "--commits", "HEAD~1", "HEAD"]) == 2
    err = one_line_error(capsys.readouterr().err)
    assert "'HEAD' (" in err and "has no results" in err and "roofline regress" in err
    assert main(["compare", str(root), "--commits", "HEAD~1", "no-such-branch"]) == 2
    assert "nor a revision git knows" in one_line_error(capsys.readouterr().err)


def test_keys_that_changed_between_the_commits_are_the_machines(tmp_path, capsys):
    root = results_dir(
        tmp_path, full_values(), after_kw={"blas": "openblas 0.3.31"}, before_kw={"blas": "openblas 0.3.27"}
    )
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb"]) == 0
    assert "machine alpha: its keys changed between the commits: blas 'openblas 0.3.27' → 'openblas 0.3.31'" in (
        capsys.readouterr().out
    )


# ---- significance: asv's own test on recorded samples -------------------------------------------

QUIET = [1.00, 1.01, 0.99, 1.02, 0.98, 1.00, 1.01, 0.99, 1.00, 1.02]


def samples_of(scale: float, spread: list[float] = QUIET) -> list[list[float]]:
    return [[1e-5 * scale * x for x in spread], [2e-5 * x for x in spread]]  # (n=256, batch=1), (256, 8)


def test_a_slowdown_beyond_noise_is_a_significant_regression(tmp_path, capsys):
    root = results_dir(
        tmp_path,
        full_values(seconds=(2e-5, 2e-5)),
        after_kw={"samples": {TIME: samples_of(2.0)}},
        before_kw={"samples": {TIME: samples_of(1.0)}},
    )
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb", "--json"]) == 1
    change = next(
        c
        for c in json.loads(capsys.readouterr().out)["changes"]
        if c["benchmark"] == TIME and c["params"]["batch"] == 1
    )
    assert change["verdict"] == "regression" and change["test"] == "Mann-Whitney U"
    assert change["significant"] is True and change["p"] < gate.P_THRESHOLD


def test_a_change_within_the_noise_is_not_significant(tmp_path, capsys):
    noisy = [0.5, 1.6, 0.7, 1.4, 0.9, 1.2, 0.6, 1.5, 1.0, 1.3]
    root = results_dir(
        tmp_path,
        full_values(seconds=(1.3e-5, 2e-5)),  # +30 % in the medians, but the samples overlap
        after_kw={"samples": {TIME: samples_of(1.3, noisy)}},
        before_kw={"samples": {TIME: samples_of(1.0, noisy)}},
    )
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if TIME in x and "batch=1" in x)
    assert "not significant" in line and "p=" in line


def test_significance_is_asvs_is_different():
    from asv import _stats

    cases = [
        ([1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16]),
        ([1, 2, 3, 4, 5, 6, 7, 8], [2, 3, 4, 5, 6, 7, 8, 9]),
        ([1, 2, 3], [7, 8, 9]),  # too few samples for p < 0.002: asv falls back to the intervals
    ]
    for a, b in cases:
        sa = {"ci_99_a": min(a), "ci_99_b": max(a)}
        sb = {"ci_99_a": min(b), "ci_99_b": max(b)}
        s = gate.significance(a, b, sa, sb)
        assert s.significant == _stats.is_different(a, b, sa, sb), (a, b, s)
    assert gate.significance([1, 2, 3], [7, 8, 9], None, None).test == "no samples"
    assert gate.significance(None, None, None, None).significant is None


def test_tracks_without_samples_are_judged_by_the_threshold(tmp_path, capsys):
    root = results_dir(tmp_path, full_values(gflops=(5.0, 50.0)))
    assert main(["compare", str(root), "--commits", "aaaa", "bbbb", "--json"]) == 1
    changes = json.loads(capsys.readouterr().out)["changes"]
    gflops = next(c for c in changes if c["benchmark"].endswith("track_gflops") and c["params"]["batch"] == 1)
    assert gflops["test"] == "no samples" and gflops["significant"] is None and gflops["verdict"] == "regression"


def test_results_reader_keeps_each_environment_apart(tmp_path):
    root = results_dir(tmp_path, full_values(), after_kw={"samples": {TIME: samples_of(1.0)}})
    write_run(root, "alpha", B, full_values(gflops=(1.0, 2.0)), date=2, env="virtualenv-py3.11")
    run = read_results(root).machines["alpha"].runs[B]
    assert sorted(run.envs) == ["existing-py", "virtualenv-py3.11"]
    mine = run.envs["existing-py"]
    assert mine.file == "bbbbbbbb-existing-py.json" and mine.params["cpu"] == "Test CPU"
    assert mine.values["decode.DecodeDRAM.track_gflops"][(256, 1)] == 10.0
    assert run.envs["virtualenv-py3.11"].values["decode.DecodeDRAM.track_gflops"][(256, 1)] == 1.0
    assert mine.samples[TIME][(256, 1)] == pytest.approx(samples_of(1.0)[0])
    assert mine.stats[TIME][(256, 1)]["ci_99_b"] == pytest.approx(max(samples_of(1.0)[0]))
    assert TIME not in run.envs["virtualenv-py3.11"].samples


def test_asvs_regression_detection_is_on_exactly_where_lower_is_better():
    """asv reads every value as lower-is-better: asv.conf.json turns its detection off for every other
    benchmark, and for the run's conditions (facts recorded with the results, whatever their unit)."""
    import re
    from pathlib import Path

    from asv.util import load_json

    root = Path(__file__).resolve().parents[1]
    off = list(load_json(root / "asv.conf.json", js_comments=True)["regressions_first_commits"])
    suite = json.loads((root / "tests" / "golden" / "benchmarks.json").read_text())
    for name, b in suite.items():
        if not isinstance(b, dict):
            continue
        lower = gate.direction(name, Benchmark(name=name, type=b["type"], unit=b["unit"])) == "lower"
        lower = lower and not name.startswith("conditions.")
        for entry in (name, f"{name}(256, 1)", f"{name}@main"):
            detected = not any(re.match(regex, entry) for regex in off)
            assert detected == lower, f"{entry}: asv's regression detection {'on' if detected else 'off'}"
