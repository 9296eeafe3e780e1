"""Was the machine ours while we measured? The verdict on a run's conditions, pure arithmetic.

:mod:`roofline.measure.contention` samples the figures (``/proc/stat`` before and during the run, a
reference kernel timed at its start and its end); this module judges them, for the run itself and
for reports built from recorded results, with one set of limits:

- other processes (and the hypervisor's steal) took more than :data:`LOST_SHARE_LIMIT` of the CPU
  time of the cores in use;
- the reference kernel's time moved by more than :data:`REFERENCE_MARGIN` between start and end;
- the decode steps' time per call did not depend on n and batch (:func:`flat_timing`): on a busy
  machine a GEMV split over every core waits a scheduler slice for its slowest thread, whatever its
  size, and the "figures" are the scheduler's.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass

#: A run whose cores lost more than this share of their time to other processes or steal is flagged.
LOST_SHARE_LIMIT = 0.10

#: A run whose reference kernel got this much slower or faster between start and end is flagged.
#: On a quiet 2-core VM (AMD EPYC, 32 MiB L3 shared with other guests) the kernel's drift read
#: 0.75–1.27 over 12 quiet runs, as widely as beside one or two busy processes (0.63–1.10, runs the
#: lost CPU share flagged anyway): a narrower margin flagged the machine's own minute-to-minute changes.
REFERENCE_MARGIN = 1.50

#: Two points whose work (bytes and FLOPs alike) differs by at least this factor ...
FLAT_WORK_RATIO = 4.0
#: ... should differ in time by more than this; if most such pairs do not, timing is flat.
FLAT_TIME_RATIO = 1.5


@dataclass(frozen=True)
class Conditions:
    """What the machine gave a run. None where not measured (no ``/proc/stat``, nothing to compare).

    ``lost_share``: share of the CPU time of the cores in use that other processes and steal took
    (the larger of the sample before measuring and the one over the measurement);
    ``steal_share``: the steal part of it; ``run_queue``: other runnable threads, on average, before
    measuring; ``reference_drift``: the reference kernel's time at the end ÷ at the start;
    ``flat_timing``: the decode steps' time per call did not depend on their size;
    ``blas_threads`` of ``cores``: what the BLAS ran on (:func:`blas_threads_for`).
    """

    lost_share: float | None = None
    steal_share: float | None = None
    run_queue: float | None = None
    reference_drift: float | None = None
    flat_timing: bool | None = None
    window_s: float | None = None
    blas_threads: int | None = None
    cores: int | None = None

    @property
    def quietness(self) -> float | None:
        """Share of the CPU time that was the suite's to use (1.0: nobody else ran), the tracked figure."""
        return None if self.lost_share is None else max(0.0, 1.0 - self.lost_share)

    def reasons(self) -> list[str]:
        """One phrase per limit this run broke; empty when it was quiet (or nothing was measured)."""
        out = []
        if self.lost_share is not None and self.lost_share > LOST_SHARE_LIMIT:
            line = f"{self.lost_share:.0%} of CPU time lost to other processes"
            if self.steal_share:
                line += f" (steal {self.steal_share:.0%})"
            if self.run_queue:
                line += f", {self.run_queue:.1f} other runnable on average"
            out.append(line)
        drift = self.reference_drift
        if drift is not None and not 1 / REFERENCE_MARGIN <= drift <= REFERENCE_MARGIN:
            out.append(f"the reference kernel took {drift:.2f}× its starting time at the end")
        if self.flat_timing:
            out.append("time per call did not depend on n and batch (a scheduler slice per call?)")
        if out and self.blas_threads and self.cores and self.blas_threads < self.cores:
            out.append(f"the BLAS ran on {self.blas_threads} of {self.cores} threads, the cores others left")
        return out

    @property
    def contended(self) -> bool:
        return bool(self.reasons())

    def headline(self) -> str | None:
        """The report's first line when the run was contended, else None."""
        reasons = self.reasons()
        if not reasons:
            return None
        return "MEASURED UNDER CONTENTION: " + "; ".join(reasons) + ": these figures are not this machine's"

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "quietness": self.quietness, "contended": self.contended, "reasons": self.reasons()}


def flat_timing(points: Sequence[tuple[float, float, float]]) -> bool | None:
    """Did time per call ignore the work? ``points``: (seconds, flops, bytes) per decode step.

    Every pair whose larger step does ≥ :data:`FLAT_WORK_RATIO` × the smaller's bytes and FLOPs is
    expected to take longer by more than :data:`FLAT_TIME_RATIO`; True when most such pairs do not,
    None when no pair differs enough to tell.
    """
    pairs = 0
    flat = 0
    timed = [p for p in points if p[0] and p[0] > 0]
    for (ta, fa, ba), (tb, fb, bb) in itertools.combinations(timed, 2):
        if fa > fb:
            (ta, fa, ba), (tb, fb, bb) = (tb, fb, bb), (ta, fa, ba)
        if fb >= FLAT_WORK_RATIO * fa and bb >= FLAT_WORK_RATIO * ba:
            pairs += 1
            flat += tb < FLAT_TIME_RATIO * ta
    return None if pairs == 0 else flat > pairs / 2


def blas_threads_for(cores: int, run_queue: float | None) -> int:
    """Threads for the BLAS when ``run_queue`` other threads were runnable before measuring: the cores left.

    A GEMV split over every core waits for its slowest part; a part whose core a neighbour holds
    waits a scheduler slice, so on a busy machine each call costs a slice whatever its size. On the
    cores left over it costs its work. A quiet machine (run queue under a half) keeps every core.
    """
    if not run_queue or run_queue < 0.5:
        return cores
    return max(1, cores - round(run_queue))
