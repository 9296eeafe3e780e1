"""Issue 39's check that the live report and asv's results of the same minutes agree: every ceiling and point.

    .venv/bin/python tools/live_vs_asv.py LIVE.json RESULTS.json

LIVE.json: ``roofline report --json`` (measured live); RESULTS.json: ``roofline report --results .asv/results
--json`` of an asv run made just before or after. Each figure's tolerance is the spread the two measured: a
point's interquartile ranges ÷ median added (the live run's samples, asv's time_ twin's), a ceiling's
confidence interval (high ÷ low − 1) as the live run measured it, counted twice (asv's run measured one
like it, which its results do not keep); a GEMM peak, whose interval neither keeps, the suite's ±10 %.
Prints one row per figure; exits 1 if any disagrees beyond it.
"""

from __future__ import annotations

import json
import sys

from roofline.model.guards import TWIN_AGREEMENT


def _rows(live: dict, asv: dict) -> list[tuple[str, float, float, float]]:
    """(figure, live, asv, tolerance) for every figure both reports hold."""
    rows = []
    lc, ac = live["ceilings"], asv["ceilings"]
    spreads = lc.get("bandwidth_spread", {})
    for kind, value in ac["bandwidth_gbps"].items():
        if kind in lc["bandwidth_gbps"]:
            rows.append((f"{kind} GB/s", lc["bandwidth_gbps"][kind], value, 2 * (spreads.get(kind, 1.0) - 1)))
    for dtype, value in ac["peak_gflops"].items():  # no interval kept: the suite's agreement threshold
        if dtype in lc["peak_gflops"]:
            rows.append((f"{dtype} GEMM GFLOP/s", lc["peak_gflops"][dtype], value, TWIN_AGREEMENT))
    live_peaks = {r["dtype"]: r for r in live["compute_roofs"]}
    for r in asv["compute_roofs"]:
        mine = live_peaks.get(r["dtype"])
        if mine and mine.get("low_gflops") and mine.get("high_gflops"):
            rows.append(
                (
                    f"{r['dtype']} GFLOP/s",
                    mine["gflops"],
                    r["gflops"],
                    2 * (mine["high_gflops"] / mine["low_gflops"] - 1),
                )
            )
    live_levels = {r["level"]: r for r in live["roofs"]}
    for r in asv["roofs"]:
        mine = live_levels.get(r["level"])
        if mine and mine.get("low_gbps") and mine.get("high_gbps") and r["level"] != "DRAM":
            rows.append((f"{r['level']} GB/s", mine["gbps"], r["gbps"], 2 * (mine["high_gbps"] / mine["low_gbps"] - 1)))
    for regime in ("decode", "cache_resident"):
        mine = {(p["n"], p["batch"]): p for p in live[regime]}
        for p in asv[regime]:
            m = mine.get((p["n"], p["batch"]))
            if m and m["gflops"] and p["gflops"]:
                tol = (m.get("spread") or 0.0) + (p.get("twin_spread") or 0.0)
                rows.append((f"{regime} n={p['n']} batch={p['batch']} GFLOP/s", m["gflops"], p["gflops"], tol))
    return rows


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    live, asv = (json.loads(open(path, encoding="utf-8").read()) for path in argv)
    apart = 0
    print("| figure | live | asv | live ÷ asv | spread | agree |\n|---|---|---|---|---|---|")
    for name, a, b, tol in _rows(live, asv):
        ratio = a / b
        ok = abs(ratio - 1) <= tol
        apart += not ok
        print(f"| {name} | {a:.4g} | {b:.4g} | {ratio:.3f} | ±{tol:.0%} | {'yes' if ok else 'NO'} |")
    return 1 if apart else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
