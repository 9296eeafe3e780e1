"""asv machine keys: asv's own plus roofline's, merged into asv's machine file without asking.

asv keeps ``machine, os, arch, cpu, num_cpu, ram`` per machine in ``~/.asv-machine.json`` and
copies every key of the entry into ``results/<machine>/machine.json`` and each result file,
where ``asv publish`` turns keys whose values differ between runs into selectors. roofline adds
``blas``, ``blas_threads``, ``gpu``, ``device`` (the catalogue device the machine matches, or
"none"), ``llc_bytes`` and ``llc_source`` (the LLC the pools are sized from), and the measured
ceilings ``measured_bandwidth`` and ``measured_peak_fp32``. Values are strings, as asv writes its own.

Measured figures are kept from an existing entry unless a remeasure is asked for: a key whose
value changes splits the machine's history into separate lines in asv's graphs.
"""

from __future__ import annotations

import json
import os
import platform
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from ..errors import BadInput
from ..files import atomic_write
from ..measure.ceilings import Ceilings
from ..model.catalogue import match_host, parse_figure
from ..model.dtypes import SUITE
from ..units import si

#: roofline's measured keys, with the unit of the value each holds.
MEASURED_KEYS = {"measured_bandwidth": "B/s", "measured_peak_fp32": "FLOP/s"}
NOT_MEASURED = "not measured"
#: asv's format version of the machine file.
MACHINE_FILE_VERSION = 1

_NAME = re.compile(r"^[A-Za-z0-9_+][A-Za-z0-9._+-]{0,99}$")


def machine_file_path() -> Path:
    """Where asv reads machine entries: ``~/.asv-machine.json``."""
    return Path(os.path.expanduser("~/.asv-machine.json"))


def check_machine_name(name: str | None) -> str:
    """A name usable as a results folder: letters, digits, ``._+-``, not starting with a dot."""
    name = (name if name is not None else platform.node()).strip()
    if not name:
        raise BadInput("cannot tell this machine's name; give one with --machine NAME")
    if not _NAME.match(name):
        raise BadInput(f"machine name {name!r} must be letters, digits and ._+- (it becomes a results folder)")
    return name


def measured_keys(ceilings: Ceilings | None) -> dict[str, str]:
    """The measured-ceiling keys from :func:`roofline.measure.ceilings.measure_ceilings`, or 'not measured'."""
    if ceilings is None:
        return {key: NOT_MEASURED for key in MEASURED_KEYS}
    peak = ceilings.hardware.peak_flops.get(SUITE.name)
    return {
        "measured_bandwidth": si(ceilings.hardware.bandwidth, "B/s"),
        "measured_peak_fp32": si(peak, "FLOP/s") if peak else NOT_MEASURED,
    }


def read_measured(info: Mapping[str, object]) -> dict[str, float | None]:
    """Measured keys of a machine entry or machine.json back as numbers (B/s, FLOP/s); None if absent."""
    out: dict[str, float | None] = {}
    for key, unit in MEASURED_KEYS.items():
        try:
            out[key] = parse_figure(str(info.get(key, "")), unit, key)
        except BadInput:
            out[key] = None
    return out


def _blas(host: Mapping[str, object]) -> str:
    from ..host import blas_info

    libs = blas_info()
    if not libs:
        return str(host.get("blas") or "none")
    return "; ".join(
        f"{lib['internal_api']} {lib['version']}" + (f" ({lib['architecture']})" if lib.get("architecture") else "")
        for lib in libs
    )


def machine_keys(
    name: str,
    host: Mapping[str, object],
    gpu: Mapping[str, object] | None = None,
    ceilings: Ceilings | None = None,
) -> dict[str, str]:
    """Every key of a machine entry, as strings.

    ``host`` is :func:`roofline.host.host_facts`; ``gpu`` a dict with at least ``name``
    (issue 5's ``roofline.measure.cuda_timing.gpu_facts()``) or None; ``ceilings`` the measured ceilings or None
    ('not measured').
    """
    gpu_name = str(gpu.get("name")) if gpu and gpu.get("name") else "none"
    device = match_host({"cpu": host.get("cpu"), "gpu": gpu_name})
    keys = {
        "machine": check_machine_name(name),
        "os": str(host.get("os", "")),
        "arch": str(host.get("arch", "")),
        "cpu": str(host.get("cpu", "")),
        "num_cpu": str(host.get("num_cpu", "")),
        "ram": str(host.get("ram_bytes") or ""),
        "blas": _blas(host),
        "blas_threads": str(host.get("blas_threads") or "unknown"),
        "gpu": gpu_name,
        "device": device.name if device else "none",
        "llc_bytes": str(host.get("llc_bytes") or ""),
        "llc_source": str(host.get("llc_source") or ""),
    }
    keys.update(measured_keys(ceilings))
    return keys


