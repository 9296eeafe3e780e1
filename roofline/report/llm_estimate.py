"""What ``roofline decode`` shows: the hardware it answers for, and the estimate as text."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput
from ..model.arithmetic import gemm_intensity, roofline_fraction
from ..model.dtypes import DTYPES, SUITE
from ..model.hardware import Hardware
from ..model.llm import natural_compute
from ..model.llm_estimate import BOUND_SLACK, DecodeEstimate, DecodeSetup, estimate, require_fits, size_text
from ..outcome import Skipped
from ..suite.results import Results
from ..units import sig

if TYPE_CHECKING:
    from ..measure.engine_decode import EngineCrossover, EngineRow, EngineRun
    from ..measure.llm_decode import MeasuredRow, ModelDecodeRun
    from .summary import MachineSummary



@dataclass(frozen=True)
class Roofs:
    """Hardware as ``roofline decode`` answers for it, and what its prediction needs.

    ``gemv_fraction``: the share of its roof the suite's batch-1 GEMV (fp32, n = ``gemv_n``) reached in a
    recorded run, the efficiency a bandwidth-bound step is predicted at; None for a catalogue device (a
    datasheet has no such figure) and for ``local``. ``measured``: the figures are a recorded run's.
    """

    hardware: Hardware
    gemv_fraction: float | None = None
    gemv_n: int | None = None
    measured: bool = False


def resolve_roofs(name: str, gallery: Results | None) -> Roofs:
    """A machine of the ``gallery`` (:func:`~roofline.suite.results.read_gallery`): its recorded run's roofs
    (:func:`machine_roofs`); else the catalogue. BadInput naming both lists when the name is in neither.
    ``local`` (this machine measured now, :func:`roofline.suite.live.local_hardware`) is the command's to measure."""
    from ..model.catalogue import lookup

    if gallery is not None and name in gallery.machines:
        return gallery_roofs(name, gallery)
    try:
        return Roofs(lookup(name))
    except BadInput as exc:
        machines = sorted(gallery.machines) if gallery is not None else []
        also = f"; nor is it a machine of {gallery.path} ({', '.join(machines)})" if machines else ""
        raise BadInput(f"{exc}{also}") from None


def gallery_roofs(name: str, gallery: Results) -> Roofs:
    """Machine ``name`` of an asv results folder as read, at its latest run, as :func:`machine_roofs`."""
    from .summary import summarize

    summaries, _ = summarize(gallery, [name])
    return machine_roofs(summaries[0], gallery.path)


def _date(summary: MachineSummary) -> str:
    """The date asv filed the run under (its commit's), as YYYY-MM-DD."""
    return time.strftime("%Y-%m-%d", time.gmtime(summary.date / 1000)) if summary.date else "no date"


def run_label(summary: MachineSummary) -> str:
    """Which run the roofs are: 'epyc-zen4-2core-32mib-l3, commit 772de65f of 2026-11-30'."""
    return f"{summary.machine}, commit {summary.commit[:8]} of {_date(summary)}"


def batch1_gemv(summary: MachineSummary) -> tuple[int, float] | None:
    """(n, fraction of its roof) of the run's batch-1 DRAM decode step at its largest n: the suite's GEMV,
    as :attr:`roofline.measure.engine_decode.EngineRun.gemv_fraction` computes it for a live run."""
    hw = summary.measured
    points = {n: v for (n, b), v in summary.decode.get("DRAM", {}).items() if b == 1 and v}
    if hw is None or not points:
        return None
    n = max(points)
    return n, roofline_fraction(points[n] * 1e9, hw, gemm_intensity(n, 1, SUITE.bytes), SUITE.name)


def machine_roofs(summary: MachineSummary, results: Path | str) -> Roofs:
    """A recorded run as hardware: its DRAM roof, its compute roofs (GemmPeak's fp32, ComputePeak's dtypes),
    its machine.json's RAM as memory, and its batch-1 GEMV fraction. BadInput without a DRAM roof or
    a compute roof of the current suite (a run of an older suite, whose roofs meant something else)."""
    s = summary
    peaks = {**({SUITE.name: s.peak} if s.peak else {}), **{d: v * 1e9 for d, v in s.compute.items()}}
    if not s.bandwidth or not peaks:
        missing = "DRAM roof" if not s.bandwidth else "compute roof"
        raise BadInput(
            f"machine {s.machine} in {results} recorded no {missing} the current suite reads (run {run_label(s)}); "
            "its roofs cannot bound a model"
        )
    gemv = batch1_gemv(s)
    roofs = ", ".join(f"{d} {_rate(v, DTYPES[d].peak_unit if d in DTYPES else 'FLOP/s')}" for d, v in peaks.items())
    hw = Hardware(
        name=s.machine,
        peak_flops=peaks,
        bandwidth=s.bandwidth,
        memory_bytes=s.ram_bytes,
        source=f"measured: asv results {results}, {run_label(s)}: DRAM roof {_rate(s.bandwidth, 'B/s')} "
        f"({s.bandwidth_from}), compute roofs {roofs}; memory: machine.json's ram",
    )
    return Roofs(hw, gemv[1] if gemv else None, gemv[0] if gemv else None, measured=True)


