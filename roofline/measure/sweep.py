"""The observed crossover: a batch sweep at a DRAM-sized pool, and its knee (:mod:`roofline.model.knee`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..model.knee import Knee, fit_knee
from .numpy_step import decode_step
from .step import MIN_TOTAL_S, DecodeMeasurement, StepRounds

#: Batches of the default sweep: powers of two from 1 to 1024.
SWEEP_BATCHES = tuple(2**i for i in range(11))

#: The default sweep size: large enough that the weight read dominates batch 1.
SWEEP_N = 4096

#: Timed samples of each batch in a sweep at one moment (at least: short steps take more, to fill
#: :data:`~roofline.measure.step.MIN_TOTAL_S`).
SWEEP_REPEATS = 5


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


class SweepRounds:
    """The sweep's steps, built (and validated) once and timed at as many moments as :meth:`time` is
    called (:class:`~roofline.measure.step.StepRounds`, the batches' samples interleaved in each);
    :meth:`result` fits the knee to every round's samples pooled. ``min_total_s``: each step's
    samples in one round add up to at least this.
    """

    def __init__(
        self,
        n: int = SWEEP_N,
        batches: Sequence[int] = SWEEP_BATCHES,
        dtype: str = "float32",
        repeats: int = SWEEP_REPEATS,
        progress: Callable[[int], None] | None = None,
        min_total_s: float = MIN_TOTAL_S,
    ):
        steps = []
        for batch in batches:
            steps.append(decode_step(n, batch, dtype, regime="dram"))
            if progress:
                progress(batch)
        self.n, self.dtype = n, dtype
        self.rounds = StepRounds(steps, repeats, min_total_s=min_total_s)

    def time(self) -> None:
        """One round: every batch's samples, interleaved."""
        self.rounds.time()

    def result(self) -> Sweep:
        """The points from every round's samples and their knee; BadInput before the first round."""
        points = self.rounds.measurements()
        knee = fit_knee([p.batch for p in points], [p.seconds for p in points])
        return Sweep(n=self.n, dtype=self.dtype, points=tuple(points), knee=knee)


def sweep(
    n: int = SWEEP_N,
    batches: Sequence[int] = SWEEP_BATCHES,
    dtype: str = "float32",
    repeats: int = SWEEP_REPEATS,
    progress: Callable[[int], None] | None = None,
) -> Sweep:
    """Measure the decode step at every batch over a DRAM-sized pool at one moment, then fit the knee.

    The batches are timed together, their samples interleaved, so a busy spell of the machine
    lands on all of them alike rather than bending the curve at one batch.
    """
    rounds = SweepRounds(n, batches, dtype, repeats, progress)
    rounds.time()
    return rounds.result()
