"""The suite's parameters, read from environment variables so a quick run can shrink them.

``ROOFLINE_N`` (default ``2048,8192``), ``ROOFLINE_BATCH`` (default ``1,8,64,512``) and
``ROOFLINE_CACHE_N`` (default ``1024,2048``, the cache-resident class) and ``ROOFLINE_SWEEP_N``
(default ``4096``, the crossover sweep): comma-separated positive integers. Anything else is a
BadInput naming the variable.
"""

from __future__ import annotations

import os

from .errors import BadInput

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