def check_roofs(roofs: Roofs, weights: str, compute_dtype: str | None) -> None:
    """BadInput where a recorded run lacks the compute roof ``weights`` compute in (a datasheet's fallback to
    another roof is the catalogue's rule; a measured machine's missing roof is a run that skipped it)."""
    hw, natural = roofs.hardware, natural_compute(weights)
    if roofs.measured and compute_dtype is None and natural not in hw.peak_flops:
        raise BadInput(
            f"machine {hw.name} recorded no {natural} compute roof (it has {', '.join(sorted(hw.peak_flops))}): "
            f"give --compute-dtype to bound {weights}'s arithmetic by one of those"
        )


def check_fits(setup: DecodeSetup, roofs: Roofs) -> None:
    """BadInput where a measured machine's memory holds not even batch 1 of the model."""
    if roofs.measured:
        require_fits(setup, [1])


@dataclass(frozen=True)
class Predicted:
    """One batch on one machine: the bound, what binds it, whether it fits the memory (None: unknown), and the
    prediction (None where arithmetic binds or it does not fit)."""

    batch: int
    bound_tokens_per_s: float
    bound: str
    tokens_per_s: float | None
    fits: bool | None = None

    @property
    def bound_text(self) -> str:
        return self.bound if self.fits is not False else f"{self.bound}, does not fit"

    def as_dict(self) -> dict[str, object]:
        return {
            "batch": self.batch,
            "bound_tokens_per_s": self.bound_tokens_per_s,
            "bound": self.bound,
            "fits": self.fits,
            "predicted_tokens_per_s": self.tokens_per_s,
        }


def predict(est: DecodeEstimate, roofs: Roofs) -> tuple[Predicted, ...]:
    """Each step's bound and prediction: the bound × the batch-1 GEMV fraction where the bandwidth binds the
    step (a GEMV's efficiency says nothing of arithmetic: a compute-bound step has none), and the batch fits
    the memory. A gallery machine records no engine roof of this model's format, so the live engine's rule
    (:mod:`roofline.model.engine_bound`) has no compute term to add here."""
    f = roofs.gemv_fraction
    return tuple(
        Predicted(
            st.batch, st.tokens_per_s, st.bound,
            st.tokens_per_s * f if f and st.bound == "bandwidth" and st.fits is not False else None, st.fits,
        )
        for st in est.steps
    )  # fmt: skip


@dataclass(frozen=True)
class ModelQuestion:
    """One model's decode asked of several machines (``roofline compare --model``): each one's bound and
    prediction from its own roofs, or the one line that says why it has none."""

    title: str
    batches: tuple[int, ...]
    answers: dict[str, tuple[Predicted, ...]]
    roofs: dict[str, Roofs]
    reasons: dict[str, str]

    def as_dict(self) -> dict[str, object]:
        return {
            "model": self.title,
            "batches": list(self.batches),
            "machines": {
                m: {"gemv_fraction": self.roofs[m].gemv_fraction, "gemv_n": self.roofs[m].gemv_n,
                    "source": self.roofs[m].hardware.source, "rows": [r.as_dict() for r in rows]}
                for m, rows in self.answers.items()
            },
            "not_answered": dict(self.reasons),
        }  # fmt: skip


