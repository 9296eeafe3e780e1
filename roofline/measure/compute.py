"""Compute roofs per dtype: a square GEMM in each dtype this CPU computes natively, validated, then timed.

- fp64 and fp32 through numpy's BLAS (:func:`roofline.measure.ceilings.gemm_peak`, the kernels' own BLAS);
- bf16, fp16 and int8 through torch on the CPU (oneDNN, which uses AMX and AVX-512/AVX-VNNI where
  present): ``torch.matmul`` for bf16 and fp16, ``torch._int_mm`` (int8 × int8 → int32) for int8.

A torch dtype's square GEMM is measured only where the CPU has instructions for it (:data:`NATIVE`):
elsewhere torch's matmul converts every element in software (bf16 at ~0.5 GFLOP/s on an AVX2 EPYC,
against ~100 for fp32), which measures the conversion, not a roof. Such a dtype, or one whose
library is absent, is skipped with the reason, unless a model decodes in it here: then its roof is
``F.linear`` at the model's own layer (:class:`ComputeRounds`' ``linear``), the kernel the model
runs. Every GEMM is checked against a float64 product of its own operands before it is timed; the
roof is the median of :data:`~roofline.measure.ceilings.GEMM_RUNS` timed GEMMs with its confidence
interval.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import BackendUnavailable, BadInput, KernelMismatch, positive_int
from ..host import cpu_flags, import_torch
from ..model.dtypes import COMPUTE_DTYPES, DTYPES, by_numpy
from ..model.hierarchy import ComputeRoof
from ..model.intervals import fastest_round_median, median_ci
from .ceilings import GEMM_RUNS, GemmPeak, climb, default_gemm_n, gemm_peak
from .numpy_step import relative_error
from .pools import check_fits, random_array
from .timing import settle

#: CPU flags (any one suffices) that give a torch dtype native arithmetic on x86.
NATIVE = {
    "bf16": ("amx_bf16", "avx512_bf16"),
    "fp16": ("amx_fp16", "avx512_fp16"),
    "int8": ("amx_int8", "avx512_vnni", "avx_vnni"),
}

#: The dtypes computed through torch (fp32 and fp64 are numpy's BLAS: the run's GEMM ceiling).
TORCH_DTYPES = ("bf16", "fp16", "int8")
#: The dtypes a model's own layers are timed in as ``F.linear`` (:class:`ComputeRounds`' ``linear``): a model
#: decoded by torch in fp32 runs torch's fp32 kernels, not numpy's.
LINEAR_DTYPES = ("bf16", "fp16", "fp32")

#: Square size of a torch GEMM timed at one moment (:func:`compute_roof`); a run's rounds climb
#: :data:`~roofline.measure.ceilings.GEMM_LADDER` instead (:func:`square_gemms`): on the Xeon a 4096³ bf16 GEMM
#: (oneDNN, AMX) read 683 GFLOP/s where the run's roof read 426-802.
TORCH_GEMM_N = 2048

#: Each dtype's GEMMs in one round of a run add up to at least this long ...
COMPUTE_ROUND_S = 0.5
#: ... or number this many (small test sizes would fill a round with thousands).
COMPUTE_MAX_GEMMS = 100


def from_gemm(peak: GemmPeak) -> ComputeRoof:
    """The compute roof of a numpy-BLAS GEMM peak (fp32, fp64), in GFLOP/s."""
    name = by_numpy(peak.dtype).name
    return ComputeRoof(
        name, peak.roof / 1e9, f"numpy BLAS: {peak.blas}", peak.low / 1e9, peak.high / 1e9, peak.n, peak.runs
    )


def native_reason(dtype: str, flags: frozenset[str] | None = None) -> str | None:
    """Why ``dtype`` has no native arithmetic on this CPU, or None where it has (or needs none: fp32, fp64)."""
    needs = NATIVE.get(dtype)
    if not needs:
        return None
    flags = flags if flags is not None else cpu_flags()
    if any(f in flags for f in needs):
        return None
    return (
        f"this CPU has none of {', '.join(needs)}: torch would run {dtype} without hardware support, "
        "which measures its fallback path, not a roof"
    )


@dataclass(frozen=True)
class _TorchGemm:
    """One dtype's GEMM on torch, validated: ``op()`` runs it, ``ops`` (FLOPs or int8 OPs) per call; square
    n × n where ``rows`` is None, else ``F.linear`` of ``rows`` × n activations by ``out`` × n weights."""

    dtype: str
    n: int
    op: Callable[[], object]
    library: str
    rows: int | None = None
    out: int | None = None

    @property
    def ops(self) -> float:
        return 2.0 * self.n**3 if self.rows is None else 2.0 * self.rows * self.n * self.out

    @property
    def label(self) -> str:
        if self.rows is None:
            return f"{self.dtype} {self.n}³"
        return f"{self.dtype} F.linear {self.rows}×{self.n}·{self.n}×{self.out}"


def _torch_gemm(dtype: str, n: int) -> _TorchGemm:
    """The validated GEMM of a torch dtype (BackendUnavailable where torch cannot run it, KernelMismatch if wrong)."""
    torch = import_torch()
    if dtype == "int8":
        if not hasattr(torch, "_int_mm"):
            raise BackendUnavailable(f"torch {torch.__version__} has no _int_mm for int8")
        rng = np.random.default_rng(21)
        a64 = rng.integers(-127, 128, (n, n)).astype(np.float64)
        b64 = rng.integers(-127, 128, (n, n)).astype(np.float64)
        a, b = torch.from_numpy(a64.astype(np.int8)), torch.from_numpy(b64.astype(np.int8))

        def op():
            return torch._int_mm(a, b)

        tol = 0.0  # integer products are exact
    else:
        tdtype = getattr(torch, DTYPES[dtype].torch)
        a = torch.from_numpy(random_array((n, n), "float32", 21)).to(tdtype)
        b = torch.from_numpy(random_array((n, n), "float32", 22)).to(tdtype)
        a64, b64 = a.to(torch.float64).numpy(), b.to(torch.float64).numpy()

        def op():
            return torch.matmul(a, b)

        tol = DTYPES[dtype].tolerance
    try:
        c = op()  # warm-up, and the result to check
    except RuntimeError as exc:
        raise BackendUnavailable(f"torch {torch.__version__} cannot run a {dtype} GEMM on this CPU: {exc}") from None
    rows = np.arange(0, n, max(1, n // 64))
    err = relative_error(c[rows].to(torch.float64).numpy(), a64[rows] @ b64)
    if not err <= tol:
        raise KernelMismatch(f"torch {dtype} GEMM is wrong: relative error {err:.3g} > {tol:g}; no roof reported")
    what = "_int_mm" if dtype == "int8" else "matmul"
    return _TorchGemm(dtype, n, op, f"torch {torch.__version__} {what} {n}³ ({torch.get_num_threads()} threads)")


def square_gemms(dtype: str, n: int | None = None, require_native: bool = True) -> list[_TorchGemm]:
    """A torch dtype's validated square GEMMs for a run's rounds: ``n`` alone where given (ROOFLINE_GEMM_N), else
    the sizes :func:`~roofline.measure.ceilings.climb` keeps, each probed with three GEMMs first."""
    if n is not None:
        return [_torch_gemm(dtype, _checked(dtype, n, require_native))]
    made: dict[int, _TorchGemm] = {}

    def probe(size: int) -> float:
        gemm = made[size] = _torch_gemm(dtype, _checked(dtype, size, require_native))
        settle()  # the float64 check's BLAS workers spin ~0.1 s
        gemm.op()
        fastest = min(_seconds(gemm.op) for _ in range(3))
        return gemm.ops / fastest

    return [made[size] for size in climb(probe)]


def _seconds(op: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    op()
    return time.perf_counter() - t0


def _torch_roof(dtype: str, n: int, runs: int) -> ComputeRoof:
    gemm = _torch_gemm(dtype, n)
    settle()  # the float64 check's BLAS workers spin ~0.1 s: a GEMM timed beside them runs at half speed
    gemm.op()  # untimed: torch's own threads, asleep after the settle, wake for this one
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        gemm.op()
        times.append(time.perf_counter() - t0)
    ci = median_ci([gemm.ops / t / 1e9 for t in times])
    return ComputeRoof(dtype, ci.median, gemm.library, ci.low, ci.high, n, runs)


def _torch_linears(dtype: str, k: int, out: int, rows: Sequence[int]) -> list[_TorchGemm]:
    """``F.linear`` of ``r`` × ``k`` activations, for each ``r`` of ``rows``, by one ``out`` × ``k`` weight in
    ``dtype``, as a model's layer runs it; each validated on a sample of its output columns (KernelMismatch
    if wrong)."""
    torch = import_torch()
    tdtype = getattr(torch, DTYPES[dtype].torch)
    check_fits(4 * (out * k + 2 * max(rows) * max(k, out)), f"a {k}×{out} {dtype} F.linear")
    w = torch.from_numpy(random_array((out, k), "float32", 24)).to(tdtype)
    cols = np.arange(0, out, max(1, out // 256))
    w64 = w[cols].to(torch.float64).numpy().T
    library = f"torch {torch.__version__} F.linear at a model's shapes ({torch.get_num_threads()} threads)"
    gemms = []
    for r in rows:
        x = torch.from_numpy(random_array((r, k), "float32", 23)).to(tdtype)

        def op(x=x):
            return torch.nn.functional.linear(x, w)

        try:
            y = op()
        except RuntimeError as exc:
            why = f"torch {torch.__version__} cannot run a {dtype} F.linear on this CPU: {exc}"
            raise BackendUnavailable(why) from None
        err = relative_error(y[:, cols].to(torch.float64).numpy(), x.to(torch.float64).numpy() @ w64)
        if not err <= DTYPES[dtype].tolerance:
            raise KernelMismatch(f"torch {dtype} F.linear is wrong: relative error {err:.3g}; no roof reported")
        gemms.append(_TorchGemm(dtype, k, op, library, r, out))
    return gemms


def _linear_checked(dtype: str, k: int, out: int, rows: Sequence[int]) -> tuple[int, int, tuple[int, ...]]:
    if dtype not in LINEAR_DTYPES:
        raise BadInput(f"no F.linear roof for dtype {dtype!r} (use {', '.join(LINEAR_DTYPES)})")
    rows = tuple(positive_int("F.linear rows", r) for r in rows)
    if not rows:
        raise BadInput("an F.linear roof needs at least one row count")
    return positive_int("F.linear k", k), positive_int("F.linear out", out), rows


def _checked(dtype: str, n: int | None, require_native: bool) -> int:
    """The GEMM size of a torch dtype's roof; BadInput, or BackendUnavailable where the CPU emulates it."""
    if dtype not in COMPUTE_DTYPES:
        raise BadInput(f"no compute roof for dtype {dtype!r} (use {', '.join(COMPUTE_DTYPES)})")
    if n is not None and n <= 0:
        raise BadInput(f"a compute roof needs a positive n, got n={n}")
    if require_native and (reason := native_reason(dtype)):
        raise BackendUnavailable(reason)
    n = n or TORCH_GEMM_N
    check_fits(3 * n * n * 8, f"a {n}×{n} {dtype} GEMM and its float64 check")
    return n


