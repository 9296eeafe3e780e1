"""Facts about this machine: caches and how they are shared, cores, memory, BLAS and its threads, and its GPU."""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from .errors import BackendUnavailable, BadInput

#: Used when the OS does not say how large the last-level cache is: larger than any CPU's LLC
#: shipping today, so that a pool sized from it still escapes the cache.
FALLBACK_LLC_BYTES = 512 * 2**20

_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}


def parse_size(text: str) -> int:
    """'491520K', '32M', '1G' or '65536' → bytes; BadInput otherwise."""
    m = _SIZE.match(text)
    if not m or int(m.group(1)) <= 0:
        raise BadInput(f"not a size: {text!r} (use e.g. 32M, 491520K or a byte count)")
    return int(m.group(1)) * _UNITS[m.group(2).upper()]


@dataclass(frozen=True)
class CacheLevel:
    """One level of data cache over the CPUs in use: its size per instance and the distinct instances.

    ``instances`` counts the distinct sharing sets (``shared_cpu_list``) among the CPUs in use, so
    ``aggregate_bytes`` is what all of them hold together: 2 cores with a private 32 KiB L1 each hold
    64 KiB in L1; 2 cores sharing one 8 MiB L3 hold 8 MiB in L3.
    """

    level: int
    kind: str
    size_bytes: int
    instances: int
    shared_cpus: tuple[tuple[int, ...], ...]

    @property
    def name(self) -> str:
        return f"L{self.level}"

    @property
    def aggregate_bytes(self) -> int:
        return self.size_bytes * self.instances


def parse_cpu_list(text: str) -> tuple[int, ...]:
    """'0-3,8,10-11' → (0, 1, 2, 3, 8, 10, 11); BadInput otherwise."""
    cpus: list[int] = []
    try:
        for part in text.strip().split(","):
            lo, _, hi = part.partition("-")
            cpus += range(int(lo), int(hi or lo) + 1)
    except ValueError:
        raise BadInput(f"not a CPU list: {text!r}") from None
    return tuple(sorted(set(cpus)))


def cache_topology(
    root: str | os.PathLike = "/sys/devices/system/cpu", cpus: tuple[int, ...] | None = None
) -> tuple[CacheLevel, ...]:
    """The data and unified caches of the CPUs in use (default: this process's affinity), innermost first.

    Read from Linux sysfs ``cpuN/cache/index*`` (``level``, ``type``, ``size``, ``shared_cpu_list``);
    instruction caches are left out. Empty where the OS does not say.
    """
    cpus = tuple(sorted(cpus if cpus is not None else _affinity()))
    found: dict[tuple[int, str], tuple[int, set[tuple[int, ...]]]] = {}
    for cpu in cpus:
        for index in sorted(Path(root, f"cpu{cpu}", "cache").glob("index*")):
            try:
                level = int((index / "level").read_text())
                kind = (index / "type").read_text().strip()
                size = parse_size((index / "size").read_text())
                shared = (index / "shared_cpu_list").read_text() if (index / "shared_cpu_list").exists() else ""
                sharing = parse_cpu_list(shared) if shared.strip() else (cpu,)
            except (OSError, ValueError, BadInput):
                continue
            if kind not in ("Unified", "Data"):
                continue
            size_seen, sets = found.setdefault((level, kind), (size, set()))
            sets.add(sharing)
            found[(level, kind)] = (max(size_seen, size), sets)
    return tuple(
        CacheLevel(level, kind, size, len(sets), tuple(sorted(sets)))
        for (level, kind), (size, sets) in sorted(found.items())
    )


