"""This machine's measured ceilings: STREAM-style memory bandwidth and square-GEMM peak.

Together they make a measured :class:`~roofline.model.hardware.Hardware`, with a ridge point and a
predicted crossover batch that come from this machine rather than a datasheet. Each ceiling is the
median of enough timed passes to bound it with a 95 % confidence interval
(:mod:`roofline.model.intervals`), never the best pass: a best-of-few on a shared machine records
whichever pass a neighbour left alone.
"""

from __future__ import annotations

import platform
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import BadInput, KernelMismatch
from ..host import blas_summary, blas_threads, cpu_count, llc_bytes
from ..model.dtypes import by_numpy
from ..model.hardware import Hardware
from ..model.intervals import MedianCI, median_ci
from .numpy_step import reference_product, relative_error
from .pools import check_fits, escape_bytes, random_array

#: Elements per block of the blocked triad: one block of ``a`` stays in L2 between its two passes.
TRIAD_BLOCK = 131072

#: The kernel whose best rate is the bandwidth roof. numpy cannot fuse a triad: it needs two
#: passes per block, which measures numpy rather than memory. STREAM's add (a = b + c) moves the
#: same three arrays in one ufunc pass and matches a native triad (see tools/stream_triad.c).
CEILING_KERNEL = "add"

#: Arrays counted per element, as STREAM counts them.
ARRAYS_MOVED = {"copy": 2, "add": 3, "triad": 3}

#: Timed passes per bandwidth kernel: 15 give the median a 96 % interval between the 4th smallest
#: and the 4th largest pass.
BANDWIDTH_RUNS = 15

#: Timed GEMMs per dtype: 6 give a 97 % interval between the slowest and the fastest.
GEMM_RUNS = 6


def _rate_ci(work: float, times: list[float]) -> MedianCI:
    """The median rate (work / time) of timed passes and its interval (slow passes give the low end)."""
    return median_ci([work / t for t in times])


