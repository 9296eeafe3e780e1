"""The observed crossover: a batch sweep at a DRAM-sized pool, and its knee (:mod:`roofline.model.knee`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model.knee import Knee, fit_knee
from .numpy_step import decode_step
from .step import DecodeMeasurement, measure_steps

#: Batches of the default sweep: powers of two from 1 to 1024.
SWEEP_BATCHES = tuple(2**i for i in range(11))

#: The default sweep size: large enough that the weight read dominates batch 1.
SWEEP_N = 4096


@dataclass(frozen=True)
class Sweep:
    """A batch sweep at one n, with its knee."""

    n: int
    dtype: str
    points: tuple[DecodeMeasurement, ...]
    knee: Knee

    def as_dict(self) -> dict[str, object]:
        return {
            "n": self.n,
            "dtype": self.dtype,
            "points": [p.as_dict() for p in self.points],
            "knee": self.knee.as_dict(),
        }


def sweep(
    n: int = SWEEP_N,
    batches: Sequence[int] = SWEEP_BATCHES,
    dtype: str = "float32",
    repeats: int = 5,
    progress: Callable[[int], None] | None = None,
) -> Sweep:
    """Measure the decode step at every batch over a DRAM-sized pool, then fit the knee.

    The batches are timed together, their samples interleaved, so a busy spell of the machine
    lands on all of them alike rather than bending the curve at one batch.
    """
    steps = []
    for batch in batches:
        steps.append(decode_step(n, batch, dtype, regime="dram"))
        if progress:
            progress(batch)
    points = measure_steps(steps, repeats=repeats)
    knee = fit_knee([p.batch for p in points], [p.seconds for p in points])
    return Sweep(n=n, dtype=dtype, points=tuple(points), knee=knee)
