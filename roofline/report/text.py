"""The report as text: the lab's H100 printout, then this machine's roofs, crossover and decode tables
(:func:`render_text`), each section a function of the :class:`~roofline.report.cpu.Report` it prints."""

from __future__ import annotations

from collections.abc import Sequence

from .. import units
from ..model import guards
from ..model.hierarchy import (
    CEILING_KERNEL,
    DRAM,
    LIKELY_TOO_LOW,
    MEASUREMENT_ERROR,
    POOL_LLC_MULTIPLE,
    Hierarchy,
    Refereed,
)
from ..model.llm_estimate import size_text
from ..model.microarch import TSC
from .cpu import EnginePoint, ModelPoint, Point, Report, lab_section


def decode_fractions(report: Report) -> list[tuple[str, float]]:
    """Each real model's and engine's decode with its fraction of the roofline bound (label, fraction)."""
    out = []
    for m in report.model_decode:
        for path, tokens in (("transformers", m.tokens_per_s), ("lean torch", m.lean_tokens_per_s)):
            if (f := m.fraction(tokens)) is not None:
                out.append((f"models.ModelDecode {path} batch {m.batch}", f))
    out += [
        (f"{e.engine} {e.format} batch {e.batch}", e.fraction) for e in report.engine_decode if e.fraction is not None
    ]
    return out


def _fmt(value: object, spec: str, na: str = "n/a") -> str:
    return na if value is None else format(value, spec)


def render_roofs(h: Hierarchy) -> list[str]:
    """The memory roofs with their plateaus, and the compute roofs with their libraries (or why skipped)."""
    out = []
    if h.levels:
        out.append("  memory roofs (GB/s, 1 GB = 10⁹ B; sizes in KiB/MiB/GiB, binary, as the OS gives them; median")
        out.append(
            "  of the level's plateau in a working-set sweep, or of the STREAM kernel named in its fastest round;"
        )
        out.append(
            "  roof% divides by the roof of the level a point's working set fits in, and its dtype's compute roof):"
        )
        rw = {r.level: r.gbps for r in h.read_write}
        for r in h.levels:
            line = f"    {r.level:<5} {r.gbps:8.1f}  {r.kernel}"
            if (p := r.plateau) is not None:
                line += f"; plateau {units.size(p.first_bytes)}–{units.size(p.last_bytes)} ({p.points} sizes)"
                line += f", ends at {units.size(p.ends_bytes)}" if p.ends_bytes else ""
                line += f"; the OS says {units.size(p.capacity_bytes)}" if p.capacity_bytes else ""
            if r.level in rw:
                line += f"; read-write {rw[r.level]:.1f}"
            out.append(line)
    if h.compute or h.skipped:
        out.append(
            "  compute roofs (GFLOP/s, GOP/s for int8; median GEMMs, numpy's the fastest of square and the "
            "points' shapes):"
        )
        for c in h.compute:
            out.append(f"    {c.dtype:<5} {c.gflops:8.1f}  {c.library}")
        for dtype, why in h.skipped.items():
            out.append(f"    {dtype:<5}  skipped: {why}")
    return out


def render_referees(refereed: Sequence[Refereed]) -> list[str]:
    """Each roof's own figure ÷ its referee's (likwid-bench in the run's rounds, its fastest run alone on the
    cores), and a line for each below :data:`~roofline.model.hierarchy.LIKELY_TOO_LOW`."""
    if not refereed:
        return []
    out = ["  referees (likwid-bench in the run's rounds; each roof is the faster of its own kernel and its referee):"]
    for r in refereed:
        unit = "GB/s" if r.roof.startswith("L") or r.roof == DRAM else "GFLOP/s"
        out.append(f"    {r.roof:<5} own {r.own:8.1f}  referee {r.referee:8.1f} {unit:<7}  own ÷ referee {r.ratio:.2f}")
    for r in refereed:
        if r.too_low:
            out.append(
                f"  the {r.roof} roof's own kernel ({r.own_kernel}) read {r.ratio:.2f}× its referee, below "
                f"{LIKELY_TOO_LOW}: likely too low; the roof is the referee's {r.referee:.1f}"
            )
    return out


