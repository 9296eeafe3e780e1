"""`roofline report` and `roofline compare` read the same results: every figure both show must agree.

Real asv results get the same check in test_multimachine (`test_report_and_compare_agree_on_real_results`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from roofline.cli import main

from .asv_fixtures import SUITE, full_values, two_machines, write_benchmarks, write_machine, write_run

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "results"
#: compare's regime names → the report's JSON lists.
REGIMES = {"DRAM": "decode", "cache-resident": "cache_resident"}


def as_json(capsys, *argv: str) -> dict:
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


#: asv records each track to 4 significant digits (roofline.suite.harness.tracked): a product of two
#: recorded figures is that close to a third; figures read from one record agree exactly.
RECORDED = 1e-3


def close(a: float | None, b: float | None, rel: float = 1e-9) -> bool:
    return a is not None and b is not None and math.isclose(a, b, rel_tol=rel)


def assert_agree(machine: dict, report: dict, one_timing: bool = False) -> int:
    """Every figure of one ``compare --json`` machine against ``report --json``; returns how many were checked.

    ``one_timing``: the results come from this suite's one measurement per point, so each point's GB/s
    at its exact intensity must be its GFLOP/s too (the examples and the synthetic results predate it).
    """
    ceilings = report.get("ceilings") or {}  # none where the run's ceilings mean something else now

    def giga(value: float | None) -> float | None:
        return None if value is None else value / 1e9

    pairs = [
        (
            "bandwidth GB/s",
            giga(machine["bandwidth"]),
            ceilings.get("bandwidth_gbps", {}).get(ceilings.get("bandwidth_kernel")),
        ),
        ("fp32 peak GFLOP/s", giga(machine["peak_fp32"]), ceilings.get("peak_gflops", {}).get("float32")),
        ("ridge FLOP/byte", machine["ridge_flop_per_byte"], ceilings.get("ridge_flop_per_byte", {}).get("float32")),
        ("predicted crossover", machine["predicted_crossover_batch"], report["crossover"]["predicted_batch"]),
    ]
    observed = [o["value"] for o in machine["observed_crossover_batch"]]
    one = observed[0] if len(observed) == 1 else None
    pairs.append(("observed crossover", one, report["crossover"]["observed_batch"]))
    for regime, points in machine["decode_gflops"].items():
        reported = {(p["n"], p["batch"]): p for p in report[REGIMES[regime]]}
        assert {(p["n"], p["batch"]) for p in points} == set(reported), regime
        for p in points:
            row = reported[(p["n"], p["batch"])]
            point = f"{regime} n={p['n']} batch={p['batch']}"
            pairs.append((f"{point} GFLOP/s", p["gflops"], row["gflops"]))
            if one_timing:
                pairs.append((f"{point} GB/s x intensity", row["gbps"] * row["intensity"], row["gflops"], RECORDED))
    shown = [(what, a, b, *rel) for what, a, b, *rel in pairs if a is not None or b is not None]
    wrong = [f"{what}: {a!r} against the report's {b!r}" for what, a, b, *rel in shown if not close(a, b, *rel)]
    assert not wrong, "\n".join(wrong)
    return len(shown)  # neither shows a figure recorded under another meaning (compare ≠, report n/a)


def test_report_and_compare_agree_on_the_examples(capsys):
    compared = as_json(capsys, "compare", str(EXAMPLES), "--json")["machines"]
    assert compared
    for machine in compared:  # every machine of the gallery
        report = as_json(capsys, "report", "--results", str(EXAMPLES), "--machine", machine["machine"], "--json")
        assert assert_agree(machine, report) >= 16


@pytest.mark.parametrize("machine", ["alpha", "beta"])
def test_report_and_compare_agree_machine_by_machine(capsys, tmp_path, machine):
    root = two_machines(tmp_path / "results")
    compared = as_json(capsys, "compare", str(root), "--machine", machine, "--json")["machines"]
    report = as_json(capsys, "report", "--results", str(root), "--machine", machine, "--json")
    assert compared[0]["commit"] == "b" * 40  # both read the newest commit
    assert assert_agree(compared[0], report) == 7  # 5 machine figures, 2 decode points


def test_a_run_that_recorded_read_is_held_to_read_by_report_and_compare(capsys, tmp_path):
    """read (s = b·c) is the roof where a run measured it; add stays the roof of runs from before it."""
    name = "ceilings.MemoryBandwidth.track_bandwidth_ceiling"
    suite = {**SUITE, name: (*SUITE[name][:3], [["'copy'", "'add'", "'triad'", "'read'"]], SUITE[name][4])}
    root = tmp_path / "results"
    write_benchmarks(root, suite)
    write_machine(root, "alpha")
    values = {**full_values(), name: [27.0, 30.0, 28.5, 36.0]}
    write_run(root, "alpha", "b" * 40, values, suite=suite)
    compared = as_json(capsys, "compare", str(root), "--json")["machines"][0]
    report = as_json(capsys, "report", "--results", str(root), "--json")
    assert report["ceilings"]["bandwidth_kernel"] == "read" and compared["bandwidth"] == 36e9
    assert report["ceilings"]["bandwidth_roof_gbps"] == 36.0
    assert assert_agree(compared, report) == 7


def test_a_disagreement_is_caught():
    """The check itself can fail: one figure off by 1 % is named."""
    machine = {
        "bandwidth": 30e9,
        "peak_fp32": 300e9,
        "ridge_flop_per_byte": 10.0,
        "predicted_crossover_batch": 20.0,
        "observed_crossover_batch": [{"params": {}, "value": 18.0}],
        "decode_gflops": {"DRAM": [{"n": 256, "batch": 1, "gflops": 15.0}]},
    }
    report = {
        "ceilings": {
            "bandwidth_kernel": "add",
            "bandwidth_gbps": {"add": 30.0},
            "peak_gflops": {"float32": 300.0},
            "ridge_flop_per_byte": {"float32": 10.0},
        },
        "crossover": {"predicted_batch": 20.0, "observed_batch": 18.0},
        "decode": [{"n": 256, "batch": 1, "gflops": 15.15, "gbps": 30.3, "intensity": 0.5}],
    }
    with pytest.raises(AssertionError, match="DRAM n=256 batch=1 GFLOP/s: 15.0 against the report's 15.15"):
        assert_agree(machine, report)
    report["decode"][0]["gflops"] = 15.0
    assert assert_agree(machine, report) == 6
    with pytest.raises(AssertionError, match="GB/s x intensity: 15.15 against the report's 15.0"):
        assert_agree(machine, report, one_timing=True)
    report["decode"][0]["gbps"] = 30.01  # within what 4 recorded digits allow
    assert assert_agree(machine, report, one_timing=True) == 7
