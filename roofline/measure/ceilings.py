"""This machine's measured ceilings: STREAM-style memory bandwidth and square-GEMM peak.

Together they make a measured :class:`~roofline.model.hardware.Hardware`, with a ridge point and a
predicted crossover batch that come from this machine rather than a datasheet. Each ceiling is the
median of enough timed passes to bound it with a 95 % confidence interval
(:mod:`roofline.model.intervals`), never the best pass: a best-of-few on a shared machine records
whichever pass a neighbour left alone. :class:`CeilingRounds` takes those passes at several moments
of a run (a suite run's three rounds), pooled into one figure per ceiling.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..errors import BadInput, KernelMismatch
from ..host import blas_summary, blas_threads, cpu_count, llc_bytes
from ..model.dtypes import by_numpy
from ..model.hardware import Hardware
from ..model.hierarchy import CEILING_KERNEL
from ..model.intervals import MedianCI, fastest_round_median, median_ci
from .contention import blas_limit
from .numpy_step import decode_step, reference_product, relative_error
from .pools import check_fits, escape_bytes, random_array

#: Elements per block of the blocked triad: one block of ``a`` stays in L2 between its two passes.
TRIAD_BLOCK = 131072

#: Arrays counted per element, as STREAM counts them (read: the two it reads).
ARRAYS_MOVED = {"copy": 2, "add": 3, "triad": 3, "read": 2}

#: Timed passes per bandwidth kernel: 15 give the median a 96 % interval between the 4th smallest
#: and the 4th largest pass.
BANDWIDTH_RUNS = 15

#: Timed GEMMs per dtype: 6 give a 97 % interval between the slowest and the fastest.
GEMM_RUNS = 6

#: A round of the bandwidth kernels lasts at least this long, their passes taken in turn (every kernel
#: at the same moments). A shared VM's DRAM moves from one second to the next: over 40 s of read
#: passes (~11 ms each) the median of 5 consecutive passes ranged 2.3× and of 150 (1.6 s) 1.45×, so
#: 5 passes a round measured whichever moment they fell in.
STREAM_ROUND_S = 1.0

#: At most this many passes of each kernel in a round (small arrays fill a round with thousands).
STREAM_MAX_PASSES = 100


#: The smallest batch whose GEMM shape the fp32 compute roof is also timed at: from 64 the decode points
#: are compute-bound here (a ridge of 6 FLOP/byte, 30 at batch 64); below it a shape's GEMM reads memory.
SHAPED_ROOF_BATCH = 64


def point_shapes(sizes: Iterable[int], batches: Iterable[int]) -> list[tuple[int, int]]:
    """The (n, batch) GEMMs the compute roof is timed at beside the square one: each n at the largest
    batch, where that batch is compute-bound (:data:`SHAPED_ROOF_BATCH`)."""
    batch = max(batches, default=0)
    return [(n, batch) for n in sorted(set(sizes))] if batch >= SHAPED_ROOF_BATCH else []


def _rate_ci(work: float, times: list[float]) -> MedianCI:
    """The median rate (work / time) of timed passes and its interval (slow passes give the low end)."""
    return median_ci([work / t for t in times])


@dataclass(frozen=True)
class Bandwidth:
    """STREAM-style bandwidth in bytes/s over ``runs`` timed passes: the median of all, its confidence
    interval [``low``, ``high``], the best pass, and ``best_round``, the fastest round's median (the
    ceiling, :attr:`roof`). ``spread`` is ``high / low``: robust to the few passes a neighbour slowed
    (max/min is not)."""

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
    best_round: float = 0.0

    @property
    def roof(self) -> float:
        """The ceiling: the fastest round's median rate, as STREAM reports the best of its trials (a round's
        median, not one lucky pass). This VM's DRAM moves within seconds between a run's rounds: the
        median of all passes read 27.3 GB/s where the decode points of the same rounds read 31.6. The
        median of all passes where the rounds were not kept apart."""
        return self.best_round or self.median

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class GemmPeak:
    """GEMM rate in FLOP/s through numpy's BLAS, (n × n)·(n × ``cols``; None: n, square): the median of all,
    its interval, the best, and the fastest round's median (the ceiling, :attr:`roof`, as
    :attr:`Bandwidth.roof`); ``spread`` is the interval's ``high / low``."""

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
    cols: int | None = None
    best_round: float = 0.0

    @property
    def roof(self) -> float:
        """The ceiling: the fastest round's median rate (the median of all where rounds were not kept apart).
        The median of all read 142.3 GFLOP/s in a run whose batch-512 points of the same rounds ran 161."""
        return self.best_round or self.median

    @property
    def kernel(self) -> str:
        """Its name with its size: 'numpy BLAS GEMM 2048³', or '… 8192×8192·8192×512' at a point's shape."""
        size = f"{self.n}³" if self.cols is None else f"{self.n}×{self.n}·{self.n}×{self.cols}"
        return f"numpy BLAS GEMM {size}"

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Ceilings:
    """Measured ceilings of this machine, and the Hardware they make. ``peaks``: the square GEMM per dtype;
    ``shaped``: GEMMs of the decode points' own shapes ({(n, batch): peak}, the first dtype's), which the
    compute roof is the best of with the square one (:func:`hardware_from`)."""

    bandwidth: dict[str, Bandwidth]
    peaks: dict[str, GemmPeak]
    llc_bytes: int
    hardware: Hardware = field(compare=False)
    shaped: dict[tuple[int, int], GemmPeak] = field(default_factory=dict)

    def roof_gemm(self, dtype: str) -> GemmPeak:
        """The GEMM whose median is ``dtype``'s compute roof: the fastest of the square and the shaped."""
        return fastest_gemms(self.peaks, self.shaped.values())[dtype]

    def as_dict(self) -> dict[str, object]:
        return {
            "bandwidth": {k: v.as_dict() for k, v in self.bandwidth.items()},
            "peaks": {k: v.as_dict() for k, v in self.peaks.items()},
            "shaped": [v.as_dict() for v in self.shaped.values()],
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


class StreamArrays:
    """STREAM's three float64 arrays on a thread pool, written once, timed at as many moments as
    :meth:`time` is called; :meth:`bandwidth` pools every round's passes.

    Each array holds ≥ 4× the aggregate LLC (:func:`~roofline.measure.pools.escape_bytes`, STREAM's
    rule) unless ``total_bytes`` (all three together) says otherwise; each thread first-touches
    (writes) its own chunks before anything is timed. numpy releases the GIL inside ufuncs, so the
    threads run in parallel (read's dot with the BLAS on one thread per caller). Bytes counted as
    STREAM does: 2 arrays for copy, 3 for add and triad; 2 for read, which writes none.
    """

    def __init__(
        self,
        kinds: tuple[str, ...] = tuple(ARRAYS_MOVED),
        total_bytes: int | None = None,
        threads: int | None = None,
        gemv: Iterable[int] = (),
    ):
        """``gemv``: the n of batch-1 decode steps (y = W·x over a pool ≥ 4× the LLC, the suite's own GEMV,
        validated when built) timed in turn with the kernels, read kernels the DRAM roof is the fastest of
        (:func:`read_roof`); each pass runs the next matrix of the pool, its rows split among the threads as
        the STREAM kernels' arrays are."""
        for kind in kinds:
            if kind not in ARRAYS_MOVED:
                raise BadInput(f"unknown bandwidth kind {kind!r} (use {', '.join(ARRAYS_MOVED)})")
        self.kinds = tuple(kinds)
        self.threads = threads or cpu_count()
        total = total_bytes if total_bytes is not None else 3 * escape_bytes()
        self.n = n = max(self.threads * TRIAD_BLOCK, -(-total // (3 * 8)))
        check_fits(3 * n * 8, "the bandwidth arrays")
        self.parts = _chunks(n, self.threads)
        # np.empty is safe here: every page is written by its own thread below, before any timing.
        self.a, self.b, self.c = np.empty(n), np.empty(n), np.empty(n)
        self.q = 3.0
        self.steps = {gemv_kind(n): decode_step(n, 1, "float32", "dram") for n in dict.fromkeys(gemv)}
        self.rows = {kind: _chunks(step.n, self.threads) for kind, step in self.steps.items()}
        self.times: dict[str, list[float]] = {kind: [] for kind in (*self.kinds, *self.steps)}
        self.round_starts: list[int] = []  # where each round's passes start in every kind's times
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            list(pool.map(self._first_touch, range(len(self.parts))))

    def _first_touch(self, i: int) -> None:
        s = self.parts[i]
        rng = np.random.default_rng(i)
        for arr in (self.a, self.b, self.c):
            rng.random(out=arr[s])

    def _copy(self, s: slice) -> None:
        np.copyto(self.a[s], self.b[s])

    def _add(self, s: slice) -> None:
        np.add(self.b[s], self.c[s], out=self.a[s])

    def _read(self, s: slice) -> float:
        return float(np.dot(self.b[s], self.c[s]))

    def _triad(self, s: slice) -> None:
        a, b, c = self.a, self.b, self.c
        for start in range(s.start, s.stop, TRIAD_BLOCK):
            blk = slice(start, min(start + TRIAD_BLOCK, s.stop))
            np.multiply(c[blk], self.q, out=a[blk])
            np.add(a[blk], b[blk], out=a[blk])

    def time(self, runs: int = BANDWIDTH_RUNS, round_s: float = 0.0) -> None:
        """One round: a warm-up pass of each kind, then one timed pass of each kind in turn, ``runs``
        turns or as many as fill ``round_s`` seconds (at most :data:`STREAM_MAX_PASSES`), whichever is
        more; each kind's result is checked after its last pass (a kernel that computed wrong values
        raises KernelMismatch: no figure; the GEMVs were checked when built)."""
        if runs < 1 or not round_s >= 0:
            raise BadInput(f"runs must be ≥ 1 and round_s ≥ 0, got {runs} and {round_s}")
        self.round_starts.append(len(self.times[self.kinds[0]]))
        with ThreadPoolExecutor(max_workers=self.threads) as pool:
            t0 = time.perf_counter()
            self._turn(pool, timed=False)  # warm-up
            turn = time.perf_counter() - t0
            turns = runs
            if round_s > 0 and turn > 0:
                turns = max(runs, min(STREAM_MAX_PASSES, math.ceil(round_s / turn)))
            for t in range(turns):
                self._turn(pool, check=t == turns - 1)

    def _turn(self, pool: ThreadPoolExecutor, timed: bool = True, check: bool = False) -> None:
        """One pass of each kind, on the pool's threads with one BLAS thread each (read's dot and the GEMVs
        are BLAS: a BLAS's own idle workers would spin beside the next kernel); each pass's seconds kept where
        ``timed``, and with ``check`` each kind's result checked."""
        fns = {"copy": self._copy, "add": self._add, "triad": self._triad, "read": self._read}
        with blas_limit(1):
            for kind in self.times:
                fn, parts = (self._gemv(kind), self.rows[kind]) if kind in self.steps else (fns[kind], self.parts)
                t0 = time.perf_counter() if timed else 0.0
                out = list(pool.map(fn, parts))
                if timed:
                    self.times[kind].append(time.perf_counter() - t0)
                if check:
                    self._check(kind, out)

    def _gemv(self, kind: str) -> Callable[[slice], object]:
        """A pass of a GEMV kind: y = W·x on the pool's next matrix, by rows (a slice of them per thread)."""
        step = self.steps[kind]
        w = step.next_weights()
        return lambda rows: np.matmul(w[rows], step.x, out=step.out[rows])

    def _check(self, kind: str, out: list) -> None:
        """KernelMismatch unless ``kind``'s last pass computed what it should (``out``: read's sums; a GEMV's
        rows, split among threads, against the whole product of the matrix it read)."""
        a, b, c, q = self.a, self.b, self.c, self.q
        if kind in self.steps:
            step = self.steps[kind]
            ok = relative_error(step.out, np.matmul(step.last_weights, step.x)) <= by_numpy(step.dtype).tolerance
        elif kind == "read":
            got, want = sum(out), float(np.einsum("i,i->", b, c))  # numpy's own loop, not the BLAS
            ok = abs(got - want) <= 1e-9 * abs(want)
        else:
            idx = np.linspace(0, self.n - 1, 1000).astype(np.int64)
            want = {"copy": b[idx], "add": b[idx] + c[idx], "triad": b[idx] + q * c[idx]}[kind]
            ok = np.allclose(a[idx], want, rtol=1e-12, atol=0)
        if not ok:
            raise KernelMismatch(f"the {kind} kernel computed wrong values; no bandwidth reported")

    def bandwidth(self) -> dict[str, Bandwidth]:
        """Each kind's bandwidth from the passes of every round; BadInput before the first round."""
        if not all(self.times.values()):
            raise BadInput("no round of the bandwidth kernels was timed")
        results = {}
        for kind, times in self.times.items():
            moved = self.steps[kind].bytes_moved if kind in self.steps else ARRAYS_MOVED[kind] * self.n * 8
            ci = _rate_ci(moved, times)
            results[kind] = Bandwidth(
                kind=kind,
                best=moved / min(times),
                median=ci.median,
                spread=ci.high / ci.low,
                array_bytes=self.steps[kind].pool_bytes if kind in self.steps else self.n * 8,
                threads=self.threads,
                runs=len(times),
                low=ci.low,
                high=ci.high,
                confidence=ci.confidence,
                best_round=fastest_round_median([moved / t for t in times], self.round_starts),
            )
        return results


#: The kind of a GEMV read kernel among the bandwidth figures, and its n (:func:`gemv_kind`).
GEMV_KIND = "gemv"


def gemv_kind(n: int) -> str:
    return f"{GEMV_KIND} n={n}"


def read_roof(bandwidth: Mapping[str, Bandwidth]) -> Bandwidth:
    """The DRAM roof among ``bandwidth``: the fastest (:attr:`Bandwidth.roof`) of the read kernel
    (:data:`CEILING_KERNEL`) and the batch-1 GEMVs timed in its passes, as the figure of the read kernel.
    A roof no honest point passes is timed with a kernel at least as efficient as the work it bounds: the
    BLAS dot read 25.1 GB/s in a run where the decode points' own GEMV read 26.4 and 27.8 (1.05, 1.11)."""
    candidates = [bandwidth[CEILING_KERNEL], *(b for k, b in bandwidth.items() if k.startswith(GEMV_KIND))]
    return replace(max(candidates, key=lambda b: b.roof), kind=CEILING_KERNEL)


def stream_bandwidth(
    kinds: tuple[str, ...] = tuple(ARRAYS_MOVED),
    total_bytes: int | None = None,
    runs: int = BANDWIDTH_RUNS,
    threads: int | None = None,
) -> dict[str, Bandwidth]:
    """Copy (a = b), add (a = b + c), triad (a = b + q·c) and read (s = b·c), ``runs`` passes each at
    one moment (:class:`StreamArrays`)."""
    if runs < 1:
        raise BadInput(f"runs must be ≥ 1, got {runs}")
    arrays = StreamArrays(kinds, total_bytes, threads)
    arrays.time(runs)
    return arrays.bandwidth()


def default_gemm_n(dtype: str) -> int:
    """A square size whose GEMM reaches the BLAS's rate: on this project's 2-core VM float32 at 2048 read
    175 GFLOP/s as at 4096 (0.1 s a GEMM against 0.8), float64 at 1536 79 as at 3072. The float32 roof is
    also timed at the points' own shapes (:func:`point_shapes`), the suite's largest GEMMs. A run without
    ROOFLINE_GEMM_N climbs :data:`GEMM_LADDER` instead (:func:`climb`)."""
    return 2048 if dtype == "float32" else 1536


#: The square sizes a GEMM roof climbs, smallest first (:func:`climb`), where ROOFLINE_GEMM_N does not fix one.
GEMM_LADDER = (512, 1024, 2048, 4096, 8192)
#: A size is worth the next only where it beat the best before it by this much: the rate still rose.
GEMM_RISE = 1.03
#: The next size is tried only where its GEMM would last at most this long at the best rate so far: every
#: round times each size kept, and a 4096 float32 GEMM took 0.8 s on the 2-core VM, 5 s a round at a warm-up
#: and six runs, against make bench's 4-5 minutes (2048: 0.1 s).
GEMM_MAX_S = 0.3
#: The sizes kept for the rounds: those whose probe read at least this share of the fastest's. A probe is three
#: GEMMs at one moment (a busy neighbour halved one here), so only a size far below the others is dropped.
GEMM_KEEP = 0.5


def climb(
    probe: Callable[[int], float],
    sizes: Sequence[int] = GEMM_LADDER,
    rise: float = GEMM_RISE,
    max_s: float = GEMM_MAX_S,
) -> list[int]:
    """The square sizes a library's GEMM roof is timed at: up ``sizes`` while the rate rises (each beats the
    best before it by ``rise``) and the next GEMM would last at most ``max_s`` at the best rate so far; of
    those probed, the ones within :data:`GEMM_KEEP` of the fastest, whose rounds then pick the roof.
    ``probe(n)`` gives a size's rate (FLOP/s)."""
    rates: dict[int, float] = {}
    for i, n in enumerate(sizes):
        best, rates[n] = max(rates.values(), default=0.0), probe(n)
        top = max(best, rates[n])
        nxt = sizes[i + 1] if i + 1 < len(sizes) else None
        if rates[n] < best * rise or nxt is None or 2.0 * nxt**3 / top > max_s:
            break
    top = max(rates.values())
    return [n for n, r in rates.items() if r >= GEMM_KEEP * top]


class GemmOperands:
    """C = A·B through numpy's BLAS (the kernels' BLAS), A n × n and B n × ``cols`` (None: square), timed at
    as many moments as :meth:`time` is called; validated against float64 in the first round, before
    anything of it is reported."""

    def __init__(self, dtype: str = "float32", n: int | None = None, cols: int | None = None):
        self.tol = by_numpy(dtype).tolerance
        self.dtype, self.n = dtype, n or default_gemm_n(dtype)
        self.cols = cols
        width = cols or self.n
        if self.n <= 0 or width <= 0:
            raise BadInput(f"GEMM needs a positive n and cols, got n={self.n}, cols={width}")
        size = f"{self.n}×{self.n}" + (f"·{self.n}×{cols}" if cols else "")
        check_fits((self.n * self.n + 2 * self.n * width) * np.dtype(dtype).itemsize, f"a {size} {dtype} GEMM")
        self.a = random_array((self.n, self.n), dtype, seed=11)
        self.b = random_array((self.n, width), dtype, seed=12)
        self.c = random_array((self.n, width), dtype, seed=13)
        self.checked = False
        self.times: list[float] = []
        self.round_starts: list[int] = []

    def probe(self, runs: int = 3) -> float:
        """The fastest rate (FLOP/s) of ``runs`` GEMMs after a warm-up (checked), kept out of the rounds."""
        self.time(runs)
        times, self.times, self.round_starts = self.times, [], []
        return 2.0 * self.n * self.n * (self.cols or self.n) / min(times)

    def time(self, runs: int = GEMM_RUNS) -> None:
        """One round: a warm-up GEMM (checked, the first time), then ``runs`` timed ones."""
        if runs < 1:
            raise BadInput(f"GEMM needs positive runs, got runs={runs}")
        a, b, c = self.a, self.b, self.c
        self.round_starts.append(len(self.times))
        np.matmul(a, b, out=c)  # warm-up, and the result to check
        if not self.checked:
            rows = np.arange(0, self.n, max(1, self.n // 64))
            err = relative_error(c[rows], reference_product(a, b, rows))
            if not err <= self.tol:
                raise KernelMismatch(
                    f"{self.dtype} GEMM is wrong: relative error {err:.3g} > {self.tol:g}; no peak reported"
                )
            self.checked = True
        for _ in range(runs):
            t0 = time.perf_counter()
            np.matmul(a, b, out=c)
            self.times.append(time.perf_counter() - t0)

    def peak(self) -> GemmPeak:
        """The rate from the GEMMs of every round; BadInput before the first round."""
        if not self.times:
            raise BadInput(f"no round of the {self.dtype} GEMM was timed")
        flops = 2.0 * self.n * self.n * (self.cols or self.n)
        ci = _rate_ci(flops, self.times)
        return GemmPeak(
            dtype=self.dtype,
            n=self.n,
            best=flops / min(self.times),
            median=ci.median,
            spread=ci.high / ci.low,
            blas=blas_summary(),
            blas_threads=blas_threads(),
            runs=len(self.times),
            low=ci.low,
            high=ci.high,
            confidence=ci.confidence,
            cols=self.cols,
            best_round=fastest_round_median([flops / t for t in self.times], self.round_starts),
        )


def gemm_peak(dtype: str = "float32", n: int | None = None, runs: int = GEMM_RUNS) -> GemmPeak:
    """Square C = A·B, ``runs`` timed GEMMs at one moment (:class:`GemmOperands`)."""
    if runs < 1:
        raise BadInput(f"GEMM needs positive n and runs, got n={n}, runs={runs}")
    gemm = GemmOperands(dtype, n)
    gemm.time(runs)
    return gemm.peak()


def fastest_gemms(peaks: dict[str, GemmPeak], shaped: Iterable[GemmPeak] = ()) -> dict[str, GemmPeak]:
    """Per dtype, the GEMM with the fastest roof (:attr:`GemmPeak.roof`): the square one of ``peaks`` or one
    of ``shaped``."""
    out = dict(peaks)
    for g in shaped:
        if g.dtype not in out or g.roof > out[g.dtype].roof:
            out[g.dtype] = g
    return out


def hardware_from(
    bandwidth: Bandwidth, peaks: dict[str, GemmPeak], name: str | None = None, shaped: Iterable[GemmPeak] = ()
) -> Hardware:
    """A Hardware whose roofs are the measured bandwidth's roof (:attr:`Bandwidth.roof`, the fastest round)
    and, per dtype, the fastest GEMM roof (:attr:`GemmPeak.roof`) of the square one and ``shaped`` (the
    decode points' shapes). A roof no honest point passes is timed with a kernel at least as efficient as the work it
    bounds: a point's own GEMM on one resident W is; the square one alone read 139.9 GFLOP/s where
    batch-512 points ran 154 (1.10×)."""
    host = name or platform.node() or "this machine"
    return Hardware(
        name=host,
        peak_flops={by_numpy(d).name: p.roof for d, p in fastest_gemms(peaks, shaped).items()},
        bandwidth=bandwidth.roof,
        source=f"measured on {host}: {bandwidth.kind} bandwidth, the fastest GEMM ({blas_summary()})",
    )


def square_gemms(dtype: str, n: int | None = None) -> list[GemmOperands]:
    """The square GEMMs a dtype's roof is timed at in every round: ``n`` alone where given (ROOFLINE_GEMM_N),
    else the sizes :func:`climb` keeps, each probed once first."""
    if n is not None:
        return [GemmOperands(dtype, n)]
    made: dict[int, GemmOperands] = {}

    def probe(size: int) -> float:
        made[size] = GemmOperands(dtype, size)
        return made[size].probe()

    return [made[size] for size in climb(probe)]


class CeilingRounds:
    """The ceilings measured at several moments of a run (one :meth:`time` per moment, other work
    between), pooled: a slow minute of a shared machine moves one round's passes, not the median of
    all. The arrays and matrices are made once and kept between rounds. Each dtype's square GEMM is timed
    at every size :func:`square_gemms` keeps, in the same rounds; its peak is the fastest (its size in
    :attr:`GemmPeak.n`)."""

    def __init__(
        self,
        dtypes: tuple[str, ...] = ("float32", "float64"),
        total_bytes: int | None = None,
        gemm_n: int | None = None,
        kinds: tuple[str, ...] = tuple(ARRAYS_MOVED),
        shapes: Iterable[tuple[int, int]] = (),
        gemv: Iterable[int] = (),
    ):
        """``shapes``: the (n, batch) of decode points whose own GEMM, in the first of ``dtypes``, the compute
        roof is also timed at (:func:`hardware_from`); ``gemv``: the n of batch-1 decode points whose own GEMV
        the DRAM roof is also timed at (:func:`read_roof`)."""
        if CEILING_KERNEL not in kinds:
            raise BadInput(f"the bandwidth kinds must include {CEILING_KERNEL!r}, the roof")
        self.stream = StreamArrays(kinds, total_bytes, gemv=gemv)
        self.gemms = {d: square_gemms(d, gemm_n) for d in dtypes}
        self.shaped = {(n, b): GemmOperands(dtypes[0], n, cols=b) for n, b in dict.fromkeys(shapes)}

    def time(self, runs: int = BANDWIDTH_RUNS, gemm_runs: int = GEMM_RUNS, round_s: float = 0.0) -> None:
        """One round: ``runs`` passes of each bandwidth kernel in turn, or as many as fill ``round_s``
        seconds (:meth:`StreamArrays.time`), then ``gemm_runs`` GEMMs per dtype and per shape."""
        self.stream.time(runs, round_s)
        for gemm in (*(g for sizes in self.gemms.values() for g in sizes), *self.shaped.values()):
            gemm.time(gemm_runs)

    def ceilings(self) -> Ceilings:
        """The ceilings of every round's passes, as a measured Hardware; BadInput before the first round."""
        bw = self.stream.bandwidth()
        peaks = {d: max((g.peak() for g in sizes), key=lambda p: p.roof) for d, sizes in self.gemms.items()}
        shaped = {key: g.peak() for key, g in self.shaped.items()}
        return Ceilings(
            bandwidth=bw,
            peaks=peaks,
            llc_bytes=llc_bytes()[0],
            hardware=hardware_from(read_roof(bw), peaks, shaped=shaped.values()),
            shaped=shaped,
        )
