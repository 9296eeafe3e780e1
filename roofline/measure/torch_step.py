"""The decode step on torch, CPU or CUDA: ``y = F.linear(x, W)`` with x of shape (batch, n).

That is the op inference engines run for one token of a batch. Weights rotate call to call
through a pool of ≥ 4× the cache (the LLC on CPU, the L2 on CUDA, read from the device), so
every call reads its weights from memory. fp8 (e4m3) runs through ``torch._scaled_mm`` with
per-tensor float32 scales and a bf16 output. Every step is validated once, against a float64
product of the very operands the kernel was given, before anything is timed.

torch is imported lazily, so the package works without it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import BackendUnavailable, BadInput, KernelMismatch, positive_int
from ..host import import_torch, llc_bytes
from ..model.dtypes import DTYPES, STEPS
from . import pools
from .numpy_step import Regime
from .pools import pool_count
from .timing import Timing, time_calls

#: Output rows checked against the reference per validated matrix.
CHECK_ROWS = 512


def cache_bytes(device: str) -> tuple[int, str]:
    """The cache a weight pool must outgrow: the CPU's LLC, or the GPU's L2 from its properties."""
    if device == "cpu":
        return llc_bytes()
    torch = import_torch()
    props = torch.cuda.get_device_properties(torch.device(device))
    l2 = int(getattr(props, "L2_cache_size", 0))
    if l2 <= 0:
        raise BackendUnavailable(f"{props.name} does not report its L2 size; cannot size the weight pool")
    return l2, f"torch.cuda.get_device_properties({device!r}).L2_cache_size"


def set_tf32(dtype: str) -> None:
    """TF32 tensor-core math on for "tf32", off for everything else (fp32 means IEEE fp32)."""
    torch = import_torch()
    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"


@dataclass
class TorchDecodeStep:
    """One decode step ``F.linear(x, W)``, weights rotated through ``pool`` call to call.

    Call it to run one step (asynchronously on CUDA). ``flops`` and ``bytes_moved`` (W read,
    x read, y written) describe one call. ``op`` is the kernel; tests replace it to prove that
    validation catches a wrong one.
    """

    pool: object  # torch.Tensor (k, n, n)
    x: object  # torch.Tensor (batch, n)
    dtype: str
    device: str
    regime: Regime
    llc_bytes: int  # the cache the pool outgrows: LLC on CPU, L2 on CUDA
    x_scale: object = None  # fp8: float32 scalar tensors
    w_scales: tuple = ()
    op: Callable[..., object] | None = None
    clock: object = None  # a roofline.measure.cuda_timing.Device for device timing; None: TorchCuda() on CUDA
    _next: int = field(default=0, repr=False)

    @property
    def backend(self) -> str:
        return "torch-cpu" if self.device == "cpu" else "torch-cuda"

    @property
    def n(self) -> int:
        return int(self.pool.shape[2])

    @property
    def batch(self) -> int:
        return int(self.x.shape[0])

    @property
    def itemsize(self) -> int:
        """Bytes per weight as stored (tf32 stores float32; fp8 one byte)."""
        return int(self.pool.element_size())

    @property
    def bytes_per_param(self) -> int:
        return self.itemsize

    @property
    def out_itemsize(self) -> int:
        return 2 if DTYPES[self.dtype].scaled else self.itemsize

    @property
    def flops(self) -> float:
        return 2.0 * self.n * self.n * self.batch

    @property
    def bytes_moved(self) -> float:
        return float(self.itemsize * (self.n * self.n + self.n * self.batch) + self.out_itemsize * self.n * self.batch)

    @property
    def pool_bytes(self) -> int:
        return int(self.pool.numel() * self.pool.element_size())

    @property
    def host_timed(self) -> bool:
        """On the CPU with no device clock: timed on the host clock like a numpy step (and with it)."""
        return self.device == "cpu" and self.clock is None

    @property
    def threads(self) -> int | None:
        """torch's intra-op threads on CPU; None on CUDA."""
        return int(import_torch().get_num_threads()) if self.device == "cpu" else None

    def __call__(self):
        i = self._next
        self._next = (i + 1) % len(self.pool)
        w = self.pool[i]
        if DTYPES[self.dtype].scaled:
            torch = import_torch()
            return torch._scaled_mm(
                self.x, w.t(), scale_a=self.x_scale, scale_b=self.w_scales[i], out_dtype=torch.bfloat16
            )
        return self.op(self.x, w)

    def sync(self) -> None:
        if self.device != "cpu":
            import_torch().cuda.synchronize()

    def time(
        self, repeats: int = 7, warmup: int = 3, min_sample_s: float = 0.005, method: str = "graph"
    ) -> tuple[Timing, str]:
        """Amortized timing and how it was taken: the host clock on CPU; on CUDA a CUDA graph
        (events if capture fails), or ``method="events"`` for eager back-to-back launches."""
        if self.dtype in ("fp32", "tf32") and self.device != "cpu":
            set_tf32(self.dtype)
        if self.device == "cpu" and self.clock is None:
            return time_calls(self, repeats=repeats, warmup=warmup, min_sample_s=min_sample_s), "host"
        from .cuda_timing import TorchCuda, time_device

        device = self.clock if self.clock is not None else TorchCuda()
        return time_device(self, device, method, repeats, warmup, min_sample_s, multiple=len(self.pool))


