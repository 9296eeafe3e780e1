"""asv machine keys: asv's own plus roofline's stable facts, merged into asv's machine file without asking.

asv keeps ``machine, os, arch, cpu, num_cpu, ram`` per machine in ``~/.asv-machine.json`` and
copies every key of the entry into ``results/<machine>/machine.json`` and into each result file,
where ``asv publish`` files a graph under every key's value: a key whose value changes splits the
machine's history into separate lines. So only stable facts are keys: roofline adds ``blas``,
``blas_threads``, ``gpu`` and ``llc_bytes`` (the last-level cache as the OS reports it; a
``ROOFLINE_LLC_BYTES`` override is a setting of a run, not a fact of the machine). Values are
strings, as asv writes its own. Measured figures live in the results (the ``ceilings.*``
benchmarks of every run), never in keys.

Earlier versions also wrote :data:`RETIRED_KEYS`. An entry that has them keeps them (so its history
does not split) until :func:`plan_migration` / :func:`apply_migration` (``roofline machine
--migrate RESULTS``) take them out of the machine file and of every recorded result at once,
after a backup.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from ..files import atomic_write
from ..model.catalogue import match_host, parse_figure
from ..model.microarch import clock_of, core_of
from . import asv_files
from .asv_files import MACHINE_FILE_VERSION, AsvFile, MachineFolder, ResultsFolder, identity

#: asv's own keys (``asv machine``).
ASV_KEYS = ("machine", "os", "arch", "cpu", "num_cpu", "ram")
#: roofline's keys: stable facts of the machine.
STABLE_KEYS = ("blas", "blas_threads", "gpu", "llc_bytes", "cpu_core", "cpu_clock")
#: Measured figures that earlier versions kept as keys, with their units (read back from old results only).
MEASURED_KEYS = {"measured_bandwidth": "B/s", "measured_peak_fp32": "FLOP/s"}
#: Keys earlier versions wrote that are no stable facts: the measured figures (a run under load wrote
#: 97 GFLOP/s where quiet runs measure 200), where the LLC figure came from (an override included),
#: and the catalogue device matched (a fact of roofline's catalogue, which grows: compare matches it
#: from ``cpu`` and ``gpu`` when it reads). A ``device`` set by hand (not the automatic match) is kept.
RETIRED_KEYS = (*MEASURED_KEYS, "llc_source", "device")
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


def read_measured(info: Mapping[str, object]) -> dict[str, float | None]:
    """The measured keys of an old entry or result (B/s, FLOP/s) back as numbers; None where absent."""
    out: dict[str, float | None] = {}
    for key, unit in MEASURED_KEYS.items():
        try:
            out[key] = parse_figure(str(info.get(key, "")), unit, key)
        except BadInput:
            out[key] = None
    return out


def retired_keys(entry: Mapping[str, object]) -> list[str]:
    """The :data:`RETIRED_KEYS` in ``entry``; ``device`` only where it is "none" or the automatic match."""
    found = [k for k in RETIRED_KEYS if k in entry and k != "device"]
    device = entry.get("device")
    if device is not None:
        matched = match_host({"cpu": entry.get("cpu"), "gpu": entry.get("gpu")})
        if str(device).strip().lower() in ("", "none") or (matched is not None and device == matched.name):
            found.append("device")
    return found


def _blas(host: Mapping[str, object]) -> str:
    from ..host import blas_info

    libs = blas_info()
    if not libs:
        return str(host.get("blas") or "none")
    return "; ".join(
        f"{lib['internal_api']} {lib['version']}" + (f" ({lib['architecture']})" if lib.get("architecture") else "")
        for lib in libs
    )


def machine_keys(name: str, host: Mapping[str, object], gpu: Mapping[str, object] | None = None) -> dict[str, str]:
    """Every key of a machine entry, as strings: asv's and :data:`STABLE_KEYS`.

    ``host`` is :func:`roofline.host.host_facts` (``llc_bytes`` the OS's figure: :func:`this_host`);
    ``gpu`` a dict with at least ``name`` (:func:`roofline.host.gpu_facts`) or None.
    """
    return {
        "machine": check_machine_name(name),
        "os": str(host.get("os", "")),
        "arch": str(host.get("arch", "")),
        "cpu": str(host.get("cpu", "")),
        "num_cpu": str(host.get("num_cpu", "")),
        "ram": str(host.get("ram_bytes") or ""),
        "blas": _blas(host),
        "blas_threads": str(host.get("blas_threads") or "unknown"),
        "gpu": str(gpu.get("name")) if gpu and gpu.get("name") else "none",
        "llc_bytes": str(host.get("llc_bytes") or ""),
        "cpu_core": str(host.get("cpu_core") or ""),
        "cpu_clock": str(host.get("cpu_clock") or ""),
    }


def cpu_facts(cpuinfo: str | None = None) -> dict[str, str]:
    """This CPU's core and clock as the machine keys hold them ('' where not known): ``cpu_core`` from its family and
    model numbers, ``cpu_clock`` the TSC's or else the nominal one ('2.10 GHz (TSC)'), from ``cpuinfo`` (Linux's
    /proc/cpuinfo where None)."""
    from .. import host

    text = cpuinfo if cpuinfo is not None else host._cpuinfo(None)
    clock = clock_of(text)
    return {
        "cpu_core": core_of(host.cpu_signature(text), host.cpu_flags(text)) or "",
        "cpu_clock": clock.key if clock is not None else "",
    }


def this_host() -> dict[str, object]:
    """:func:`roofline.host.host_facts` with the LLC the OS reports, whatever ``ROOFLINE_LLC_BYTES`` says, and the
    CPU's core and clock (:func:`cpu_facts`)."""
    from ..host import host_facts, llc_bytes

    return {**host_facts(), "llc_bytes": llc_bytes(use_override=False)[0], **cpu_facts()}


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


