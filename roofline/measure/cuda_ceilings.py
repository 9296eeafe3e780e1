"""A GPU's measured ceilings: device-to-device copy bandwidth and square-GEMM rate per dtype.

The same shape as the CPU's :mod:`roofline.measure.ceilings` (its :class:`Bandwidth`, :class:`GemmPeak`
and :class:`Ceilings`), so reports read both alike, and the same roof rule: :class:`CudaCeilingRounds`
times them at several moments of a run and each roof is its fastest round's median
(:attr:`~roofline.measure.ceilings.Bandwidth.roof`), never the best sample. Copy bandwidth counts bytes
read plus bytes written; GEMMs run on random data (zeros run faster than real data), are validated
against float64 on sampled rows, and are timed with CUDA events around back-to-back calls.
"""

from __future__ import annotations

from ..errors import BackendUnavailable, BadInput, KernelMismatch
from ..host import gpu_facts, import_torch
from ..model.dtypes import DTYPES, STEPS
from ..model.hardware import Hardware
from ..model.intervals import fastest_round_median, median_ci
from .backends import GPU_DTYPES, available, release_cuda
from .ceilings import Bandwidth, Ceilings, GemmPeak
from .cuda_timing import Device, TorchCuda, time_events
from .torch_step import as_float64, quantize_fp8, set_tf32

#: Square size of the GEMM ceiling: 8192³ keeps an H100-class chip busy for ~1 ms in bf16.
GEMM_N = 8192

#: The copy moves at least this many bytes each way, and at least 8× the L2.
COPY_MIN_BYTES = 2**31

#: The bandwidth kernel whose roof is a GPU's bandwidth roof (the CPU's is ``read``).
GPU_CEILING_KERNEL = "d2d-copy"


def _library(torch) -> str:
    return f"cuBLAS via torch {torch.__version__} (CUDA {torch.version.cuda})"


def copy_bandwidth(
    nbytes: int | None = None, repeats: int = 10, device: str = "cuda", clock: Device | None = None
) -> Bandwidth:
    """``dst.copy_(src)`` on the device, one round of ``repeats`` samples; bytes counted as read + written
    (2 × the buffer).

    ``device`` and ``clock`` (a :class:`~roofline.measure.cuda_timing.Device`) exist so the logic runs on
    CPU in tests; the ceiling is a CUDA figure.
    """
    return _bandwidth(*_copy_rates(nbytes, repeats, device, clock), [0])


def _copy_rates(nbytes: int | None, repeats: int, device: str, clock: Device | None) -> tuple[list[float], int, int]:
    """One round of the copy: (each sample's rate in bytes/s, the buffer's bytes, the multiprocessors or threads)."""
    torch = import_torch()
    if device == "cpu":
        if not nbytes:
            raise BadInput("a copy on the CPU needs its size")
        size, units = nbytes, torch.get_num_threads()
    else:
        available("torch-cuda", "fp32")
        props = torch.cuda.get_device_properties(0)
        size = nbytes or max(COPY_MIN_BYTES, 8 * int(props.L2_cache_size))
        units = int(props.multi_processor_count)  # for a GPU: its multiprocessors
        free, _ = torch.cuda.mem_get_info()
        if 2 * size > 0.8 * free:
            raise BadInput(f"the copy needs {2 * size / 2**30:.1f} GiB but the GPU has {free / 2**30:.1f} GiB free")
    clock = clock if clock is not None else TorchCuda()
    elements = size // 4
    gen = torch.Generator(device=device).manual_seed(21)
    src = torch.rand(elements, generator=gen, device=device)
    dst = torch.empty_like(src)
    t = time_events(lambda: dst.copy_(src), clock, repeats=repeats, warmup=3, min_sample_s=0.02)
    if not torch.equal(dst, src):
        raise KernelMismatch("the device copy wrote wrong values; no bandwidth reported")
    moved = 2 * elements * 4
    return [moved / x for x in t.per_call], elements * 4, units


def _bandwidth(rates: list[float], array_bytes: int, units: int, starts: list[int]) -> Bandwidth:
    """The copy's figures from every round's rates (round k's from ``starts[k]``): the median of all and its
    interval, the best sample, the fastest round's median (the roof), as the CPU ceilings."""
    ci = median_ci(rates)
    return Bandwidth(
        kind=GPU_CEILING_KERNEL,
        best=max(rates),
        median=ci.median,
        spread=ci.high / ci.low,
        array_bytes=array_bytes,
        threads=units,
        runs=len(rates),
        low=ci.low,
        high=ci.high,
        confidence=ci.confidence,
        best_round=fastest_round_median(rates, starts),
    )


def gemm_rate(
    dtype: str = "bf16", n: int = GEMM_N, repeats: int = 10, device: str = "cuda", clock: Device | None = None
) -> GemmPeak:
    """Square C = A·B on the device in ``dtype`` (fp8 through ``torch._scaled_mm``, bf16 out), one round of
    ``repeats`` samples.

    ``device`` and ``clock`` exist so the logic runs on CPU in tests, as in :func:`copy_bandwidth`.
    """
    rates, library = _gemm_rates(dtype, n, repeats, device, clock)
    return _peak(dtype, n, rates, library, [0])


