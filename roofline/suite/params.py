"""The suite's parameters, read from environment variables so a quick run can shrink them.

``ROOFLINE_N`` (default ``2048,8192``), ``ROOFLINE_BATCH`` (default ``1,8,64,512``) and
``ROOFLINE_CACHE_N`` (default ``1024,2048``, the cache-resident class) and ``ROOFLINE_SWEEP_N``
(default ``4096``, the crossover sweep): comma-separated positive integers. Anything else is a
BadInput naming the variable.
"""

from __future__ import annotations

import os

from ..errors import BadInput
from ..host import gpu_present
from ..measure.backends import GPU_DTYPES
from ..model.dtypes import STEPS

DEFAULT_N = (2048, 8192)
DEFAULT_BATCH = (1, 8, 64, 512)
DEFAULT_CACHE_N = (1024, 2048)
DEFAULT_SWEEP_N = 4096

#: Larger than any decode matrix this suite is meant for; a typo guard, not a limit of the method.
MAX_N = 65536
MAX_BATCH = 65536


def positive_ints(text: str, name: str, maximum: int) -> tuple[int, ...]:
    """'1, 8,64' → (1, 8, 64); BadInput naming ``name`` on anything else."""
    items = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in items):
        raise BadInput(f"{name} must be a comma-separated list of positive integers, got {text!r}")
    values = []
    for p in items:
        try:
            v = int(p)
        except ValueError:
            raise BadInput(f"{name}: {p!r} is not an integer") from None
        if v <= 0:
            raise BadInput(f"{name}: {v} is not positive")
        if v > maximum:
            raise BadInput(f"{name}: {v} is larger than {maximum}")
        values.append(v)
    return tuple(dict.fromkeys(values))


def _from_env(name: str, default: tuple[int, ...], maximum: int) -> tuple[int, ...]:
    text = os.environ.get(name)
    return default if text is None else positive_ints(text, name, maximum)


def sizes() -> tuple[int, ...]:
    """Matrix sizes n of the DRAM decode class."""
    return _from_env("ROOFLINE_N", DEFAULT_N, MAX_N)


def batches() -> tuple[int, ...]:
    """Batch sizes of the decode classes."""
    return _from_env("ROOFLINE_BATCH", DEFAULT_BATCH, MAX_BATCH)


def cache_sizes() -> tuple[int, ...]:
    """Matrix sizes n of the cache-resident class."""
    return _from_env("ROOFLINE_CACHE_N", DEFAULT_CACHE_N, MAX_N)


def sweep_n() -> int:
    """Matrix size of the crossover sweep."""
    values = _from_env("ROOFLINE_SWEEP_N", (DEFAULT_SWEEP_N,), MAX_N)
    if len(values) != 1:
        raise BadInput(f"ROOFLINE_SWEEP_N takes one size, got {len(values)}")
    return values[0]


# ---- backends and GPUs (see docs: "Backends and GPUs") -------------------------------------

#: Sizes and batches of the backend class (numpy beside torch on CPU): small, since every
#: combination is a process of its own and bf16 GEMV on a CPU can be slow.
DEFAULT_BACKEND_N = (2048,)
DEFAULT_BACKEND_BATCH = (1, 64)

#: The CUDA class on a machine with an NVIDIA GPU: the lab's batches plus the crossover
#: sweep's points around an H100-class knee (≈ 190 on an H200, ≈ 300 on an H100).
GPU_N = (8192, 16384)
GPU_BATCH = (1, 8, 64, 128, 192, 256, 512, 4096)
#: Without a GPU every CUDA combination is skipped; one point per dtype records why.
NO_GPU_N = (8192,)
NO_GPU_BATCH = (1,)


def dtypes_from(text: str, name: str) -> tuple[str, ...]:
    """'bf16, fp8' → ('bf16', 'fp8'); BadInput naming ``name`` on an unknown dtype."""
    items = [p.strip() for p in text.split(",")]
    if not text.strip() or any(not p for p in items):
        raise BadInput(f"{name} must be a comma-separated list of dtypes, got {text!r}")
    for p in items:
        if p not in STEPS:
            raise BadInput(f"{name}: unknown dtype {p!r} (use: {', '.join(STEPS)})")
    return tuple(dict.fromkeys(items))


def backend_sizes() -> tuple[int, ...]:
    """Matrix sizes of the backend class (``ROOFLINE_BACKEND_N``)."""
    return _from_env("ROOFLINE_BACKEND_N", DEFAULT_BACKEND_N, MAX_N)


def backend_batches() -> tuple[int, ...]:
    """Batches of the backend class (``ROOFLINE_BACKEND_BATCH``)."""
    return _from_env("ROOFLINE_BACKEND_BATCH", DEFAULT_BACKEND_BATCH, MAX_BATCH)


def gpu_sizes() -> tuple[int, ...]:
    """Matrix sizes of the CUDA class (``ROOFLINE_GPU_N``)."""
    return _from_env("ROOFLINE_GPU_N", GPU_N if gpu_present() else NO_GPU_N, MAX_N)


def gpu_batches() -> tuple[int, ...]:
    """Batches of the CUDA class (``ROOFLINE_GPU_BATCH``)."""
    return _from_env("ROOFLINE_GPU_BATCH", GPU_BATCH if gpu_present() else NO_GPU_BATCH, MAX_BATCH)


def gpu_dtypes() -> tuple[str, ...]:
    """dtypes of the CUDA class (``ROOFLINE_GPU_DTYPES``)."""
    text = os.environ.get("ROOFLINE_GPU_DTYPES")
    return GPU_DTYPES if text is None else dtypes_from(text, "ROOFLINE_GPU_DTYPES")


#: models.ModelDecode's model: a preset, then shape fields to change (``ROOFLINE_MODEL``).
DEFAULT_MODEL = "llama-3-8b:layers=1"


def model_decode():
    """The ModelShape models.ModelDecode decodes: ``ROOFLINE_MODEL`` = ``preset[:field=N,...]``.

    Default :data:`DEFAULT_MODEL` (Llama-3-8B cut to one layer); a quick run names a tiny shape, e.g.
    ``llama-3-8b:layers=1,hidden=64,heads=4,kv_heads=2,intermediate=128,vocab=256``.
    """
    from ..model.llm import SETTABLE_FIELDS, custom_model, lookup_model

    text = os.environ.get("ROOFLINE_MODEL", DEFAULT_MODEL)
    name, _, rest = text.partition(":")
    fields = {}
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        if not eq or key.strip() not in SETTABLE_FIELDS:
            raise BadInput(f"ROOFLINE_MODEL: {item!r} is not field=N (fields: {', '.join(SETTABLE_FIELDS)})")
        fields[key.strip()] = positive_ints(value, f"ROOFLINE_MODEL {key.strip()}", 2**31)[0]
    return custom_model(lookup_model(name.strip()), **fields)