def ask_machines(
    summaries: list[MachineSummary], results: str, setup: dict[str, object], batches: list[int]
) -> ModelQuestion:
    """``setup`` (DecodeSetup's keywords less the hardware) on every machine: a measured one's recorded roofs
    (:func:`machine_roofs`), a datasheet column's catalogue device. A machine that cannot answer (no roofs
    of the current suite, none for the format, not even batch 1 in its memory) is left out with its
    reason; BadInput when none can."""
    answers, roofs, reasons, title = {}, {}, {}, ""
    weights, compute = str(setup["dtype"]), setup.get("compute_dtype")
    for s in summaries:
        try:
            r = Roofs(s.device) if s.datasheet_only and s.device else machine_roofs(s, results)
            check_roofs(r, weights, compute if isinstance(compute, str) else None)
            full = DecodeSetup(hardware=r.hardware, **setup)  # type: ignore[arg-type]
            require_fits(full, [1])
            answers[s.machine], roofs[s.machine] = predict(estimate(full, batches), r), r
            title = f"{full.model.name} {full.dtype}, context {full.context}" + (f", {compute} roof" if compute else "")
        except BadInput as exc:
            reasons[s.machine] = str(exc)
    if not answers:
        raise BadInput("no machine compared can answer: " + "; ".join(reasons.values()))
    return ModelQuestion(title, tuple(batches), answers, roofs, reasons)


def format_predicted(rows: tuple[Predicted, ...], roofs: Roofs) -> list[str]:
    """The prediction's lines under the estimate: the rule with its fraction, then a row per batch."""
    if roofs.gemv_fraction is None:
        return []
    lines = [
        "",
        f"predicted: the bound × {roofs.gemv_fraction:.3f}, the fraction of its roof this run's batch-1 GEMV "
        f"(fp32, n={roofs.gemv_n}) reached; none where arithmetic binds or the batch does not fit",
        f"{'batch':>6}  {'bound tok/s':>12}  {'bound by':<24} {'predicted tok/s':>16}",
    ]
    for r in rows:
        predicted = "-" if r.tokens_per_s is None else f"{r.tokens_per_s:,.1f}"
        lines.append(f"{r.batch:>6}  {r.bound_tokens_per_s:>12,.1f}  {r.bound_text:<24} {predicted:>16}")
    return lines


def _rate(value: float, unit: str) -> str:
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:.3g} {prefix}{unit}"
    return f"{value:.3g} {unit}"


def _count(n: float) -> str:
    return f"{n / 1e9:.2f} B" if n >= 1e9 else f"{n / 1e6:.2f} M" if n >= 1e6 else f"{n:,.0f}"


def _batch(value: float) -> str:
    """A batch to three significant figures, as the report and specs print it: 295.5 → '296', 28.04 → '28.0'."""
    return f"{round(value):,}" if value >= 1000 else sig(value)


#: One unit system for every size this output prints (SI, as the bandwidths): said once, on its own line.
UNITS = "  units    sizes in SI: 1 GB = 10⁹ bytes (an 80 GiB device is 85.9 GB)"


def _memory(est: DecodeEstimate) -> str:
    s, hw = est.setup, est.setup.hardware
    if not hw.memory_bytes:
        return ", memory unknown"
    if not s.reserved_bytes:
        return f", {size_text(hw.memory_bytes)}"
    usable, reserved = size_text(s.memory_capacity), size_text(s.reserved_bytes)
    return f", {size_text(hw.memory_bytes)} ({usable} usable, {reserved} reserved)"


def _allreduce(est: DecodeEstimate) -> str:
    s = est.setup
    if s.tp == 1 or (s.interconnect is None and s.allreduce_latency is None):
        return ""
    parts = [f"{s.allreduce_latency * 1e6:.3g} µs" if s.allreduce_latency is not None else "no latency"]
    parts.append(f"bytes at {_rate(s.interconnect, 'B/s')}" if s.interconnect else "no bytes")
    return f", all-reduce {' + '.join(parts)} × {s.allreduces} per step"


def _request_lines(est: DecodeEstimate) -> list[str]:
    """The requests' table: per batch the time to the first token, what binds the prefill, the mean decode step,
    end to end, and the output rate; nothing without requests."""
    if not est.requests:
        return []
    r0 = est.requests[0]
    lines = [
        "",
        f"requests: prompt {r0.prompt}, output {r0.output} (first token from the prefill, "
        f"{r0.decode_steps} decode steps at context {r0.prompt + 1}–{r0.prompt + r0.output - 1})",
        f"{'batch':>6}  {'TTFT ms':>9}  {'prefill binds':<21} {'step ms':>9} {'e2e s':>9} {'tok/s out':>12} "
        f"{'tok/s/seq':>10}  fits",
    ]
    for r in est.requests:
        fits = {True: "yes", False: "no", None: "?"}[r.fits]
        first = max(r.prefill, key=lambda p: p.time_s)
        step_ms = "-" if r.step_mean_s is None else f"{r.step_mean_s * 1e3:.4g}"
        per_seq = "-" if r.decode_tokens_per_s is None else f"{r.decode_tokens_per_s:,.1f}"
        lines.append(
            f"{r.batch:>6}  {r.ttft_s * 1e3:>9.4g}  {first.name + ' (' + first.bound + ')':<21} {step_ms:>9} "
            f"{r.e2e_s:>9.4g} {r.tokens_per_s:>12,.1f} {per_seq:>10}  {fits}"
        )
    return lines


