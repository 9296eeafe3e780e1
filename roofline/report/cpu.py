"""The roofline report: the lab's H100 arithmetic, then this machine measured.

A :class:`Report` holds what was measured (ceilings, decode points, the sweep and its knee, the overhead) and
the guards' warnings; :meth:`Report.as_dict` is its JSON (schema ``roofline.report/1``, keys documented in the
README and stable within a schema) and :func:`roofline.report.text.render_text` its text. :func:`build_report`
makes one from typed results: a run's state (:mod:`roofline.report.from_run`, the live report's
:func:`roofline.suite.live.measure_live`) or what asv recorded (:mod:`roofline.report.from_results`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property

from ..model import guards
from ..model.arithmetic import (
    arithmetic_intensity,
    attainable,
    bound,
    bound_at,
    crossover_batch,
    gemm_intensity,
    measured_ridge,
    predicted_crossover,
    ridge_point,
)
from ..model.conditions import Conditions
from ..model.dtypes import SUITE, by_numpy
from ..model.engine_bound import KERNEL_PATH_CODES
from ..model.hardware import H100, Hardware
from ..model.hierarchy import (
    CEILING_KERNEL,
    DRAM,
    MEASUREMENT_ERROR,
    POOL_LLC_MULTIPLE,
    ComputeRoof,
    Hierarchy,
    LevelRoof,
    OwnRoof,
    Refereed,
    refereed_levels,
    roof_kernel,
)
from ..model.knee import Knee
from ..model.llm_estimate import bound_fraction
from ..model.microarch import MICROARCH, Clock, limits
from ..model.regimes import overhead_bound_n

SCHEMA = "roofline.report/1"
LAB_BATCHES = (1, 8, 64, 512)


def lab_section(hw: Hardware = H100, dtype: str = "bf16", bytes_per_param: float = 2) -> dict[str, object]:
    """The lab's printout as data: ridge, crossover, intensity and bound per batch."""
    return {
        "hardware": hw.name,
        "dtype": dtype,
        "peak_flops": hw.peak(dtype),
        "bandwidth": hw.bandwidth,
        "source": hw.source,
        "ridge_flop_per_byte": ridge_point(hw, dtype),
        "crossover_batch": crossover_batch(hw, bytes_per_param, dtype),
        "batches": [
            {
                "batch": b,
                "intensity": arithmetic_intensity(b, bytes_per_param),
                "bound": bound_at(hw, b, bytes_per_param, dtype),
            }
            for b in LAB_BATCHES
        ],
    }


@dataclass(frozen=True)
class Point:
    """One decode step (n, batch) as measured live or recorded by asv; None where nothing was recorded.

    ``twin_seconds``: what asv's ``time_`` twin of the step recorded, seconds per step (results only), and
    ``twin_spread`` the interquartile range of its samples ÷ that median.
    """

    n: int
    batch: int
    regime: str
    seconds: float | None
    gflops: float | None
    gbps: float | None
    dtype: str = SUITE.numpy
    spread: float | None = None
    single_call_seconds: float | None = None
    pool_bytes: int | None = None
    twin_seconds: float | None = None
    twin_spread: float | None = None

    @classmethod
    def of(cls, m: object) -> Point:
        """The point of a measurement that has its fields (a :class:`~roofline.measure.step.DecodeMeasurement`)."""
        return cls(**{f.name: getattr(m, f.name) for f in fields(cls) if not f.name.startswith("twin_")})

    @property
    def twin_ratio(self) -> float | None:
        """asv's ``time_`` twin ÷ the measurement's time per step (None without both)."""
        return self.twin_seconds / self.seconds if self.twin_seconds and self.seconds else None

    @property
    def intensity(self) -> float:
        """Exact FLOP per byte moved (W, X and Y)."""
        return gemm_intensity(self.n, self.batch, by_numpy(self.dtype).bytes)

    @property
    def working_bytes(self) -> float | None:
        """What the step keeps touching: the weight pool it rotates through (None when not recorded: a
        DRAM-sized pool by construction), or for a cache-resident step its one W, X and Y."""
        if self.regime == "cache":
            return by_numpy(self.dtype).bytes * (self.n * self.n + 2 * self.n * self.batch)
        return self.pool_bytes


