"""What the asv benchmarks call: one function per benchmark step, guards printed to asv's stderr.

Kept apart from the benchmarks so they stay thin (parameters plus one call) and so the same
code runs under asv, under pytest and from the command line.

Absent backends and dtypes raise :class:`~roofline.errors.BackendUnavailable`, a
``NotImplementedError``, in setup: asv records the combination as skipped (null). The CUDA grid
is measured once per asv run in ``setup_cache`` (one process: importing torch and making a CUDA
context cost seconds per process, which would dominate a per-process GPU grid); every
combination still builds its own pool, is validated, then timed. Its cached entries are plain
floats and strings, so the per-combination processes never import torch.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..errors import BackendUnavailable, KernelMismatch
from ..host import blas_threads, cpu_count, llc_bytes
from ..measure.backends import available, build_step, release_cuda
from ..measure.ceilings import CEILING_KERNEL, Ceilings, gemm_peak, measure_ceilings, stream_bandwidth
from ..measure.numpy_step import DecodeStep, Regime, decode_step
from ..measure.step import DecodeMeasurement, measure_step
from ..measure.sweep import SWEEP_BATCHES, sweep
from ..model import guards
from ..model.arithmetic import gemm_intensity, roofline_fraction
from ..model.dtypes import SUITE
from . import params


def _stderr(*lines: str) -> None:
    """asv's stderr (``asv run --show-stderr``) is the benchmarks' one channel: what they say goes there."""
    for line in lines:
        print(f"roofline: {line}", file=sys.stderr)


def _warn(lines: list[str]) -> None:
    _stderr(*(f"warning: {line}" for line in lines))


def _measure(step) -> DecodeMeasurement:
    m = measure_step(step)
    _warn(guards.noisy(m.spread, f"{m.backend} n={m.n} batch={m.batch}"))
    return m


def decode_setup(n: int, batch: int, regime: Regime = "dram", dtype: str = SUITE.numpy) -> DecodeStep:
    """Build and validate a decode step; print the guards that apply to it."""
    step = decode_step(n, batch, dtype, regime)
    if regime == "dram":
        _warn(guards.working_set_fits_llc(step.pool_bytes, step.llc_bytes, f"n={n} batch={batch}"))
        _warn(guards.llc_overridden(step.llc_bytes, llc_bytes()[1]))
    _warn(guards.blas_threads_below_cores(blas_threads(), cpu_count()))
    return step


def decode_gflops(step: DecodeStep) -> float:
    return float(_measure(step).gflops)


def decode_gbps(step: DecodeStep) -> float:
    return float(_measure(step).gbps)


def suite_ceilings() -> Ceilings:
    """The ceilings the roofline-fraction tracks divide by (measured once per asv run)."""
    return measure_ceilings(dtypes=(SUITE.numpy,), kinds=(CEILING_KERNEL,))


def decode_roofline_fraction(step: DecodeStep, ceilings: Ceilings) -> float:
    """Achieved GFLOP/s ÷ min(peak, exact intensity · bandwidth), with the guards printed."""
    m = _measure(step)
    hw = ceilings.hardware
    label = f"n={step.n} batch={step.batch}"
    _warn(guards.above_ceiling(m.gbps, hw.bandwidth / 1e9, f"{label} bandwidth", "GB/s"))
    _warn(guards.above_ceiling(m.gflops, hw.peak(SUITE.name) / 1e9, f"{label} FLOP rate", "GFLOP/s"))
    intensity = gemm_intensity(step.n, step.batch, step.itemsize)
    return float(roofline_fraction(m.gflops * 1e9, hw, intensity, SUITE.name))


def bandwidth_gbps(kind: str) -> float:
    """STREAM-style bandwidth of one kernel, GB/s: the median of its passes (the roof is ``add``)."""
    bw = stream_bandwidth(kinds=(kind,))[kind]
    _warn(guards.noisy(bw.spread, f"{kind} bandwidth"))
    return float(bw.median / 1e9)


def gemm_gflops(dtype: str) -> float:
    """Square-GEMM rate, GFLOP/s: the median of its timed GEMMs."""
    peak = gemm_peak(dtype)
    _warn(guards.blas_threads_below_cores(peak.blas_threads, cpu_count()))
    return float(peak.median / 1e9)


def observed_crossover(n: int | None = None) -> float:
    """The knee of a batch sweep 1..1024 over a DRAM pool (n from ROOFLINE_SWEEP_N by default)."""
    s = sweep(n or params.sweep_n(), SWEEP_BATCHES)
    for m in s.points:
        _warn(guards.noisy(m.spread, f"sweep n={m.n} batch={m.batch}"))
    if not s.knee.within_sweep:
        _warn([f"the knee ({s.knee.batch:.0f}) lies outside the sweep 1..{SWEEP_BATCHES[-1]}: extrapolated"])
    return float(s.knee.batch)


def predicted_crossover() -> float:
    """Crossover batch for float32 weights from measured ceilings: peak / bandwidth · 4 / 2."""
    from ..model.arithmetic import crossover_batch

    c = suite_ceilings()
    return float(crossover_batch(c.hardware, SUITE.bytes, SUITE.name))


# ---- backends and the GPU (benchmarks/backends.py) ------------------------------------------

#: The figures the CUDA class tracks, from one measurement per combination.
GRID_FIELDS = ("gflops", "gbps", "seconds", "single_call_seconds")


def backend_setup(backend: str, dtype: str, n: int, batch: int):
    """A validated step, or BackendUnavailable (asv: skipped) when absent here."""
    return build_step(backend, dtype, n, batch)


def backend_measure(step) -> DecodeMeasurement:
    """Warm-up, then the median of timed samples (device-timed on CUDA)."""
    m = _measure(step)
    if m.threads is not None:
        _stderr(f"{m.backend} ran on {m.threads} torch thread(s)")
    return m


def gpu_grid(
    dtypes: Sequence[str], sizes: Sequence[int], batches: Sequence[int], backend: str = "torch-cuda"
) -> dict[tuple, dict[str, object]]:
    """Measure every (dtype, n, batch) on ``backend``; absent or failing ones keep their reason.

    Each entry is {"status": "ok", <GRID_FIELDS>...}, {"status": "skipped", "reason": ...} or
    {"status": "failed", "reason": ...} (a KernelMismatch: no figure).
    """
    grid: dict[tuple, dict[str, object]] = {}
    for dtype in dtypes:
        for n in sizes:
            for batch in batches:
                key = (backend, dtype, n, batch)
                try:
                    available(backend, dtype)
                    m = _measure(build_step(backend, dtype, n, batch))
                    grid[key] = {"status": "ok", **{f: float(getattr(m, f)) for f in GRID_FIELDS}, "timer": m.timer}
                except BackendUnavailable as exc:
                    grid[key] = {"status": "skipped", "reason": str(exc)}
                except KernelMismatch as exc:
                    grid[key] = {"status": "failed", "reason": str(exc)}
                finally:
                    release_cuda()
    return grid


def grid_entry(grid: dict, backend: str, dtype: str, n: int, batch: int) -> dict[str, object]:
    """The cached entry, re-raising what made it absent (asv: skipped) or wrong (asv: failed)."""
    entry = grid.get((backend, dtype, n, batch))
    if entry is None:
        raise BackendUnavailable(f"{backend} {dtype} n={n} batch={batch} was not measured in setup_cache")
    if entry["status"] == "skipped":
        raise BackendUnavailable(str(entry["reason"]))
    if entry["status"] == "failed":
        raise KernelMismatch(str(entry["reason"]))
    return entry


def grid_value(entry: dict[str, object], field: str, scale: float = 1.0) -> float:
    """One figure of a measured entry as a plain float (asv needs a float)."""
    return float(entry[field]) * scale


def overhead_us(backend: str, dtype: str, which: str) -> float:
    """The overhead roof in µs: ``which`` = "single" (one call alone) or "amortized"."""
    from ..measure.overhead import measure_overhead

    o = measure_overhead(backend, dtype)
    return float((o.single_call_seconds if which == "single" else o.amortized_seconds) * 1e6)


def level_roofs() -> dict[str, object]:
    """The read-only roof of each memory level from one working-set sweep (asv: in setup_cache):
    {level: (GB/s, aggregate bytes)}, or {"skipped": why} where the sweep cannot run (no numba)."""
    from ..measure.levels import cache_sweep

    try:
        s = cache_sweep(kernel_names=("load",))
    except BackendUnavailable as exc:
        return {"skipped": str(exc)}
    return {r.level: (float(r.gbps), int(r.bytes or 0)) for r in s.roofs}


def level_entry(roofs: dict[str, object], level: str) -> tuple[float, int]:
    """A level's (GB/s, bytes), or BackendUnavailable (asv: skipped) where it was not measured."""
    if "skipped" in roofs:
        raise BackendUnavailable(str(roofs["skipped"]))
    if level not in roofs:
        raise BackendUnavailable(f"this machine has no {level} (its levels: {', '.join(roofs)})")
    return roofs[level]  # type: ignore[return-value]


def compute_peaks(dtypes: tuple[str, ...] = ("bf16", "fp16", "int8")) -> dict[str, float | str]:
    """Each dtype's compute roof in GFLOP/s (GOP/s for int8), or why it was skipped (asv: in setup_cache).
    fp32 and fp64 are :func:`gemm_gflops`'s, measured once per run."""
    from ..measure.compute import compute_roofs

    roofs, skipped = compute_roofs(dtypes)
    return {**skipped, **{c.dtype: float(c.gflops) for c in roofs}}


def compute_peak(peaks: dict[str, float | str], dtype: str) -> float:
    """One dtype's roof, or BackendUnavailable (asv: skipped) with the reason."""
    value = peaks.get(dtype, f"no compute roof for {dtype}")
    if isinstance(value, str):
        raise BackendUnavailable(value)
    return value
