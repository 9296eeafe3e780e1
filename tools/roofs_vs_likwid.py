"""The closing-note figures of the hierarchical roofline, for a quiet machine (run by tools/roofs_vs_likwid.sh).

One run of this machine's roofs, the one way they are measured (:func:`roofline.suite.run.measure_roofs`):
the ceilings, the compute roofs per dtype and the working-set sweep of the memory levels, in the run's
passes, with likwid-bench's load kernel at one working set inside each level and its FMA peaks timed
beside them as their referee; then the decode grid (the suite's sizes, or --small) with those roofs, the
report, its JSON and its plot. Prints one
markdown table (each roof beside likwid-bench's figure), the decode points above 110 % of their own
roof, and the paths written. Exit 1 when a point is above 110 % of its own roof, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from roofline import units
from roofline.host import cache_topology
from roofline.measure import levels as levels_
from roofline.measure import likwid
from roofline.measure.compute import TORCH_DTYPES
from roofline.model.dtypes import by_numpy
from roofline.model.hierarchy import ComputeRoof, Hierarchy
from roofline.report.cpu import Report, build_report
from roofline.report.from_run import report_from_run
from roofline.report.plot import plot_report
from roofline.report.text import render_text
from roofline.suite import params
from roofline.suite.live import measure_live
from roofline.suite.run import MachineRoofs, RoofAsk, measure_roofs


@dataclass(frozen=True)
class Agreement:
    """One roof beside its referee's figure, timed beside it in the same rounds."""

    roof: str
    suite: float
    referee: float
    unit: str
    referee_kernel: str
    referee_bytes: int | None = None

    @property
    def ratio(self) -> float:
        """The suite's figure over the referee's."""
        return self.suite / self.referee

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "ratio": self.ratio}


def hierarchy_of(m: MachineRoofs) -> Hierarchy:
    """The roofs per memory level and per dtype of one :func:`measure_roofs`; a part that did not run is left out
    (its reason in :func:`notes_of`)."""
    caches = tuple(levels_.capacities(cache_topology()))
    level_roofs = tuple(m.levels.value.values()) if m.levels.ok else ()
    computed = [ComputeRoof(by_numpy(d).name, g, m.ceilings.value.peak_kernels.get(d, "numpy BLAS GEMM"))
                for d, g in m.ceilings.value.peak_gflops.items()] if m.ceilings.ok else []  # fmt: skip
    skipped: dict[str, str] = {}
    for dtype, o in m.compute.value.items() if m.compute.ok else ():
        if o.ok:
            computed.append(o.value)
        else:
            skipped[dtype] = o.reason
    return Hierarchy(level_roofs, tuple(computed), caches, (), skipped)


def agreements(m: MachineRoofs, h: Hierarchy) -> tuple[Agreement, ...]:
    """Each level's and each FMA peak's roof beside likwid-bench's figure of the same rounds."""
    if not m.referees.ok:
        return ()
    ref, sizes = m.referees.value, likwid.referee_sizes(h.caches)
    out = [Agreement(r.level, r.gbps, ref[r.level], "GB/s", likwid.kernel_for("load"), sizes.get(r.level))
           for r in h.levels if r.level in ref]  # fmt: skip
    out += [Agreement(c.dtype, c.gflops, ref[c.dtype], "GFLOP/s", likwid.kernel_for(c.dtype))
            for c in h.compute if c.dtype in ref]  # fmt: skip
    return tuple(out)


def notes_of(m: MachineRoofs) -> list[str]:
    """Why a part of the roofs did not run (no numba, no likwid-bench), and their warnings."""
    out = [f"no level roofs: {m.levels.reason}"] if not m.levels.ok else []
    out += [f"no roofs refereed: {m.referees.reason}"] if not m.referees.ok else []
    return out + list(m.warnings)


def table(h: Hierarchy, agreement: tuple[Agreement, ...]) -> list[str]:
    """The markdown table: each roof beside likwid-bench's figure, and the dtypes skipped with why."""
    by_roof = {a.roof: a for a in agreement}
    lines = [
        "| roof | suite | unit | likwid-bench | kernel | working set | suite / likwid |",
        "| --- | ---: | --- | ---: | --- | --- | ---: |",
    ]
    for r in h.levels:
        a = by_roof.get(r.level)
        ref = "| | | | |"
        if a:
            ref = f"| {a.referee:.1f} | {a.referee_kernel} | {units.size(a.referee_bytes, '')} | {a.ratio:.2f} |"
        lines.append(f"| {r.level} | {r.gbps:.1f} | GB/s {ref}")
    for c in h.compute:
        a = by_roof.get(c.dtype)
        unit = "GOP/s" if c.dtype == "int8" else "GFLOP/s"
        ref = f"| {a.referee:.1f} | {a.referee_kernel} | | {a.ratio:.2f} |" if a else "| | | | |"
        lines.append(f"| {c.dtype} | {c.gflops:.1f} | {unit} {ref}")
    return lines + [f"| {dtype} | skipped: {why} | | | | | |" for dtype, why in h.skipped.items()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path, help="folder for report.txt, report.json, roofline.png, table.md")
    ap.add_argument("--small", action="store_true", help="tiny sizes: shows the script works, not a figure to keep")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    small = args.small
    machine = measure_roofs(RoofAsk(gemm_n=256 if small else params.gemm_n(), compute=TORCH_DTYPES, levels=True,
                                    referee=True))  # fmt: skip
    h = hierarchy_of(machine)
    agreement = agreements(machine, h)
    notes = notes_of(machine)

    if small:
        os.environ.setdefault("ROOFLINE_GEMM_N", "256")
        grid = {"sizes": [512, 2048], "batches": [1, 8], "cache_sizes": [256], "sweep_batches": (1, 4, 16)}
    else:
        grid = {"sizes": params.sizes(), "batches": params.batches(), "cache_sizes": params.cache_sizes()}
        grid["sweep_n"] = params.sweep_n()
    os.environ.update(ROOFLINE_LEVELS="off", ROOFLINE_REFEREE="off")  # measured and refereed above
    live = measure_live(**grid)
    measured = report_from_run(live.state, live.facts, live.overhead)
    base = {f.name: getattr(measured, f.name) for f in fields(Report) if f.name not in ("hierarchy", "warnings")}
    report = build_report(**base, hierarchy=h, warnings=tuple(notes))

    text, plot = args.out / "report.txt", args.out / "roofline.png"
    text.write_text(render_text(report) + "\n", encoding="utf-8")
    data = report.as_dict()
    data["referee"] = [a.as_dict() for a in agreement]
    (args.out / "report.json").write_text(json.dumps(data, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    plot_report([report], plot)

    lines = table(h, agreement)
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