def write_machine_file(path: Path, entries: Mapping[str, object]) -> None:
    """Write all ``entries`` (every machine's) atomically, in asv's layout (sorted, indented, versioned)."""
    data = {**entries, "version": MACHINE_FILE_VERSION}

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data, indent=4, sort_keys=True) + "\n")
    except OSError as exc:
        raise BadInput(f"cannot write the machine file {path}: {exc.strerror or exc}") from None


def asv_machine_name(name: str | None = None, path: Path | None = None) -> str:
    """The machine asv's own commands file results under: ``name``; else the machine file's only entry
    (asv 0.6.6's rule when it holds one, whatever its name); else :func:`default_name` (where asv would ask for
    the host's entry, roofline names the machine by what it is and tells asv so)."""
    if name is None:
        entries = read_machine_file(path or machine_file_path())
        if len(entries) == 1:
            name = next(iter(entries))
    return check_machine_name(name if name is not None else default_name())


_NOISE = re.compile(r"\(r\)|\(tm\)|\bcpu\b|\bprocessor\b|@.*$|\b\d+-core\b|\bwith .*$|\bamd\b|\bintel\b|\bcore\b")


def gallery_name(
    cpu: str,
    cores: int | None,
    llc_bytes: int | None,
    llc_level: int | None = 3,
    signature: Mapping[str, object] | None = None,
    flags: frozenset[str] = frozenset(),
) -> str:
    """A results folder name that says what the machine is: 'epyc-zen1-2core-8mib-l3' for an AMD EPYC
    (family 23, model 1) VM with 2 cores and an 8 MiB L3; 'xeon-emerald-rapids-2core-300mib-l3' for an
    'Intel(R) Xeon(R) Processor' of family 6, model 207."""
    words = re.sub(r"[^a-z0-9+]+", "-", _NOISE.sub(" ", cpu.lower())).strip("-") or "cpu"
    core = core_of(signature or {}, flags)
    parts = [words] + ([core] if core and f"-{core}-" not in f"-{words}-" else [])
    if cores:
        parts.append(f"{cores}core")
    if llc_bytes:
        size = f"{llc_bytes / 2**20:.0f}mib" if llc_bytes >= 2**20 else f"{llc_bytes // 2**10}kib"
        parts.append(f"{size}-l{llc_level}" if llc_level else f"{size}-llc")
    return "-".join(parts)


def this_machine() -> str:
    """:func:`gallery_name` of the machine this runs on."""
    from .. import host

    levels = host.cache_topology()
    level = max((c.level for c in levels), default=None)
    llc = host.llc_bytes(use_override=False)[0] if levels else None
    return gallery_name(host.cpu_model(), host.cpu_count(), llc, level, host.cpu_signature(), host.cpu_flags())


def default_name() -> str:
    """The name roofline files this machine's results under unless told: what it is (CPU, core, cores, LLC:
    :func:`this_machine`), never the host name, which says nothing (asv's default, 'vm')."""
    return this_machine()


def earlier_names(results: ResultsFolder, entry: Mapping[str, object]) -> list[str]:
    """The machines in ``results`` other than ``entry``'s recorded on the same hardware (its
    :data:`~roofline.suite.asv_files.IDENTITY_KEYS`): e.g. the host name this machine's runs were filed under
    before. Unreadable machine.json files are skipped."""
    found = []
    for name, folder in results.machines.items():
        info = folder.info
        same = info is not None and isinstance(info.json, dict) and identity(info.json) == identity(entry)
        if same and name != entry.get("machine"):
            found.append(name)
    return found