@dataclass(frozen=True)
class ModelPoint:
    """A real model's decode step at one batch (asv's models.ModelDecode), in tokens/s; None where the
    run recorded nothing (the batch was skipped). Bound ÷ measured time per step is tokens/s ÷ the bound's."""

    batch: int
    tokens_per_s: float | None
    lean_tokens_per_s: float | None
    bound_tokens_per_s: float | None
    #: why it has no figure, where the run said (roofline.suite.notes)
    reason: str | None = None

    def fraction(self, tokens_per_s: float | None) -> float | None:
        """The bound's time per step ÷ the measured one (each a batch ÷ its tokens/s)."""
        if not tokens_per_s or not self.bound_tokens_per_s:
            return None
        return bound_fraction(1.0 / self.bound_tokens_per_s, 1.0 / tokens_per_s)

    def as_dict(self) -> dict[str, object]:
        return {
            "batch": self.batch,
            "tokens_per_s": self.tokens_per_s,
            "lean_tokens_per_s": self.lean_tokens_per_s,
            "bound_tokens_per_s": self.bound_tokens_per_s,
            "fraction": self.fraction(self.tokens_per_s),
            "lean_fraction": self.fraction(self.lean_tokens_per_s),
        }


@dataclass(frozen=True)
class EnginePoint:
    """An engine's decode of a GGUF at one (format, batch) (asv's engines classes), in tokens/s; None where the
    run recorded nothing. ``counter_tokens_per_s`` is the engine's own eval counters' figure."""

    engine: str
    format: str
    batch: int
    tokens_per_s: float | None
    counter_tokens_per_s: float | None
    bound_tokens_per_s: float | None
    predicted_tokens_per_s: float | None
    #: the kernels its weights ran on, as asv records it (model.engine_bound.KERNEL_PATH_CODES); None unrecorded
    kernel_path: float | None = None
    #: the bytes a step reads (weights and KV); None unrecorded
    step_bytes: float | None = None
    #: those bytes ÷ the step's time, GB/s
    effective_gbps: float | None = None
    #: the format's own figures, recorded at batch 1: its engine roof (GFLOP/s), its crossover batch
    engine_roof: float | None = None
    predicted_crossover: float | None = None
    observed_crossover: float | None = None
    #: why it has no figure, where the run said (roofline.suite.notes)
    reason: str | None = None

    @property
    def kernels(self) -> str | None:
        """The kernel path by name ("AMX", "CPU repack", "plain"); None where the run did not record it."""
        names = {code: name for name, code in KERNEL_PATH_CODES.items()}
        return None if self.kernel_path is None else names.get(self.kernel_path, f"path {self.kernel_path:g}")

    def cache_sized(self, llc_bytes: float | None) -> bool:
        """Whether a step reads less than the DRAM rule (:data:`POOL_LLC_MULTIPLE` × the LLC): partly cache-resident."""
        return bool(self.step_bytes and llc_bytes and self.step_bytes < POOL_LLC_MULTIPLE * llc_bytes)

    @property
    def fraction(self) -> float | None:
        """The bound's time per step ÷ the measured one (each a batch ÷ its tokens/s)."""
        if not self.tokens_per_s or not self.bound_tokens_per_s:
            return None
        return bound_fraction(1.0 / self.bound_tokens_per_s, 1.0 / self.tokens_per_s)

    @property
    def prediction_error(self) -> float | None:
        """Predicted ÷ measured − 1."""
        if not self.tokens_per_s or self.predicted_tokens_per_s is None:
            return None
        return self.predicted_tokens_per_s / self.tokens_per_s - 1

    def as_dict(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "format": self.format,
            "batch": self.batch,
            "tokens_per_s": self.tokens_per_s,
            "counter_tokens_per_s": self.counter_tokens_per_s,
            "bound_tokens_per_s": self.bound_tokens_per_s,
            "fraction": self.fraction,
            "predicted_tokens_per_s": self.predicted_tokens_per_s,
            "prediction_error": self.prediction_error,
            "kernel_path": self.kernels,
            "step_bytes": self.step_bytes,
            "effective_gbps": self.effective_gbps,
            "engine_roof_gflops": self.engine_roof,
            "predicted_crossover": self.predicted_crossover,
            "observed_crossover": self.observed_crossover,
            "reason": self.reason,
        }


