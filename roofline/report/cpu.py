"""The roofline report: the lab's H100 arithmetic, then this machine measured.

A :class:`Report` holds what was measured (ceilings, decode points, the sweep, the overhead) and
the guards' warnings; :meth:`Report.as_dict` is its JSON (schema ``roofline.report/1``, keys
documented in the README and stable within a schema) and :func:`render_text` its text.
:func:`build_report` makes one from measurements, live or recorded by asv
(:mod:`roofline.report.from_results`); :func:`measure_report` measures this machine live.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from functools import cached_property
from typing import Any

from .. import units
from ..host import host_facts
from ..measure.ceilings import CEILING_KERNEL, roof_kernel
from ..measure.engine_decode import KERNEL_PATH_CODES
from ..measure.overhead import measure_overhead
from ..measure.pools import POOL_LLC_MULTIPLE
from ..measure.step import DecodeMeasurement
from ..measure.sweep import SWEEP_BATCHES, SWEEP_N
from ..model import guards
from ..model.arithmetic import (
    arithmetic_intensity,
    attainable,
    bound,
    bound_at,
    crossover_batch,
    gemm_intensity,
    ridge_point,
)
from ..model.conditions import Conditions
from ..model.dtypes import SUITE, by_numpy
from ..model.hardware import H100, Hardware
from ..model.hierarchy import (
    DRAM,
    LIKELY_TOO_LOW,
    MEASUREMENT_ERROR,
    ComputeRoof,
    Hierarchy,
    LevelRoof,
    OwnRoof,
    Refereed,
    refereed_levels,
)
from ..model.knee import Knee, fit_knee
from ..model.llm_estimate import bound_fraction, size_text
from ..model.microarch import MICROARCH, TSC, Clock, limits
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
    def of(cls, m: DecodeMeasurement) -> Point:
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
    #: the kernels its weights ran on, as asv records it (engine_decode.KERNEL_PATH_CODES); None unrecorded
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
        """The kernel whose rate is the bandwidth roof (:func:`~roofline.measure.ceilings.roof_kernel`)."""
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
            "ridge_flop_per_byte": {d: p / roof for d, p in self.peaks.items()} if roof else {},
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

    ``sweep``: the points of a batch sweep at ``sweep_n`` (live); ``recorded_crossover``: the knee
    asv recorded when the points are not at hand. ``overhead_seconds`` and
    ``overhead_single_seconds``: a tiny step back to back and alone (the third roof).
    ``conditions``: how the machine was while it measured (a contended run says so first).
    """

    facts: Mapping[str, object]
    roofs: Roofs | None = None
    decode: tuple[Point, ...] = ()
    cache_resident: tuple[Point, ...] = ()
    sweep_n: int | None = None
    sweep: tuple[Point, ...] = ()
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

    @property
    def knee(self) -> Knee | None:
        """The knee of the sweep's points, when at least two were timed."""
        timed = [p for p in self.sweep if p.seconds]
        return fit_knee([p.batch for p in timed], [p.seconds for p in timed]) if len(timed) >= 2 else None

    def predicted_crossover(self, hw: Hardware | None) -> float | None:
        d = by_numpy(self.dtype)
        return crossover_batch(hw, d.bytes, d.name) if hw is not None and d.name in hw.peak_flops else None

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
        elif self.recorded_crossover:
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


def build_report(facts: Mapping[str, object], roofs: Roofs | None = None, **figures: object) -> Report:
    """A :class:`Report` of ``facts`` and ``roofs`` and the other figures (its fields), with the guards' warnings."""
    report = Report(facts, roofs, **figures)
    # one line per warning: a run's part and the report's guards may say the same of one figure
    return replace(report, warnings=tuple(dict.fromkeys((*report.warnings, *guard_warnings(report)))))


def _fmt(value: object, spec: str, na: str = "n/a") -> str:
    return na if value is None else format(value, spec)


def _size(n: float | None) -> str:
    if n is None:
        return "?"
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


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
                line += f"; plateau {_size(p.first_bytes)}–{_size(p.last_bytes)} ({p.points} sizes)"
                line += f", ends at {_size(p.ends_bytes)}" if p.ends_bytes else ""
                line += f"; the OS says {_size(p.capacity_bytes)}" if p.capacity_bytes else ""
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


def render_text(report: Report) -> str:
    """The report as the lab would print it, then this machine's figures."""
    lab = lab_section()
    headline = report.conditions.headline() if report.conditions is not None else None
    headlines = ([headline] if headline else []) + guards.above_bound(decode_fractions(report))
    out = [*headlines, ""] if headlines else []
    out.append(
        f"{lab['hardware']}: {lab['ridge_flop_per_byte']:.0f} FLOPs per byte at the ridge; decode becomes "
        f"compute-bound above batch ~{lab['crossover_batch']:.0f}"
    )
    for row in lab["batches"]:
        out.append(f"  batch {row['batch']:3d}: intensity {row['intensity']:5.0f} FLOP/byte -> {row['bound']}-bound")
    m = report.facts
    out += ["", f"This machine ({report.source}): {m.get('cpu', '?')}, {m.get('num_cpu', '?')} cores"]
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
    out += render_roofs(report.roofs_by_level)
    out += render_limits(report)
    o = report.overhead()
    if o:
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
    for title, points in (("decode, weights from DRAM", report.decode), ("cache-resident", report.cache_resident)):
        if not points:
            continue
        twins = any(p.twin_ratio for p in points)  # asv's time_ twin ÷ this time per step, from results
        header = f"  {'n':>6} {'batch':>5} {'GFLOP/s':>9} {'GB/s':>7} {'FLOP/B':>7} {'roof%':>6}"
        header += f" {'twin×':>6}" if twins else ""
        header += f"  {'roof':<10} bound"
        out += ["", f"{title}:", header]
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
    by_n: dict[int, dict[int, float]] = {}
    for p in report.decode:
        if p.gflops:
            by_n.setdefault(p.n, {})[p.batch] = float(p.gflops)
    for n, row in sorted(by_n.items()):
        if 1 in row and 64 in row:
            out.append(f"  n={n}: batch 64 delivers {row[64] / row[1]:.1f}× the GFLOP/s of batch 1 on the same weights")
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


def measure_report(
    sizes: Sequence[int],
    batches: Sequence[int],
    cache_sizes: Sequence[int] = (),
    sweep_n: int = SWEEP_N,
    sweep_batches: Sequence[int] = SWEEP_BATCHES,
    progress: Callable[..., Any] | None = None,
) -> Report:
    """Measure this machine with the run asv's ``setup_cache`` makes (:func:`roofline.suite.run.measure_run`:
    the same passes, ceilings, referees where on, level sweep and contention watch) at these sizes, then a
    tiny step's overhead (the third roof), and build the report (:func:`roofline.report.from_run.report_from_run`).

    ``progress``: a bar for the run's turns, made as ``progress(total=...)`` (tqdm's interface); the caller shows it.
    """
    from ..suite.machine_file import cpu_facts
    from ..suite.run import measure_run
    from .from_run import report_from_run

    chosen = {"ROOFLINE_N": tuple(sizes), "ROOFLINE_CACHE_N": tuple(cache_sizes), "ROOFLINE_BATCH": tuple(batches)}
    state = measure_run(chosen, chosen=chosen, sweep=(sweep_n, tuple(sweep_batches)), progress=progress)
    overhead = measure_overhead("numpy", SUITE.name)
    facts = {**host_facts(), **cpu_facts()}
    return report_from_run(state, facts, (overhead.amortized_seconds, overhead.single_call_seconds))
