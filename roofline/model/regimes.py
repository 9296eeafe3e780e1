"""Three regimes, not two: overhead-bound, bandwidth-bound and compute-bound.

A decode step costs at least the largest of three floors: the fixed cost of issuing a call
(Python, the library's dispatch, a kernel launch), the bytes it moves over the bandwidth,
and its FLOPs over the peak. Back to back, issuing overlaps with work, so the amortized time
is about the largest floor; a call timed on its own pays its latency on top of the work.

The overhead floor is measured, not assumed: a tiny step (n = :data:`OVERHEAD_N`, one
matrix) timed on its own and back to back. Below :func:`overhead_bound_n` a matrix is read
faster than a call can be issued, so no bandwidth figure is meaningful there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..errors import positive

ROOFS = ("overhead", "bandwidth", "compute")


def floors(flops: float, bytes_moved: float, overhead_s: float, bandwidth: float, peak: float) -> dict[str, float]:
    """Seconds per call under each roof: overhead, bytes / bandwidth, flops / peak."""
    return {
        "overhead": positive("overhead seconds", overhead_s),
        "bandwidth": positive("bytes", bytes_moved) / positive("bandwidth", bandwidth),
        "compute": positive("flops", flops) / positive("peak", peak),
    }


def binding_roof(floor: dict[str, float]) -> str:
    """The roof with the largest floor: the one that bounds the call."""
    return max(ROOFS, key=lambda r: floor[r])


def overhead_bound_n(overhead_s: float, bandwidth: float, bytes_per_param: float) -> float:
    """Matrix size below which reading the weights takes less than issuing the call.

    n* = sqrt(overhead · bandwidth / bytes_per_param): an n×n read at full bandwidth lasts
    exactly one overhead there.
    """
    t = positive("overhead seconds", overhead_s)
    return math.sqrt(t * positive("bandwidth", bandwidth) / positive("bytes per param", bytes_per_param))


def classify(
    step: Mapping[str, object], overhead: Mapping[str, object], bandwidth: float, peak: float
) -> dict[str, object]:
    """A measured step against the three roofs, amortized and as a single call.

    Returns the floors (seconds) for back-to-back calls (overhead = the amortized issue
    cost) and for an isolated call (latency + the larger of the bandwidth and compute
    floors), the binding roof of each, and the measured times beside them.
    """
    flops = 2.0 * step["n"] * step["n"] * step["batch"]
    bytes_moved = step["gbps"] * 1e9 * step["seconds"]
    amortized = floors(flops, bytes_moved, overhead["amortized_seconds"], bandwidth, peak)
    work = max(amortized["bandwidth"], amortized["compute"])
    single_floor = overhead["single_call_seconds"] + work
    single_bound = "overhead" if overhead["single_call_seconds"] > work else binding_roof(amortized)
    return {
        "backend": step.get("backend"),
        "dtype": step.get("dtype"),
        "n": step["n"],
        "batch": step["batch"],
        "floors": amortized,
        "bound": binding_roof(amortized),
        "predicted_seconds": max(amortized.values()),
        "measured_seconds": step["seconds"],
        "single_call": {
            "predicted_seconds": single_floor,
            "measured_seconds": step.get("single_call_seconds"),
            "bound": single_bound,
        },
        # The part of an isolated call that is overhead: (single − amortized) / single.
        "overhead_share": max(0.0, 1.0 - step["seconds"] / step["single_call_seconds"])
        if step.get("single_call_seconds")
        else None,
    }