def register(
    name: str | None = None,
    path: Path | None = None,
    write: bool = True,
    gpu: Mapping[str, object] | None = None,
) -> tuple[str, dict[str, object], list[str]]:
    """Build this machine's entry, named ``name`` (default :func:`default_name`: what the machine is), and merge
    it into asv's machine file; nothing is measured.

    Keys of the old entry that roofline does not write survive, retired ones included: taking those
    out would split the machine's recorded history, which only a migration may do (results and
    machine file together). Returns (name, entry, the retired keys the entry still holds). A bad
    machine file stops everything (BadInput) and is left as it was.
    """
    path = path or machine_file_path()
    name = check_machine_name(name if name is not None else default_name())
    entries = read_machine_file(path)
    old = entries.get(name) if isinstance(entries.get(name), dict) else {}
    entry = {**old, **machine_keys(name, this_host(), gpu=gpu)}
    if write:
        write_machine_file(path, {**entries, name: entry})
    return name, entry, retired_keys(entry)


def keys_results_lack(folder: MachineFolder, entry: Mapping[str, object]) -> list[str]:
    """The stable keys ``entry`` holds that a result file in ``folder`` (as read) lacks: asv graphs such results
    apart from the new ones until a migration fills the keys in (unreadable files are skipped)."""
    want = [k for k in STABLE_KEYS if str(entry.get(k, "")).strip()]
    lacking: set[str] = set()
    for file in folder.files:
        if isinstance(file.json, dict):
            params = file.json.get("params") or {}
            lacking |= {k for k in want if k not in params}
    return [k for k in want if k in lacking]


# ---- migration: the retired keys out of a machine file and its recorded results, history kept whole ----


