"""The roofline report: the lab's H100 arithmetic, then this machine measured.

:func:`build_report` turns measurements into one JSON-ready dict (keys documented in the
README and stable across versions with the same ``schema``); :func:`render_text` prints it;
:func:`measure_report` measures this machine live and builds it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence

from . import guards
from .arithmetic import arithmetic_intensity, crossover_batch, gemm_intensity, ridge_point
from .ceilings import CEILING_KERNEL, PEAK_NAMES, Ceilings
from .crossover import SWEEP_BATCHES, SWEEP_N, fit_knee
from .hardware import H100, Hardware
from .measure import DecodeMeasurement
from .regimes import overhead_bound_n

SCHEMA = "roofline.report/1"
LAB_BATCHES = (1, 8, 64, 512)


def lab_section(hw: Hardware = H100, dtype: str = "bf16", bytes_per_param: float = 2) -> dict[str, object]:
    """The lab's printout as data: ridge, crossover, intensity and bound per batch."""
    ridge = ridge_point(hw, dtype)
    return {
        "hardware": hw.name,
        "dtype": dtype,
        "peak_flops": hw.peak(dtype),
        "bandwidth": hw.bandwidth,
        "source": hw.source,
        "ridge_flop_per_byte": ridge,
        "crossover_batch": crossover_batch(hw, bytes_per_param, dtype),
        "batches": [
            {
                "batch": b,
                "intensity": arithmetic_intensity(b, bytes_per_param),
                "bound": "bandwidth" if arithmetic_intensity(b, bytes_per_param) < ridge else "compute",
            }
            for b in LAB_BATCHES
        ],
    }


def decode_row(point: Mapping[str, object], hw: Hardware | None, peak_name: str) -> dict[str, object]:
    """One measured (n, batch) with its exact intensity, the attainable roof and the fraction reached."""
    n, b = int(point["n"]), int(point["batch"])
    itemsize = 8 if point.get("dtype") == "float64" else 4
    row = {k: point.get(k) for k in ("n", "batch", "dtype", "regime", "seconds", "gflops", "gbps", "spread")}
    row["intensity"] = gemm_intensity(n, b, itemsize)
    row["single_call_seconds"] = point.get("single_call_seconds")
    if hw is not None and peak_name in hw.peak_flops and point.get("gflops"):
        attainable = min(hw.peak(peak_name), row["intensity"] * hw.bandwidth)
        row["attainable_gflops"] = attainable / 1e9
        row["roofline_fraction"] = float(point["gflops"]) * 1e9 / attainable
        row["bound"] = "bandwidth" if row["intensity"] < ridge_point(hw, peak_name) else "compute"
    else:
        row["attainable_gflops"] = row["roofline_fraction"] = row["bound"] = None
    return row


