"""likwid-bench as an independent referee for the level roofs and the compute roofs.

likwid-bench (Debian's ``likwid``) runs hand-written assembly kernels on pinned threads:
``load_<isa>`` (read-only) and ``update_<isa>`` (read-write) for bandwidth, ``peakflops_<isa>`` for
the FMA peak. :func:`likwid_bench` runs one and parses its MByte/s or MFlops/s. Where it cannot run
(not installed, no topology in a container), :func:`available` raises BackendUnavailable saying why.
"""

from __future__ import annotations

import math
import re
import resource
import shutil
import subprocess
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..errors import BackendUnavailable, BadInput
from ..host import cpu_flags
from .pools import escape_bytes

#: likwid-bench's kernels per roof, widest vector ISA first, with the CPU flags each needs.
KERNELS: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "load": (("load_avx512", ("avx512f",)), ("load_avx", ("avx",)), ("load_sse", ("sse2",)), ("load", ())),
    "update": (("update_avx512", ("avx512f",)), ("update_avx", ("avx",)), ("update_sse", ("sse2",)), ("update", ())),
    "fp64": (
        ("peakflops_avx512_fma", ("avx512f",)),
        ("peakflops_avx_fma", ("avx", "fma")),
        ("peakflops_avx", ("avx",)),
        ("peakflops_sse", ("sse2",)),
        ("peakflops", ()),
    ),
    "fp32": (
        ("peakflops_sp_avx512_fma", ("avx512f",)),
        ("peakflops_sp_avx_fma", ("avx", "fma")),
        ("peakflops_sp_avx", ("avx",)),
        ("peakflops_sp_sse", ("sse2",)),
        ("peakflops_sp", ()),
    ),
}
_RATE = re.compile(r"^(MByte/s|MFlops/s):\s+([0-9.eE+-]+)\s*$", re.MULTILINE)
_TIME = re.compile(r"^Time:\s+([0-9.eE+-]+)\s*sec", re.MULTILINE)

#: A run whose threads had at least this share of their cores (CPU seconds ÷ threads × its kernel's wall
#: time) ran alone; below it another thread shared a core for part of the run. A likwid thread that shares
#: its core for the whole run halves the rate, since likwid divides all the work by the slowest thread's
#: time: the Xeon's fp32 referee read 149 GFLOP/s in one run and 298 in another.
ALONE = 0.9


@dataclass(frozen=True)
class LikwidResult:
    """One likwid-bench run: its kernel, working set (bytes, all threads), threads and rate (GB/s or GFLOP/s)."""

    kernel: str
    bytes: int
    threads: int
    rate: float
    unit: str
    data_gbps: float = 0.0  # GB/s of data the kernel streamed (a peakflops kernel's feeds its registers)
    cpu_share: float | None = None  # its threads' CPU seconds ÷ (threads × its kernel's wall time)

    @property
    def alone(self) -> bool:
        """Whether its threads had their cores to themselves (:data:`ALONE`; True where not known)."""
        return self.cpu_share is None or self.cpu_share >= ALONE


def executable() -> str:
    """The likwid-bench path, or BackendUnavailable saying why not."""
    exe = shutil.which("likwid-bench")
    if exe is None:
        raise BackendUnavailable("likwid-bench is not installed (Debian: apt-get install likwid)")
    return exe


def kernel_for(roof: str, flags: frozenset[str] | None = None) -> str:
    """The likwid-bench kernel for ``roof`` ("load", "update", "fp64", "fp32") on this CPU's widest ISA."""
    if roof not in KERNELS:
        raise BadInput(f"unknown likwid roof {roof!r} (use {', '.join(KERNELS)})")
    flags = flags if flags is not None else cpu_flags()
    return next(name for name, needs in KERNELS[roof] if all(f in flags for f in needs))


def parse(text: str, flops: bool = False) -> tuple[float, str]:
    """(rate, unit) from likwid-bench's output: GB/s from MByte/s, or with ``flops`` GFLOP/s from
    MFlops/s (a peakflops kernel prints both; its MByte/s counts the data that feeds the registers)."""
    rates = {unit: float(value) for unit, value in _RATE.findall(text)}
    if flops and rates.get("MFlops/s"):
        return rates["MFlops/s"] / 1e3, "GFLOP/s"
    if not flops and rates.get("MByte/s"):
        return rates["MByte/s"] / 1e3, "GB/s"
    raise BackendUnavailable(f"likwid-bench printed no {'MFlops/s' if flops else 'MByte/s'} figure")


def _command(kernel: str, nbytes: int, threads: int, iterations: int | None) -> list[str]:
    if nbytes <= 0 or threads <= 0:
        raise BadInput(f"likwid-bench needs a positive size and thread count, got {nbytes} and {threads}")
    cmd = [executable(), "-t", kernel, "-W", f"N:{int(nbytes)}B:{threads}"]
    return cmd + (["-i", str(max(10, int(iterations)))] if iterations is not None else [])


