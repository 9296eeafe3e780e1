"""What the backend and GPU asv benchmarks call (benchmarks/backends.py): one function per step.

Absent backends and dtypes raise :class:`~roofline.errors.BackendUnavailable`, a
``NotImplementedError``, in setup: asv records the combination as skipped (null).

The CUDA grid is measured once per asv run in ``setup_cache`` (one process: importing torch
and making a CUDA context cost seconds per process, which would dominate a per-process GPU
grid); every combination still builds its own pool, is validated, then timed. Its cached
entries are plain floats and strings, so the per-combination processes never import torch.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..errors import BackendUnavailable, KernelMismatch
from ..measure.backends import available, build_step
from ..measure.step import DecodeMeasurement, measure_step

#: The figures the CUDA class tracks, from one measurement per combination.
GRID_FIELDS = ("gflops", "gbps", "seconds", "single_call_seconds")


def backend_setup(backend: str, dtype: str, n: int, batch: int):
    """A validated step, or BackendUnavailable (asv: skipped) when absent here."""
    return build_step(backend, dtype, n, batch)


def backend_measure(step) -> DecodeMeasurement:
    """Warm-up, then the median of timed samples (device-timed on CUDA)."""
    m = measure_step(step)
    if m.threads is not None:
        print(f"roofline: {m.backend} ran on {m.threads} torch thread(s)", file=sys.stderr)
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
                    m = measure_step(build_step(backend, dtype, n, batch))
                    grid[key] = {"status": "ok", **{f: float(getattr(m, f)) for f in GRID_FIELDS}, "timer": m.timer}
                except BackendUnavailable as exc:
                    grid[key] = {"status": "skipped", "reason": str(exc)}
                except KernelMismatch as exc:
                    grid[key] = {"status": "failed", "reason": str(exc)}
                finally:
                    _release(backend)
    return grid


def _release(backend: str) -> None:
    """Hand the finished step's device memory back before the next one is built."""
    torch = sys.modules.get("torch")
    if backend == "torch-cuda" and torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


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
