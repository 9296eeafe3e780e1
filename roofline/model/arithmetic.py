"""The roofline arithmetic of one decode step: pure functions, no measurement.

Decoding one token for ``batch`` sequences reads every weight once and does
2·batch FLOPs per weight, so the arithmetic intensity is 2·batch / bytes_per_param.
"""

from __future__ import annotations

from typing import Literal

from ..errors import positive
from .hardware import Hardware

Bound = Literal["bandwidth", "compute"]


def arithmetic_intensity(batch: float, bytes_per_param: float = 2) -> float:
    """FLOP per weight byte of one decode step: 2·batch / bytes_per_param."""
    return 2 * positive("batch", batch) / positive("bytes_per_param", bytes_per_param)


def gemm_intensity(n: int, batch: int, bytes_per_element: float = 4, m: int | None = None) -> float:
    """Exact FLOP/byte of y = W·X (W m×n, X n×batch), counting W, X and Y traffic.

    2·m·n·b / (bytes · (m·n + n·b + m·b)); for square W this is
    2·n²·b / (bytes · (n² + 2·n·b)). It rises with batch and never exceeds
    :func:`arithmetic_intensity`, which it approaches as n grows.
    """
    n = positive("n", n)
    m = n if m is None else positive("m", m)
    b = positive("batch", batch)
    bpe = positive("bytes_per_element", bytes_per_element)
    return 2 * m * n * b / (bpe * (m * n + n * b + m * b))


def ridge_point(hw: Hardware, dtype: str = "bf16") -> float:
    """FLOP/byte at which the compute roof meets the bandwidth roof."""
    return hw.peak(dtype) / hw.bandwidth


def crossover_batch(hw: Hardware, bytes_per_param: float = 2, dtype: str = "bf16") -> float:
    """Batch at which decode turns compute-bound: peak / bandwidth · bytes_per_param / 2."""
    return ridge_point(hw, dtype) * positive("bytes_per_param", bytes_per_param) / 2


def _measured(peak: float | None, bandwidth: float | None) -> Hardware | None:
    """Measured roofs (FLOP/s, B/s) as the Hardware the formulas above take; None without both."""
    return Hardware("measured", {"measured": peak}, bandwidth) if peak and bandwidth else None


def measured_ridge(peak: float | None, bandwidth: float | None) -> float | None:
    """:func:`ridge_point` of measured roofs, FLOP/byte; None without both."""
    hw = _measured(peak, bandwidth)
    return None if hw is None else ridge_point(hw, "measured")


def predicted_crossover(peak: float | None, bandwidth: float | None, bytes_per_param: float) -> float | None:
    """The crossover batch measured roofs predict: :func:`measured_ridge` · bytes_per_param / 2; None without
    both. A run's own GEMM peak and STREAM roof give it, no referee: the figure asv records
    (``track_predicted_crossover_batch``), the report prints and ``roofline compare`` tables."""
    hw = _measured(peak, bandwidth)
    return None if hw is None else crossover_batch(hw, bytes_per_param, "measured")


def attainable(hw: Hardware, intensity: float, dtype: str = "bf16") -> float:
    """The roofline: min(peak, intensity · bandwidth) in FLOP/s. Every roof drawn or divided by is this."""
    return min(hw.peak(dtype), positive("intensity", intensity) * hw.bandwidth)


def bound(hw: Hardware, intensity: float, dtype: str = "bf16") -> Bound:
    """ "bandwidth" below the ridge, "compute" at or above it."""
    return "bandwidth" if intensity < ridge_point(hw, dtype) else "compute"


def bound_at(hw: Hardware, batch: float, bytes_per_param: float = 2, dtype: str = "bf16") -> Bound:
    """The bound of a decode step at ``batch``: :func:`bound` at its intensity."""
    return bound(hw, arithmetic_intensity(batch, bytes_per_param), dtype)


def roofline_fraction(achieved_flops: float, hw: Hardware, intensity: float, dtype: str = "bf16") -> float:
    """Achieved FLOP/s as a fraction of the attainable roofline at ``intensity``."""
    return positive("achieved FLOP/s", achieved_flops) / attainable(hw, intensity, dtype)
