"""``roofline compare``: machines side by side from asv results folders (the gate: :mod:`.gate`).

:func:`summarize` gives per machine its measured ceilings, ridge point, crossover batches, memory
and compute roofs, call overhead, decode GFLOP/s per (n, batch) and a real model's tokens/s, and,
for a machine that matches a catalogue CPU, the fraction of the datasheet reached.
:func:`build_comparison` sets them in one table, one column per machine (the Phoronix Test Suite's
result file and asv_spyglass's ``compare-many`` were the models): each figure with the way it
reads better, the interval of the median where asv recorded samples, a ratio to a baseline
machine, and per core, per $/hour and per watt where the user's price table says.

Each value keeps the version of the benchmark that recorded it. Against the reference suite (each
benchmark's latest version, :func:`roofline.suite.results.combine`) a value is the current
quantity, the same quantity from another version (shown, marked ‡) or a figure whose meaning
changed (:data:`roofline.suite.names.RETIRED_MEANINGS`: not shown, marked ≠, the table says what
it was). Rows no machine has a figure for are left out; nothing is written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import units
from ..errors import BadInput
from ..model.arithmetic import attainable, crossover_batch, gemm_intensity
from ..model.catalogue import lookup, match_host
from ..model.dtypes import SUITE
from ..model.hardware import Hardware
from ..model.intervals import median_ci
from ..suite.machine_file import read_measured
from ..suite.names import (
    BANDWIDTH_CEILING,
    COMPUTE_PEAK,
    DECODE_CLASSES,
    DECODE_TRACKS,
    LEVEL_BANDWIDTH,
    MODEL_TOKENS,
    OBSERVED_CROSSOVER,
    OVERHEAD,
    PEAK_CEILING,
    PREDICTED_CROSSOVER,
)
from ..suite.results import Benchmark, MachineResults, Results, Run, meaning
from ..units import NA, sig, table
from .costs import Cost
from .llm_estimate import ModelQuestion

#: The ceilings are measured on the CPU: a datasheet is compared only for these catalogue kinds.
BANDWIDTH_KINDS = ("cpu", "soc")
PEAK_KINDS = ("cpu",)  # an Apple SoC's published FP32 rate is its GPU's
FROM_MACHINE_FILE = "machine file"
#: The source of a catalogue device's figures set beside the machines (``--hardware-also``).
DATASHEET = "datasheet"
#: How a recorded value stands against the reference suite.
CURRENT, OTHER_VERSION, CHANGED = "current", "other version", "changed meaning"
#: The benchmarks the table shows a figure of (the time_ twins give intervals only).
TABLED = (BANDWIDTH_CEILING, PEAK_CEILING, OBSERVED_CROSSOVER, *DECODE_TRACKS.values())
#: The marks of the text table.
MARKS = {OTHER_VERSION: "‡", CHANGED: "≠", FROM_MACHINE_FILE: "†", DATASHEET: "§"}


@dataclass(frozen=True)
class Standing:
    """A benchmark of one run against the reference suite: CURRENT, OTHER_VERSION or CHANGED (with why)."""

    status: str = CURRENT
    note: str = ""
    #: what the version recorded measured, where that is not what the benchmark measures now
    then: str | None = None


def standing(name: str, run: Run, reference: dict[str, Benchmark]) -> Standing:
    """How ``run``'s values of ``name`` stand against ``reference``'s definition of it."""
    ref, own = reference.get(name), run.suite.get(name)
    version = run.versions.get(name)
    if ref is None:
        return Standing(then=meaning(name, version))
    if own is not None and (own.unit, own.param_names) != (ref.unit, ref.param_names):
        return Standing(CHANGED, f"recorded in {own.unit or 'no unit'} over ({', '.join(own.param_names)})")
    then, now = meaning(name, version), meaning(name, ref.version)
    if version in (None, ref.version):
        return Standing(then=then)
    if then != now:
        return Standing(CHANGED, then or f"what the benchmark measures now, not {now}", then)
    return Standing(OTHER_VERSION, f"version {version[:8]}, the reference suite's {str(ref.version)[:8]}", then)


def worst(standings: Sequence[Standing]) -> Standing:
    """The standing of a figure made from several benchmarks: the worst of theirs."""
    order = (CURRENT, OTHER_VERSION, CHANGED)
    return max(standings, key=lambda s: order.index(s.status), default=Standing())


def _only(run: Run, benchmark: str, **params: object) -> float | None:
    """The value at ``params``, or the single value of a benchmark with one parameter combination."""
    if params:
        return run.value(benchmark, **params)
    points = [v for _, v in run.points(benchmark) if v is not None]
    return points[0] if len(points) == 1 else None


def _int(value: object) -> int | None:
    try:
        return int(str(value).split()[0])
    except (ValueError, IndexError):
        return None


#: An interval of a figure: (low, high, where it comes from).
Interval = tuple[float, float, str]


@dataclass
class MachineSummary:
    """One machine at one commit, as ``roofline compare`` tables it. Rates in B/s and FLOP/s."""

    machine: str
    commit: str
    info: dict[str, object]
    #: the date asv files the run under (its commit's), ms since the epoch
    date: int | None = None
    #: a catalogue device set beside the machines (``--hardware-also``): datasheet figures, nothing measured
    datasheet_only: bool = False
    device: Hardware | None = None
    device_note: str = ""
    datasheet: Hardware | None = None
    bandwidth: float | None = None
    bandwidth_from: str = ""
    peak: float | None = None
    peak_from: str = ""
    observed_crossover: list[tuple[dict[str, object], float | None]] = field(default_factory=list)
    predicted_crossover: float | None = None
    predicted_from: str = ""
    decode: dict[str, dict[tuple[int, int], float | None]] = field(default_factory=dict)
    #: GB/s per memory level, GFLOP/s per compute dtype, µs per call ("single", "amortized"), tokens/s per batch
    levels: dict[str, float] = field(default_factory=dict)
    compute: dict[str, float] = field(default_factory=dict)
    overhead: dict[str, float] = field(default_factory=dict)
    tokens: dict[int, float | None] = field(default_factory=dict)
    #: regime → (n, batch) → the interval of its GFLOP/s, from the samples asv recorded of its time_ twin
    intervals: dict[str, dict[tuple[int, int], Interval]] = field(default_factory=dict)
    #: benchmark → how its values stand against the reference suite (every benchmark the run recorded)
    standings: dict[str, Standing] = field(default_factory=dict)

    @property
    def cores(self) -> int | None:
        return _int(self.info.get("num_cpu"))

    @property
    def llc_bytes(self) -> int | None:
        return _int(self.info.get("llc_bytes"))

    @property
    def ram_bytes(self) -> int | None:
        return _int(self.info.get("ram"))

    def stand(self, *benchmarks: str) -> Standing:
        return worst([self.standings.get(b, Standing()) for b in benchmarks])

    @property
    def ridge(self) -> float | None:
        """Measured ridge point in FLOP/byte."""
        return self.peak / self.bandwidth if self.peak and self.bandwidth else None

    @property
    def measured(self) -> Hardware | None:
        if not (self.peak and self.bandwidth):
            return None
        return Hardware(self.machine, {SUITE.name: self.peak}, self.bandwidth, source="measured")

    def bandwidth_fraction(self) -> float | None:
        hw = self.datasheet
        if hw is None or self.bandwidth is None or hw.extra.get("kind") not in BANDWIDTH_KINDS:
            return None
        return self.bandwidth / hw.bandwidth

    def peak_fraction(self) -> float | None:
        hw = self.datasheet
        if hw is None or self.peak is None or hw.extra.get("kind") not in PEAK_KINDS:
            return None
        return self.peak / hw.peak_flops[SUITE.name] if SUITE.name in hw.peak_flops else None

    def datasheet_roofline_fraction(self, n: int, batch: int, gflops: float | None) -> float | None:
        """Achieved / the datasheet roofline at this point's exact intensity (CPU datasheets only)."""
        hw = self.datasheet
        if gflops is None or self.peak_fraction() is None or hw is None:
            return None
        return gflops * 1e9 / attainable(hw, gemm_intensity(n, batch, SUITE.bytes), SUITE.name)

    def as_dict(self) -> dict[str, object]:
        decode = {
            regime: [
                {
                    "n": n,
                    "batch": b,
                    "gflops": v,
                    "interval": list(self.intervals.get(regime, {}).get((n, b), ())[:2]) or None,
                    "datasheet_roofline_fraction": self.datasheet_roofline_fraction(n, b, v),
                }
                for (n, b), v in sorted(points.items())
            ]
            for regime, points in self.decode.items()
        }
        return {
            "machine": self.machine,
            "commit": self.commit,
            "date": self.date,
            "datasheet_only": self.datasheet_only,
            "info": self.info,
            "device": self.device.name if self.device else None,
            "device_note": self.device_note,
            "datasheet": self.datasheet.name if self.datasheet else None,
            "bandwidth": self.bandwidth,
            "bandwidth_from": self.bandwidth_from,
            "peak_fp32": self.peak,
            "peak_from": self.peak_from,
            "ridge_flop_per_byte": self.ridge,
            "predicted_crossover_batch": self.predicted_crossover,
            "predicted_from": self.predicted_from,
            "observed_crossover_batch": [{"params": p, "value": v} for p, v in self.observed_crossover],
            "datasheet_bandwidth_fraction": self.bandwidth_fraction(),
            "datasheet_peak_fraction": self.peak_fraction(),
            "decode_gflops": decode,
            "level_gbps": self.levels,
            "compute_gflops": self.compute,
            "overhead_us": self.overhead,
            "model_tokens_per_s": {str(b): v for b, v in self.tokens.items()},
            "standings": {
                name: {"status": s.status, "note": s.note} for name, s in self.standings.items() if s.status != CURRENT
            },
        }