def render_limits(report: Report) -> list[str]:
    """Each roof ÷ the most its cores can do at the machine's clock (:mod:`roofline.model.microarch`); nothing where
    the core or the clock is not known."""
    if (d := report.limits_dict()) is None:
        return []
    clock = "the TSC's" if d["clock_source"] == TSC else "the nominal clock of the model name"
    out = [
        f"  physical limits ({d['cores']} {d['core']} cores at {d['clock_ghz']:.2f} GHz, {clock}; above 1: the cores "
        "ran faster than that clock):"
    ]
    for r in d["roofs"]:  # type: ignore[union-attr]
        unit = "GB/s" if r["roof"].startswith("L") or r["roof"] == DRAM else "GFLOP/s"
        out.append(
            f"    {r['roof']:<5} roof {r['figure']:8.1f}  limit {r['limit']:8.1f} {unit:<7}  roof ÷ limit "
            f"{r['roof_over_limit']:.2f}"
        )
    out.append(f"    (limits: {d['source']})")
    return out


def render_lab() -> list[str]:
    """The lab's H100 printout: its ridge and crossover, and the bound at each of :data:`LAB_BATCHES`."""
    lab = lab_section()
    out = [
        f"{lab['hardware']}: {lab['ridge_flop_per_byte']:.0f} FLOPs per byte at the ridge; decode becomes "
        f"compute-bound above batch ~{lab['crossover_batch']:.0f}"
    ]
    for row in lab["batches"]:
        out.append(f"  batch {row['batch']:3d}: intensity {row['intensity']:5.0f} FLOP/byte -> {row['bound']}-bound")
    return out


def render_machine(report: Report) -> list[str]:
    """This machine's facts, then its ceilings with their referees and ridge points."""
    m = report.facts
    out = ["", f"This machine ({report.source}): {m.get('cpu', '?')}, {m.get('num_cpu', '?')} cores"]
    out.append(f"  BLAS: {m.get('blas', '?')}")
    if m.get("llc_bytes"):
        out.append(f"  last-level cache: {m['llc_bytes'] / 2**20:.0f} MiB ({m.get('llc_source', '?')})")
    if report.roofs is not None:
        c = report.roofs.as_dict()
        bws = ", ".join(f"{k} {v:.1f}" for k, v in c["bandwidth_gbps"].items())
        kernel = c["bandwidth_kernel"]
        when = "" if kernel == CEILING_KERNEL else " without a sweep"  # add: a sweep's read-only plateau first
        out.append(f"  STREAM bandwidth (GB/s): {bws}; the DRAM roof{when} is {kernel}")
        peaks = ", ".join(f"{d} {v:.1f}" for d, v in c["peak_gflops"].items())
        out.append(f"  GEMM peak (GFLOP/s; square, or a decode point's shape where faster): {peaks}")
        out += render_referees(report.refereed)
        ridges = ", ".join(f"{d} {v:.1f}" for d, v in c["ridge_flop_per_byte"].items())
        out.append(f"  ridge point (FLOP/byte): {ridges}")
    return out


def render_overhead_and_crossover(report: Report) -> list[str]:
    """The overhead roof with the n below which it binds, then the crossover: predicted, observed, datasheet."""
    out = []
    if o := report.overhead():
        line = f"  overhead roof: a tiny step costs {1e6 * o['amortized_seconds']:.1f} µs back to back"
        if o.get("single_call_seconds"):
            line += f", {1e6 * o['single_call_seconds']:.1f} µs timed alone"
        if o.get("overhead_bound_n"):
            line += f"; below n ≈ {o['overhead_bound_n']:.0f} a step costs more to issue than to read its weights"
        out.append(line)
    x = report.crossover()
    line = f"  crossover batch ({x['dtype']} weights, {x['bytes_per_param']} bytes/param): predicted from "
    line += f"measured ceilings {units.batch(x.get('predicted_batch'))}, "
    line += f"observed {units.batch(x.get('observed_batch'))}"
    if x.get("sweep_n"):
        line += f" (knee of a batch sweep at n={x['sweep_n']}"
        line += ")" if x.get("observed_within_sweep", True) else ", outside the sweep: extrapolated)"
    out.append(line)
    if x.get("datasheet"):
        out.append(f"  datasheet ({x['datasheet']['hardware']}): {units.batch(x['datasheet']['predicted_batch'])}")
    return out


