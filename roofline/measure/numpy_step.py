"""The decode step y = W·X on numpy, its weight pools, and output validation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from ..errors import BackendUnavailable, BadInput, KernelMismatch, positive_int
from ..host import llc_bytes
from ..model.dtypes import by_numpy
from . import pools
from .pools import pool_count

Regime = Literal["dram", "cache"]


@dataclass
class DecodeStep:
    """One decode step y = W·X, weights rotated through ``pool`` call to call.

    Call it to run one step. ``flops`` and ``bytes_moved`` (W, X and Y) describe one call.
    """

    pool: np.ndarray  # (k, n, n), read-only
    x: np.ndarray  # (n, batch)
    out: np.ndarray  # (n, batch)
    regime: Regime
    llc_bytes: int
    _next: int = field(default=0, repr=False)

    @property
    def n(self) -> int:
        return self.pool.shape[1]

    @property
    def batch(self) -> int:
        return self.x.shape[1]

    @property
    def dtype(self) -> str:
        return self.pool.dtype.name

    @property
    def itemsize(self) -> int:
        return self.pool.dtype.itemsize

    @property
    def flops(self) -> float:
        return 2.0 * self.n * self.n * self.batch

    @property
    def bytes_moved(self) -> float:
        return float(self.itemsize * (self.n * self.n + 2 * self.n * self.batch))

    @property
    def pool_bytes(self) -> int:
        return int(self.pool.nbytes)

    def next_weights(self) -> np.ndarray:
        """The matrix the next step reads; the pool turns past it."""
        w = self.pool[self._next]
        self._next = (self._next + 1) % len(self.pool)
        return w

    @property
    def last_weights(self) -> np.ndarray:
        """The matrix the last step read."""
        return self.pool[(self._next - 1) % len(self.pool)]

    def __call__(self) -> np.ndarray:  # inline, not next_weights(): the overhead roof times tiny steps
        w = self.pool[self._next]
        self._next = (self._next + 1) % len(self.pool)
        return np.matmul(w, self.x, out=self.out)


def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    """‖got − want‖ / ‖want‖ (Frobenius), in float64; inf when got holds NaN or inf."""
    got = np.asarray(got, dtype=np.float64)
    if not np.all(np.isfinite(got)):
        return float("inf")
    denom = float(np.linalg.norm(want))
    return float(np.linalg.norm(got - want)) / (denom or 1.0)


def reference_product(w: np.ndarray, x: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
    """W·X in float64, by row blocks to bound memory; ``rows`` selects output rows."""
    x64 = x.astype(np.float64)
    w = w if rows is None else w[rows]
    block = 1024
    return np.concatenate([w[i : i + block].astype(np.float64) @ x64 for i in range(0, len(w), block)])


#: Output rows checked against float64 in each of the two matrices :func:`validate` checks: a wrong kernel
#: (layout, stride, dtype, the wrong matrix) is wrong in every row. All of them took 2.2 s of the 2.3 s
#: build of n=8192 batch 512 here (the float64 copy of the matrix and its product), in the run and again
#: in each of its ``time_`` twin's processes; 256 rows take 0.06 s.
VALIDATE_ROWS = 256


def checked_rows(n: int, seed: int = 0) -> np.ndarray | None:
    """The output rows :func:`validate` checks: all (None) up to :data:`VALIDATE_ROWS`, else a random sample
    of them with the first and the last."""
    if n <= VALIDATE_ROWS:
        return None
    inner = np.random.default_rng(seed).choice(np.arange(1, n - 1), size=VALIDATE_ROWS - 2, replace=False)
    return np.sort(np.concatenate(([0, n - 1], inner)))


def validate(step: DecodeStep, seed: int = 0) -> float:
    """Check the step's output against float64 once; KernelMismatch if off. Returns the worse error.

    The first and the last matrix of the pool are checked, each on :func:`checked_rows`. The rotation is
    reset afterwards.
    """
    tol = by_numpy(step.dtype).tolerance
    worst = 0.0
    k = len(step.pool)
    for i, rows in ((0, checked_rows(step.n, seed)), (k - 1, checked_rows(step.n, seed + 1)))[: min(k, 2)]:
        step._next = i
        got = np.array(step(), copy=True)
        got = got if rows is None else got[rows]
        worst = max(worst, relative_error(got, reference_product(step.pool[i], step.x, rows)))
    step._next = 0
    if not worst <= tol:
        raise KernelMismatch(
            f"decode step n={step.n} batch={step.batch} {step.dtype} is wrong: relative error {worst:.3g} "
            f"against the float64 reference exceeds {tol:g}; no figure will be reported"
        )
    return worst


def decode_step(
    n: int,
    batch: int,
    dtype: str = "float32",
    regime: Regime = "dram",
    seed: int = 0,
    llc: int | None = None,
) -> DecodeStep:
    """Build, touch and validate a numpy decode step.

    ``regime="dram"``: a pool of ≥ 4× the LLC, so every call reads its weights from memory.
    ``regime="cache"``: one matrix, as in the lab; BackendUnavailable when it does not fit
    in the LLC (it would not be cache-resident).
    """
    positive_int("n", n)
    positive_int("batch", batch)
    dt = pools.numpy_dtype(dtype)
    llc = llc if llc is not None else llc_bytes()[0]
    if regime == "dram":
        count = pool_count(n, dt.itemsize, llc)
    elif regime == "cache":
        working = dt.itemsize * (n * n + 2 * n * batch)
        if working > llc:
            raise BackendUnavailable(
                f"n={n} batch={batch} needs {working / 2**20:.0f} MiB: not cache-resident in a "
                f"{llc / 2**20:.0f} MiB LLC"
            )
        count = 1
    else:
        raise BadInput(f"unknown regime {regime!r} (use 'dram' or 'cache')")
    pool = pools.weight_pool(n, count, dtype, seed)
    x = pools.random_array((n, batch), dtype, seed + 1)
    out = pools.random_array((n, batch), dtype, seed + 2)
    step = DecodeStep(pool=pool, x=x, out=out, regime=regime, llc_bytes=llc)
    validate(step, seed)
    return step