def find_device(machine: MachineResults, warnings: list[str]) -> tuple[Hardware | None, str]:
    """The catalogue device of a machine: its machine.json ``device`` key, else a match on gpu/cpu."""
    named = machine.info.get("device")
    if isinstance(named, str) and named.strip() and named.strip().lower() != "none":
        try:
            return lookup(named), "machine.json"
        except BadInput as exc:
            warnings.append(f"machine {machine.name}: {exc}")
            return None, f"unknown device {named!r}"
    hw = match_host(machine.info)
    return (hw, "matched gpu/cpu name") if hw else (None, "no catalogue match")


def _ceilings(s: MachineSummary, run: Run, saved: dict[str, float | None]) -> None:
    roof = run.bandwidth_roof()
    if roof is not None:
        s.bandwidth, s.bandwidth_from = roof[1] * 1e9, f"{BANDWIDTH_CEILING} ({roof[0]})"
    elif saved["measured_bandwidth"] is not None:
        s.bandwidth, s.bandwidth_from = saved["measured_bandwidth"], FROM_MACHINE_FILE
    peak = _only(run, PEAK_CEILING, dtype=SUITE.numpy)
    if peak is not None:
        s.peak, s.peak_from = peak * 1e9, f"{PEAK_CEILING} ({SUITE.numpy})"
    elif saved["measured_peak_fp32"] is not None:
        s.peak, s.peak_from = saved["measured_peak_fp32"], FROM_MACHINE_FILE
    s.observed_crossover = run.points(OBSERVED_CROSSOVER)
    # From the ceilings tabled beside it, as the report computes it; the recorded track only without them.
    predicted = _only(run, PREDICTED_CROSSOVER)
    if s.measured is not None:
        s.predicted_crossover = crossover_batch(s.measured, SUITE.bytes, SUITE.name)
        s.predicted_from = "measured ceilings, float32 weights"
    elif predicted is not None:
        s.predicted_crossover, s.predicted_from = predicted, PREDICTED_CROSSOVER