class ComputeRounds:
    """The torch dtypes' roofs timed at several moments of a run (one :meth:`time` per moment, other work
    between) and pooled, as the run's other ceilings are; built once (operands written, each GEMM
    validated). A dtype that cannot run here keeps its reason (:attr:`skipped`); KernelMismatch if wrong.
    In three rounds of 0.5 s a 2-core VM's int8 roof moved max/min 1.08-1.15 over eight runs
    (docs/measured/method.md has the one-moment figures it replaced).

    ``linear``: {dtype: (layers, rows)}, a model's layers (each ``(k, out)``: ``out`` × ``k`` weights) at
    each of ``rows`` activation rows (its batches), in a dtype it decodes in here, timed as ``F.linear``
    beside the square GEMM, whether or not the CPU has the dtype's instructions (the model runs it either
    way). The dtype's roof is the fastest median of its GEMMs: a roof below the rate of any of the model's
    own layers would let the model beat its bound. Without bf16 instructions this 2-core EPYC ran a square
    bf16 ``torch.matmul`` at 0.3-1.2 GFLOP/s and Llama-3-8B's layers in ``F.linear`` at 14.6-20.5, the
    fastest a 4096 × 4096 one at 8 rows.
    """

    def __init__(
        self,
        dtypes: Sequence[str] = TORCH_DTYPES,
        n: int | None = None,
        require_native: bool = True,
        linear: Mapping[str, tuple[Sequence[tuple[int, int]], Sequence[int]]] | None = None,
    ):
        self.gemms: dict[str, _TorchGemm] = {}
        self.skipped: dict[str, str] = {}
        for dtype in dtypes:
            try:
                for gemm in square_gemms(dtype, n, require_native):
                    self._add(gemm)
            except BackendUnavailable as exc:
                self.skipped[dtype] = str(exc)
        for dtype, (layers, rows) in (linear or {}).items():
            try:
                for k, out in dict.fromkeys(layers):
                    for gemm in _torch_linears(dtype, *_linear_checked(dtype, k, out, rows)):
                        self._add(gemm)
            except BackendUnavailable as exc:
                self.skipped.setdefault(dtype, str(exc))
            else:
                self.skipped.pop(dtype, None)
        self.samples: dict[str, list[float]] = {label: [] for label in self.gemms}
        self.round_starts: dict[str, list[int]] = {label: [] for label in self.gemms}

    def _add(self, gemm: _TorchGemm) -> None:
        self.gemms[gemm.label] = gemm

    def time(self, round_s: float = COMPUTE_ROUND_S) -> None:
        """One round: once the last work's BLAS workers sleep and the smallest GEMM has woken torch's, the
        GEMMs in turn, one of each at a time, each until its dtype's GEMMs add up to ``round_s`` (its share
        of them, at most :data:`COMPUTE_MAX_GEMMS` calls). (A warm-up call of each, a model's 64-row layers
        among them at 0.38 s a call here, doubled the round.)"""
        if round_s <= 0:
            raise BadInput(f"a round needs a positive length, got {round_s}")
        gemms = list(self.gemms.values())
        settle()
        if gemms:
            min(gemms, key=lambda g: g.ops).op()
        share = {g.label: round_s / sum(h.dtype == g.dtype for h in gemms) for g in gemms}
        for label, starts in self.round_starts.items():
            starts.append(len(self.samples[label]))
        spent = dict.fromkeys(self.gemms, 0.0)
        for _ in range(COMPUTE_MAX_GEMMS if gemms else 0):
            due = [g for g in gemms if spent[g.label] < share[g.label]]
            if not due:
                break
            for g in due:
                t0 = time.perf_counter()
                g.op()
                t = time.perf_counter() - t0
                spent[g.label] += t
                self.samples[g.label].append(g.ops / t / 1e9)

    def roofs(self) -> tuple[ComputeRoof, ...]:
        """Each dtype's roof: the fastest of its GEMMs, each its fastest round's median (as the numpy GEMMs'
        and the bandwidths' roofs), with the interval of all its rounds; BadInput before the first round."""
        if any(not s for s in self.samples.values()):
            raise BadInput("the compute roofs were never timed")
        best: dict[str, ComputeRoof] = {}
        for label, rates in self.samples.items():
            ci, g = median_ci(rates), self.gemms[label]
            fastest = fastest_round_median(rates, self.round_starts[label])
            roof = ComputeRoof(g.dtype, fastest, g.library, ci.low, ci.high, g.n, len(rates))
            if g.dtype not in best or roof.gflops > best[g.dtype].gflops:
                best[g.dtype] = roof
        return tuple(best.values())


def compute_roof(dtype: str, n: int | None = None, runs: int = GEMM_RUNS, require_native: bool = True) -> ComputeRoof:
    """The compute roof of one dtype at one moment; BackendUnavailable (with the reason) where it cannot be
    measured here. ``require_native=False`` measures a torch dtype even where the CPU emulates it (for tests).
    """
    if dtype not in COMPUTE_DTYPES:
        raise BadInput(f"no compute roof for dtype {dtype!r} (use {', '.join(COMPUTE_DTYPES)})")
    if runs < 1 or (n is not None and n <= 0):
        raise BadInput(f"a compute roof needs positive n and runs, got n={n}, runs={runs}")
    if dtype in ("fp64", "fp32"):
        numpy_name = DTYPES[dtype].numpy
        return from_gemm(gemm_peak(numpy_name, n or default_gemm_n(numpy_name), runs=runs))
    return _torch_roof(dtype, _checked(dtype, n, require_native), runs)
