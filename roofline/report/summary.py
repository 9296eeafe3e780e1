"""One machine's run as ``roofline compare``, its page, the gate, the plot and ``decode --hardware`` read it.

:func:`summarize` gives per machine its measured ceilings, ridge point, crossover batches, memory
and compute roofs, call overhead, decode GFLOP/s per (n, batch) and a real model's tokens/s, and,
for a machine that matches a catalogue CPU, the fraction of the datasheet reached. The figures are the
run's :class:`~roofline.report.cpu.Report` (:func:`roofline.report.from_results.report_of_run`, the one
reader of a recorded run); a summary adds what comparing needs: each benchmark's version, the intervals
of asv's samples, the machine file where the run has no ceilings, and the catalogue device.

Each value keeps the version of the benchmark that recorded it. Against the reference suite (each
benchmark's latest version, :func:`roofline.suite.results.combine`) a value is the current
quantity, the same quantity from another version (:data:`OTHER_VERSION`) or a figure whose meaning
changed (:data:`CHANGED`, :data:`roofline.suite.names.RETIRED_MEANINGS`: left out of the summary).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import BadInput
from ..model.arithmetic import attainable, gemm_intensity, measured_ridge, predicted_crossover
from ..model.catalogue import lookup, match_host
from ..model.dtypes import SUITE
from ..model.hardware import Hardware
from ..model.intervals import median_ci
from ..suite.machine_file import read_measured
from ..suite.names import (
    BANDWIDTH_CEILING,
    DECODE_CLASSES,
    DECODE_TRACKS,
    OBSERVED_CROSSOVER,
    OVERHEAD,
    PEAK_CEILING,
    PREDICTED_CROSSOVER,
)
from ..suite.results import Benchmark, MachineResults, Results, Run, meaning
from .cpu import Report
from .from_results import report_of_run

#: The ceilings are measured on the CPU: a datasheet is compared only for these catalogue kinds.
BANDWIDTH_KINDS = ("cpu", "soc")
PEAK_KINDS = ("cpu",)  # an Apple SoC's published FP32 rate is its GPU's
FROM_MACHINE_FILE = "machine file"
#: How a recorded value stands against the reference suite.
CURRENT, OTHER_VERSION, CHANGED = "current", "other version", "changed meaning"


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
    """One machine at one commit, as ``roofline compare`` tables it, read from the run's report. Rates in B/s
    and FLOP/s; the ridge and the predicted crossover are :func:`~roofline.model.arithmetic.measured_ridge`'s and
    :func:`~roofline.model.arithmetic.predicted_crossover`'s, as the report's."""

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
        """Measured ridge point in FLOP/byte (:func:`~roofline.model.arithmetic.measured_ridge`)."""
        return measured_ridge(self.peak, self.bandwidth)

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


def _ceilings(s: MachineSummary, report: Report, run: Run, saved: dict[str, float | None]) -> None:
    """The DRAM roof and the fp32 peak of the run's report (else the machine file's), its crossovers."""
    roofs = report.roofs
    if roofs is not None and roofs.roof:
        s.bandwidth, s.bandwidth_from = roofs.roof, f"{BANDWIDTH_CEILING} ({roofs.kernel})"
    elif saved["measured_bandwidth"] is not None:
        s.bandwidth, s.bandwidth_from = saved["measured_bandwidth"], FROM_MACHINE_FILE
    peak = roofs.peaks.get(SUITE.numpy) if roofs is not None else None
    if peak is not None:
        s.peak, s.peak_from = peak, f"{PEAK_CEILING} ({SUITE.numpy})"
    elif saved["measured_peak_fp32"] is not None:
        s.peak, s.peak_from = saved["measured_peak_fp32"], FROM_MACHINE_FILE
    s.observed_crossover = run.points(OBSERVED_CROSSOVER)
    # From the ceilings tabled beside it, as the report computes it; the recorded track only without them.
    predicted = _only(run, PREDICTED_CROSSOVER)
    if s.measured is not None:
        s.predicted_crossover = predicted_crossover(s.peak, s.bandwidth, SUITE.bytes)
        s.predicted_from = "measured ceilings, float32 weights"
    elif predicted is not None:
        s.predicted_crossover, s.predicted_from = predicted, PREDICTED_CROSSOVER


def _roofs(s: MachineSummary, report: Report, run: Run) -> None:
    """The memory levels' roofs (:meth:`~roofline.suite.results.Run.level_gbps`), the compute roofs, the
    overhead (µs, as recorded) and a real model's tokens/s."""
    s.levels = run.level_gbps()
    s.compute = {c.dtype: c.gflops for c in report.hierarchy.compute} if report.hierarchy is not None else {}
    for kind in ("single", "amortized"):
        value = run.value(OVERHEAD.format(kind), backend="numpy")
        if value is not None:
            s.overhead[kind] = value
    s.tokens = {m.batch: m.tokens_per_s for m in report.model_decode}


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


def _decode(s: MachineSummary, report: Report, run: Run, full: Run, warnings: list[str]) -> None:
    """The report's decode points' GFLOP/s per regime, each with its interval from its time_ twin's samples."""
    for (regime, track), points in zip(DECODE_TRACKS.items(), (report.decode, report.cache_resident), strict=True):
        twin = f"{DECODE_CLASSES[regime]}.time_decode_step"
        names = full.param_names.get(twin, ())
        for p in points:
            s.decode.setdefault(regime, {})[(p.n, p.batch)] = p.gflops
            rel = twin_interval(run, twin, tuple({"n": p.n, "batch": p.batch}.get(k) for k in names))
            if p.gflops is not None and rel is not None and meaning(twin, full.versions.get(twin)) is None:
                s.intervals.setdefault(regime, {})[(p.n, p.batch)] = (p.gflops * rel[0], p.gflops * rel[1], rel[2])
        if not points and run.points(track):
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
    report = report_of_run(run, machine.info, machine.name)
    _ceilings(s, report, run, read_measured({**machine.info, **run.params}))  # the keys as they were when it ran
    _roofs(s, report, run)
    _decode(s, report, run, full, warnings)
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