def _roofs(s: MachineSummary, run: Run) -> None:
    s.levels = run.level_gbps()
    s.compute = {str(p["dtype"]): v for p, v in run.points(COMPUTE_PEAK) if v and "dtype" in p}
    for kind in ("single", "amortized"):
        value = run.value(OVERHEAD.format(kind), backend="numpy")
        if value is not None:
            s.overhead[kind] = value
    s.tokens = {p["batch"]: v for p, v in run.points(MODEL_TOKENS) if isinstance(p.get("batch"), int)}


def twin_interval(run: Run, twin: str, key: tuple[object, ...]) -> Interval | None:
    """A GFLOP/s point's interval, relative, from its time_ twin: 95 % of the median from asv's samples,
    else asv's own 99 % interval; as (low, high) ratios to the figure."""
    samples = run.samples.get(twin, {}).get(key)
    if samples and len(samples) >= 3:
        ci = median_ci(samples)
        if ci.low > 0:
            return ci.median / ci.high, ci.median / ci.low, f"{ci.confidence:.0%} of the median of asv's samples"
    stats, mid = run.stats.get(twin, {}).get(key), run.recorded.get(twin, {}).get(key)
    if stats and mid and stats["ci_99_a"] > 0 and stats["ci_99_b"] < float("inf"):
        return mid / stats["ci_99_b"], mid / stats["ci_99_a"], "asv's 99% interval"
    return None


