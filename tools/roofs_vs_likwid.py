"""The closing-note figures of the hierarchical roofline, for a quiet machine (run by tools/roofs_vs_likwid.sh).

One run: the working-set sweep with likwid-bench's load kernel run at one working set inside each
level between its rounds; the compute roofs per dtype beside likwid-bench's FMA peaks; then the decode
grid (the suite's sizes, or --small) with those roofs, the report, its JSON and its plot. Prints one
markdown table (each roof beside likwid-bench's figure), the decode points above 110 % of their own
roof, and the paths written. Exit 1 when a point is above 110 % of its own roof, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import fields
from pathlib import Path

from roofline.errors import BackendUnavailable
from roofline.measure import compute, roofs
from roofline.model.hierarchy import Hierarchy
from roofline.report.cpu import Report, build_report, measure_report, render_text
from roofline.report.plot import plot_report
from roofline.suite import params


def _bytes(n: int | None) -> str:
    if n is None:
        return ""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for report.txt, report.json, roofline.png, table.md")
    ap.add_argument("--small", action="store_true", help="tiny sizes: shows the script works, not a figure to keep")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    small = args.small
    sweep_kwargs = {"rounds": 2, "min_sample_s": 0.005} if small else {}
    notes: list[str] = []
    try:
        sweep, agreement = roofs.refereed_sweep(seconds=0.02 if small else 0.25, also=("update",), **sweep_kwargs)
        levels, read_write, caches = sweep.roofs, sweep.plateau_roofs("update"), sweep.capacities
    except BackendUnavailable as exc:
        notes.append(f"no level roofs refereed: {exc}")
        h, more = roofs.measure_hierarchy(sweep=sweep_kwargs, dtypes=())
        levels, read_write, caches, agreement = h.levels, h.read_write, h.caches, ()
        notes += more
    kw = {"n": 256, "runs": 3} if small else {}
    compute_roofs, skipped = compute.compute_roofs(**kw)
    try:
        peaks = roofs.refereed_peaks(compute_roofs)
    except BackendUnavailable as exc:
        notes.append(f"no compute roofs refereed: {exc}")
        peaks = ()
    h = Hierarchy(levels, compute_roofs, caches, read_write, skipped)

    if small:
        os.environ.setdefault("ROOFLINE_GEMM_N", "256")
        grid = {"sizes": [512, 2048], "batches": [1, 8], "cache_sizes": [256], "sweep_batches": (1, 4, 16)}
    else:
        grid = {"sizes": params.sizes(), "batches": params.batches(), "cache_sizes": params.cache_sizes()}
        grid["sweep_n"] = params.sweep_n()
    os.environ.update(ROOFLINE_LEVELS="off", ROOFLINE_REFEREE="off")  # measured and refereed above
    measured = measure_report(**grid)
    base = {f.name: getattr(measured, f.name) for f in fields(Report) if f.name not in ("hierarchy", "warnings")}
    report = build_report(**base, hierarchy=h, warnings=tuple(notes))

    text, plot = args.out / "report.txt", args.out / "roofline.png"
    text.write_text(render_text(report) + "\n", encoding="utf-8")
    data = report.as_dict()
    data["referee"] = [a.as_dict() for a in (*agreement, *peaks)]
    (args.out / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    plot_report([report], plot)

    by_roof = {a.roof: a for a in (*agreement, *peaks)}
    lines = [
        "| roof | suite | unit | likwid-bench | kernel | working set | suite / likwid |",
        "| --- | ---: | --- | ---: | --- | --- | ---: |",
    ]
    for r in h.levels:
        a = by_roof.get(r.level)
        ref = "| | | | |"
        if a:
            ref = f"| {a.referee:.1f} | {a.referee_kernel} | {_bytes(a.referee_bytes)} | {a.ratio:.2f} |"
        lines.append(f"| {r.level} | {r.gbps:.1f} | GB/s {ref}")
    for c in h.compute:
        a = by_roof.get(c.dtype)
        unit = "GOP/s" if c.dtype == "int8" else "GFLOP/s"
        ref = f"| {a.referee:.1f} | {a.referee_kernel} | | {a.ratio:.2f} |" if a else "| | | | |"
        lines.append(f"| {c.dtype} | {c.gflops:.1f} | {unit} {ref}")
    for dtype, why in h.skipped.items():
        lines.append(f"| {dtype} | skipped: {why} | | | | | |")
    rows = [report.row(p) for p in (*report.decode, *report.cache_resident)]
    above = [r for r in rows if r.own and r.own.error]
    lines += [
        "",
        f"memory roofs: {len(h.levels)}; compute roofs: {len(h.compute)} ({', '.join(c.dtype for c in h.compute)})",
        f"decode points: {len(rows)}; above 110 % of their own roof: {len(above)}",
    ]
    lines += [
        f"  n={r.point.n} batch={r.point.batch} ({r.point.regime}): {100 * r.own.fraction:.0f} % of {r.own.level}"
        for r in above
    ]
    lines += [*(f"note: {n}" for n in notes), f"report: {text}", f"json: {args.out / 'report.json'}", f"plot: {plot}"]
    (args.out / "table.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 1 if above else 0


if __name__ == "__main__":
    sys.exit(main())
