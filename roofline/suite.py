"""What the asv benchmarks call: one function per benchmark step, guards printed to stderr.

Kept apart from the benchmarks so they stay thin (parameters plus one call) and so the same
code runs under asv, under pytest and from the command line.
"""

from __future__ import annotations

import sys

from . import guards, params
from .arithmetic import gemm_intensity, roofline_fraction
from .ceilings import CEILING_KERNEL, Ceilings, gemm_peak, measure_ceilings, stream_bandwidth
from .crossover import SWEEP_BATCHES, sweep
from .kernels import DecodeStep, Regime, decode_step
from .measure import measure_step
from .system import blas_threads, cpu_count, llc_bytes


def _warn(lines: list[str]) -> None:
    for line in lines:
        print(f"roofline: warning: {line}", file=sys.stderr)


def decode_setup(n: int, batch: int, regime: Regime = "dram", dtype: str = "float32") -> DecodeStep:
    """Build and validate a decode step; print the guards that apply to it."""
    step = decode_step(n, batch, dtype, regime)
    if regime == "dram":
        _warn(guards.working_set_fits_llc(step.pool_bytes, step.llc_bytes, f"n={n} batch={batch}"))
        _warn(guards.llc_overridden(step.llc_bytes, llc_bytes()[1]))
    _warn(guards.blas_threads_below_cores(blas_threads(), cpu_count()))
    return step


def decode_gflops(step: DecodeStep) -> float:
    return float(measure_step(step).gflops)


def decode_gbps(step: DecodeStep) -> float:
    return float(measure_step(step).gbps)


def suite_ceilings() -> Ceilings:
    """The ceilings the roofline-fraction tracks divide by (measured once per asv run)."""
    return measure_ceilings(dtypes=("float32",), kinds=(CEILING_KERNEL,))


def decode_roofline_fraction(step: DecodeStep, ceilings: Ceilings) -> float:
    """Achieved GFLOP/s ÷ min(peak, exact intensity · bandwidth), with the guards printed."""
    m = measure_step(step)
    hw = ceilings.hardware
    label = f"n={step.n} batch={step.batch}"
    _warn(guards.above_ceiling(m.gbps, hw.bandwidth / 1e9, f"{label} bandwidth", "GB/s"))
    _warn(guards.above_ceiling(m.gflops, hw.peak("fp32") / 1e9, f"{label} FLOP rate", "GFLOP/s"))
    intensity = gemm_intensity(step.n, step.batch, step.itemsize)
    return float(roofline_fraction(m.gflops * 1e9, hw, intensity, "fp32"))


def bandwidth_gbps(kind: str) -> float:
    """Best STREAM-style bandwidth of one kernel, GB/s (the roof is ``add``)."""
    bw = stream_bandwidth(kinds=(kind,))[kind]
    _warn(guards.noisy(bw.spread, f"{kind} bandwidth"))
    return float(bw.best / 1e9)


def gemm_gflops(dtype: str) -> float:
    """Best square-GEMM rate, GFLOP/s."""
    peak = gemm_peak(dtype)
    _warn(guards.blas_threads_below_cores(peak.blas_threads, cpu_count()))
    return float(peak.best / 1e9)


def observed_crossover(n: int | None = None) -> float:
    """The knee of a batch sweep 1..1024 over a DRAM pool (n from ROOFLINE_SWEEP_N by default)."""
    s = sweep(n or params.sweep_n(), SWEEP_BATCHES)
    if not s.knee.within_sweep:
        _warn([f"the knee ({s.knee.batch:.0f}) lies outside the sweep 1..{SWEEP_BATCHES[-1]}: extrapolated"])
    return float(s.knee.batch)


def predicted_crossover() -> float:
    """Crossover batch for float32 weights from measured ceilings: peak / bandwidth · 4 / 2."""
    from .arithmetic import crossover_batch

    c = suite_ceilings()
    return float(crossover_batch(c.hardware, 4, "fp32"))


__all__ = [
    "CEILING_KERNEL",
    "decode_setup",
    "decode_gflops",
    "decode_gbps",
    "suite_ceilings",
    "decode_roofline_fraction",
    "bandwidth_gbps",
    "gemm_gflops",
    "observed_crossover",
    "predicted_crossover",
]