def render_points(report: Report, title: str, points: Sequence[Point]) -> list[str]:
    """One table of decode points: rate, bandwidth, intensity, the fraction of the roof each lives under (asv's
    ``time_`` twin ÷ the step where recorded), and the levels no bandwidth roof was measured for."""
    if not points:
        return []
    twins = any(p.twin_ratio for p in points)  # asv's time_ twin ÷ this time per step, from results
    header = f"  {'n':>6} {'batch':>5} {'GFLOP/s':>9} {'GB/s':>7} {'FLOP/B':>7} {'roof%':>6}"
    header += f" {'twin×':>6}" if twins else ""
    header += f"  {'roof':<10} bound"
    out = ["", f"{title}:", header]
    unroofed: list[str] = []
    for r in map(report.row, points):
        p, own = r.point, r.own
        if own is not None and own.gbps is None and own.level not in unroofed:
            unroofed.append(own.level)
        frac = own.fraction if own else None
        flag = (
            f"  ← above {100 * MEASUREMENT_ERROR:.0f}% of its roof: the {own.binding} read too low"
            if own and own.error
            else ""
        )
        out.append(
            f"  {p.n:>6} {p.batch:>5} {_fmt(p.gflops, '9.1f'):>9} {_fmt(p.gbps, '7.1f'):>7} "
            f"{p.intensity:7.1f} {_fmt(None if frac is None else 100 * frac, '6.0f'):>6}"
            + (f" {_fmt(p.twin_ratio, '6.2f'):>6}" if twins else "")
            + f"  {'roof: ' + own.level if own else '':<10} {(own.bound if own else None) or ''}{flag}".rstrip()
        )
    if unroofed:
        out.append(f"  roof% n/a under {', '.join(unroofed)}: no bandwidth roof measured for that level here")
    return out


def render_batch_gain(points: Sequence[Point]) -> list[str]:
    """Per n with both batches: what batch 64 delivers over batch 1 on the same weights."""
    by_n: dict[int, dict[int, float]] = {}
    for p in points:
        if p.gflops:
            by_n.setdefault(p.n, {})[p.batch] = float(p.gflops)
    return [
        f"  n={n}: batch 64 delivers {row[64] / row[1]:.1f}× the GFLOP/s of batch 1 on the same weights"
        for n, row in sorted(by_n.items())
        if 1 in row and 64 in row
    ]


def render_text(report: Report) -> str:
    """The report as the lab would print it, then this machine's figures."""
    headline = report.conditions.headline() if report.conditions is not None else None
    headlines = ([headline] if headline else []) + guards.above_bound(decode_fractions(report))
    out = [*headlines, ""] if headlines else []
    out += render_lab()
    out += render_machine(report)
    out += render_roofs(report.roofs_by_level)
    out += render_limits(report)
    out += render_overhead_and_crossover(report)
    out += render_points(report, "decode, weights from DRAM", report.decode)
    out += render_points(report, "cache-resident", report.cache_resident)
    out += render_batch_gain(report.decode)
    out += render_model_decode(report.model_decode)
    out += render_engine_decode(report.engine_decode, report.facts.get("llc_bytes"))
    if report.warnings:
        out += ["", "warnings:"] + [f"  - {w}" for w in report.warnings]
    return "\n".join(out)


#: Why a model's or an engine's row has no figure where the run did not say (a report from results: asv records
#: a skip as NaN and a failure as null, and the reason reaches asv's output only; roofline bench's own report says).
NOT_MEASURED = "no figure recorded (not chosen, skipped or failed: asv's output of the run says which and why)"