@dataclass
class Migration:
    """What a migration rewrites (planned, or done): every file with its old and new text."""

    results: Path
    machine_file: Path | None
    rewrites: dict[Path, tuple[str, str]] = field(default_factory=dict)
    #: "<machine>" or "machine file <name>" → the keys taken out, with every value they had
    removed: dict[str, dict[str, list[object]]] = field(default_factory=dict)
    #: "<machine>" → stable keys filled into result files that lacked them
    filled: dict[str, dict[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    backup: Path | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "results": str(self.results),
            "machine_file": str(self.machine_file) if self.machine_file else None,
            "files": sorted(str(p) for p in self.rewrites),
            "removed": self.removed,
            "filled": self.filled,
            "notes": self.notes,
            "backup": str(self.backup) if self.backup else None,
        }


def _migrated(entry: Mapping[str, object], fill: Mapping[str, str]) -> tuple[dict[str, object], dict[str, object]]:
    """``entry`` less its retired keys, plus the stable keys of ``fill`` it lacks; and what was taken out."""
    gone = {k: entry[k] for k in retired_keys(entry)}
    out = {k: v for k, v in entry.items() if k not in gone}
    for key in (*ASV_KEYS, *STABLE_KEYS):
        if key not in out and key in fill:
            out[key] = fill[key]
    return out, gone


def plan_migration(
    results: Path, machine_file: Path | None = None, host_keys: Callable[[str], Mapping[str, str]] | None = None
) -> Migration:
    """Plan taking :data:`RETIRED_KEYS` out of ``machine_file``'s entries and of every machine under ``results``.

    Every result file of a machine ends up with the same keys as its machine.json, so asv files its
    runs under one graph. A stable key a machine's results lack (``llc_bytes`` in results older than
    the key) is filled from ``host_keys(name)`` (this host's keys for an entry of the machine file)
    only where the identity keys (arch, cpu, cores, memory) agree. Reads only; BadInput when a file
    cannot be read (nothing is migrated then).
    """
    results = Path(results)
    if not results.is_dir():
        raise BadInput(f"results directory {results} does not exist (give asv's results_dir, e.g. .asv/results)")
    plan = Migration(results=results, machine_file=machine_file)
    entries: dict[str, object] = {}
    if machine_file is not None and machine_file.exists():
        entries = _plan_machine_file(plan, machine_file, host_keys)
    for folder in asv_files.load(results).machines.values():
        local = entries.get(folder.name)
        _plan_machine(plan, folder, {k: str(v) for k, v in local.items()} if isinstance(local, dict) else {})
    return plan


def _plan_machine_file(
    plan: Migration, machine_file: Path, host_keys: Callable[[str], Mapping[str, str]] | None
) -> dict[str, object]:
    """Plan the machine file's rewrite; its entries as they will read."""
    entries = read_machine_file(machine_file)
    new_entries = dict(entries)
    for name, entry in entries.items():
        if not isinstance(entry, dict):
            continue
        mine = dict(host_keys(name)) if host_keys else {}
        fill = mine if mine and identity(mine) == identity(entry) else {}
        new_entries[name], gone = _migrated(entry, fill)
        if gone:
            plan.removed[f"machine file {name}"] = {k: [v] for k, v in gone.items()}
    if new_entries != entries:
        old_text = machine_file.read_text(encoding="utf-8")
        plan.rewrites[machine_file] = (old_text, _machine_file_text(new_entries))
    return new_entries


def _plan_machine(plan: Migration, folder: MachineFolder, local: dict[str, str]) -> None:
    """Plan one machine's folder: its machine.json, then each result file to the same keys (none without a
    machine.json)."""
    if folder.info is None:
        return
    info = folder.info.object("migrated")
    version = info.pop("version", MACHINE_FILE_VERSION)
    fill = local if local and identity(local) == identity(info) else {}
    target, gone = _migrated(info, fill)
    removed: dict[str, list[object]] = {k: [v] for k, v in gone.items()}
    if target != info:
        plan.rewrites[folder.info.path] = (folder.info.text, asv_files.machine_text({**target, "version": version}))
    filled: dict[str, str] = {}
    for file in folder.files:
        _plan_result(plan, file, target, removed, filled)
    if removed:
        plan.removed[folder.name] = removed
    if filled:
        plan.filled[folder.name] = filled


def _plan_result(
    plan: Migration, file: AsvFile, target: dict[str, object], removed: dict[str, list[object]], filled: dict
) -> None:
    """Plan one result file: its retired keys out (noted in ``removed``), the keys of ``target`` (the machine.json
    as it will read) it lacks in where it was recorded on that hardware (noted in ``filled``)."""
    data, path = file.object("migrated"), file.path
    params = data.get("params")
    if not isinstance(params, dict):
        raise BadInput(f"{path} has no params (not an asv 0.6 result file?): nothing was migrated")
    new_params = {k: v for k, v in params.items() if k not in retired_keys(params)}
    for key in params.keys() - new_params.keys():
        if params[key] not in removed.setdefault(key, []):
            removed[key].append(params[key])
    if identity(params) == identity(target):
        for key in (*ASV_KEYS, *STABLE_KEYS):
            if key not in new_params and key in target:
                new_params[key] = target[key]
                filled[key] = str(target[key])
    else:
        plan.notes.append(f"{path}: recorded on other hardware than machine.json says; no key filled in")
    differ = [k for k in STABLE_KEYS if k in new_params and k in target and new_params[k] != target[k]]
    if differ:
        plan.notes.append(
            f"{path}: {', '.join(differ)} differ from machine.json: asv keeps those runs apart, as it should"
        )
    if new_params != params:
        plan.rewrites[path] = (file.text, asv_files.result_text({**data, "params": new_params}))


def _machine_file_text(entries: Mapping[str, object]) -> str:
    return json.dumps({**entries, "version": MACHINE_FILE_VERSION}, indent=4, sort_keys=True) + "\n"


def apply_migration(plan: Migration) -> Migration:
    """Carry out ``plan``: first copy every file it rewrites into a new backup folder beside the results
    (``<results>.pre-migration-<UTC time>/``, outside asv's reach), then replace each file atomically.

    A file changed since the plan was made is refused (BadInput) before anything is written.
    """
    if not plan.rewrites:
        return plan
    for path, (old, _) in plan.rewrites.items():
        if path.read_bytes().decode("utf-8", errors="replace") != old:
            raise BadInput(f"{path} changed while the migration was planned; nothing was migrated, run it again")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    backup = plan.results.parent / f"{plan.results.name}.pre-migration-{stamp}"
    written = 0
    try:
        backup.mkdir()
        for path in plan.rewrites:
            rel = Path("machine-file") / path.name if path == plan.machine_file else path.relative_to(plan.results)
            (backup / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, backup / rel)
        for path, (_, new) in plan.rewrites.items():
            asv_files.write(path, new)
            written += 1
    except FileExistsError:
        raise BadInput(f"{backup} exists: another migration is under way; nothing was migrated") from None
    except OSError as exc:
        done = f"{written} of {len(plan.rewrites)} file(s) rewritten, " if written else "nothing rewritten; "
        raise BadInput(f"migration stopped ({exc.strerror or exc}): {done}every original is in {backup}") from None
    plan.backup = backup
    return plan


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