def _result(
    kernel: str, nbytes: int, threads: int, returncode: int, stdout: str, stderr: str, cpu_s: float | None = None
) -> LikwidResult:
    """The run's figures; ``cpu_s``, the CPU seconds its process took, gives its threads' share of their cores."""
    if returncode != 0:
        last = (stderr or stdout).strip().splitlines()[-1:] or ["no output"]
        raise BackendUnavailable(f"likwid-bench {kernel} failed (exit {returncode}): {last[0]}")
    rate, unit = parse(stdout, flops=kernel.startswith("peakflops"))
    data = parse(stdout)[0] if unit != "GB/s" else rate
    wall = float(m.group(1)) if (m := _TIME.search(stdout)) else 0.0
    share = cpu_s / (threads * wall) if cpu_s is not None and wall > 0 else None
    return LikwidResult(kernel, int(nbytes), threads, rate, unit, data, share)


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def likwid_bench(
    kernel: str, nbytes: int, threads: int, iterations: int | None = None, timeout: float = 120
) -> LikwidResult:
    """Run ``likwid-bench -t KERNEL -W N:<nbytes>B:<threads> [-i ITERATIONS]`` and parse its rate.

    ``nbytes`` is the working set of all threads together (likwid-bench splits it); ``iterations``
    per thread, else likwid-bench's own calibration (≥ 1 s).
    """
    cmd = _command(kernel, nbytes, threads, iterations)
    before = _children_cpu_s()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BackendUnavailable(f"likwid-bench {kernel} did not finish within {timeout:.0f} s") from None
    except OSError as exc:
        raise BackendUnavailable(f"likwid-bench cannot run: {exc}") from None
    return _result(kernel, nbytes, threads, out.returncode, out.stdout, out.stderr, _children_cpu_s() - before)


def likwid_probes(
    runs: Mapping[str, tuple[str, int, int]], threads: int, timeout: float = 60
) -> dict[str, LikwidResult]:
    """Short runs of every roof's kernel at once, {roof: (kernel, bytes, iterations)}: what sizes each roof's
    first real run, never a figure. Each likwid-bench process sleeps 1 s calibrating its clock before it
    runs (two 0.5 s nanosleeps, likwid's ``timer.c``): side by side they sleep that second once, not once
    each. Beside each other their rates read low, so the runs they size last longer than asked, never
    shorter. BackendUnavailable where likwid-bench cannot run here."""
    procs = {}
    try:
        for roof, (kernel, nbytes, iterations) in runs.items():
            cmd = _command(kernel, nbytes, threads, iterations)
            procs[roof] = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = {}
        for roof, proc in procs.items():
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                raise BackendUnavailable(
                    f"likwid-bench {runs[roof][0]} did not finish within {timeout:.0f} s"
                ) from None
            kernel, nbytes, _ = runs[roof]
            out[roof] = _result(kernel, nbytes, threads, proc.returncode, stdout, stderr)
        return out
    except OSError as exc:
        raise BackendUnavailable(f"likwid-bench cannot run: {exc}") from None
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def iterations_for(nbytes: int, gbps: float, seconds: float) -> int:
    """Passes per thread that make a run of ``nbytes`` at about ``gbps`` last ``seconds``."""
    return max(10, math.ceil(seconds * gbps * 1e9 / nbytes))


def available(threads: int = 1) -> str:
    """The executable, after a tiny run proves it works here (topology, pinning); BackendUnavailable otherwise."""
    exe = executable()
    likwid_bench(kernel_for("load"), 64 * 1024, threads, iterations=10, timeout=60)
    return exe


#: The referee's roof beyond every cache level, where the decode pools and the DRAM ceiling are read.
REFEREE_OUTER = "DRAM"


def referee_sizes(capacities: Sequence[tuple[str, int]], outer: str = REFEREE_OUTER) -> dict[str, int]:
    """A working set inside each level (all threads): half the first, the geometric middle between
    neighbours, and :func:`~roofline.measure.pools.escape_bytes` of the last (4×) for ``outer``, where
    the decode pools and the DRAM roof are read; ``capacities`` as (name, aggregate bytes), innermost first."""
    sizes, inner = {}, None
    for name, cap in capacities:
        sizes[name] = int(cap / 2 if inner is None else math.sqrt(inner * cap))
        inner = cap
    sizes[outer] = escape_bytes(capacities[-1][1])
    return sizes