def build_report(
    facts: Mapping[str, object],
    ceilings: Mapping[str, object] | None,
    decode: Iterable[Mapping[str, object]],
    cache_resident: Iterable[Mapping[str, object]] = (),
    sweep: Mapping[str, object] | None = None,
    source: str = "measured live",
    datasheet: Hardware | None = None,
    dtype: str = "float32",
    overhead: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """Assemble the report dict from plain data (live measurements or asv results alike).

    ``ceilings``: {"bandwidth": {kind: {"best": B/s, ...}}, "peaks": {dtype: {"best": FLOP/s}}}.
    ``decode``/``cache_resident``: DecodeMeasurement dicts. ``sweep``: {"n", "points": [...]}.
    ``overhead``: {"single_call_seconds", "amortized_seconds"} of a tiny step (the third roof).
    """
    peak_name = PEAK_NAMES[dtype]
    itemsize = 8 if dtype == "float64" else 4
    warnings: list[str] = []
    hw = None
    ceil_out: dict[str, object] | None = None
    if ceilings:
        bw = {k: v["best"] for k, v in ceilings.get("bandwidth", {}).items() if v and v.get("best")}
        peaks = {d: v["best"] for d, v in ceilings.get("peaks", {}).items() if v and v.get("best")}
        roof = bw.get(CEILING_KERNEL)
        if roof and peaks:
            hw = Hardware(
                name=str(facts.get("host") or "this machine"),
                peak_flops={PEAK_NAMES[d]: p for d, p in peaks.items()},
                bandwidth=roof,
                source="measured",
            )
        ceil_out = {
            "bandwidth_gbps": {k: v / 1e9 for k, v in bw.items()},
            "bandwidth_kernel": CEILING_KERNEL,
            "bandwidth_roof_gbps": roof / 1e9 if roof else None,
            "peak_gflops": {d: p / 1e9 for d, p in peaks.items()},
            "ridge_flop_per_byte": {d: p / roof for d, p in peaks.items()} if roof else {},
        }
        for kind, v in ceilings.get("bandwidth", {}).items():
            if v and v.get("spread"):
                warnings += guards.noisy(v["spread"], f"{kind} bandwidth")
    decode_rows = [decode_row(p, hw, peak_name) for p in decode]
    cache_rows = [decode_row(p, hw, peak_name) for p in cache_resident]
    llc = facts.get("llc_bytes")
    for row, p in zip(decode_rows, decode, strict=False):
        label = f"n={row['n']} batch={row['batch']}"
        if row.get("spread"):
            warnings += guards.noisy(float(row["spread"]), label)
        if llc and p.get("pool_bytes"):
            warnings += guards.working_set_fits_llc(float(p["pool_bytes"]), float(llc), label)
        if hw is not None and row.get("gbps"):
            warnings += guards.above_ceiling(float(row["gbps"]), hw.bandwidth / 1e9, f"{label} bandwidth", "GB/s")
        if hw is not None and row.get("gflops") and peak_name in hw.peak_flops:
            warnings += guards.above_ceiling(
                float(row["gflops"]), hw.peak(peak_name) / 1e9, f"{label} FLOP rate", "GFLOP/s"
            )
    if llc:
        warnings += guards.llc_overridden(float(llc), facts.get("llc_source"))
    cores = facts.get("num_cpu")
    if isinstance(cores, int):
        warnings += guards.blas_threads_below_cores(facts.get("blas_threads"), cores)

    cross: dict[str, object] = {"dtype": dtype, "bytes_per_param": itemsize, "predicted_batch": None}
    if hw is not None and peak_name in hw.peak_flops:
        cross["predicted_batch"] = crossover_batch(hw, itemsize, peak_name)
    if sweep and sweep.get("points"):
        pts = [p for p in sweep["points"] if p.get("seconds")]
        cross["sweep_n"] = sweep.get("n")
        cross["sweep"] = [{k: p.get(k) for k in ("batch", "seconds", "gflops", "gbps", "spread")} for p in pts]
        if len(pts) >= 2:
            knee = fit_knee([p["batch"] for p in pts], [p["seconds"] for p in pts])
            cross["observed_batch"] = knee.batch
            cross["observed_within_sweep"] = knee.within_sweep
            cross["fit_rms_log_error"] = knee.rms_log_error
    elif sweep and sweep.get("observed_batch"):
        cross["observed_batch"] = sweep["observed_batch"]
    if datasheet is not None and peak_name in datasheet.peak_flops:
        cross["datasheet"] = {
            "hardware": datasheet.name,
            "predicted_batch": crossover_batch(datasheet, itemsize, peak_name),
        }
    over_out = None
    if overhead and overhead.get("amortized_seconds"):
        over_out = {
            "single_call_seconds": overhead.get("single_call_seconds"),
            "amortized_seconds": overhead["amortized_seconds"],
            "overhead_bound_n": overhead_bound_n(overhead["amortized_seconds"], hw.bandwidth, itemsize)
            if hw is not None
            else None,
        }
    return {
        "schema": SCHEMA,
        "source": source,
        "lab": lab_section(),
        "machine": dict(facts),
        "ceilings": ceil_out,
        "crossover": cross,
        "decode": decode_rows,
        "cache_resident": cache_rows,
        "overhead": over_out,
        "warnings": warnings,
    }


def _fmt(value: object, spec: str, na: str = "n/a") -> str:
    return na if value is None else format(value, spec)


def render_text(report: Mapping[str, object]) -> str:
    """The report as the lab would print it, then this machine's figures."""
    lab = report["lab"]
    out = [
        f"{lab['hardware']}: {lab['ridge_flop_per_byte']:.0f} FLOPs per byte at the ridge; decode becomes "
        f"compute-bound above batch ~{lab['crossover_batch']:.0f}"
    ]
    for row in lab["batches"]:
        out.append(f"  batch {row['batch']:3d}: intensity {row['intensity']:5.0f} FLOP/byte -> {row['bound']}-bound")
    m = report["machine"]
    out += ["", f"This machine ({report['source']}): {m.get('cpu', '?')}, {m.get('num_cpu', '?')} cores"]
    out.append(f"  BLAS: {m.get('blas', '?')}")
    if m.get("llc_bytes"):
        out.append(f"  last-level cache: {m['llc_bytes'] / 2**20:.0f} MiB ({m.get('llc_source', '?')})")
    c = report.get("ceilings")
    if c:
        bws = ", ".join(f"{k} {v:.1f}" for k, v in c["bandwidth_gbps"].items())
        out.append(f"  bandwidth (GB/s, best): {bws}; the roof is {c['bandwidth_kernel']}")
        peaks = ", ".join(f"{d} {v:.1f}" for d, v in c["peak_gflops"].items())
        out.append(f"  square-GEMM peak (GFLOP/s): {peaks}")
        ridges = ", ".join(f"{d} {v:.1f}" for d, v in c["ridge_flop_per_byte"].items())
        out.append(f"  ridge point (FLOP/byte): {ridges}")
    o = report.get("overhead")
    if o:
        line = f"  overhead roof: a tiny step costs {1e6 * o['amortized_seconds']:.1f} µs back to back"
        if o.get("single_call_seconds"):
            line += f", {1e6 * o['single_call_seconds']:.1f} µs timed alone"
        if o.get("overhead_bound_n"):
            line += f"; below n ≈ {o['overhead_bound_n']:.0f} a step costs more to issue than to read its weights"
        out.append(line)
    x = report["crossover"]
    line = f"  crossover batch ({x['dtype']} weights, {x['bytes_per_param']} bytes/param): predicted from "
    line += f"measured ceilings {_fmt(x.get('predicted_batch'), '.0f')}, observed "
    line += _fmt(x.get("observed_batch"), ".0f")
    if x.get("sweep_n"):
        line += f" (knee of a batch sweep at n={x['sweep_n']}"
        line += ")" if x.get("observed_within_sweep", True) else ", outside the sweep: extrapolated)"
    out.append(line)
    if x.get("datasheet"):
        out.append(f"  datasheet ({x['datasheet']['hardware']}): {x['datasheet']['predicted_batch']:.0f}")
    for title, rows in (("decode, weights from DRAM", report["decode"]), ("cache-resident", report["cache_resident"])):
        if not rows:
            continue
        header = f"  {'n':>6} {'batch':>5} {'GFLOP/s':>9} {'GB/s':>7} {'FLOP/B':>7} {'roof%':>6}  bound"
        out += ["", f"{title}:", header]
        for r in rows:
            frac = r.get("roofline_fraction")
            out.append(
                f"  {r['n']:>6} {r['batch']:>5} {_fmt(r.get('gflops'), '9.1f'):>9} {_fmt(r.get('gbps'), '7.1f'):>7} "
                f"{r['intensity']:7.1f} {_fmt(None if frac is None else 100 * frac, '6.0f'):>6}  {r.get('bound') or ''}"
            )
    by_n: dict[int, dict[int, float]] = {}
    for r in report["decode"]:
        if r.get("gflops"):
            by_n.setdefault(int(r["n"]), {})[int(r["batch"])] = float(r["gflops"])
    for n, row in sorted(by_n.items()):
        if 1 in row and 64 in row:
            out.append(f"  n={n}: batch 64 delivers {row[64] / row[1]:.1f}× the GFLOP/s of batch 1 on the same weights")
    if report["warnings"]:
        out += ["", "warnings:"] + [f"  - {w}" for w in report["warnings"]]
    return "\n".join(out)


def measure_report(
    sizes: Sequence[int],
    batches: Sequence[int],
    cache_sizes: Sequence[int] = (),
    sweep_n: int = SWEEP_N,
    sweep_batches: Sequence[int] = SWEEP_BATCHES,
    ceilings_total_bytes: int | None = None,
    gemm_n: int | None = None,
    progress: bool = True,
) -> dict[str, object]:
    """Measure this machine (ceilings, decode grid, cache-resident grid, sweep) and build the report."""
    from .ceilings import measure_ceilings
    from .kernels import decode_step
    from .measure import measure_step
    from .system import host_facts

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        tqdm = None
    steps = (
        [("ceilings", None, None), ("overhead", None, None)]
        + [("dram", n, b) for n in sizes for b in batches]
        + [("cache", n, b) for n in cache_sizes for b in batches]
        + [("sweep", sweep_n, b) for b in sweep_batches]
    )
    bar = tqdm(total=len(steps), desc="measuring", unit="step", file=sys.stderr, disable=not progress) if tqdm else None
    decode: list[DecodeMeasurement] = []
    cache: list[DecodeMeasurement] = []
    sweep_points: list[DecodeMeasurement] = []
    ceilings: Ceilings | None = None
    overhead = None
    from .errors import BackendUnavailable

    for kind, n, b in steps:
        if bar:
            bar.set_postfix_str(kind if n is None else f"{kind} n={n} b={b}")
        if kind == "ceilings":
            ceilings = measure_ceilings(total_bytes=ceilings_total_bytes, gemm_n=gemm_n)
        elif kind == "overhead":
            from .regimes import measure_overhead

            overhead = measure_overhead("numpy", "fp32").as_dict()
        else:
            try:
                m = measure_step(decode_step(n, b, regime="cache" if kind == "cache" else "dram"))
            except BackendUnavailable:  # not cache-resident on this machine: nothing to report
                m = None
            if m is not None:
                {"dram": decode, "cache": cache, "sweep": sweep_points}[kind].append(m)
        if bar:
            bar.update()
    if bar:
        bar.close()
    sweep_obj = {"n": sweep_n, "points": [p.as_dict() for p in sweep_points]}
    return build_report(
        facts=host_facts(),
        ceilings=ceilings.as_dict() if ceilings else None,
        decode=[p.as_dict() for p in decode],
        cache_resident=[p.as_dict() for p in cache],
        sweep=sweep_obj,
        overhead=overhead,
    )