#: The referees' kernels as the report names them (likwid-bench picks the widest ISA of the machine that ran it).
LOAD_REFEREE = "likwid-bench load"
PEAK_REFEREE = "likwid-bench peakflops"

#: The level of a cache-resident point where the report knows no cache sizes (asv results without
#: ``llc_bytes``): it was sized to fit the last-level cache, whose roof was not measured.
UNKNOWN_CACHE = "LLC"


@dataclass(frozen=True)
class Roofs:
    """Measured ceilings: bandwidth per STREAM kernel (B/s) and GEMM rate per numpy dtype (FLOP/s), each
    the median of its passes (asv results recorded before that hold the best pass).

    ``spreads``: the median's confidence interval, high ÷ low, per kernel, where it was measured live.
    ``referee``: likwid-bench's load kernel (B/s) at DRAM, and ``peak_referees`` its FMA peak (FLOP/s)
    per numpy dtype, timed after each round of the run's ceilings, where the run had them (asv
    ``ceilings.BandwidthReferee``, ``ceilings.PeakReferee``); ``level_referees``: its load kernel (B/s)
    inside each cache level. Each roof is the faster of its own figure and its referee's
    (:class:`~roofline.model.hierarchy.Refereed`).
    """

    bandwidth: Mapping[str, float]
    peaks: Mapping[str, float]
    spreads: Mapping[str, float] = field(default_factory=dict)
    referee: float | None = None
    peak_referees: Mapping[str, float] = field(default_factory=dict)
    level_referees: Mapping[str, float] = field(default_factory=dict)
    #: each peak's GEMM with its size where the run said (live: 'numpy BLAS GEMM 2048³'); asv records none
    peak_kernels: Mapping[str, str] = field(default_factory=dict)

    def peak_kernel(self, dtype: str, unknown: str = "numpy BLAS GEMM") -> str:
        """The GEMM whose rate is ``dtype``'s peak, with its size where known, else ``unknown``."""
        return self.peak_kernels.get(dtype) or unknown

    def refereed(self) -> list[Refereed]:
        """The DRAM roof and each GEMM peak beside its referee (GB/s, GFLOP/s), where the run had one."""
        out = []
        if self.roof and self.referee:
            out.append(Refereed(DRAM, self.roof / 1e9, f"STREAM {self.kernel}", self.referee / 1e9, LOAD_REFEREE))
        for d, p in self.peak_referees.items():
            if self.peaks.get(d):
                own = self.peak_kernel(d)
                out.append(Refereed(by_numpy(d).name, self.peaks[d] / 1e9, own, p / 1e9, PEAK_REFEREE))
        return out

    def best(self) -> tuple[float | None, dict[str, float]]:
        """The bandwidth roof and the peaks (B/s, FLOP/s by numpy dtype), each the faster of it and its referee."""
        roof = max(self.roof, self.referee or 0.0) if self.roof else None
        return roof, {d: max(p, self.peak_referees.get(d) or 0.0) for d, p in self.peaks.items()}

    @property
    def kernel(self) -> str | None:
        """The kernel whose rate is the bandwidth roof (:func:`~roofline.model.hierarchy.roof_kernel`)."""
        return roof_kernel(self.bandwidth)

    @property
    def roof(self) -> float | None:
        """The bandwidth roof: the rate of :attr:`kernel`."""
        kind = self.kernel
        return self.bandwidth.get(kind) if kind else None

    def as_dict(self) -> dict[str, object]:
        roof = self.roof
        return {
            "bandwidth_gbps": {k: v / 1e9 for k, v in self.bandwidth.items()},
            "bandwidth_kernel": self.kernel,
            "bandwidth_roof_gbps": roof / 1e9 if roof else None,
            "peak_gflops": {d: p / 1e9 for d, p in self.peaks.items()},
            "ridge_flop_per_byte": {d: measured_ridge(p, roof) for d, p in self.peaks.items()} if roof else {},
            "referee_gbps": self.referee / 1e9 if self.referee else None,
            "roof_over_referee": roof / self.referee if roof and self.referee else None,
            "peak_referee_gflops": {d: p / 1e9 for d, p in self.peak_referees.items()},
            "peak_over_referee": {d: self.peaks[d] / p for d, p in self.peak_referees.items() if self.peaks.get(d)},
            **({"bandwidth_spread": dict(self.spreads)} if self.spreads else {}),
        }


