"""The run's roofs, left for the setup_caches that come after it in the same asv run.

asv runs each setup_cache in a process of its own and removes the run's result (``cache.pickle``) once
its last reader is done, before ``models.ModelDecode``'s setup_cache starts. So :func:`leave` writes the
roofs a bound divides by (the DRAM roof and the compute roofs, the figures asv records for them and the
report prints) to a small file in the weight pools' folder, named for the asv process that started both
setup_caches (their parent: its pid and start time, so a later asv run never reads it); :func:`read` gives
them back as the :class:`~roofline.model.hardware.Hardware` of that bound. A model's bound then divides by
the roofs measured in the run's rounds, not by figures of its own taken at another moment. Two benchmarks
that read one measurement without a setup_cache (the overhead roof's two tracks) share it the same way.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..host import total_memory_bytes
from ..measure.pools import cache_dir
from ..model.hardware import Hardware

PREFIX = "asv-run-"


def asv_run_key(pid: int | None = None, proc: Path = Path("/proc")) -> str | None:
    """``<pid>-<start time>`` of this process's parent (the asv run, or asv's forkserver), or None where the
    OS does not say (no ``/proc``)."""
    pid = os.getppid() if pid is None else pid
    try:
        stat = (proc / str(pid) / "stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # state is field 3; the start time field 22
    return f"{pid}-{fields[19]}" if len(fields) > 19 else None


def _path(name: str, key: str, folder: Path | None) -> Path:
    return (folder or cache_dir()) / f"{PREFIX}{key}-{name}.json"


def leave_json(name: str, data: object, folder: Path | None = None, key: str | None = None) -> Path | None:
    """Write ``data`` as ``name`` for this asv run's later processes; the files of asv runs that have ended go.
    None where this asv run has no key."""
    key = key or asv_run_key()
    if key is None:
        return None
    path = _path(name, key, folder)
    for old in path.parent.glob(f"{PREFIX}*.json"):
        pid = old.name[len(PREFIX) :].split("-")[0]
        if not Path(f"/proc/{pid}").exists():
            old.unlink(missing_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)
    return path


def read_json(name: str, folder: Path | None = None, key: str | None = None) -> object | None:
    """What this asv run left as ``name``; None where it left nothing readable."""
    key = key or asv_run_key()
    if key is None:
        return None
    try:
        return json.loads(_path(name, key, folder).read_text())
    except (OSError, ValueError):
        return None


def leave(
    bandwidth_gbps: float, peak_gflops: dict[str, float], folder: Path | None = None, key: str | None = None
) -> Path | None:
    """Leave the run's DRAM roof (GB/s) and compute roofs (GFLOP/s per dtype name) for this asv run."""
    return leave_json("roofs", {"bandwidth_gbps": bandwidth_gbps, "peak_gflops": peak_gflops}, folder, key)


def read(dtype: str, folder: Path | None = None, key: str | None = None) -> Hardware | None:
    """The roofs this asv run's run left, as the Hardware of a bound in ``dtype``; None where it left none,
    or none for ``dtype``."""
    left = read_json("roofs", folder, key)
    try:
        bandwidth, peak = float(left["bandwidth_gbps"]), float(left["peak_gflops"][dtype])
    except (ValueError, KeyError, TypeError):
        return None
    return Hardware(
        "this machine",
        {dtype: peak * 1e9},
        bandwidth * 1e9,
        source=f"the run's roofs in this asv run: the DRAM roof and the {dtype} compute roof",
        memory_bytes=total_memory_bytes(),
    )