def format_estimate(est: DecodeEstimate) -> list[str]:
    """The estimate as lines of text: the setup, a table per batch, requests, the crossover, the memory fit, notes."""
    s, hw, m, c = est.setup, est.setup.hardware, est.setup.model, est.batching
    devices = f"{s.tp} × {hw.name}" if s.tp > 1 else hw.name
    params = f"{_count(m.params_total)} params"
    if m.params_active != m.params_total:
        params += f", {_count(m.params_active)} active"
    memory = _memory(est)
    lines = [
        f"{m.name} ({params}) on {devices}, context {s.context}" + (f", tensor parallel {s.tp}" if s.tp > 1 else ""),
        f"  weights  {s.dtype}, {s.bytes_per_weight:.6g} B/param: {size_text(m.params_total * s.bytes_per_weight)}"
        + (f", {size_text(s.weight_bytes_stored)} per device" if s.tp > 1 else ""),
        f"  KV cache {s.kv_dtype}, {s.kv_bytes_per_token:,.0f} B per token: "
        f"{size_text(s.kv_bytes_per_token * s.kv_tokens)} per sequence"
        + (f", {size_text(s.kv_bytes_per_sequence)} per device" if s.tp > 1 else ""),
        f"  roofs    {_rate(s.peak, 'FLOP/s')} {s.compute}, {_rate(hw.bandwidth, 'B/s')}{memory}"
        + (" per device" if s.tp > 1 else "")
        + _allreduce(est),
        f"  source   {hw.source or 'not given'}",
        UNITS,
        "",
        f"{'batch':>6}  {'bound':<12} {'step ms':>9} {'max() ms':>9}  {'binding phase':<21} {'tok/s/seq':>10} "
        f"{'tok/s total':>12} {'weights':>8} {'KV':>6} {'GB/device':>10}  fits",
    ]
    for st in est.steps:
        fits = {True: "yes", False: "no", None: "?"}[st.fits]
        binds = f"{st.binding_phase.name} ({st.binding_phase.bound})"
        lines.append(
            f"{st.batch:>6}  {st.bound:<12} {st.step_s * 1e3:>9.4g} {st.whole_step_s * 1e3:>9.4g}  {binds:<21} "
            f"{st.tokens_per_s_per_sequence:>10,.1f} {st.tokens_per_s:>12,.1f} {st.weight_share:>8.1%} "
            f"{st.kv_share:>6.1%} {st.memory_needed / 1e9:>10.1f}  {fits}"
        )
    lines += _request_lines(est)
    cap = "compute caps" if c.limited_by == "compute" else "KV-cache reads cap"
    lines += [
        "",
        f"crossover batch {_batch(c.crossover)}: weights only, no KV cache (for a dense model peak / bandwidth "
        "× bytes per weight / 2, as roofline report and specs give it)",
        f"saturation batch {_batch(c.saturation)}: with the KV cache at context {s.context}, beyond it {cap} the "
        f"throughput at {c.ceiling_tokens_per_s:,.0f} tok/s and batching stops paying; KV bytes equal weight bytes "
        f"at batch {_batch(c.kv_equals_weights)}",
        "largest batch that fits: " + ("unknown (no memory size)" if est.max_batch is None else f"{est.max_batch}"),
    ]
    too_big = [st.batch for st in est.steps if st.fits is False]
    if too_big:
        lines.append(
            f"note: batch{'es' if len(too_big) > 1 else ''} {', '.join(map(str, too_big))} do"
            f"{'' if len(too_big) > 1 else 'es'} not fit in {size_text(s.memory_capacity)} per device "
            "(GB/device is what each needs); --require-fit refuses them"
        )
    lines += [f"note: {n}" for n in s.notes]
    return lines


# ---- a real model measured here, held against its bound -------------------------------------------