def _decode(s: MachineSummary, run: Run, full: Run, warnings: list[str]) -> None:
    for regime, track in DECODE_TRACKS.items():
        points = {}
        cls = DECODE_CLASSES[regime]
        twin = f"{cls}.time_decode_step"
        for params, value in run.points(track):
            n, batch = params.get("n"), params.get("batch")
            if not isinstance(n, int) or not isinstance(batch, int):
                continue
            others = (run.value(f"{cls}.{t}", n=n, batch=batch) for t in ("track_bandwidth", "time_decode_step"))
            if value is None and all(v is None for v in others):
                continue  # no figure at all: a combination of the fixed grid this run did not choose
            points[(n, batch)] = value
            names = full.param_names.get(twin, ())
            rel = twin_interval(run, twin, tuple({"n": n, "batch": batch}.get(k) for k in names))
            if value is not None and rel is not None and meaning(twin, full.versions.get(twin)) is None:
                s.intervals.setdefault(regime, {})[(n, batch)] = (value * rel[0], value * rel[1], rel[2])
        if points:
            s.decode[regime] = points
        elif run.points(track):
            warnings.append(f"machine {s.machine}: {track} has no (n, batch) parameters; not tabled")


def summarize_run(
    machine: MachineResults, commit: str, warnings: list[str], reference: dict[str, Benchmark] | None = None
) -> MachineSummary:
    """One machine's summary at ``commit`` (which it must have results for), against ``reference``'s
    definitions (default: the run's own folder's); values whose meaning changed are left out."""
    full = machine.runs[commit]
    s = MachineSummary(machine=machine.name, commit=commit, info=dict(machine.info), date=full.date)
    s.standings = {name: standing(name, full, full.suite if reference is None else reference) for name in full.recorded}
    run = dataclasses.replace(full, values={k: v for k, v in full.recorded.items() if s.standings[k].status != CHANGED})
    s.device, s.device_note = find_device(machine, warnings)
    if s.device is not None and s.device.extra.get("kind") in BANDWIDTH_KINDS:
        s.datasheet = s.device
    else:
        s.datasheet = match_host({"cpu": machine.info.get("cpu")})
    _ceilings(s, run, read_measured({**machine.info, **run.params}))  # the keys as they were when it ran
    _roofs(s, run)
    _decode(s, run, full, warnings)
    return s


def datasheet_summary(name: str) -> MachineSummary:
    """A catalogue device as a column beside the machines (``--hardware-also``): its datasheet, nothing measured."""
    hw = lookup(name)
    label = name.strip().lower()
    return MachineSummary(label, "", {}, datasheet_only=True, device=hw, device_note="--hardware-also", datasheet=hw)


def select_machines(results: Results, names: list[str] | None, warnings: list[str]) -> list[MachineResults]:
    """The machines asked for (all by default); a missing one is a warning, none at all a BadInput."""
    if not names:
        return list(results.machines.values())
    chosen = []
    for name in dict.fromkeys(names):
        if name in results.machines:
            chosen.append(results.machines[name])
        else:
            warnings.append(f"no machine {name!r} in {results.path} (machines: {', '.join(results.machines)})")
    if not chosen:
        raise BadInput(f"none of the machines asked for is in {results.path} (machines: {', '.join(results.machines)})")
    return chosen


def summarize(
    results: Results, machines: list[str] | None = None, commit: str | None = None
) -> tuple[list[MachineSummary], list[str]]:
    """Summaries of the chosen machines at ``commit`` (a hash prefix) or each one's latest; and warnings."""
    warnings: list[str] = []
    summaries, problems = [], []
    for m in select_machines(results, machines, warnings):
        try:
            full = results.resolve_commit(commit, m.name) if commit else m.latest()
        except BadInput as exc:
            problems.append(str(exc))
            continue
        if full is None:
            problems.append(f"machine {m.name}: no readable result file")
            continue
        summaries.append(summarize_run(m, full, warnings, results.benchmarks or None))
    if not summaries:
        raise BadInput(problems[0] if problems else "nothing to compare")
    return summaries, warnings + problems


# ---- the table ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One machine's figure in one row: a number (with its interval) or, for a fact, a text."""

    value: float | None = None
    low: float | None = None
    high: float | None = None
    interval_from: str = ""
    status: str = CURRENT
    note: str = ""
    source: str = ""  # FROM_MACHINE_FILE where the figure is the machine file's
    text: str | None = None

    def scaled(self, by: float | None) -> Cell:
        """This figure divided by ``by`` (a core count, a price, a power); an empty cell without it."""
        if self.value is None or not by:
            return dataclasses.replace(self, value=None, low=None, high=None, text=None)
        low, high = (None if x is None else x / by for x in (self.low, self.high))
        return dataclasses.replace(self, value=self.value / by, low=low, high=high)

    def says_something(self) -> bool:
        return self.value is not None or self.text is not None or self.status == CHANGED