@dataclass(frozen=True)
class Row:
    """A :class:`Point` on this machine's roofline: attainable rate, fraction reached, bound (None without roofs).

    ``attainable_gflops``, ``roofline_fraction`` and ``bound`` divide by the DRAM bandwidth roof and the
    fp32 GEMM peak (``ceilings``); ``own`` is the roof the point lives under: the bandwidth of the level
    its working set fits in and its dtype's compute roof (:class:`~roofline.model.hierarchy.OwnRoof`).
    """

    point: Point
    attainable_gflops: float | None
    roofline_fraction: float | None
    bound: str | None
    own: OwnRoof | None = None

    def as_dict(self) -> dict[str, object]:
        row = {k: v for k, v in asdict(self.point).items() if k != "pool_bytes"}
        row.update(intensity=self.point.intensity)
        row.update({k: v for k, v in asdict(self).items() if k not in ("point", "own")})
        own = self.own
        row.update(
            roof=own.level if own else None,
            roof_gbps=own.gbps if own else None,
            roof_attainable_gflops=own.attainable_gflops if own else None,
            roof_fraction=own.fraction if own else None,
            roof_bound=own.bound if own else None,
            measurement_error=own.error if own else False,
        )
        return row


@dataclass(frozen=True)
class Report:
    """One machine's roofline: what was measured, where it came from, and the guards' warnings.

    ``sweep``: the points of a batch sweep at ``sweep_n`` (live) and ``knee`` the run's fit of them
    (:class:`roofline.suite.run.Crossover`); ``recorded_crossover``: the knee asv recorded (the batch alone).
    ``overhead_seconds`` and ``overhead_single_seconds``: a tiny step back to back and alone (the third roof).
    ``conditions``: how the machine was while it measured (a contended run says so first).
    """

    facts: Mapping[str, object]
    roofs: Roofs | None = None
    decode: tuple[Point, ...] = ()
    cache_resident: tuple[Point, ...] = ()
    sweep_n: int | None = None
    sweep: tuple[Point, ...] = ()
    knee: Knee | None = None
    recorded_crossover: float | None = None
    overhead_seconds: float | None = None
    overhead_single_seconds: float | None = None
    source: str = "measured live"
    datasheet: Hardware | None = None
    dtype: str = SUITE.numpy
    warnings: tuple[str, ...] = ()
    hierarchy: Hierarchy | None = None
    conditions: Conditions | None = None
    model_decode: tuple[ModelPoint, ...] = ()
    engine_decode: tuple[EnginePoint, ...] = ()

    @property
    def hardware(self) -> Hardware | None:
        """This machine as measured: the bandwidth roof and every GEMM peak (None without both)."""
        if self.roofs is None or not self.roofs.roof or not self.roofs.peaks:
            return None
        roof, best = self.roofs.best()
        peaks = {by_numpy(d).name: p for d, p in best.items()}
        return Hardware(str(self.facts.get("host") or "this machine"), peaks, roof or 0.0, source="measured")

    @property
    def own_hardware(self) -> Hardware | None:
        """This machine as the run's own kernels measured it, no referee: the STREAM roof and the GEMM peaks,
        which the predicted crossover divides (as asv records it and ``roofline compare`` computes it)."""
        if self.roofs is None or not self.roofs.roof or not self.roofs.peaks:
            return None
        peaks = {by_numpy(d).name: p for d, p in self.roofs.peaks.items()}
        return Hardware(str(self.facts.get("host") or "this machine"), peaks, self.roofs.roof, source="measured")

    @property
    def refereed(self) -> list[Refereed]:
        """Every roof beside its referee in the same run: the cache levels' sweep, DRAM, the GEMM peaks."""
        if self.roofs is None:
            return []
        h, refs = self.hierarchy or Hierarchy(), self.roofs.level_referees
        levels = [
            Refereed(r.level, r.gbps, r.kernel, refs[r.level] / 1e9, LOAD_REFEREE)
            for r in h.levels
            if r.level != DRAM and refs.get(r.level)
        ]
        return levels + self.roofs.refereed()

    @property
    def clock(self) -> Clock | None:
        """The clock the machine's facts give (``cpu_clock``: the TSC's or the nominal one), None where not known."""
        return Clock.parse(self.facts.get("cpu_clock"))

    @property
    def limits(self) -> list[tuple[str, float, float]]:
        """Each roof that has a physical limit here: (roof, its figure, the limit), GB/s or GFLOP/s; [] where the
        facts do not say the core (``cpu_core``, one of :data:`~roofline.model.microarch.MICROARCH`) or the clock."""
        cores, clock = self.facts.get("num_cpu"), self.clock
        if clock is None or not isinstance(cores, int):
            return []
        h = self.roofs_by_level
        figures = {r.level: r.gbps for r in h.levels} | {c.dtype: c.gflops for c in h.compute}
        most = limits(str(self.facts.get("cpu_core") or ""), cores, clock.ghz)
        return [(roof, figures[roof], limit) for roof, limit in most.items() if figures.get(roof)]

    def limits_dict(self) -> dict[str, object] | None:
        """:attr:`limits` with the core and the clock, for the JSON; None where there are none."""
        if not (rows := self.limits) or (clock := self.clock) is None:
            return None
        return {
            "core": MICROARCH[str(self.facts["cpu_core"])].name,
            "cores": self.facts.get("num_cpu"),
            "clock_ghz": clock.ghz,
            "clock_source": clock.source,
            "source": MICROARCH[str(self.facts["cpu_core"])].source,
            "roofs": [{"roof": r, "figure": f, "limit": m, "roof_over_limit": f / m} for r, f, m in rows],
        }

    @cached_property
    def roofs_by_level(self) -> Hierarchy:
        """The measured hierarchy, completed by the STREAM DRAM roof and the GEMM peaks where it lacks them.

        The STREAM roof is the DRAM level's whenever it is read (the figure the ridge, the predicted
        crossover and asv's roofline fraction divide by: one DRAM roof per run); a sweep's read-only
        DRAM plateau stands in only beside add, the roof of results from before read, which also writes.
        """
        h = self.hierarchy or Hierarchy()
        levels, compute = list(h.levels), list(h.compute)
        roofs, swept = self.roofs, h.level(DRAM)
        refereed = {r.roof: r for r in self.refereed}
        if roofs is not None and roofs.roof and (swept is None or roofs.kernel == CEILING_KERNEL):
            ram = self.facts.get("ram_bytes")
            size = swept.bytes if swept is not None else ram if isinstance(ram, int) else None
            levels = [r for r in levels if r.level != DRAM]
            dram = refereed.get(DRAM)
            gbps, kernel = (dram.figure, dram.kernel) if dram else (roofs.roof / 1e9, f"STREAM {roofs.kernel}")
            levels.append(LevelRoof(DRAM, size, gbps, kernel))
        if roofs is not None:  # the caches' (DRAM's is above, beside the STREAM roof)
            caches_refs = {k: v / 1e9 for k, v in roofs.level_referees.items() if k != DRAM}
            levels = list(refereed_levels(tuple(levels), caches_refs, LOAD_REFEREE))
        for d, peak in self.roofs.peaks.items() if self.roofs is not None else ():
            name = by_numpy(d).name
            if h.compute_roof(name) is None:
                r, own = refereed.get(name), self.roofs.peak_kernel(d, "numpy BLAS (fastest GEMM)")
                gflops, kernel = (r.figure, r.kernel) if r else (peak / 1e9, own)
                compute.append(ComputeRoof(name, gflops, kernel))
        caches = h.caches
        llc = self.facts.get("llc_bytes")
        if not caches and isinstance(llc, int) and llc > 0:  # from results: the LLC alone is known
            m = re.search(r"\(L(\d)\)", str(self.facts.get("llc_source") or ""))
            caches = ((f"L{m.group(1) if m else 3}", llc),)
        return Hierarchy(tuple(levels), tuple(compute), caches, h.read_write, h.skipped)

    def row(self, point: Point) -> Row:
        hw, peak = self.hardware, by_numpy(self.dtype).name
        dtype = by_numpy(point.dtype).name
        h = self.roofs_by_level
        if point.regime == "cache" and not h.caches:  # sized to fit a cache this report knows neither size nor roof of
            compute = h.compute_roof(dtype)
            own = OwnRoof(UNKNOWN_CACHE, None, compute.gflops if compute else None, None, None, None)
        else:
            own = h.own_roof(point.working_bytes, point.intensity, dtype, point.gflops)
        if hw is None or peak not in hw.peak_flops or not point.gflops:
            return Row(point, None, None, None, own)
        roof = attainable(hw, point.intensity, peak)
        return Row(point, roof / 1e9, point.gflops * 1e9 / roof, bound(hw, point.intensity, peak), own)

    def predicted_crossover(self, hw: Hardware | None) -> float | None:
        """The crossover batch ``hw``'s roofs predict for the report's dtype
        (:func:`~roofline.model.arithmetic.predicted_crossover`); None without them."""
        d = by_numpy(self.dtype)
        return None if hw is None else predicted_crossover(hw.peak_flops.get(d.name), hw.bandwidth, d.bytes)

    def crossover(self) -> dict[str, object]:
        d = by_numpy(self.dtype)
        cross: dict[str, object] = {
            "dtype": self.dtype,
            "bytes_per_param": d.bytes,
            "predicted_batch": self.predicted_crossover(self.own_hardware),
        }
        if self.sweep:
            cross["sweep_n"] = self.sweep_n
            keys = ("batch", "seconds", "gflops", "gbps", "spread")
            cross["sweep"] = [{k: getattr(p, k) for k in keys} for p in self.sweep if p.seconds]
            if (knee := self.knee) is not None:
                cross.update(observed_batch=knee.batch, observed_within_sweep=knee.within_sweep)
                cross["fit_rms_log_error"] = knee.rms_log_error
        if "observed_batch" not in cross and self.recorded_crossover:
            cross["observed_batch"] = self.recorded_crossover
        if (datasheet := self.predicted_crossover(self.datasheet)) is not None:
            cross["datasheet"] = {"hardware": self.datasheet.name, "predicted_batch": datasheet}
        return cross

    def overhead(self) -> dict[str, object] | None:
        if not self.overhead_seconds:
            return None
        hw = self.hardware
        return {
            "single_call_seconds": self.overhead_single_seconds,
            "amortized_seconds": self.overhead_seconds,
            "overhead_bound_n": overhead_bound_n(self.overhead_seconds, hw.bandwidth, by_numpy(self.dtype).bytes)
            if hw is not None
            else None,
        }

    def as_dict(self) -> dict[str, object]:
        """The ``roofline.report/1`` JSON object."""
        limits = {"physical_limits": d} if (d := self.limits_dict()) else {}
        return {
            "schema": SCHEMA,
            "source": self.source,
            "lab": lab_section(),
            "machine": dict(self.facts),
            "ceilings": self.roofs.as_dict() if self.roofs is not None else None,
            "crossover": self.crossover(),
            "decode": [self.row(p).as_dict() for p in self.decode],
            "cache_resident": [self.row(p).as_dict() for p in self.cache_resident],
            "overhead": self.overhead(),
            "conditions": self.conditions.as_dict() if self.conditions is not None else None,
            "warnings": list(self.warnings),
            "roofs": [r.as_dict() for r in self.roofs_by_level.levels],
            "compute_roofs": [c.as_dict() for c in self.roofs_by_level.compute],
            "compute_roofs_skipped": dict(self.roofs_by_level.skipped),
            "read_write_roofs": [r.as_dict() for r in self.roofs_by_level.read_write],
            "model_decode": [m.as_dict() for m in self.model_decode],
            **limits,
        } | ({"engine_decode": [e.as_dict() for e in self.engine_decode]} if self.engine_decode else {})


