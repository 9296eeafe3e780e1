"""Seeded random data, written once and shared between processes.

asv runs every benchmark in a fresh process. Generating a weight pool of several GiB in
each would cost seconds apiece, so the random bytes are written once to a file in shared
memory (``/dev/shm`` where it exists) and every process maps it read-only: the pages are
real, written, random data, and a new process reaches them in milliseconds.

The content depends only on (dtype, seed, offset): chunk ``i`` is drawn from its own
``SeedSequence(seed, spawn_key=(i,))``, so a larger file is a superset of a smaller one.
Data here is never changed in place, only appended (numpy's benchmark idiom).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ..errors import BadInput
from ..files import atomic_path
from ..host import available_memory_bytes, cpu_count, llc_bytes
from ..model.dtypes import by_numpy
from ..model.hierarchy import POOL_LLC_MULTIPLE

#: Elements per independently seeded chunk.
CHUNK_ELEMENTS = 2**21


def escape_bytes(llc: int | None = None) -> int:
    """The one rule for sizes that must escape the caches: :data:`POOL_LLC_MULTIPLE` × the aggregate LLC.

    ``llc`` defaults to :func:`roofline.host.llc_bytes` (the sum over distinct LLC instances of the CPUs
    in use, or ``ROOFLINE_LLC_BYTES``). Decode pools and each bandwidth array are sized from this.
    """
    return POOL_LLC_MULTIPLE * (llc if llc is not None else llc_bytes()[0])


def pool_count(n: int, itemsize: int, llc: int | None = None) -> int:
    """How many n×n matrices it takes to hold :func:`escape_bytes` (≥ 4× the aggregate LLC)."""
    return max(1, -(-escape_bytes(llc) // (n * n * itemsize)))


def numpy_dtype(name: str) -> np.dtype:
    """'float32' or 'float64' → numpy dtype; BadInput otherwise."""
    return np.dtype(by_numpy(name).numpy)


def cache_dir() -> Path:
    """Where shared buffers live: ``ROOFLINE_CACHE_DIR``, else ``/dev/shm/roofline-<uid>``, else the temp dir."""
    override = os.environ.get("ROOFLINE_CACHE_DIR")
    if override:
        return Path(override)
    shm = Path("/dev/shm")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    if shm.is_dir() and os.access(shm, os.W_OK):
        return shm / f"roofline-{uid}"
    return Path(tempfile.gettempdir()) / f"roofline-{uid}"


def random_array(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """A small private array of uniform values in [-1, 1), written now."""
    rng = np.random.default_rng(seed)
    out = rng.random(shape, dtype=numpy_dtype(dtype).type)
    out *= 2
    out -= 1
    return out


def _fill(buf: np.ndarray, dtype: np.dtype, seed: int) -> None:
    chunks = range(0, buf.size, CHUNK_ELEMENTS)

    def fill(start: int) -> None:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(start // CHUNK_ELEMENTS,)))
        part = buf[start : start + CHUNK_ELEMENTS]
        rng.random(out=part, dtype=dtype.type)
        part *= 2
        part -= 1

    with ThreadPoolExecutor(max_workers=cpu_count()) as pool:  # numpy releases the GIL here
        list(pool.map(fill, chunks))


def check_fits(nbytes: int, what: str, directory: Path | None = None) -> None:
    """BadInput, with the figures, if ``nbytes`` would not fit in available memory (or on disk)."""
    avail = available_memory_bytes()
    if avail is not None and nbytes > 0.9 * avail:
        raise BadInput(f"{what} needs {nbytes / 2**30:.2f} GiB but only {avail / 2**30:.2f} GiB of memory is available")
    if directory is not None:
        free = shutil.disk_usage(directory).free
        if nbytes > free:
            raise BadInput(f"{what} needs {nbytes / 2**30:.2f} GiB but {directory} has {free / 2**30:.2f} GiB free")


def shared_random(nelements: int, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """At least ``nelements`` seeded uniform values in [-1, 1), mapped read-only from the cache."""
    if nelements <= 0:
        raise BadInput(f"a shared buffer needs a positive size, got {nelements}")
    dt = numpy_dtype(dtype)
    nelements = -(-nelements // CHUNK_ELEMENTS) * CHUNK_ELEMENTS
    nbytes = nelements * dt.itemsize
    directory = cache_dir()
    path = directory / f"uniform-{dt.name}-seed{seed}.bin"
    try:
        if path.exists() and path.stat().st_size >= nbytes:
            return np.memmap(path, dtype=dt, mode="r")[:nelements]
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BadInput(f"cannot use the data cache {directory}: {exc.strerror or exc}") from None
    check_fits(nbytes, f"a random buffer of {nelements} {dt.name} values", directory)
    with atomic_path(path) as tmp:  # readers see the old file or the whole new one
        os.truncate(tmp, nbytes)
        buf = np.memmap(tmp, dtype=dt, mode="r+")
        _fill(buf, dt, seed)
        buf.flush()
        del buf
    return np.memmap(path, dtype=dt, mode="r")[:nelements]


def weight_pool(n: int, count: int, dtype: str = "float32", seed: int = 0) -> np.ndarray:
    """``count`` random n×n matrices as one read-only (count, n, n) view of shared memory.

    Every page is mapped before it is returned (one element read per page), so no timed call
    pays a page fault.
    """
    if n <= 0 or count <= 0:
        raise BadInput(f"a weight pool needs positive n and count, got n={n}, count={count}")
    buf = shared_random(count * n * n, dtype, seed)[: count * n * n]
    float(buf[:: max(1, 4096 // buf.itemsize)].sum())
    return buf.reshape(count, n, n)


def clear_cache() -> int:
    """Remove every shared buffer; returns the bytes freed."""
    directory = cache_dir()
    freed = 0
    if directory.is_dir():
        for f in directory.iterdir():
            if f.is_file():
                freed += f.stat().st_size
                f.unlink()
        directory.rmdir()
    return freed