def measured_dict(run: ModelDecodeRun, rows: tuple[MeasuredRow, ...]) -> dict[str, object]:
    return {**run.as_dict(), "rows": [r.as_dict() for r in rows], "bound_slack": BOUND_SLACK}


def format_measured(run: ModelDecodeRun, rows: tuple[MeasuredRow, ...], full_layers: int | None = None) -> list[str]:
    """The measured table: per batch and path, step time and spread, tokens/s, the bound, bound ÷ measured."""
    m = run.shape
    of = f"{m.layers} of {full_layers} layers" if full_layers and full_layers != m.layers else f"{m.layers} layers"
    lines = [
        f"measured here: {m.name} ({of}, random weights) in {run.dtype}, context {run.context} prefilled, "
        f"{run.warmup} warm-up + {run.steps} timed steps ({run.versions}, {run.threads} threads)",
        "  checked against float64: "
        + ", ".join(f"{p} {e:.2g}" for p, e in run.check_errors.items())
        + " (relative error of the logits)",
        "",
        f"{'batch':>6}  {'path':<13} {'step ms':>9} {'spread':>7} {'tok/s':>10} {'bound ms':>9} {'bound tok/s':>12} "
        f"{'bound/measured':>15}",
    ]
    for r in rows:
        lines.append(
            f"{r.batch:>6}  {r.path:<13} {r.step_s * 1e3:>9.4g} {r.spread:>7.2f} {r.batch / r.step_s:>10,.1f} "
            f"{r.bound.step_s * 1e3:>9.4g} {r.bound.tokens_per_s:>12,.1f} {r.fraction:>15.3f}"
            + ("  BEATS THE BOUND" if r.flagged else "")
        )
    flagged = [r for r in rows if r.flagged]
    if flagged:
        lines.append(
            f"warning: {len(flagged)} measurement(s) faster than the bound by more than {BOUND_SLACK:g}×: "
            "a bug in the model or in the measured ceilings, not a fast machine"
        )
    return lines


# ---- an engine decoding a GGUF here, held against its bound and predicted -----------------------------


def engine_dict(
    run: EngineRun, rows: tuple[EngineRow, ...], crossings: tuple[EngineCrossover, ...]
) -> dict[str, object]:
    """The engine's run as JSON: what ran, the roofs and GEMV of its rounds, each row, each format's crossover
    (:func:`roofline.measure.engine_decode.crossovers`), each outcome not measured."""
    hw, gemv = run.hardware, run.gemv
    return {
        "engine": run.engine,
        "version": run.version,
        "model": run.shape.name,
        "layers": run.shape.layers,
        "context": run.context,
        "warmup": run.warmup,
        "steps": run.steps,
        "rounds": run.rounds,
        "threads": run.threads,
        "mean_kv_tokens": run.mean_kv_tokens,
        "file_bytes": dict(run.file_bytes),
        "bandwidth": None if hw is None else hw.bandwidth,
        "peak_flops": None if hw is None else dict(hw.peak_flops),
        "gemv": None if gemv is None else {**gemv.as_dict(), "fraction": run.gemv_fraction},
        "prompt_tokens": run.prompt_tokens,
        "engine_roofs_gflops": {f: (run.engine_peak(f) or 0) / 1e9 or None for f in run.prompts},
        "overhead_s": None if run.overhead is None else run.overhead.median,
        "crossovers": [c.as_dict() for c in crossings],
        "rows": [r.as_dict() for r in rows],
        "not_measured": [
            {"format": f, "batch": b, "status": type(o).__name__.lower(), "reason": o.reason}
            for (f, b), o in run.outcomes.items()
            if not o.ok
        ],
        "warnings": list(run.warnings),
        "bound_slack": BOUND_SLACK,
    }


def _opt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _engine_roof_lines(run: EngineRun, crossings: tuple[EngineCrossover, ...]) -> list[str]:
    """Each format's engine roof (its prompt's rate), the overhead, and where its decode turns compute-bound."""
    lines = []
    if run.overhead is not None:
        ms = run.overhead.median * 1e3
        lines.append(f"  the engine's fixed cost per step (a step of a 64-wide one-layer model): {ms:.3g} ms")
    for c in crossings:
        peak = run.engine_peak(c.format)
        observed = "n/a (under three batches)" if c.observed is None else (
            f"{c.observed:.3g}" + ("" if c.observed_within_sweep else " (outside the batches measured)"))  # fmt: skip
        lines.append(
            f"  {run.engine} {c.format}: engine roof {_rate(peak, 'FLOP/s') if peak else 'n/a'} (a prompt of "
            f"{run.prompt_tokens} tokens in one call); crossover batch predicted "
            f"{'n/a' if c.predicted is None else format(c.predicted, '.3g')}, observed {observed}"
        )
    return lines