@dataclass(frozen=True)
class Row:
    """One figure across the machines. ``kind``: "figure" (3 significant figures), "batch", "fraction", "fact"."""

    key: str
    section: str
    label: str
    unit: str
    better: str | None
    cells: tuple[Cell, ...]
    kind: str = "figure"
    #: each cell ÷ the baseline machine's (None where either is missing; () without a baseline)
    ratios: tuple[float | None, ...] = ()

    def as_dict(self, machines: Sequence[str]) -> dict[str, object]:
        cells = {}
        for i, (m, c) in enumerate(zip(machines, self.cells, strict=True)):
            cells[m] = {
                "value": c.value,
                "text": c.text,
                "interval": [c.low, c.high] if c.low is not None else None,
                "interval_from": c.interval_from or None,
                "status": c.status,
                "note": c.note or None,
                "source": c.source or None,
                "ratio": self.ratios[i] if self.ratios else None,
            }
        return {
            "key": self.key,
            "section": self.section,
            "label": self.label.strip(),
            "unit": self.unit,
            "better": self.better,
            "cells": cells,
        }


Getter = Callable[[MachineSummary], Cell]


def _figure(value: float | None, stand: Standing, scale: float = 1.0, source: str = "") -> Cell:
    if stand.status == CHANGED:
        return Cell(status=CHANGED, note=stand.note)
    v = None if value is None else value / scale
    return Cell(
        v, status=stand.status if v is not None else CURRENT, note=stand.note if v is not None else "", source=source
    )


def _row(
    key: str, section: str, label: str, unit: str, ss: Sequence[MachineSummary], get: Getter, kind: str = "figure"
):
    return Row(key, section, label, unit, units.better(unit) if kind != "batch" else None, tuple(map(get, ss)), kind)


def _fact_rows(ss: Sequence[MachineSummary]) -> list[Row]:
    def llc(s: MachineSummary) -> str | None:
        return f"{s.llc_bytes / 2**20:.0f} MiB" if s.llc_bytes else None

    facts: list[tuple[str, Callable[[MachineSummary], str | None]]] = [
        ("machine", lambda s: s.machine),
        ("commit", lambda s: DATASHEET if s.datasheet_only else s.commit[:8]),
        ("cpu", lambda s: str(s.info.get("cpu") or "") or None),
        ("cores", lambda s: str(s.cores) if s.cores else None),
        ("last-level cache", llc),
        ("catalogue device", lambda s: s.device.name if s.device else None),
    ]
    return [Row(label, "", label, "", None, tuple(Cell(text=get(s)) for s in ss), "fact") for label, get in facts]


def _roof_rows(ss: Sequence[MachineSummary]) -> list[Row]:
    source = {FROM_MACHINE_FILE: FROM_MACHINE_FILE}
    rows = [
        _row("bandwidth", "roofs", "bandwidth (measured)", "GB/s", ss, lambda s: _figure(
            s.bandwidth, s.stand(BANDWIDTH_CEILING), 1e9, source.get(s.bandwidth_from, ""))),
        _row("peak", "roofs", "fp32 peak (measured)", "GFLOP/s", ss, lambda s: _figure(
            s.peak, s.stand(PEAK_CEILING), 1e9, source.get(s.peak_from, ""))),
    ]  # fmt: skip
    for level in sorted({lv for s in ss for lv in s.levels}, key=lambda lv: (lv == "DRAM", lv)):
        get = lambda s, lv=level: _figure(s.levels.get(lv), s.stand(LEVEL_BANDWIDTH))  # noqa: E731
        rows.append(_row(f"level/{level}", "roofs", f"{level} roof", "GB/s", ss, get))
    for dtype in sorted({d for s in ss for d in s.compute}):
        get = lambda s, d=dtype: _figure(s.compute.get(d), s.stand(COMPUTE_PEAK))  # noqa: E731
        rows.append(
            _row(f"compute/{dtype}", "roofs", f"{dtype} roof", "GOP/s" if dtype == "int8" else "GFLOP/s", ss, get)
        )
    both = (BANDWIDTH_CEILING, PEAK_CEILING)
    rows += [
        _row("ridge", "roofs", "ridge point", "FLOP/B", ss, lambda s: _figure(s.ridge, s.stand(*both))),
        _row("crossover/predicted", "roofs", "crossover batch, predicted", "batch", ss, lambda s: _figure(
            s.predicted_crossover, s.stand(*both) if s.measured else s.stand(PREDICTED_CROSSOVER)), "batch"),
        _row("crossover/observed", "roofs", "crossover batch, observed", "batch", ss, lambda s: _figure(
            next((v for _, v in s.observed_crossover), None), s.stand(OBSERVED_CROSSOVER)), "batch"),
        _row("datasheet/bandwidth", "roofs", "datasheet bandwidth reached", "fraction", ss, lambda s: _reached(
            s, s.bandwidth_fraction(), s.stand(BANDWIDTH_CEILING)), "fraction"),
        _row("datasheet/peak", "roofs", "datasheet fp32 peak reached", "fraction", ss, lambda s: _reached(
            s, s.peak_fraction(), s.stand(PEAK_CEILING)), "fraction"),
    ]  # fmt: skip
    for kind in ("single", "amortized"):
        get = lambda s, k=kind: _figure(s.overhead.get(k), s.stand(OVERHEAD.format(k)))  # noqa: E731
        rows.append(_row(f"overhead/{kind}", "roofs", f"call overhead, {kind}", "µs", ss, get))
    return rows


