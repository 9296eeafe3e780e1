"""Which backends and dtypes run the decode step here, and why not when they don't.

Backends: ``numpy`` (the default), ``torch-cpu`` and ``torch-cuda``. dtype names are the
:class:`~roofline.model.hardware.Hardware` peak names (fp64, fp32, tf32, bf16, fp16, fp8), so a
measurement's dtype is also the key of the roof it is compared with. fp8 means e4m3 with
per-tensor scales through ``torch._scaled_mm``.

:func:`available` answers None or raises :class:`~roofline.errors.BackendUnavailable` (a
``NotImplementedError``, so asv marks the combination skipped) with the reason. Asking costs
no torch import when torch is not installed.
"""

from __future__ import annotations

import sys

from ..errors import BackendUnavailable, BadInput
from ..host import import_torch
from ..model.dtypes import DTYPES, STEPS
from .numpy_step import Regime

#: The dtypes each backend offers, in the order the suite lists them.
BACKENDS: dict[str, tuple[str, ...]] = {
    "numpy": ("fp32", "fp64"),
    "torch-cpu": ("fp32", "bf16"),
    "torch-cuda": ("fp32", "tf32", "bf16", "fp16", "fp8"),
}
#: What a GPU run measures by default: every dtype torch-cuda offers.
GPU_DTYPES = BACKENDS["torch-cuda"]


def check_names(backend: str, dtype: str) -> None:
    """BadInput naming the known ones if ``backend`` or ``dtype`` is unknown."""
    if backend not in BACKENDS:
        raise BadInput(f"unknown backend {backend!r} (use one of: {', '.join(BACKENDS)})")
    if dtype not in STEPS:
        raise BadInput(f"unknown dtype {dtype!r} (use one of: {', '.join(STEPS)})")


def _cuda_reason(torch) -> str | None:
    if torch.version.cuda is None:
        return f"torch {torch.__version__} is a CPU-only build"
    if not torch.cuda.is_available():
        return f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no CUDA device"
    return None


def available(backend: str, dtype: str) -> None:
    """None when ``backend`` can run ``dtype`` here; BackendUnavailable with the reason if not."""
    check_names(backend, dtype)
    if dtype not in BACKENDS[backend]:
        raise BackendUnavailable(f"{backend} offers no {dtype} (it offers {', '.join(BACKENDS[backend])})")
    if backend == "numpy":
        return
    torch = import_torch()
    if backend == "torch-cpu":
        return
    reason = _cuda_reason(torch)
    if reason:
        raise BackendUnavailable(reason)
    need = DTYPES[dtype].cuda_capability
    have = torch.cuda.get_device_capability()
    if need and have < need:
        name = torch.cuda.get_device_name()
        raise BackendUnavailable(
            f"{dtype} needs compute capability {need[0]}.{need[1]}; {name} has {have[0]}.{have[1]}"
        )
    if DTYPES[dtype].scaled and not (hasattr(torch, "_scaled_mm") and hasattr(torch, DTYPES[dtype].torch)):
        raise BackendUnavailable(f"torch {torch.__version__} has no float8_e4m3fn _scaled_mm")


def inventory() -> list[dict[str, object]]:
    """Every (backend, dtype) the suite knows, with ``available`` and the ``reason`` when not."""
    rows = []
    for backend, dtypes in BACKENDS.items():
        for dtype in dtypes:
            try:
                available(backend, dtype)
                rows.append({"backend": backend, "dtype": dtype, "available": True, "reason": None})
            except BackendUnavailable as exc:
                rows.append({"backend": backend, "dtype": dtype, "available": False, "reason": str(exc)})
    return rows


def torch_threads() -> int | None:
    """torch's intra-op threads, None without torch (torch is imported only if installed)."""
    try:
        return int(import_torch().get_num_threads())
    except BackendUnavailable:
        return None


def build_step(backend: str, dtype: str, n: int, batch: int, regime: Regime = "dram", seed: int = 0):
    """A validated decode step on ``backend`` (BackendUnavailable when absent here).

    numpy gives a :class:`~roofline.measure.numpy_step.DecodeStep`, torch a
    :class:`~roofline.measure.torch_step.TorchDecodeStep`; both are callables with ``n``, ``batch``,
    ``flops``, ``bytes_moved``, ``pool_bytes`` and ``llc_bytes``, and both go to
    :func:`roofline.measure.step.measure_step`.
    """
    available(backend, dtype)
    if backend == "numpy":
        from .numpy_step import decode_step

        return decode_step(n, batch, DTYPES[dtype].numpy, regime, seed)
    from .torch_step import torch_decode_step

    return torch_decode_step(n, batch, dtype, "cpu" if backend == "torch-cpu" else "cuda", regime, seed)


def release_cuda() -> None:
    """Finish the device's work and hand its cached memory back before the next step is built (no-op without CUDA)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