def quantize_fp8(t, torch):
    """Per-tensor e4m3 quantization: (values, float32 scale) with values·scale ≈ t."""
    fmax = torch.finfo(torch.float8_e4m3fn).max
    scale = (t.abs().amax().float() / fmax).clamp(min=1e-12)
    return (t.float() / scale).to(torch.float8_e4m3fn), scale.reshape(()).to(torch.float32)


def as_float64(t, scale=None):
    """``t`` (times ``scale``) in float64, exactly: one-byte floats go through float32 first,
    the conversion every backend implements for them."""
    torch = import_torch()
    out = (t.float() if t.element_size() == 1 else t).to(torch.float64)
    return out if scale is None else out * scale.to(torch.float64)


def take_rows(w, rows):
    """``w[rows]``; float8 tensors are indexed as bytes, which every device supports."""
    if w.element_size() == 1 and w.is_floating_point():
        return w.view(import_torch().uint8)[rows].view(w.dtype)
    return w[rows]


def validate(step: TorchDecodeStep, seed: int = 0) -> float:
    """Check the output against float64 once; KernelMismatch if off. Returns the worse error.

    The first and the last matrix of the pool are checked on up to ``CHECK_ROWS`` output
    features (all of them for small n) over the whole batch; NaN or inf anywhere fails.
    The rotation is reset afterwards.
    """
    torch = import_torch()
    tol = DTYPES[step.dtype].tolerance
    x64 = as_float64(step.x, step.x_scale if DTYPES[step.dtype].scaled else None)
    gen = torch.Generator().manual_seed(seed)
    rows = torch.randperm(step.n, generator=gen)[:CHECK_ROWS].sort().values.to(step.x.device)
    worst = 0.0
    k = len(step.pool)
    if step.dtype in ("fp32", "tf32") and step.device != "cpu":
        set_tf32(step.dtype)
    for i in sorted({0, k - 1}):
        step._next = i
        got = step()
        if not bool(torch.isfinite(got).all()):
            worst = float("inf")
            break
        w = take_rows(step.pool[i], rows)
        w64 = as_float64(w, step.w_scales[i] if DTYPES[step.dtype].scaled else None)
        want = x64 @ w64.T
        diff = got[:, rows].to(torch.float64) - want
        denom = float(torch.linalg.norm(want)) or 1.0
        err = float(torch.linalg.norm(diff)) / denom
        worst = max(worst, err)
    step._next = 0
    if not worst <= tol:
        raise KernelMismatch(
            f"decode step {step.backend} n={step.n} batch={step.batch} {step.dtype} is wrong: relative error "
            f"{worst:.3g} against the float64 reference exceeds {tol:g}; no figure will be reported"
        )
    return worst


def _cpu_pool(n: int, count: int, dtype: str, seed: int, llc: int, torch):
    """From the shared float32 pool (:func:`roofline.measure.pools.weight_pool`): zero-copy for fp32.

    Narrower dtypes need more matrices than the float32 pool of the same bytes holds; matrix
    i is converted from float32 matrix i mod that count, so the shared file never grows past
    the fp32 pool: distinct memory, written before timing, repeated values.
    """
    source = min(count, pool_count(n, 4, llc))
    shared = pools.weight_pool(n, source, "float32", seed)
    with warnings.catch_warnings():  # the shared pool is read-only by design; nothing writes it
        warnings.simplefilter("ignore", UserWarning)
        base = torch.from_numpy(shared)
    if dtype in ("fp32", "tf32"):
        return base, ()
    if DTYPES[dtype].scaled:
        pairs = [quantize_fp8(base[i % source], torch) for i in range(count)]
        return torch.stack([p[0] for p in pairs]), tuple(p[1] for p in pairs)
    tdtype = getattr(torch, DTYPES[dtype].torch)
    pool = torch.empty((count, n, n), dtype=tdtype)
    for i in range(count):
        pool[i].copy_(base[i % source])
    return pool, ()


