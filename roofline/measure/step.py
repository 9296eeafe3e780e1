"""Measure decode steps: time per call, GFLOP/s, effective GB/s and the spread, all from one timing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..errors import BadInput
from ..model.dtypes import by_numpy
from .numpy_step import DecodeStep
from .timing import Timing, pooled, time_interleaved


@dataclass(frozen=True)
class DecodeMeasurement:
    """One decode step measured: medians over timed samples, plus what was measured.

    ``spread``: interquartile range ÷ median of the timed samples (0.0: perfectly steady).
    """

    n: int
    batch: int
    dtype: str
    regime: str
    seconds: float
    gflops: float
    gbps: float
    spread: float
    single_call_seconds: float
    samples: int
    calls_per_sample: int
    pool_bytes: int
    llc_bytes: int
    # Beside numpy: which backend ran it, how it was timed ("host", "cuda-graph", "cuda-events"),
    # the weights' storage bytes per parameter and the threads of its library (None if unknown).
    backend: str = "numpy"
    timer: str = "host"
    bytes_per_param: int | None = None
    threads: int | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def work(self) -> tuple[float, float, float]:
        """(seconds, FLOPs, bytes) of one call: 2·n²·batch, and W, X and Y at the weights' bytes per
        parameter (the dtype table's where the backend did not say): what flat-timing checks read."""
        item = self.bytes_per_param or by_numpy(self.dtype).bytes
        moved = float(item * (self.n * self.n + 2 * self.n * self.batch))
        return self.seconds, 2.0 * self.n * self.n * self.batch, moved


#: Host-timed steps: each sample lasts at least MIN_SAMPLE_S (back-to-back calls, weights still
#: rotating), and the samples add up to at least MIN_TOTAL_S.
MIN_SAMPLE_S = 0.02
MIN_TOTAL_S = 0.25


def host_timed(step: DecodeStep) -> bool:
    """Timed here on the host clock: numpy steps, and torch steps on the CPU (``step.host_timed``)."""
    return bool(getattr(step, "host_timed", not hasattr(step, "time")))


def measure_step(step: DecodeStep, repeats: int = 7, warmup: int = 2) -> DecodeMeasurement:
    """Time an already validated step (see :func:`roofline.measure.numpy_step.decode_step`): one round
    of :class:`StepRounds` for it alone. Host-timed steps (:func:`host_timed`) take samples of at least
    MIN_SAMPLE_S adding up to at least MIN_TOTAL_S; a step on a device times itself (a CUDA graph or events).
    """
    return measure_steps([step], repeats, warmup)[0]


def measure_steps(steps: Sequence[DecodeStep], repeats: int = 7, warmup: int = 2) -> list[DecodeMeasurement]:
    """Time host-timed steps together, their samples interleaved (:func:`~.timing.time_interleaved`).

    Whatever the machine does meanwhile lands on every step alike, so their ratios (batch 64 ÷
    batch 1, DRAM ÷ cache) hold better than those of steps timed one after another. Steps on a
    device time themselves, alone. One round of :class:`StepRounds`.
    """
    rounds = StepRounds(steps, repeats, warmup)
    rounds.time()
    return rounds.measurements()


class StepRounds:
    """Steps timed together at several moments (one :meth:`time` per moment, other work between);
    a host-timed step's samples in a round add up to at least ``min_total_s``.

    Each step's figures come from the samples of every round (:func:`~.timing.pooled`): a slow
    moment of the machine, a few seconds long, moves one round's samples but not the median of all.
    """

    def __init__(
        self, steps: Sequence[DecodeStep], repeats: int = 7, warmup: int = 2, min_total_s: float = MIN_TOTAL_S
    ):
        self.steps = list(steps)
        self.repeats, self.warmup, self.min_total_s = repeats, warmup, min_total_s
        self.timings: list[list[Timing]] = [[] for _ in self.steps]
        self.timers = ["host"] * len(self.steps)

    @property
    def rounds(self) -> int:
        return min((len(t) for t in self.timings), default=0)

    def time(self, fresh: Sequence[DecodeStep] | None = None) -> None:
        """One round: the host-timed steps interleaved, then each device step on its own.

        ``fresh``: new builds of the same steps (the same sizes), timed from this round on in place of
        the ones held.
        """
        if fresh is not None:
            if [(s.n, s.batch, s.dtype) for s in fresh] != [(s.n, s.batch, s.dtype) for s in self.steps]:
                raise BadInput("a round's fresh steps must be the same steps, in the same order")
            self.steps = list(fresh)
        host = [i for i, s in enumerate(self.steps) if host_timed(s)]
        if host:
            got = time_interleaved(
                [self.steps[i] for i in host],
                self.repeats,
                self.warmup,
                min_sample_s=MIN_SAMPLE_S,
                min_total_s=self.min_total_s,
            )
            for i, t in zip(host, got, strict=True):
                self.timings[i].append(t)
        for i, s in enumerate(self.steps):
            if i not in host:
                t, self.timers[i] = s.time(repeats=self.repeats, warmup=self.warmup)
                self.timings[i].append(t)

    def only(self, kept: Sequence[int]) -> None:
        """Keep only the steps at these indices, with their timings (a step that failed a later round)."""
        self.steps = [self.steps[i] for i in kept]
        self.timings = [self.timings[i] for i in kept]
        self.timers = [self.timers[i] for i in kept]

    def release(self) -> None:
        """Let go of the steps (their pools) and keep what :meth:`measurements` reads of them; only
        a round on fresh builds (:meth:`time` with ``fresh``) can follow."""
        self.steps = [_Shape.of(s) for s in self.steps]

    def measurements(self) -> list[DecodeMeasurement]:
        """Each step's figures from all its rounds' samples; BadInput before the first round."""
        if self.steps and not self.rounds:
            raise BadInput("no round of the steps was timed")
        rows = zip(self.steps, self.timings, self.timers, strict=True)
        return [measurement(s, pooled(t), timer) for s, t, timer in rows]


@dataclass(frozen=True)
class _Shape:
    """What :func:`measurement` reads of a step (the one place its defaults live), without its pools."""

    n: int
    batch: int
    dtype: str
    regime: str
    flops: float
    bytes_moved: float
    pool_bytes: int
    llc_bytes: int
    backend: str
    bytes_per_param: int | None
    threads: int | None

    @classmethod
    def of(cls, step) -> _Shape:
        return cls(
            step.n,
            step.batch,
            step.dtype,
            step.regime,
            step.flops,
            step.bytes_moved,
            step.pool_bytes,
            step.llc_bytes,
            getattr(step, "backend", "numpy"),
            step.bytes_per_param if hasattr(step, "bytes_per_param") else step.itemsize,
            getattr(step, "threads", None),
        )


def measurement(step: DecodeStep, t: Timing, timer: str = "host") -> DecodeMeasurement:
    """The figures of one timing of ``step``: time per call, and GFLOP/s and GB/s from that same time."""
    shape = _Shape.of(step)
    return DecodeMeasurement(
        n=shape.n,
        batch=shape.batch,
        dtype=shape.dtype,
        regime=shape.regime,
        seconds=t.median,
        gflops=shape.flops / t.median / 1e9,
        gbps=shape.bytes_moved / t.median / 1e9,
        spread=t.spread,
        single_call_seconds=t.single_call,
        samples=len(t.per_call),
        calls_per_sample=t.number,
        pool_bytes=shape.pool_bytes,
        llc_bytes=shape.llc_bytes,
        backend=shape.backend,
        timer=timer,
        bytes_per_param=shape.bytes_per_param,
        threads=shape.threads,
    )