def guard_warnings(report: Report) -> list[str]:
    """The guards that apply to a report's figures: noisy ceilings and steps, cache-sized pools, too-fast figures."""
    warnings: list[str] = []
    if report.roofs is not None:
        for kind, spread in report.roofs.spreads.items():
            if spread:
                warnings += guards.noisy_passes(spread, f"{kind} bandwidth")
    hw, peak = report.hardware, by_numpy(report.dtype).name
    llc = report.facts.get("llc_bytes")
    # a decode step only reads its weights: the DRAM roof is the higher of the STREAM roof and the DRAM
    # level's (the same read roof; a sweep's read-only plateau beside add, which also writes)
    dram = report.roofs_by_level.level(DRAM) if hw is not None else None
    bandwidth = max(hw.bandwidth / 1e9, dram.gbps if dram is not None else 0.0) if hw is not None else 0.0
    warnings += guards.noisy_points([(f"n={p.n} batch={p.batch}", float(p.spread)) for p in report.decode if p.spread])
    for p in report.decode:
        label = f"n={p.n} batch={p.batch}"
        if llc and p.pool_bytes:
            warnings += guards.working_set_fits_llc(float(p.pool_bytes), float(llc), label)
        if hw is not None and p.gbps:
            warnings += guards.above_ceiling(float(p.gbps), bandwidth, f"{label} bandwidth", "GB/s")
        if hw is not None and p.gflops and peak in hw.peak_flops:
            warnings += guards.above_ceiling(float(p.gflops), hw.peak(peak) / 1e9, f"{label} FLOP rate", "GFLOP/s")
    twins = []
    for title, points in (("DRAM", report.decode), ("cache-resident", report.cache_resident)):
        for p in points:
            if p.twin_seconds and p.seconds:
                spread = float(p.spread or 0.0) + float(p.twin_spread or 0.0)
                twins.append((f"n={p.n} batch={p.batch} ({title})", float(p.twin_seconds), float(p.seconds), spread))
            own = report.row(p).own
            if own is not None and own.error:
                warnings.append(
                    f"n={p.n} batch={p.batch} ({title}): {p.gflops:.1f} GFLOP/s is {own.fraction:.2f}× its own roof "
                    f"({own.attainable_gflops:.1f} GFLOP/s under {own.level} at {own.gbps:.1f} GB/s), above "
                    f"{MEASUREMENT_ERROR:.2f}×: the {own.binding}'s measurement read too low "
                    "(no honest point passes a roof)"
                )
    warnings += guards.twins_disagree(twins)
    if llc:
        warnings += guards.llc_overridden(float(llc), report.facts.get("llc_source"))
    cores = report.facts.get("num_cpu")
    if isinstance(cores, int):
        warnings += guards.blas_threads_below_cores(report.facts.get("blas_threads"), cores)
    return warnings


def build_report(facts: Mapping[str, object], roofs: Roofs | None = None, **figures: object) -> Report:
    """A :class:`Report` of ``facts`` and ``roofs`` and the other figures (its fields), with the guards' warnings."""
    report = Report(facts, roofs, **figures)
    # one line per warning: a run's part and the report's guards may say the same of one figure
    return replace(report, warnings=tuple(dict.fromkeys((*report.warnings, *guard_warnings(report)))))