def _reached(s: MachineSummary, fraction: float | None, stand: Standing) -> Cell:
    if s.datasheet is None:
        return Cell()
    cell = _figure(fraction, stand)
    return dataclasses.replace(cell, note=f"of {s.datasheet.name}") if cell.value is not None and s.datasheet else cell


def _decode_rows(ss: Sequence[MachineSummary]) -> list[Row]:
    rows = []
    for regime, track in DECODE_TRACKS.items():
        section = f"decode GFLOP/s, {regime}"
        for n, b in sorted({k for s in ss for k in s.decode.get(regime, {})}):

            def get(s: MachineSummary, r=regime, key=(n, b), t=track) -> Cell:
                cell = _figure(s.decode.get(r, {}).get(key), s.stand(t))
                ci = s.intervals.get(r, {}).get(key)
                return (
                    dataclasses.replace(cell, low=ci[0], high=ci[1], interval_from=ci[2]) if ci and cell.value else cell
                )

            rows.append(_row(f"decode/{regime}/{n}/{b}", section, f"  n={n} batch={b}", "GFLOP/s", ss, get))
    for batch in sorted({b for s in ss for b in s.tokens}):
        get = lambda s, b=batch: _figure(s.tokens.get(b), s.stand(MODEL_TOKENS))  # noqa: E731
        rows.append(_row(f"tokens/{batch}", "a real model decoded", f"  batch={batch}", "tokens/s", ss, get))
    return rows


def _model_rows(ss: Sequence[MachineSummary], q: ModelQuestion | None) -> list[Row]:
    """``compare --model``: each machine's batch-1 GEMV fraction, then per batch its predicted tokens/s, its
    bound and what binds it (a datasheet column: the bound alone, marked §)."""
    if q is None:
        return []
    section = f"decode {q.title}"

    def gemv(s: MachineSummary) -> Cell:
        r = q.roofs.get(s.machine)
        return Cell(r.gemv_fraction if r else None, note=f"n={r.gemv_n}" if r and r.gemv_n else "")

    rows = [_row("model/gemv", section, "batch-1 GEMV, fraction of roof", "fraction", ss, gemv, "fraction")]
    for i, b in enumerate(q.batches):

        def figure(s: MachineSummary, what: str, i: int = i) -> Cell:
            answer = q.answers.get(s.machine)
            value = None if answer is None or answer[i].fits is False else getattr(answer[i], what)
            return Cell(value, source=DATASHEET if s.datasheet_only and value is not None else "")

        def binds(s: MachineSummary, i: int = i) -> Cell:
            answer = q.answers.get(s.machine)
            return Cell(text=None if answer is None else answer[i].bound_text)

        rows += [
            _row(f"model/{b}/predicted", section, f"  batch={b} predicted", "tokens/s", ss,
                 lambda s: figure(s, "tokens_per_s")),
            _row(f"model/{b}/bound", section, f"  batch={b} bound", "tokens/s", ss,
                 lambda s: figure(s, "bound_tokens_per_s")),
            Row(f"model/{b}/bound-by", section, f"  batch={b} bound by", "", None, tuple(map(binds, ss)), "fact"),
        ]  # fmt: skip
    return rows


def _headline(rows: Sequence[Row]) -> list[Row]:
    """The figures set per core, per $/hour and per watt: the two roofs, the DRAM decode at the largest
    size at batch 1 and at its largest batch, the model's tokens/s at its largest batch, and the
    predicted and bound tokens/s of ``compare --model`` at each batch."""
    by_key = {r.key: r for r in rows if any(c.value is not None for c in r.cells)}
    keys = ["bandwidth", "peak"]
    dram = [tuple(map(int, k.split("/")[2:])) for k in by_key if k.startswith("decode/DRAM/")]
    if dram:
        n = max(x for x, _ in dram)
        batches = sorted(b for x, b in dram if x == n)
        keys += [f"decode/DRAM/{n}/{b}" for b in dict.fromkeys((batches[0], batches[-1]))]
    tokens = sorted(int(k.split("/")[1]) for k in by_key if k.startswith("tokens/"))
    keys += [f"tokens/{tokens[-1]}"] if tokens else []
    keys += [k for k in by_key if k.startswith("model/") and k.endswith(("/predicted", "/bound"))]
    return [by_key[k] for k in keys if k in by_key]