def render_model_decode(points: Sequence[ModelPoint]) -> list[str]:
    """The real model's table (models.ModelDecode): each path's tokens/s and its fraction of the bound."""
    if not points:
        return []
    out = [
        "",
        "a real model decoded here (models.ModelDecode: transformers and the lean torch path, against the bound "
        "from this machine's bandwidth and torch GEMM roof):",
        f"  {'batch':>5} {'tokens/s':>9} {'lean':>9} {'bound':>9} {'fraction':>8} {'lean':>6}",
    ]
    for m in points:
        if m.tokens_per_s is None and m.lean_tokens_per_s is None and m.bound_tokens_per_s is None:
            out.append(f"  {m.batch:>5} not measured: {m.reason or NOT_MEASURED}")
            continue
        out.append(
            f"  {m.batch:>5} {_fmt(m.tokens_per_s, '9.3g'):>9} {_fmt(m.lean_tokens_per_s, '9.3g'):>9} "
            f"{_fmt(m.bound_tokens_per_s, '9.3g'):>9} {_fmt(m.fraction(m.tokens_per_s), '8.2f'):>8} "
            f"{_fmt(m.fraction(m.lean_tokens_per_s), '6.2f'):>6}"
        )
    return out


def render_engine_decode(points: Sequence[EnginePoint], llc_bytes: float | None = None) -> list[str]:
    """An engine's rows of the real-model table (engines.*Decode): tokens/s, the bytes' rate, the bound, the
    fraction, the prediction, the kernels; then each format's engine roof and crossover. A row whose step reads
    under the DRAM rule is marked as partly cache-resident (its bound is DRAM's, which a cache-sized file may beat)."""
    if not points:
        return []
    out = [
        "",
        "  an engine decoding a GGUF of random weights here (engines.LlamaCppDecode; bound: max(bytes ÷ DRAM roof, "
        "FLOPs ÷ the format's engine roof); predicted: bytes ÷ (DRAM roof × GEMV fraction) + FLOPs ÷ engine roof "
        "+ overhead):",
        f"  {'engine':<9} {'format':<6} {'batch':>5} {'tokens/s':>9} {'counters':>9} {'GB/s':>6} {'bound':>9} "
        f"{'fraction':>8} {'predicted':>9} {'error':>6}  kernels",
    ]
    resident = False
    for e in points:
        if e.tokens_per_s is None and e.bound_tokens_per_s is None:
            out.append(f"  {e.engine:<9} {e.format:<6} {e.batch:>5} not measured: {e.reason or NOT_MEASURED}")
            continue
        error = "n/a" if e.prediction_error is None else f"{100 * e.prediction_error:+.0f}%"
        mark = " *" if e.cache_sized(llc_bytes) else ""
        resident |= bool(mark)
        out.append(
            f"  {e.engine:<9} {e.format:<6} {e.batch:>5} {_fmt(e.tokens_per_s, '9.3g'):>9} "
            f"{_fmt(e.counter_tokens_per_s, '9.3g'):>9} {_fmt(e.effective_gbps, '6.3g'):>6} "
            f"{_fmt(e.bound_tokens_per_s, '9.3g'):>9} {_fmt(e.fraction, '8.2f'):>8} "
            f"{_fmt(e.predicted_tokens_per_s, '9.3g'):>9} {error:>6}  {e.kernels or 'n/a'}{mark}"
        )
    if resident:
        out.append(
            f"  * partly cache-resident: a step reads under {POOL_LLC_MULTIPLE}× the last-level cache "
            f"({size_text(llc_bytes)}), not the DRAM-bound case"
        )
    for e in points:
        if e.engine_roof is not None:
            out.append(
                f"  {e.engine} {e.format}: engine roof {e.engine_roof:.4g} GFLOP/s (its prompt in one call); crossover "
                f"batch predicted {_fmt(e.predicted_crossover, '.3g')}, observed {_fmt(e.observed_crossover, '.3g')}"
            )
    return out
