"""The overhead roof, measured: a tiny step timed alone and back to back (:mod:`roofline.model.regimes`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .backends import build_step
from .step import measure_step

#: The matrix size of the overhead probe: small enough that the work is negligible.
OVERHEAD_N = 64


@dataclass(frozen=True)
class Overhead:
    """The cost of issuing one call, measured on a tiny step.

    ``single_call_seconds``: one call timed on its own (an isolated call's latency).
    ``amortized_seconds``: per call, back to back (CPU) or graph-replayed (CUDA): the issue rate.
    ``eager_seconds``: CUDA only, per call launched eagerly back to back (what a framework
    without graphs pays); None elsewhere.
    """

    backend: str
    dtype: str
    n: int
    batch: int
    timer: str
    single_call_seconds: float
    amortized_seconds: float
    eager_seconds: float | None = None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def measure_overhead(
    backend: str = "numpy", dtype: str = "fp32", n: int = OVERHEAD_N, batch: int = 1, repeats: int = 7
) -> Overhead:
    """The overhead roof of ``backend``: a tiny one-matrix step timed alone and amortized.

    Measure numpy and torch-cpu in separate processes (as asv does): in one process their
    thread pools (OpenBLAS, OpenMP) spin against each other and inflate both.
    """
    step = build_step(backend, dtype, n, batch, regime="cache")
    m = measure_step(step, repeats=repeats)
    eager = None
    if m.timer.startswith("cuda"):
        eager = step.time(repeats=repeats, method="events")[0].median
    return Overhead(
        backend=m.backend,
        dtype=dtype,
        n=n,
        batch=batch,
        timer=m.timer,
        single_call_seconds=m.single_call_seconds,
        amortized_seconds=m.seconds,
        eager_seconds=eager,
    )