def llc_bytes(
    root: str | os.PathLike = "/sys/devices/system/cpu", use_override: bool = True, cpus: tuple[int, ...] | None = None
) -> tuple[int, str]:
    """The last-level cache of the CPUs in use, summed over its distinct instances, and where the figure came from.

    ``ROOFLINE_LLC_BYTES`` overrides (the aggregate: what every pool must escape; unless ``use_override``
    is False: the machine's own figure); then Linux sysfs
    (:func:`cache_topology`'s highest level, over ``cpus``: default this process's); then macOS ``sysctl``;
    else :data:`FALLBACK_LLC_BYTES`.
    Every pool and bandwidth array is sized from this figure (:func:`roofline.measure.pools.escape_bytes`).
    """
    override = os.environ.get("ROOFLINE_LLC_BYTES") if use_override else None
    if override is not None:
        try:
            return parse_size(override), "ROOFLINE_LLC_BYTES"
        except BadInput as exc:
            raise BadInput(f"ROOFLINE_LLC_BYTES: {exc}") from None
    levels = cache_topology(root, cpus)
    if levels:
        llc = max(levels, key=lambda c: c.level)
        first = llc.shared_cpus[0][0]
        source = f"{Path(root) / f'cpu{first}' / 'cache'} (L{llc.level})"
        if llc.instances > 1:
            source += f" × {llc.instances} instances"
        return llc.aggregate_bytes, source
    if platform.system() == "Darwin":
        for key in ("hw.l3cachesize", "hw.l2cachesize"):
            try:
                out = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=5).stdout
                if out.strip().isdigit() and int(out) > 0:
                    return int(out), f"sysctl {key}"
            except (OSError, subprocess.SubprocessError):
                pass
    return FALLBACK_LLC_BYTES, "fallback (the OS did not say)"


def _affinity() -> set[int]:
    try:
        return os.sched_getaffinity(0)
    except AttributeError:  # pragma: no cover - not Linux
        return set(range(os.cpu_count() or 1))


def cpu_count() -> int:
    """Cores this process may run on."""
    return len(_affinity())


def running_threads(task_dir: str | os.PathLike = "/proc/self/task") -> int | None:
    """This process's other threads running or runnable now (state R in Linux's ``/proc``), None where
    the OS does not say. A BLAS's idle workers spin in state R for a while after each call."""
    me = str(threading.get_native_id())
    try:
        tasks = [t for t in os.listdir(task_dir) if t != me]
    except OSError:
        return None
    running = 0
    for t in tasks:
        try:
            stat = Path(task_dir, t, "stat").read_text()
        except OSError:  # the thread ended meanwhile
            continue
        state = stat.rfind(")") + 2  # the state follows the name, which may hold ") "
        running += stat[state : state + 1] == "R"
    return running


def available_memory_bytes() -> int | None:
    """Memory available to new allocations (Linux MemAvailable), None when unknown."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def total_memory_bytes() -> int | None:
    """Physical memory, None when unknown."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cpuinfo(text: str | None) -> str:
    """``text``, else Linux /proc/cpuinfo; "" where the OS does not give it."""
    if text is not None:
        return text
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def cpu_flags(text: str | None = None) -> frozenset[str]:
    """The CPU's feature flags (Linux /proc/cpuinfo ``flags``, or ``text`` in its format); empty where the OS
    does not say."""
    for line in _cpuinfo(text).splitlines():
        if line.startswith(("flags", "Features")):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_model(text: str | None = None) -> str:
    """The processor's marketing name where the OS gives it (Linux /proc/cpuinfo, or ``text`` in its format)."""
    for line in _cpuinfo(text).splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "" if text is not None else platform.processor() or platform.machine()


def cpu_signature(text: str | None = None) -> dict[str, object]:
    """The processor's vendor, family, model and stepping numbers (Linux /proc/cpuinfo, or ``text`` in its
    format); {} where the OS does not say. A VM often hides the model name ('AMD EPYC'), never these."""
    out: dict[str, object] = {}
    for line in _cpuinfo(text).splitlines():
        key, _, value = (part.strip() for part in line.partition(":"))
        if key == "vendor_id" and "vendor" not in out:
            out["vendor"] = value
        elif key in ("cpu family", "model", "stepping") and key not in out and value.isdigit():
            out[key] = int(value)
        elif not line.strip() and out:
            break  # the first processor's block is enough
    return out


def blas_info() -> list[dict[str, object]]:
    """The BLAS libraries numpy loaded, with their thread counts (threadpoolctl)."""
    import numpy  # noqa: F401  (loads the BLAS so threadpoolctl can see it)
    from threadpoolctl import threadpool_info

    return [
        {k: info.get(k) for k in ("internal_api", "version", "num_threads", "architecture", "threading_layer")}
        for info in threadpool_info()
        if info.get("user_api") == "blas"
    ]