def _gemm_rates(dtype: str, n: int, repeats: int, device: str, clock: Device | None) -> tuple[list[float], str]:
    """One round of the GEMM, checked first: (each sample's rate in FLOP/s, the library)."""
    if dtype not in STEPS:
        raise BadInput(f"unknown dtype {dtype!r} for the GEMM (use one of: {', '.join(STEPS)})")
    if device != "cpu":
        available("torch-cuda", dtype)
    if n <= 0 or n % 16:
        raise BadInput(f"the GEMM size must be a positive multiple of 16, got {n}")
    torch = import_torch()
    clock = clock if clock is not None else TorchCuda()
    gen = torch.Generator(device=device).manual_seed(31)
    a32 = torch.rand((n, n), generator=gen, device=device).mul_(2).sub_(1)
    b32 = torch.rand((n, n), generator=gen, device=device).mul_(2).sub_(1)
    if DTYPES[dtype].scaled:
        a, sa = quantize_fp8(a32, torch)
        b, sb = quantize_fp8(b32, torch)
        bt = b.t().contiguous().t()  # column-major, as _scaled_mm wants its second operand

        def fn():
            return torch._scaled_mm(a, bt, scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)

        a64, b64 = as_float64(a, sa), as_float64(b, sb)
    else:
        tdtype = getattr(torch, DTYPES[dtype].torch)
        a, b = a32.to(tdtype), b32.to(tdtype)
        set_tf32(dtype)

        def fn():
            return torch.matmul(a, b)

        a64, b64 = as_float64(a), as_float64(b)
    rows = torch.randperm(n, generator=torch.Generator().manual_seed(5))[:256].to(device)
    got = fn()
    want = a64[rows] @ b64
    err = float(torch.linalg.norm(got[rows].double() - want)) / (float(torch.linalg.norm(want)) or 1.0)
    tol = DTYPES[dtype].tolerance
    if not err <= tol:
        raise KernelMismatch(f"{dtype} GEMM is wrong: relative error {err:.3g} > {tol:g}; no peak reported")
    t = time_events(fn, clock, repeats=repeats, warmup=3, min_sample_s=0.02)
    flops = 2.0 * n**3
    library = _library(torch) if device != "cpu" else f"torch {torch.__version__} on CPU"
    return [flops / x for x in t.per_call], library


def _peak(dtype: str, n: int, rates: list[float], library: str, starts: list[int]) -> GemmPeak:
    """A GEMM's figures from every round's rates, as :func:`_bandwidth`'s."""
    ci = median_ci(rates)
    return GemmPeak(
        dtype=dtype,
        n=n,
        best=max(rates),
        median=ci.median,
        spread=ci.high / ci.low,
        blas=library,
        blas_threads=None,
        runs=len(rates),
        low=ci.low,
        high=ci.high,
        confidence=ci.confidence,
        best_round=fastest_round_median(rates, starts),
    )


class CudaCeilingRounds:
    """A GPU's ceilings timed at several moments of a run (one :meth:`time` per moment), pooled as the CPU's
    :class:`~roofline.measure.ceilings.CeilingRounds`: the copy and a square GEMM in each of ``dtypes`` this GPU
    runs (the others left out: fp8 below compute capability 8.9, say), each round's buffers made afresh and
    handed back (:func:`~roofline.measure.backends.release_cuda`) before the next kernel's. Each roof is its
    fastest round's median. BackendUnavailable where torch-cuda cannot run here; BadInput where no dtype's
    GEMM runs on this GPU."""

    def __init__(
        self,
        dtypes: tuple[str, ...] = GPU_DTYPES,
        gemm_n: int = GEMM_N,
        copy_bytes: int | None = None,
        repeats: int = 10,
    ):
        available("torch-cuda", "fp32")
        self.dtypes = []
        for dtype in dtypes:
            try:
                available("torch-cuda", dtype)
            except BackendUnavailable:
                continue
            self.dtypes.append(dtype)
        if not self.dtypes:
            raise BadInput(f"no GEMM dtype of {', '.join(dtypes)} runs on this GPU")
        self.gemm_n, self.copy_bytes, self.repeats = gemm_n, copy_bytes, repeats
        self.copy: tuple[list[float], list[int], int, int] = ([], [], 0, 0)
        self.gemms: dict[str, tuple[list[float], list[int], str]] = {d: ([], [], "") for d in self.dtypes}

    def time(self) -> None:
        """One round: the copy, then each dtype's GEMM (KernelMismatch where one computes wrong values)."""
        rates, starts, _, _ = self.copy
        starts.append(len(rates))
        try:
            got, nbytes, units = _copy_rates(self.copy_bytes, self.repeats, "cuda", None)
        finally:
            release_cuda()
        self.copy = ([*rates, *got], starts, nbytes, units)
        for dtype, (rates, starts, _) in self.gemms.items():
            starts.append(len(rates))
            try:
                got, library = _gemm_rates(dtype, self.gemm_n, self.repeats, "cuda", None)
            finally:
                release_cuda()
            self.gemms[dtype] = ([*rates, *got], starts, library)

    def ceilings(self) -> Ceilings:
        """The ceilings of every round, as a measured Hardware of their roofs; BadInput before the first round."""
        rates, starts, nbytes, units = self.copy
        if not rates:
            raise BadInput("no round of the GPU's ceilings was timed")
        bw = _bandwidth(rates, nbytes, units, starts)
        peaks = {d: _peak(d, self.gemm_n, r, lib, s) for d, (r, s, lib) in self.gemms.items()}
        facts = gpu_facts() or {}
        name = str(facts.get("name") or "CUDA device")
        library = next(iter(peaks.values())).blas
        hw = Hardware(
            name=name,
            peak_flops={d: p.roof for d, p in peaks.items()},
            bandwidth=bw.roof,
            source=f"measured on {name}: device-to-device copy (read + write), square GEMM n={self.gemm_n} "
            f"({library}), each the fastest round's median",
            memory_bytes=facts.get("gpu_memory_bytes"),
            extra={"median_bandwidth": bw.median, "median_peaks": {d: p.median for d, p in peaks.items()}},
        )
        return Ceilings({GPU_CEILING_KERNEL: bw}, peaks, int(facts.get("gpu_l2_bytes") or 0), hw)
