"""Compute roofs per dtype: a square GEMM in each dtype this CPU computes natively, validated, then timed.

- fp64 and fp32 through numpy's BLAS (:func:`roofline.measure.ceilings.gemm_peak`, the kernels' own BLAS);
- bf16, fp16 and int8 through torch on the CPU (oneDNN, which uses AMX and AVX-512/AVX-VNNI where
  present): ``torch.matmul`` for bf16 and fp16, ``torch._int_mm`` (int8 × int8 → int32) for int8.

A torch dtype is measured only where the CPU has instructions for it (:data:`NATIVE`): elsewhere
torch converts every element in software (bf16 at ~0.5 GFLOP/s on an AVX2 EPYC, against ~100
for fp32), which measures the conversion, not a roof. Such a dtype, or one whose library is
absent, is skipped with the reason. Every GEMM is checked against a float64 product of its own
operands before it is timed; the roof is the median of :data:`~roofline.measure.ceilings.GEMM_RUNS`
timed GEMMs with its confidence interval.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import BackendUnavailable, BadInput, KernelMismatch
from ..host import cpu_flags, import_torch
from ..model.dtypes import DTYPES, by_numpy
from ..model.hierarchy import ComputeRoof
from ..model.intervals import median_ci
from .ceilings import GEMM_RUNS, GemmPeak, default_gemm_n, gemm_peak
from .numpy_step import relative_error
from .pools import check_fits, random_array
from .timing import settle

#: The dtypes a compute roof is measured for, in the order reports list them.
COMPUTE_DTYPES = ("fp64", "fp32", "bf16", "fp16", "int8")

#: CPU flags (any one suffices) that give a torch dtype native arithmetic on x86.
NATIVE = {
    "bf16": ("amx_bf16", "avx512_bf16"),
    "fp16": ("amx_fp16", "avx512_fp16"),
    "int8": ("amx_int8", "avx512_vnni", "avx_vnni"),
}

#: The dtypes computed through torch (fp32 and fp64 are numpy's BLAS: the run's GEMM ceiling).
TORCH_DTYPES = ("bf16", "fp16", "int8")

#: Square size of the torch GEMMs (the AMX/VNNI kernels reach their rate well below this).
TORCH_GEMM_N = 2048

#: Each dtype's GEMMs in one round of a run add up to at least this long ...
COMPUTE_ROUND_S = 0.5
#: ... or number this many (small test sizes would fill a round with thousands).
COMPUTE_MAX_GEMMS = 100


def from_gemm(peak: GemmPeak) -> ComputeRoof:
    """The compute roof of a numpy-BLAS GEMM peak (fp32, fp64), in GFLOP/s."""
    name = by_numpy(peak.dtype).name
    return ComputeRoof(
        name, peak.median / 1e9, f"numpy BLAS: {peak.blas}", peak.low / 1e9, peak.high / 1e9, peak.n, peak.runs
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
    """One dtype's square GEMM on torch, validated: ``op()`` runs it, ``ops`` (FLOPs or int8 OPs) per call."""

    dtype: str
    n: int
    op: Callable[[], object]
    library: str

    @property
    def ops(self) -> float:
        return 2.0 * self.n**3


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
    return _TorchGemm(dtype, n, op, f"torch {torch.__version__} {what} ({torch.get_num_threads()} threads)")


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
    """

    def __init__(self, dtypes: Sequence[str] = TORCH_DTYPES, n: int | None = None, require_native: bool = True):
        self.gemms: dict[str, _TorchGemm] = {}
        self.skipped: dict[str, str] = {}
        for dtype in dtypes:
            try:
                self.gemms[dtype] = _torch_gemm(dtype, _checked(dtype, n, require_native))
            except BackendUnavailable as exc:
                self.skipped[dtype] = str(exc)
        self.samples: dict[str, list[float]] = {d: [] for d in self.gemms}

    def time(self, round_s: float = COMPUTE_ROUND_S) -> None:
        """One round: once the last work's BLAS workers sleep and a GEMM of each has woken torch's, the
        dtypes' GEMMs in turn, one of each at a time, until every dtype's add up to ``round_s`` (at most
        :data:`COMPUTE_MAX_GEMMS` each)."""
        if round_s <= 0:
            raise BadInput(f"a round needs a positive length, got {round_s}")
        gemms = list(self.gemms.values())
        settle()
        for g in gemms:
            g.op()
        spent = dict.fromkeys(self.gemms, 0.0)
        for _ in range(COMPUTE_MAX_GEMMS if gemms else 0):
            if min(spent.values()) >= round_s:
                break
            for g in gemms:
                t0 = time.perf_counter()
                g.op()
                t = time.perf_counter() - t0
                spent[g.dtype] += t
                self.samples[g.dtype].append(g.ops / t / 1e9)

    def roofs(self) -> tuple[ComputeRoof, ...]:
        """Each dtype's median over every round's GEMMs and its interval; BadInput before the first round."""
        if any(not s for s in self.samples.values()):
            raise BadInput("the compute roofs were never timed")
        out = []
        for dtype, rates in self.samples.items():
            ci, g = median_ci(rates), self.gemms[dtype]
            out.append(ComputeRoof(dtype, ci.median, g.library, ci.low, ci.high, g.n, len(rates)))
        return tuple(out)


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


def compute_roofs(dtypes: tuple[str, ...] = COMPUTE_DTYPES, **kwargs) -> tuple[tuple[ComputeRoof, ...], dict[str, str]]:
    """Every dtype's roof that can be measured here, and the reason for each one skipped."""
    roofs, skipped = [], {}
    for dtype in dtypes:
        try:
            roofs.append(compute_roof(dtype, **kwargs))
        except BackendUnavailable as exc:
            skipped[dtype] = str(exc)
    return tuple(roofs), skipped