def format_engine(
    run: EngineRun,
    rows: tuple[EngineRow, ...],
    crossings: tuple[EngineCrossover, ...],
    full_layers: int | None = None,
) -> list[str]:
    """The engine's table: per format and batch the wall clock and the engine's counters, the bound,
    bound ÷ measured, and the prediction with its error; each format's crossover (``crossings``)."""
    m, hw, gemv = run.shape, run.hardware, run.gemv
    of = f"{m.layers} of {full_layers} layers" if full_layers and full_layers != m.layers else f"{m.layers} layers"
    files = ", ".join(f"{f} {size_text(n)}" for f, n in run.file_bytes.items())
    lines = [
        f"measured here: {m.name} ({of}, random weights) with {run.engine} ({run.version}, {run.threads} threads), "
        f"context {run.context} prefilled, {run.warmup} warm-up + {run.steps} timed steps, {run.rounds} rounds",
        f"  GGUF files: {files} (KV cache F16)",
    ]
    if hw is not None:
        lines.append(
            f"  roofs of the same rounds: {_rate(hw.bandwidth, 'B/s')} (read), "
            + ", ".join(f"{d} {_rate(v, 'FLOP/s')}" for d, v in hw.peak_flops.items())
        )
    if gemv is not None and run.gemv_fraction is not None:
        lines.append(
            f"  the suite's batch-1 GEMV (numpy {gemv.dtype}, n={gemv.n}, pool {size_text(gemv.pool_bytes)}): "
            f"{gemv.gbps:.3g} GB/s, {run.gemv_fraction:.3f} of its roof"
        )
    lines += _engine_roof_lines(run, crossings)
    lines += [
        "",
        f"{'format':<6} {'batch':>5} {'step ms':>9} {'spread':>6} {'tok/s':>9} {'counters':>9} {'GB/s':>6} "
        f"{'bound':>9} {'bound by':<10} {'fraction':>8} {'counters':>8} {'predicted':>9} {'error':>7}  kernels",
    ]
    for r in rows:
        me = r.measured
        error = _opt(None if r.prediction_error is None else 100 * r.prediction_error, "+.0f")
        lines.append(
            f"{me.format:<6} {me.batch:>5} {me.step_s * 1e3:>9.4g} {me.timing.spread:>6.2f} {me.tokens_per_s:>9.4g} "
            f"{_opt(me.counter_tokens_per_s, '.4g'):>9} {r.effective_gbps:>6.3g} {r.bound_tokens_per_s:>9.4g} "
            f"{r.bound_kind.replace(' (no engine roof)', '*'):<10} {r.fraction:>8.3f} "
            f"{_opt(r.counter_fraction, '.3f'):>8} {_opt(r.predicted_tokens_per_s, '.4g'):>9} "
            f"{error + ('%' if error != '-' else ''):>7}  {me.kernel_path}" + ("  BEATS THE BOUND" if r.flagged else "")
        )
    lines.append(
        "  tok/s: the wall clock's median step; counters: the median step by llama.cpp's eval time; GB/s: the bytes a "
        "step reads ÷ its time; fraction: bound ÷ measured; predicted: bytes ÷ (DRAM roof × GEMV fraction) + "
        "FLOPs ÷ engine roof + overhead; error = predicted ÷ measured − 1 (docs/engines.md)"
    )
    if any(r.bound_kind.endswith("(no engine roof)") for r in rows):
        lines.append("  bandwidth*: no engine roof was measured for that format: its bound is its bytes ÷ bandwidth")
    for (f, b), o in run.outcomes.items():
        if not o.ok:
            lines.append(f"{f:<6} {b:>5} {'skipped' if isinstance(o, Skipped) else 'FAILED'}: {o.reason}")
    flagged = [r for r in rows if r.flagged]
    if flagged:
        lines.append(
            f"warning: {len(flagged)} measurement(s) faster than the bound by more than {BOUND_SLACK:g}×: "
            "the bound's bytes or the measured roofs are wrong, not a fast machine"
        )
    lines += [f"warning: {w}" for w in run.warnings]
    return lines
