"""``roofline compare``: machines side by side from asv results folders (the gate: :mod:`.gate`).

:func:`build_comparison` sets the machines' summaries (:func:`roofline.report.summary.summarize`) in one
table, one column per machine (the Phoronix Test Suite's result file and asv_spyglass's ``compare-many``
were the models): each figure with the way it reads better, the interval of the median where asv recorded
samples, a ratio to a baseline machine, and per core, per $/hour and per watt where the user's price table
says. A value from another version of its benchmark is shown, marked ‡; one whose meaning changed is not
shown, marked ≠, and the table says what it was. Rows no machine has a figure for are left out; nothing is
written.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from .. import units
from ..errors import BadInput
from ..suite.names import (
    BANDWIDTH_CEILING,
    COMPUTE_PEAK,
    DECODE_TRACKS,
    LEVEL_BANDWIDTH,
    MODEL_TOKENS,
    OBSERVED_CROSSOVER,
    OVERHEAD,
    PEAK_CEILING,
    PREDICTED_CROSSOVER,
)
from ..units import NA, sig, table
from .costs import Cost
from .llm_estimate import ModelQuestion
from .summary import CHANGED, CURRENT, FROM_MACHINE_FILE, OTHER_VERSION, MachineSummary, Standing

#: The source of a catalogue device's figures set beside the machines (``--hardware-also``).
DATASHEET = "datasheet"
#: The benchmarks the table shows a figure of (the time_ twins give intervals only).
TABLED = (BANDWIDTH_CEILING, PEAK_CEILING, OBSERVED_CROSSOVER, *DECODE_TRACKS.values())
#: The marks of the text table.
MARKS = {OTHER_VERSION: "‡", CHANGED: "≠", FROM_MACHINE_FILE: "†", DATASHEET: "§"}


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