def _cuda_pool(n: int, count: int, dtype: str, seed: int, device: str, torch):
    """Uniform [-1, 1) values drawn on the device by a seeded generator, written before timing."""
    gen = torch.Generator(device=device).manual_seed(seed)
    tdtype = getattr(torch, DTYPES[dtype].torch)
    pool = torch.empty((count, n, n), dtype=tdtype, device=device)
    scales = []
    for i in range(count):
        w = torch.rand((n, n), generator=gen, device=device, dtype=torch.float32).mul_(2).sub_(1)
        if DTYPES[dtype].scaled:
            q, s = quantize_fp8(w, torch)
            pool[i].copy_(q)
            scales.append(s)
        else:
            pool[i].copy_(w)
        del w
    return pool, tuple(scales)


def _check_cuda_memory(nbytes: int, device: str, what: str, torch) -> None:
    free, _total = torch.cuda.mem_get_info(torch.device(device))
    if nbytes > 0.9 * free:
        raise BadInput(f"{what} needs {nbytes / 2**30:.2f} GiB but {device} has {free / 2**30:.2f} GiB free")


def torch_decode_step(
    n: int,
    batch: int,
    dtype: str = "fp32",
    device: str = "cpu",
    regime: Regime = "dram",
    seed: int = 0,
    cache: int | None = None,
) -> TorchDecodeStep:
    """Build, write and validate a torch decode step.

    ``regime="dram"``: a pool of ≥ 4× the cache (``cache`` bytes, else the LLC or L2).
    ``regime="cache"``: one matrix (used for the overhead probe at small n).
    Which (device, dtype) pairs the suite offers is :mod:`roofline.measure.backends`' business; this
    builds any pair torch can run (fp8 on CPU too, where torch has ``_scaled_mm`` there).
    """
    positive_int("n", n)
    positive_int("batch", batch)
    if dtype not in STEPS:
        raise BadInput(f"unknown dtype {dtype!r} for torch (use one of: {', '.join(STEPS)})")
    if regime not in ("dram", "cache"):
        raise BadInput(f"unknown regime {regime!r} (use 'dram' or 'cache')")
    torch = import_torch()
    if device != "cpu" and not torch.cuda.is_available():
        raise BackendUnavailable(f"torch {torch.__version__} sees no CUDA device")
    if DTYPES[dtype].scaled:
        if not hasattr(torch, "_scaled_mm") or not hasattr(torch, DTYPES[dtype].torch):
            raise BackendUnavailable(f"torch {torch.__version__} has no float8_e4m3fn _scaled_mm")
        if n % 16:
            raise BackendUnavailable(f"fp8 through torch._scaled_mm needs n divisible by 16, got n={n}")
    tdtype = getattr(torch, DTYPES[dtype].torch)
    itemsize = torch.empty((), dtype=tdtype).element_size()
    llc = cache if cache is not None else cache_bytes(device)[0]
    count = pool_count(n, itemsize, llc) if regime == "dram" else 1
    pool_bytes = count * n * n * itemsize
    io_bytes = 4 * n * batch * 4  # x and y, with room for float32 temporaries
    if device == "cpu":
        pools.check_fits(pool_bytes + 4 * n * n * 4 + io_bytes, f"the torch weight pool ({count}×{n}×{n} {dtype})")
        pool, scales = _cpu_pool(n, count, dtype, seed, llc, torch)
        x32 = torch.from_numpy(pools.random_array((batch, n), "float32", seed + 1))
    else:
        _check_cuda_memory(
            pool_bytes + 4 * n * n + io_bytes, device, f"the weight pool ({count}×{n}×{n} {dtype})", torch
        )
        pool, scales = _cuda_pool(n, count, dtype, seed, device, torch)
        gen = torch.Generator(device=device).manual_seed(seed + 1)
        x32 = torch.rand((batch, n), generator=gen, device=device, dtype=torch.float32).mul_(2).sub_(1)
    x_scale = None
    if DTYPES[dtype].scaled:
        x, x_scale = quantize_fp8(x32, torch)
    else:
        x = x32.to(tdtype)
    step = TorchDecodeStep(
        pool=pool,
        x=x,
        dtype=dtype,
        device=device,
        regime=regime,
        llc_bytes=llc,
        x_scale=x_scale,
        w_scales=scales,
        op=torch.nn.functional.linear,
    )
    try:
        validate(step, seed)
    except BackendUnavailable:
        raise
    except RuntimeError as exc:
        if not DTYPES[dtype].scaled:
            raise
        # _scaled_mm has shape and hardware rules of its own: a refusal means absent here, not wrong.
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise BackendUnavailable(f"{step.backend} fp8 n={n} batch={batch}: torch._scaled_mm refused: {first}") from None
    step.sync()
    return step
