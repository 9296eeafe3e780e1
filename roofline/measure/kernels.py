"""Compiled bandwidth kernels that loop internally, for working sets as small as an L1 cache.

numpy costs about a microsecond per call, more than one pass over an L1-sized array takes, so a
numpy kernel timed on L1 measures numpy. These kernels are compiled by numba (LLVM, vectorised for
this CPU) and run ``reps`` passes inside one call, releasing the GIL, so one thread per core runs
them in parallel. Two kernels, as likwid-bench names them:

- ``load``: read-only, s += a[i] (8 bytes per element per pass), the traffic of a decode step's weights;
- ``update``: read-write, a[i] = s · a[i] (8 bytes read and 8 written per element per pass).

numba is imported lazily; without it, :func:`kernels` raises BackendUnavailable naming the reason.

They run at the CPU's widest vector (:func:`vector_bits`). LLVM tunes its Intel server cores (Skylake-SP
to Emerald Rapids) to prefer 256-bit vectors even with AVX-512, so numba compiled ``load`` with ymm
registers there: at two adds a cycle that is 64 B a cycle per core, half the 128 that Golden Cove's two
64-byte loads deliver, and the Xeon's L1 roof read 165-192 GB/s where likwid-bench's load_avx512 read
445. Where the CPU has AVX-512, the kernels are compiled with that preference off
(:func:`llvm_features`: LLVM's ``-prefer-256-bit``, as clang's ``-mprefer-vector-width=512``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from functools import cache

from ..errors import BackendUnavailable
from ..host import cpu_flags

#: Parts the ``load`` kernel sums side by side (:mod:`roofline.measure.numba_kernels`; numba's, here without it).
PARTS = 4

#: Bytes moved per element per pass, as likwid-bench counts them.
BYTES_PER_ELEMENT = {"load": 8, "update": 16}

#: Which kernel is read-only and which read-write.
DESCRIPTION = {"load": "read-only, s += a[i]", "update": "read-write, a[i] = s·a[i]"}


#: The widest vector each ISA gives the kernels, bits, widest first, with the CPU flag it needs.
VECTOR_BITS = (("avx512f", 512), ("avx", 256), ("sse2", 128))

#: LLVM's feature that makes it vectorise at 256 bits on a CPU with 512-bit registers.
PREFER_256 = "prefer-256-bit"


def vector_bits(flags: frozenset[str]) -> int | None:
    """The widest vector the kernels are compiled for on a CPU with these flags; None where none is known."""
    return next((bits for flag, bits in VECTOR_BITS if flag in flags), None)


def llvm_features(host: str, flags: frozenset[str]) -> str | None:
    """The LLVM feature string to compile the kernels with: ``host`` (LLVM's features of this CPU) with its
    256-bit preference off where the CPU has AVX-512, so they run at 512 bits; None (numba's own choice)
    elsewhere."""
    if vector_bits(flags) != 512 or not host:
        return None
    kept = [f for f in host.split(",") if f and f.lstrip("+-") != PREFER_256]
    return ",".join([*kept, f"-{PREFER_256}"])


def _full_width(flags: frozenset[str]) -> None:
    """Point numba at :func:`llvm_features` before it compiles anything (a feature string set by the user,
    ``NUMBA_CPU_FEATURES``, wins; its code generator is made at the first compile of the process)."""
    import numba
    from numba.core import codegen

    if numba.config.CPU_FEATURES is None:
        numba.config.CPU_FEATURES = llvm_features(codegen.get_host_cpu_features(), flags)


@cache
def kernels() -> dict[str, Callable]:
    """``{"load": load(a, reps) -> sum, "update": update(a, reps, s) -> 0.0}``, compiled by numba.

    ``load`` returns reps · sum(a), accumulated across passes so no pass can be skipped; ``update``
    multiplies by ``s`` (a run-time value, -1.0 in use, so even ``reps`` leave ``a`` as it was).
    """
    if importlib.util.find_spec("numba") is None:
        raise BackendUnavailable("numba is not installed: no compiled kernel for the cache levels")
    try:
        _full_width(cpu_flags())
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


def library() -> str:
    """What compiled the kernels, as a roof names it: 'numba 0.61.0, 512-bit vectors'."""
    bits = vector_bits(cpu_flags())
    return f"numba {numba_version()}" + (f", {bits}-bit vectors" if bits else "")
