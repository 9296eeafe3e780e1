"""Compiled bandwidth kernels that loop internally, for working sets as small as an L1 cache.

numpy costs about a microsecond per call, more than one pass over an L1-sized array takes, so a
numpy kernel timed on L1 measures numpy. These kernels are compiled by numba (LLVM, vectorised for
this CPU) and run ``reps`` passes inside one call, releasing the GIL, so one thread per core runs
them in parallel. Two kernels, as likwid-bench names them:

- ``load``: read-only, s += a[i] (8 bytes per element per pass), the traffic of a decode step's weights;
- ``update``: read-write, a[i] = s · a[i] (8 bytes read and 8 written per element per pass).

numba is imported lazily; without it, :func:`kernels` raises BackendUnavailable naming the reason.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache

from ..errors import BackendUnavailable

#: Bytes moved per element per pass, as likwid-bench counts them.
BYTES_PER_ELEMENT = {"load": 8, "update": 16}

#: Which kernel is read-only and which read-write.
DESCRIPTION = {"load": "read-only, s += a[i]", "update": "read-write, a[i] = s·a[i]"}


@cache
def kernels() -> dict[str, Callable]:
    """``{"load": load(a, reps) -> sum, "update": update(a, reps, s) -> 0.0}``, compiled by numba.

    ``load`` returns reps · sum(a), accumulated across passes so no pass can be skipped; ``update``
    multiplies by ``s`` (a run-time value, -1.0 in use, so even ``reps`` leave ``a`` as it was).
    """
    if importlib.util.find_spec("numba") is None:
        raise BackendUnavailable("numba is not installed: no compiled kernel for the cache levels")
    try:
        from . import numba_kernels
    except ImportError as exc:  # pragma: no cover - a broken install
        raise BackendUnavailable(f"numba does not import: {exc}") from None
    return {"load": numba_kernels.load, "update": numba_kernels.update}


def numba_version() -> str:
    """numba's version, '' without it."""
    try:
        import numba
    except ImportError:
        return ""
    return numba.__version__