def _label(row: Row) -> str:
    text = row.label.strip()
    if row.key.startswith("decode/"):
        return f"decode {row.key.split('/')[1]} {text}"
    if row.key.startswith("model/"):
        return f"decode {text}"
    return f"model {text}" if row.key.startswith("tokens/") else text.replace(" (measured)", "")


def _per_rows(rows: Sequence[Row], ss: Sequence[MachineSummary], costs: dict[str, Cost]) -> list[Row]:
    headline = _headline(rows)
    per: list[tuple[str, str, Callable[[MachineSummary], float | None]]] = [("core", "per core", lambda s: s.cores)]
    if any(c.dollars_per_hour for c in costs.values()):
        per.append(("dollar", "per $/hour", lambda s: costs.get(s.machine, Cost()).dollars_per_hour))
    if any(c.watts for c in costs.values()):
        per.append(("watt", "per W", lambda s: costs.get(s.machine, Cost()).watts))
    out = []
    for name, words, divisor in per:
        for row in headline:
            cells = tuple(c.scaled(divisor(s)) for c, s in zip(row.cells, ss, strict=True))
            out.append(Row(f"{row.key}/per-{name}", words, f"{_label(row)} {words}", f"{row.unit} {words}",
                           row.better, cells))  # fmt: skip
    return out


@dataclass
class Comparison:
    """The machines and the table of ``roofline compare``: one column per machine."""

    machines: list[MachineSummary]
    rows: list[Row]
    sources: list[str]
    baseline: str | None = None
    costs: dict[str, Cost] = field(default_factory=dict)
    question: ModelQuestion | None = None

    @property
    def names(self) -> list[str]:
        return [s.machine for s in self.machines]

    @property
    def measured(self) -> list[MachineSummary]:
        """The machines whose figures are measured (the datasheet columns left out): what the rooflines draw."""
        return [s for s in self.machines if not s.datasheet_only]

    def as_dict(self, warnings: Sequence[str] = ()) -> dict[str, object]:
        return {
            "results": self.sources[0] if len(self.sources) == 1 else self.sources,
            "baseline": self.baseline,
            "machines": [s.as_dict() for s in self.machines],
            "table": [r.as_dict(self.names) for r in self.rows],
            "costs": {m: dataclasses.asdict(c) for m, c in self.costs.items()},
            "model": None if self.question is None else self.question.as_dict(),
            "warnings": list(warnings),
        }


def _with_ratios(row: Row, base: int) -> Row:
    b = row.cells[base].value
    ratios = tuple(c.value / b if row.kind != "fact" and c.value is not None and b else None for c in row.cells)
    return dataclasses.replace(row, ratios=ratios)


def build_comparison(
    summaries: list[MachineSummary],
    sources: Sequence[str],
    baseline: str | None = None,
    costs: dict[str, Cost] | None = None,
    question: ModelQuestion | None = None,
) -> Comparison:
    """The table of ``summaries`` (with ``question``'s rows: ``compare --model``); BadInput for a ``baseline``
    that is not one of them."""
    names = [s.machine for s in summaries]
    if baseline is not None and baseline not in names:
        raise BadInput(f"unknown --baseline {baseline!r}: the machines compared are {', '.join(names)}")
    summaries = baseline_first(summaries, baseline)
    names = [s.machine for s in summaries]
    rows = [*_fact_rows(summaries), *_roof_rows(summaries), *_decode_rows(summaries), *_model_rows(summaries, question)]
    rows += _per_rows(rows, summaries, costs or {})
    rows = [r for r in rows if any(c.says_something() for c in r.cells)]
    if baseline is not None:
        rows = [_with_ratios(r, names.index(baseline)) for r in rows]
    return Comparison(summaries, rows, list(sources), baseline, dict(costs or {}), question)


def baseline_first(summaries: list[MachineSummary], baseline: str | None) -> list[MachineSummary]:
    """The baseline machine's column first, the others in their order."""
    return sorted(summaries, key=lambda s: s.machine != baseline) if baseline else summaries


# ---- text ------------------------------------------------------------------------------------