def read_machine_file(path: Path) -> dict[str, object]:
    """The machine file's entries (without its version), {} if there is none; BadInput if unusable."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"cannot read {path}: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path} is not valid JSON ({exc}); fix or move it, nothing was written") from None
    if not isinstance(data, dict):
        raise BadInput(f"{path} is not a JSON object; fix or move it, nothing was written")
    version = data.pop("version", MACHINE_FILE_VERSION)
    if version != MACHINE_FILE_VERSION:
        raise BadInput(f"{path} has format version {version!r}, expected {MACHINE_FILE_VERSION}; nothing was written")
    return data


def has_measured(entry: Mapping[str, object]) -> bool:
    return all(v is not None for v in read_measured(entry).values())


def merge_entry(old: Mapping[str, object], new: Mapping[str, str], keep_measured: bool) -> dict[str, object]:
    """``old`` updated with ``new``; other keys of ``old`` survive; with ``keep_measured``, so do its measured ones."""
    entry = {**old, **new}
    if keep_measured:
        for key in MEASURED_KEYS:
            if key in old:
                entry[key] = old[key]
    return entry


def write_machine_file(path: Path, entries: Mapping[str, object]) -> None:
    """Write all ``entries`` (every machine's) atomically, in asv's layout (sorted, indented, versioned)."""
    data = {**entries, "version": MACHINE_FILE_VERSION}

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=4, sort_keys=True) + "\n")
    except OSError as exc:
        raise BadInput(f"cannot write the machine file {path}: {exc.strerror or exc}") from None


def register(
    name: str | None = None,
    path: Path | None = None,
    measure: bool = True,
    remeasure: bool = False,
    write: bool = True,
    gpu: Mapping[str, object] | None = None,
    say: Callable[[str], None] = lambda _line: None,
) -> tuple[str, dict[str, object], bool]:
    """Build this machine's entry and merge it into asv's machine file.

    Measures the ceilings (~10 s) unless ``measure`` is False or the entry already holds measured
    figures (kept, so asv's selectors stay stable) and ``remeasure`` is False. Returns
    (name, entry, kept). A bad machine file stops everything before anything is measured; ``say``
    hears it before the ceilings are measured.
    """
    from ..host import host_facts

    path = path or machine_file_path()
    name = check_machine_name(name)
    entries = read_machine_file(path)
    old = entries.get(name) if isinstance(entries.get(name), dict) else {}
    keep = bool(old) and has_measured(old) and not remeasure
    ceilings = None
    if measure and not keep:
        from ..measure.ceilings import measure_ceilings

        say("measuring memory bandwidth and GEMM peak (--no-measure skips) ...")
        ceilings = measure_ceilings()
    keys = machine_keys(name, host_facts(), gpu=gpu, ceilings=ceilings)
    entry = merge_entry(old, keys, keep_measured=keep or (not measure and bool(old)))
    if write:
        write_machine_file(path, {**entries, name: entry})
    return name, entry, keep


def gpu_keys(facts: dict[str, object] | None) -> dict[str, str]:
    """The GPU's stable facts as flat string keys for an asv machine entry.

    Beside :func:`machine_keys`, which files the GPU's name as ``gpu``. Clocks
    now (which change run to run) are left out: asv splits every graph by a changing key.
    """
    if not facts:
        return {}
    clocks = facts.get("clocks") or {}
    keys = {
        "gpu_memory": f"{int(facts['gpu_memory_bytes']) / 2**30:.0f} GiB" if facts.get("gpu_memory_bytes") else None,
        "gpu_sm_count": facts.get("gpu_sm_count"),
        "gpu_capability": facts.get("gpu_capability"),
        "gpu_driver": facts.get("driver"),
        "cuda": facts.get("cuda"),
        "torch": facts.get("torch"),
        "gpu_max_sm_clock_mhz": clocks.get("clocks.max.sm") if isinstance(clocks, dict) else None,
    }
    return {k: (str(int(v)) if isinstance(v, float) and v.is_integer() else str(v)) for k, v in keys.items() if v}
