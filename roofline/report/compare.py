"""``roofline compare``: machines side by side from an asv results directory (the gate: :mod:`.gate`).

:func:`summarize` gives per machine its measured ceilings, ridge point, crossover batches,
decode GFLOP/s per (n, batch) and, for a machine that matches a catalogue CPU, the fraction of
the datasheet reached. Missing benchmarks read as n/a; nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import BadInput
from ..model.arithmetic import attainable, crossover_batch, gemm_intensity
from ..model.catalogue import lookup, match_host
from ..model.dtypes import SUITE
from ..model.hardware import Hardware
from ..suite.machine_file import read_measured
from ..suite.names import BANDWIDTH_CEILING, DECODE_TRACKS, OBSERVED_CROSSOVER, PEAK_CEILING, PREDICTED_CROSSOVER
from ..suite.results import MachineResults, Results, Run
from ..units import NA, si, sig, table

#: The ceilings are measured on the CPU: a datasheet is compared only for these catalogue kinds.
BANDWIDTH_KINDS = ("cpu", "soc")
PEAK_KINDS = ("cpu",)  # an Apple SoC's published FP32 rate is its GPU's
FROM_MACHINE_FILE = "machine file"


def _only(run: Run, benchmark: str, **params: object) -> float | None:
    """The value at ``params``, or the single value of a benchmark with one parameter combination."""
    if params:
        return run.value(benchmark, **params)
    points = [v for _, v in run.points(benchmark) if v is not None]
    return points[0] if len(points) == 1 else None


@dataclass
class MachineSummary:
    """One machine at one commit, as ``roofline compare`` tables it. Rates in B/s and FLOP/s."""

    machine: str
    commit: str
    info: dict[str, object]
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
                    "datasheet_roofline_fraction": self.datasheet_roofline_fraction(n, b, v),
                }
                for (n, b), v in sorted(points.items())
            ]
            for regime, points in self.decode.items()
        }
        return {
            "machine": self.machine,
            "commit": self.commit,
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


def summarize_run(machine: MachineResults, commit: str, warnings: list[str]) -> MachineSummary:
    """One machine's summary at ``commit`` (which it must have results for)."""
    run = machine.runs[commit]
    s = MachineSummary(machine=machine.name, commit=commit, info=dict(machine.info))
    s.device, s.device_note = find_device(machine, warnings)
    if s.device is not None and s.device.extra.get("kind") in BANDWIDTH_KINDS:
        s.datasheet = s.device
    else:
        s.datasheet = match_host({"cpu": machine.info.get("cpu")})
    saved = read_measured({**machine.info, **run.params})  # the keys as they were when this commit ran
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
    for regime, track in DECODE_TRACKS.items():
        points = {}
        cls = track.rsplit(".", 1)[0]
        for params, value in run.points(track):
            n, batch = params.get("n"), params.get("batch")
            if not isinstance(n, int) or not isinstance(batch, int):
                continue
            others = (run.value(f"{cls}.{t}", n=n, batch=batch) for t in ("track_bandwidth", "time_decode_step"))
            if value is None and all(v is None for v in others):
                continue  # no figure at all: a combination of the fixed grid this run did not choose
            points[(n, batch)] = value
        if points:
            s.decode[regime] = points
        elif run.points(track):
            warnings.append(f"machine {machine.name}: {track} has no (n, batch) parameters; not tabled")
    return s


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
        summaries.append(summarize_run(m, full, warnings))
    if not summaries:
        raise BadInput(problems[0] if problems else "nothing to compare")
    return summaries, warnings + problems


def format_summaries(summaries: list[MachineSummary]) -> str:
    """Machines as columns, one row per figure; † marks figures read from the machine file."""

    def mark(value: str, source: str) -> str:
        return f"{value} †" if source == FROM_MACHINE_FILE and value != NA else value

    def reached(s: MachineSummary, fraction: float | None) -> str:
        return NA if s.datasheet is None else f"{fraction:.0%} of {s.datasheet.name}" if fraction is not None else NA

    figures = {
        "machine": lambda s: s.machine,
        "commit": lambda s: s.commit[:8],
        "catalogue device": lambda s: s.device.name if s.device else NA,
        "bandwidth (measured)": lambda s: mark(si(s.bandwidth, "B/s"), s.bandwidth_from),
        "fp32 peak (measured)": lambda s: mark(si(s.peak, "FLOP/s"), s.peak_from),
        "ridge point": lambda s: f"{sig(s.ridge)} FLOP/B" if s.ridge else NA,
        "crossover batch, predicted": lambda s: sig(s.predicted_crossover),
        "crossover batch, observed": lambda s: ", ".join(sig(v) for _, v in s.observed_crossover) or NA,
        "datasheet bandwidth reached": lambda s: reached(s, s.bandwidth_fraction()),
        "datasheet fp32 peak reached": lambda s: reached(s, s.peak_fraction()),
    }
    rows = [[label, *map(cell, summaries)] for label, cell in figures.items()]
    for regime in DECODE_TRACKS:
        keys = sorted({k for s in summaries for k in s.decode.get(regime, {})})
        rows.append([f"decode GFLOP/s, {regime}", *("" for _ in summaries)])
        if not keys:
            rows.append(["  (no results)", *(NA for _ in summaries)])
        for n, b in keys:
            rows.append([f"  n={n} batch={b}", *(sig(s.decode.get(regime, {}).get((n, b))) for s in summaries)])
    lines = table(rows, right=set(range(1, len(summaries) + 1)))
    lines.insert(1, "-" * max(map(len, lines)))
    if any(FROM_MACHINE_FILE in (s.bandwidth_from, s.peak_from) for s in summaries):
        lines.append("† from the machine file (`roofline machine`), not from this commit's ceilings benchmarks")
    return "\n".join(lines)