def cell_text(row: Row, cell: Cell) -> str:
    """A cell as the table prints it: the value, its interval, and its mark."""
    if cell.status == CHANGED:
        return MARKS[CHANGED]
    if cell.text is not None or row.kind == "fact":
        return cell.text if cell.text is not None else NA
    if cell.value is None:
        return NA
    if row.kind == "batch":
        text = units.batch(cell.value)
    elif row.kind == "fraction":
        text = f"{cell.value:.0%} {cell.note}".rstrip()
    else:
        text = sig(cell.value)
    spread = units.interval(cell.value, cell.low, cell.high)
    text += f" {spread}" if spread else ""
    mark = MARKS.get(cell.source) or MARKS.get(cell.status, "")
    return f"{text} {mark}" if mark else text


def direction_mark(better: str | None) -> str:
    return {"higher": "↑", "lower": "↓"}.get(better or "", "")


def legend(cmp: Comparison) -> list[str]:
    """The lines under the table: what its marks and intervals mean, and the figures not mixed."""
    cells = [c for r in cmp.rows for c in r.cells]
    lines = ["↑ higher is better, ↓ lower is better"]
    if any(c.low is not None for c in cells):
        froms = sorted({c.interval_from for c in cells if c.interval_from})
        lines.append(f"± the interval of a decode point's median from its asv time_ twin ({'; '.join(froms)})")
    if cmp.baseline:
        lines.append(f"ratio: each machine's figure ÷ {cmp.baseline}'s")
    if any(c.source == FROM_MACHINE_FILE for c in cells):
        lines.append("† from the machine file (`roofline machine`), not from this commit's ceilings benchmarks")
    if any(c.status == OTHER_VERSION for c in cells):
        lines.append("‡ recorded by another version of the benchmark: the same quantity (name, parameters, unit)")
    lines += _question_legend(cmp, cells)
    changed = {}
    for s in cmp.machines:
        for name, st in sorted(s.standings.items()):
            if st.status == CHANGED and name in TABLED:
                changed.setdefault(st.note, []).append(f"{s.machine}'s {name.split('.', 1)[1]}")
    for note, where in changed.items():
        lines.append(f"≠ not tabled beside the others, its meaning changed: {', '.join(where)} ({note})")
    then: dict[tuple[str, str], list[str]] = {}
    for s in cmp.machines:
        for name, st in sorted(s.standings.items()):
            if st.then and st.status != CHANGED and name in TABLED:
                then.setdefault((s.machine, st.then), []).append(name.split(".", 1)[1])
    for (machine, note), names in then.items():
        lines.append(f"as recorded by {machine}: {', '.join(names)} measured {note}")
    return lines


def _question_legend(cmp: Comparison, cells: Sequence[Cell]) -> list[str]:
    """What the rows of ``compare --model`` rest on, and why a machine has none."""
    q = cmp.question
    if q is None:
        return []
    lines = [
        f"decode {q.title}: the bound is roofline decode's on each machine's recorded roofs (the DRAM roof, the "
        "format's compute roof); predicted: the bound × the run's batch-1 GEMV fraction where the bandwidth binds "
        "the step (none where arithmetic binds); a batch that does not fit the machine's memory has neither"
    ]
    if any(c.source == DATASHEET for c in cells):
        lines.append("§ a catalogue device's datasheet figures (roofline specs), nothing measured: its bound alone")
    lines += [f"no decode figures for {m}: {why}" for m, why in q.reasons.items()]
    return lines


def format_table(cmp: Comparison) -> str:
    """Machines as columns, one row per figure, sections as headings; the legend below."""
    names = cmp.names
    ratio_cols = [i for i, m in enumerate(names) if cmp.baseline and m != cmp.baseline]
    header = ["machine", ""]
    for i, m in enumerate(names):
        header += [m, "ratio"] if i in ratio_cols else [m]
    out: list[list[str]] = [header]
    section = ""
    for row in cmp.rows[1:] if cmp.rows and cmp.rows[0].key == "machine" else cmp.rows:
        if row.section != section:
            section = row.section
            out.append([section])
        unit = f"{direction_mark(row.better)} {row.unit}".strip() if row.kind != "fact" else ""
        line = [row.label, unit]
        for i, cell in enumerate(row.cells):
            line.append(cell_text(row, cell))
            if i in ratio_cols:
                line.append(units.ratio(row.ratios[i]) if row.ratios else "")
        out.append(line)
    lines = table(out, right=set(range(2, len(header))))
    lines.insert(1, "-" * max(map(len, lines)))
    return "\n".join(lines + legend(cmp))


def format_summaries(summaries: list[MachineSummary]) -> str:
    """The table of ``summaries`` without a baseline or prices (as :func:`format_table`)."""
    return format_table(build_comparison(summaries, []))
