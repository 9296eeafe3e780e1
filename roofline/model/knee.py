"""The knee of a batch sweep: where one decode step turns from memory-bound to compute-bound.

Model: one decode step takes at least t(b) = max(t_mem, b · t_flop): flat while the weight
read dominates, then linear in batch once arithmetic does. The knee b* = t_mem / t_flop is the
observed crossover batch, to set beside the one predicted from measured ceilings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..errors import BadInput, positive


@dataclass(frozen=True)
class Knee:
    """Fit of t(b) = max(t_mem, b·t_flop) to a sweep, in log space.

    ``batch`` is t_mem / t_flop; ``within_sweep`` is False when the fit puts the knee outside
    the batches measured (then the figure is an extrapolation and says so).
    """

    batch: float
    t_mem: float
    t_flop: float
    rms_log_error: float
    within_sweep: bool

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _check(batches: Sequence[float], times: Sequence[float]) -> tuple[list[float], list[float]]:
    if len(batches) != len(times):
        raise BadInput(f"{len(batches)} batches but {len(times)} times")
    if len(batches) < 2:
        raise BadInput("a knee needs at least two batch sizes")
    for name, seq in (("batch", batches), ("time", times)):
        for v in seq:
            positive(f"every {name}", v)
    pairs = sorted(zip(batches, times, strict=True))
    if len({b for b, _ in pairs}) != len(pairs):
        raise BadInput("batch sizes must be distinct")
    return [float(b) for b, _ in pairs], [float(t) for _, t in pairs]


def fit_knee(batches: Sequence[float], times: Sequence[float]) -> Knee:
    """Fit the lower envelope t(b) = max(t_mem, b·t_flop) to a sweep.

    A roofline bounds time from below: no step can read its weights faster than the fastest
    step did, nor compute a sequence faster than the best per-sequence time seen. So
    t_mem = min t(b) and t_flop = min t(b)/b, and the knee is t_mem / t_flop. Points above the
    envelope (skinny GEMMs a BLAS runs inefficiently, noise, which only slows) do not move it;
    ``rms_log_error`` says how far the sweep sits above the envelope.
    """
    b, t = _check(batches, times)
    t_mem = min(t)
    t_flop = min(ti / bi for bi, ti in zip(b, t, strict=True))
    knee = t_mem / t_flop
    model = [max(t_mem, bi * t_flop) for bi in b]
    rms = math.sqrt(sum(math.log(ti / mi) ** 2 for ti, mi in zip(t, model, strict=True)) / len(b))
    return Knee(
        batch=knee,
        t_mem=t_mem,
        t_flop=t_flop,
        rms_log_error=rms,
        within_sweep=b[0] < knee < b[-1],
    )