def blas_summary() -> str:
    """One line such as 'openblas 0.3.31 (SkylakeX), 2 threads'."""
    libs = blas_info()
    if not libs:
        return "no BLAS found by threadpoolctl"
    parts = []
    for lib in libs:
        arch = f" ({lib['architecture']})" if lib.get("architecture") else ""
        parts.append(f"{lib['internal_api']} {lib['version']}{arch}, {lib['num_threads']} threads")
    return "; ".join(parts)


def blas_threads() -> int | None:
    """Threads of the first BLAS numpy uses, None when unknown."""
    libs = blas_info()
    return int(libs[0]["num_threads"]) if libs and libs[0].get("num_threads") else None


def host_facts() -> dict[str, object]:
    """Everything above as one JSON-ready dict, for reports and asv machine keys."""
    llc, llc_source = llc_bytes()
    return {
        "host": platform.node(),
        "cpu": cpu_model(),
        "arch": platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "num_cpu": cpu_count(),
        "ram_bytes": total_memory_bytes(),
        "llc_bytes": llc,
        "llc_source": llc_source,
        "blas": blas_summary(),
        "blas_threads": blas_threads(),
        "python": platform.python_version(),
    }


# ---- the GPU -------------------------------------------------------------------------------


def import_torch():
    """torch, or BackendUnavailable saying why not; asking costs no import when torch is not installed."""
    if importlib.util.find_spec("torch") is None:
        raise BackendUnavailable("torch is not installed")
    try:
        import torch
    except ImportError as exc:
        raise BackendUnavailable(f"torch does not import: {exc}") from None
    return torch


#: nvidia-smi fields read for clocks and state, in order.
SMI_FIELDS = (
    "name",
    "driver_version",
    "clocks.sm",
    "clocks.mem",
    "clocks.max.sm",
    "clocks.max.mem",
    "temperature.gpu",
    "power.draw",
    "pstate",
)


def _number(text: str) -> float | str | None:
    text = text.strip()
    if not text or text.startswith("[") or text in ("N/A", "Not Supported"):
        return None
    try:
        return float(text)
    except ValueError:
        return text


def parse_smi(text: str) -> list[dict[str, object]]:
    """Rows of ``nvidia-smi --query-gpu=<SMI_FIELDS> --format=csv,noheader,nounits``."""
    rows = []
    for line in text.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != len(SMI_FIELDS):
            continue
        row = {}
        for key, value in zip(SMI_FIELDS, parts, strict=True):
            row[key] = value if key in ("name", "driver_version", "pstate") else _number(value)
        rows.append(row)
    return rows


def gpu_clocks(index: int = 0, smi: str | None = None) -> dict[str, object] | None:
    """Clocks (MHz), temperature, power and P-state now, from nvidia-smi; None without it."""
    exe = smi or shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits", f"--id={index}"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    rows = parse_smi(out.stdout) if out.returncode == 0 else []
    return rows[0] if rows else None


def gpu_facts(index: int = 0) -> dict[str, object] | None:
    """The CUDA device as a JSON-ready dict, or None when torch or CUDA is absent.

    Keys: name, gpu_capability, gpu_memory_bytes, gpu_sm_count, gpu_l2_bytes, torch, cuda,
    driver and clocks (see :func:`gpu_clocks`; None without nvidia-smi). ``name`` is what
    :func:`roofline.suite.machine_file.machine_keys` files as the machine's ``gpu`` key. None, without
    importing torch (2 s of every ``roofline bench`` here), where no NVIDIA device node is (:func:`gpu_present`).
    """
    if not gpu_present():
        return None
    try:
        torch = import_torch()
    except BackendUnavailable:
        return None
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(index)
    clocks = gpu_clocks(index)
    return {
        "name": props.name,
        "gpu_capability": f"{props.major}.{props.minor}",
        "gpu_memory_bytes": int(props.total_memory),
        "gpu_sm_count": int(props.multi_processor_count),
        "gpu_l2_bytes": int(getattr(props, "L2_cache_size", 0)) or None,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "driver": clocks.get("driver_version") if clocks else None,
        "clocks": clocks,
    }


def gpu_present() -> bool:
    """Whether an NVIDIA driver shows a device node: a cheap test, no torch import.

    It only trims the CUDA class's default parameters; whether CUDA works is for
    :func:`roofline.measure.backends.available` to say.
    """
    gpus = Path("/proc/driver/nvidia/gpus")
    return Path("/dev/nvidiactl").exists() or (gpus.is_dir() and any(gpus.iterdir()))