def referee_levels(
    sizes: dict[str, int], threads: int, gbps: dict[str, float], kernel: str = "load", seconds: float = 0.25
) -> dict[str, LikwidResult]:
    """likwid-bench's ``kernel`` at each level's working set in ``sizes``; each run lasts about ``seconds``
    (its iterations from ``gbps``, the level's expected rate)."""
    name = kernel_for(kernel)
    return {
        level: likwid_bench(name, size, threads, iterations_for(size, gbps.get(level, 10.0), seconds))
        for level, size in sizes.items()
    }


#: How long each likwid-bench run of :class:`RefereeRounds` lasts, about (seconds), beside the 1 s each
#: likwid-bench process sleeps calibrating its clock.
REFEREE_ROUND_S = 0.25
#: The data rate a roof's probe run is sized from (GB/s): its figure sizes the first real run.
PROBE_GBPS = 10.0
#: The working set of a ``peakflops`` run per thread: half the smallest L1d met (Zen 3's 32 KiB; the Xeon's
#: is 48), so the kernel's one load per update always hits L1 and it computes on registers. At 32 KiB a
#: Zen 3 thread's set filled its L1 to the last line.
PEAK_BYTES_PER_THREAD = 16 * 1024


class RefereeRounds:
    """likwid-bench's figures for a run's roofs, one run of each per :meth:`time`, timed between the
    run's own rounds so both see the same minutes of a shared machine: the ``load`` kernel at each
    working set of ``loads`` ({roof: bytes, all threads}) and the FMA peak of each of ``peaks``
    ("fp32", "fp64"). Each run lasts about ``seconds``: its iterations come from the last run's data
    rate, the first's from a short probe (sized from :data:`PROBE_GBPS`, its figure not kept; every
    roof's probe at once, :func:`likwid_probes`, which also proves likwid-bench runs here), so no round's
    figure is a run of a few milliseconds. BackendUnavailable where likwid-bench cannot run here."""

    def __init__(
        self,
        loads: Mapping[str, int],
        peaks: Sequence[str] = ("fp32", "fp64"),
        threads: int = 1,
        seconds: float = REFEREE_ROUND_S,
    ):
        if any(b <= 0 for b in loads.values()) or threads <= 0 or not seconds > 0:
            raise BadInput(
                f"the referee needs positive bytes, threads and seconds, got {dict(loads)}, {threads}, {seconds}"
            )
        peak_bytes = PEAK_BYTES_PER_THREAD * threads
        self.runs = {roof: (kernel_for("load"), int(b)) for roof, b in loads.items()}
        self.runs.update({dtype: (kernel_for(dtype), peak_bytes) for dtype in peaks})
        self.threads, self.seconds = threads, seconds
        probes = {roof: (k, b, iterations_for(b, PROBE_GBPS, seconds / 10)) for roof, (k, b) in self.runs.items()}
        self.expected = {roof: r.data_gbps for roof, r in likwid_probes(probes, threads).items()}
        self.results: dict[str, list[LikwidResult]] = {roof: [] for roof in self.runs}

    def time(self, roofs: Collection[str] | None = None) -> None:
        """One likwid-bench run of each roof's kernel (of ``roofs`` only, when given); BadInput on a roof
        this referee does not time."""
        if roofs is not None and (unknown := set(roofs) - set(self.runs)):
            raise BadInput(f"no referee for {', '.join(sorted(unknown))} (this one times {', '.join(self.runs)})")
        for roof, (kernel, nbytes) in self.runs.items():
            if roofs is not None and roof not in roofs:
                continue
            done = self.results[roof]
            expected = done[-1].data_gbps if done else self.expected[roof]
            done.append(likwid_bench(kernel, nbytes, self.threads, iterations_for(nbytes, expected, self.seconds)))

    def figures(self) -> dict[str, float]:
        """Each roof's figure (GB/s, GFLOP/s for the peaks): its fastest run among those that ran alone
        (:attr:`LikwidResult.alone`), its fastest where none did; BadInput before the first round. A referee
        says what the cores do with nothing beside them: a slower run measured what shared them."""
        if not all(self.results.values()):
            raise BadInput("no round of the likwid-bench referee was timed")
        return {roof: max(r.rate for r in [r for r in done if r.alone] or done) for roof, done in self.results.items()}

    def shared(self) -> list[str]:
        """A line for each roof some of whose runs did not have their cores to themselves."""
        out = []
        for roof, done in self.results.items():
            if shares := [r.cpu_share for r in done if not r.alone]:
                low = ", ".join(f"{s:.2f}" for s in shares if s is not None)
                out.append(
                    f"the {roof} referee ({done[0].kernel}) shared its cores in {len(shares)} of {len(done)} runs "
                    f"(its threads' share of them: {low}); its figure is the fastest run"
                    + (" that ran alone" if len(shares) < len(done) else "")
                )
        return out