@dataclass(frozen=True)
class Bandwidth:
    """STREAM-style bandwidth in bytes/s over ``runs`` timed passes: the median (the ceiling), its
    confidence interval [``low``, ``high``], and the best pass kept for reference. ``spread`` is
    ``high / low``: robust to the few passes a neighbour slowed (max/min is not)."""

    kind: str
    best: float
    median: float
    spread: float
    array_bytes: int
    threads: int
    runs: int
    low: float = 0.0
    high: float = 0.0
    confidence: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class GemmPeak:
    """Square-GEMM rate in FLOP/s through numpy's BLAS: the median (the ceiling), its interval, the best;
    ``spread`` is the interval's ``high / low``."""

    dtype: str
    n: int
    best: float
    median: float
    spread: float
    blas: str
    blas_threads: int | None
    runs: int
    low: float = 0.0
    high: float = 0.0
    confidence: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings of this machine, and the Hardware they make."""

    bandwidth: dict[str, Bandwidth]
    peaks: dict[str, GemmPeak]
    llc_bytes: int
    hardware: Hardware = field(compare=False)

    def as_dict(self) -> dict[str, object]:
        return {
            "bandwidth": {k: v.as_dict() for k, v in self.bandwidth.items()},
            "peaks": {k: v.as_dict() for k, v in self.peaks.items()},
            "llc_bytes": self.llc_bytes,
            "hardware": {
                "name": self.hardware.name,
                "bandwidth": self.hardware.bandwidth,
                "peak_flops": dict(self.hardware.peak_flops),
                "source": self.hardware.source,
            },
        }


def _chunks(size: int, parts: int) -> list[slice]:
    step = -(-size // parts)
    return [slice(i, min(i + step, size)) for i in range(0, size, step)]


def stream_bandwidth(
    kinds: tuple[str, ...] = ("copy", "add", "triad"),
    total_bytes: int | None = None,
    runs: int = BANDWIDTH_RUNS,
    threads: int | None = None,
) -> dict[str, Bandwidth]:
    """Copy (a = b), add (a = b + c) and triad (a = b + q·c) over float64 arrays on a thread pool.

    Each array holds ≥ 4× the aggregate LLC (:func:`~roofline.measure.pools.escape_bytes`, STREAM's
    rule) unless ``total_bytes`` (all three together) says otherwise; each thread first-touches
    (writes) its own chunks before anything is timed. numpy releases the GIL inside ufuncs, so the
    threads run in parallel. Bytes counted as STREAM does: 2 arrays for copy, 3 for add and triad.
    """
    for kind in kinds:
        if kind not in ARRAYS_MOVED:
            raise BadInput(f"unknown bandwidth kind {kind!r} (use {', '.join(ARRAYS_MOVED)})")
    if runs < 1:
        raise BadInput(f"runs must be ≥ 1, got {runs}")
    threads = threads or cpu_count()
    total = total_bytes if total_bytes is not None else 3 * escape_bytes()
    n = max(threads * TRIAD_BLOCK, -(-total // (3 * 8)))
    check_fits(3 * n * 8, "the bandwidth arrays")
    parts = _chunks(n, threads)
    # np.empty is safe here: every page is written by its own thread below, before any timing.
    a, b, c = np.empty(n), np.empty(n), np.empty(n)
    q = 3.0

    def first_touch(i: int) -> None:
        s = parts[i]
        rng = np.random.default_rng(i)
        for arr in (a, b, c):
            rng.random(out=arr[s])

    def copy(s: slice) -> None:
        np.copyto(a[s], b[s])

    def add(s: slice) -> None:
        np.add(b[s], c[s], out=a[s])

    def triad(s: slice) -> None:
        for start in range(s.start, s.stop, TRIAD_BLOCK):
            blk = slice(start, min(start + TRIAD_BLOCK, s.stop))
            np.multiply(c[blk], q, out=a[blk])
            np.add(a[blk], b[blk], out=a[blk])

    results = {}
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(first_touch, range(len(parts))))
        for kind in kinds:
            fn, arrays = {"copy": copy, "add": add, "triad": triad}[kind], ARRAYS_MOVED[kind]
            list(pool.map(fn, parts))  # warm-up
            times = []
            for _ in range(runs):
                t0 = time.perf_counter()
                list(pool.map(fn, parts))
                times.append(time.perf_counter() - t0)
            moved = arrays * n * 8
            ci = _rate_ci(moved, times)
            results[kind] = Bandwidth(
                kind=kind,
                best=moved / min(times),
                median=ci.median,
                spread=ci.high / ci.low,
                array_bytes=n * 8,
                threads=threads,
                runs=runs,
                low=ci.low,
                high=ci.high,
                confidence=ci.confidence,
            )
            # Each kernel is checked like any other: a wrong result reports no figure.
            idx = np.linspace(0, n - 1, 1000).astype(np.int64)
            want = {"copy": b[idx], "add": b[idx] + c[idx], "triad": b[idx] + q * c[idx]}[kind]
            if not np.allclose(a[idx], want, rtol=1e-12, atol=0):
                raise KernelMismatch(f"the {kind} kernel computed wrong values; no bandwidth reported")
    return results


def default_gemm_n(dtype: str) -> int:
    """A square size whose GEMM takes a good fraction of a second on a laptop-class CPU."""
    return 4096 if dtype == "float32" else 3072


def gemm_peak(dtype: str = "float32", n: int | None = None, runs: int = GEMM_RUNS) -> GemmPeak:
    """Square C = A·B through numpy's BLAS (the kernels' BLAS); validated, then timed."""
    tol = by_numpy(dtype).tolerance
    n = n or default_gemm_n(dtype)
    if n <= 0 or runs < 1:
        raise BadInput(f"GEMM needs positive n and runs, got n={n}, runs={runs}")
    check_fits(3 * n * n * np.dtype(dtype).itemsize, f"a {n}×{n} {dtype} GEMM")
    a = random_array((n, n), dtype, seed=11)
    b = random_array((n, n), dtype, seed=12)
    c = random_array((n, n), dtype, seed=13)
    np.matmul(a, b, out=c)  # warm-up, and the result to check
    rows = np.arange(0, n, max(1, n // 64))
    err = relative_error(c[rows], reference_product(a, b, rows))
    if not err <= tol:
        raise KernelMismatch(f"{dtype} GEMM is wrong: relative error {err:.3g} > {tol:g}; no peak reported")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        np.matmul(a, b, out=c)
        times.append(time.perf_counter() - t0)
    flops = 2.0 * n**3
    ci = _rate_ci(flops, times)
    return GemmPeak(
        dtype=dtype,
        n=n,
        best=flops / min(times),
        median=ci.median,
        spread=ci.high / ci.low,
        blas=blas_summary(),
        blas_threads=blas_threads(),
        runs=runs,
        low=ci.low,
        high=ci.high,
        confidence=ci.confidence,
    )


def hardware_from(bandwidth: Bandwidth, peaks: dict[str, GemmPeak], name: str | None = None) -> Hardware:
    """A Hardware whose roofs are the measured median bandwidth and median GEMM rates."""
    host = name or platform.node() or "this machine"
    return Hardware(
        name=host,
        peak_flops={by_numpy(d).name: p.median for d, p in peaks.items()},
        bandwidth=bandwidth.median,
        source=f"measured on {host}: {bandwidth.kind} bandwidth, square GEMM ({blas_summary()})",
    )


def measure_ceilings(
    dtypes: tuple[str, ...] = ("float32", "float64"),
    total_bytes: int | None = None,
    gemm_n: int | None = None,
    runs: int = BANDWIDTH_RUNS,
    kinds: tuple[str, ...] = tuple(ARRAYS_MOVED),
) -> Ceilings:
    """Bandwidth (``kinds``, which must include the roof's) and GEMM peaks per dtype, as a measured Hardware."""
    if CEILING_KERNEL not in kinds:
        raise BadInput(f"the bandwidth kinds must include {CEILING_KERNEL!r}, the roof")
    bw = stream_bandwidth(kinds=kinds, total_bytes=total_bytes, runs=runs)
    peaks = {d: gemm_peak(d, gemm_n, runs=min(GEMM_RUNS, runs)) for d in dtypes}
    return Ceilings(
        bandwidth=bw,
        peaks=peaks,
        llc_bytes=llc_bytes()[0],
        hardware=hardware_from(bw[CEILING_KERNEL], peaks),
    )
