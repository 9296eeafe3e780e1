"""``roofline merge SRC… DEST``: gather sharded asv results directories into one, safely.

asv has no merge of sharded results (asv issue #1362): copying ``<machine>/`` folders by hand can
overwrite a machine's history, or mix suites so that ``asv publish`` silently shows only part of
them. :func:`merge` does it with these rules:

- every SRC is an asv results directory, read with :func:`roofline.suite.results.read_results`, with a
  readable ``benchmarks.json``;
- the suites must be compatible: a benchmark named in several inputs (DEST included) has the same
  type, unit and parameter names in all of them: the same quantity. Parameter *values* may differ
  (sizes come from environment variables, the CUDA grid from the GPU): the merged ``benchmarks.json``
  lists their union, axis by axis, and asv publish matches each result to it value by value.
  Versions may differ too (asv's version is a hash of the benchmark's code, which changes with
  edits that keep the quantity): the merged file keeps the definition of the version recorded
  latest, every result file is kept as it is, asv publish shows the results of that version and
  ``roofline compare`` all of them, flagging the others (and refusing to mix those whose meaning
  changed: :data:`roofline.suite.names.RETIRED_MEANINGS`). ``update_suite`` lets the sources'
  definitions replace DEST's where type, unit or parameter names differ (DEST's results of the
  older definition then read as n/a, as after any suite change in asv);
- each ``<machine>/`` folder is copied: its ``machine.json`` and the result files the reader
  accepted (a file it skipped is named in a warning and left out);
- only a real conflict is refused (unless ``force``: then the last SRC wins, and each DEST file it
  replaces is kept in ``<DEST>.displaced-<UTC time>/``): the same machine, commit, environment
  and benchmark with different values or versions, or one machine name with two identities (arch,
  cpu, cores, memory) in its ``machine.json``. Two files of one run that hold different benchmarks
  are joined into one; a ``machine.json`` that differs in other keys (the kernel's version) is
  taken from the last input that has it. Whatever DEST held in place of a file is kept in the
  displaced folder;
- sources are only read. DEST is built in a temporary folder beside it, read back and checked,
  then put in place with one rename (Linux ``renameat2(RENAME_EXCHANGE)``; elsewhere two renames):
  a crash leaves DEST as it was. Everything already in DEST is kept. A lock file beside DEST
  (``.<name>.merge-lock``) serialises merges that finish together, such as ReFrame jobs.
"""

from __future__ import annotations

import errno
import filecmp
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from . import asv_files
from .asv_files import BENCHMARKS_FILE, IDENTITY_KEYS, MACHINE_FILE, AsvFile
from .results import Results, latest_by_version, parse_param, read_results

#: Keys of a benchmarks.json entry that must agree between inputs; ``params`` may widen, ``version`` differ.
MUST_AGREE = ("type", "unit", "param_names")


@dataclass
class MergePlan:
    """What a merge does (or did): files, the merged suite, warnings. Paths of files are DEST-relative."""

    dest: Path
    sources: list[Path]
    #: DEST-relative path → the source file it is copied from, or the bytes of two files of one run joined
    files: dict[str, Path | bytes] = field(default_factory=dict)
    #: DEST files that the merge replaces; kept in :attr:`displaced_to`
    displaced: list[str] = field(default_factory=list)
    #: source files already in DEST byte for byte
    unchanged: int = 0
    benchmarks: dict[str, dict] = field(default_factory=dict)
    benchmarks_changed: bool = False
    #: benchmarks whose parameter values were widened to the union of the inputs'
    widened: list[str] = field(default_factory=list)
    #: benchmarks whose DEST definition the sources replaced (update_suite)
    redefined: list[str] = field(default_factory=list)
    #: benchmarks recorded under several versions in the inputs (the latest version's definition kept)
    versions_mixed: list[str] = field(default_factory=list)
    #: machine → the commits the sources hold for it
    machines: dict[str, set[str]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    written: bool = False
    displaced_to: Path | None = None

    @property
    def changed(self) -> bool:
        return bool(self.files) or self.benchmarks_changed

    def summary(self) -> list[str]:
        """Lines for people: what was (or would be) merged."""
        verb = "merged" if self.written or not self.changed else "would merge"
        lines = [
            f"{verb} {len(self.sources)} shard(s) into {self.dest}: {len(self.machines)} machine(s), "
            f"{len(self.files)} new or replaced file(s), {self.unchanged} already there"
        ]
        for name, commits in sorted(self.machines.items()):
            new = sum(1 for rel in self.files if rel.split("/", 1)[0] == name)
            shown = ", ".join(sorted(c[:8] for c in commits))
            lines.append(f"  {name}: {len(commits)} commit(s) ({shown}), {new} new or replaced file(s)")
        suite = f"{BENCHMARKS_FILE}: {len(self.benchmarks)} benchmarks"
        if self.widened:
            suite += f"; parameter values widened to the union for {', '.join(sorted(self.widened))}"
        if self.redefined:
            suite += f"; definitions taken from the sources for {', '.join(sorted(self.redefined))}"
        if self.versions_mixed:
            suite += (
                f"; {len(self.versions_mixed)} benchmark(s) recorded under several versions, the latest "
                "definition kept (asv publish shows its results; roofline compare shows all, flagged)"
            )
        lines.append(suite if self.benchmarks_changed else f"{suite}, unchanged")
        if self.displaced_to is not None:
            lines.append(f"replaced DEST files kept in {self.displaced_to}")
        if not self.changed:
            lines.append("nothing new: DEST left untouched")
        return lines


# ---- checks ----------------------------------------------------------------------------------


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def check_paths(sources: Sequence[str | Path], dest: str | Path) -> tuple[list[Path], Path]:
    """Sources that exist and are folders, DEST neither one of them nor inside or around one."""
    if not sources:
        raise BadInput("merge needs at least one SRC and a DEST (roofline merge SRC... DEST)")
    dest_real = _real(Path(dest))
    out: list[Path] = []
    for src in map(Path, sources):
        if not src.exists():
            raise BadInput(f"shard {src} does not exist")
        if not src.is_dir():
            raise BadInput(f"shard {src} is not a directory (give asv results directories)")
        real = _real(src)
        if real == dest_real:
            raise BadInput(f"DEST {dest} is the shard {src} itself")
        if dest_real.is_relative_to(real):
            raise BadInput(f"DEST {dest} is inside the shard {src}: merge never writes into a source")
        if real.is_relative_to(dest_real):
            raise BadInput(f"shard {src} is inside DEST {dest}: asv would read it as part of DEST")
        if real not in map(_real, out):
            out.append(src)
    if dest_real.exists() and not dest_real.is_dir():
        raise BadInput(f"DEST {dest} exists and is not a directory")
    if not dest_real.parent.is_dir():
        raise BadInput(f"DEST {dest}: folder {dest_real.parent} does not exist")
    interrupted = sorted(dest_real.parent.glob(f".{dest_real.name}.previous-*"))
    if interrupted and not dest_real.exists():
        raise BadInput(f"an earlier merge was interrupted: {interrupted[0]} holds DEST; rename it to {dest} first")
    return out, dest_real


def _short(key: str, value: object) -> str:
    return f"{value[:12]}…" if key == "version" and isinstance(value, str) and len(value) > 12 else repr(value)


def _numeric(text: object) -> float | None:
    value = parse_param(text)
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def union_params(base: list[list[str]], other: list[list[str]], name: str) -> list[list[str]]:
    """Axis by axis, ``base``'s values then ``other``'s new ones; a widened numeric axis is sorted."""
    if not isinstance(base, list) or not isinstance(other, list) or len(base) != len(other):
        raise BadInput(f"incompatible suites: {name} has parameter axes of different lengths in two shards")
    out = []
    for a, b in zip(base, other, strict=True):
        if not isinstance(a, list) or not isinstance(b, list):
            raise BadInput(f"{BENCHMARKS_FILE}: benchmark {name} has malformed params")
        axis = list(a) + [v for v in b if v not in a]
        if len(axis) > len(a) and all(_numeric(v) is not None for v in axis):
            axis.sort(key=_numeric)
        out.append(axis)
    return out


#: One input's suite for :func:`merge_suites`: (label, benchmarks.json entries, is DEST, benchmark → the
#: latest commit date of a result recorded under that entry's version).
Suite = tuple[str, dict[str, dict], bool, dict[str, int]]


def merge_suites(
    suites: Sequence[Suite], update_suite: bool = False
) -> tuple[dict[str, dict], list[str], list[str], list[str]]:
    """Union of benchmarks.json entries, in order → (merged, widened, redefined, recorded under several versions).

    BadInput when a benchmark's type, unit or parameter names differ, unless ``update_suite`` and the
    earlier definition is DEST's: then the source's replaces it. Where only versions differ, the
    definition of the version with the latest result is kept (on a tie, the later input's).
    """
    merged: dict[str, dict] = {}
    origin: dict[str, tuple[str, bool, int]] = {}
    widened: set[str] = set()
    redefined: set[str] = set()
    mixed: set[str] = set()
    for label, entries, is_dest, latest in suites:
        for name, entry in entries.items():
            entry = json.loads(json.dumps(entry))  # a copy: inputs are never changed
            when = latest.get(name, 0)
            if name not in merged:
                merged[name], origin[name] = entry, (label, is_dest, when)
                continue
            base = merged[name]
            differ = [k for k in MUST_AGREE if base.get(k) != entry.get(k)]
            if differ and update_suite and origin[name][1] and not is_dest:
                merged[name], origin[name] = entry, (label, False, when)
                redefined.add(name)
                widened.discard(name)
                continue
            if differ:
                key = differ[0]
                hint = " (--update-suite takes the sources')" if origin[name][1] else ""
                raise BadInput(
                    f"incompatible suites: {name} has {key} {_short(key, base.get(key))} in {origin[name][0]} but "
                    f"{_short(key, entry.get(key))} in {label}: not the same quantity{hint}"
                )
            params = union_params(base.get("params") or [], entry.get("params") or [], name)
            if base.get("version") != entry.get("version"):
                mixed.add(name)
                if when >= origin[name][2]:
                    merged[name], origin[name] = entry, (label, is_dest, when)
                    base = entry
            if params != (base.get("params") or []):
                widened.add(name)
            base["params"] = params
    return merged, sorted(widened), sorted(redefined), sorted(mixed)


def _skip_reason(res: Results, file: Path) -> str:
    for line in res.warnings:
        if line.startswith(f"{file}: skipped: "):
            return line.removeprefix(f"{file}: skipped: ")
    return "not an asv result file"


def _source_files(src: Path, res: Results, plan: MergePlan) -> dict[str, AsvFile]:
    """DEST-relative path → file as read, for each machine folder of one source; warnings for what is left out."""
    files: dict[str, AsvFile] = {}
    loaded = res.folder.machines if res.folder is not None else {}
    for name, machine in res.machines.items():
        folder = loaded[name]
        if not machine.info or folder.info is None:
            raise BadInput(f"{src / name / MACHINE_FILE} is missing or unreadable: asv publish would skip this machine")
        accepted = {f for run in machine.runs.values() for f in run.files}
        entries = [folder.info, *folder.files, *folder.others]
        for entry in sorted(entries, key=lambda e: e.name if isinstance(e, Path) else e.path.name):
            if isinstance(entry, AsvFile) and (entry is folder.info or entry.path.name in accepted):
                files[f"{name}/{entry.path.name}"] = entry
                continue
            path = entry if isinstance(entry, Path) else entry.path
            what = "a folder" if path.is_dir() else _skip_reason(res, path)
            plan.warnings.append(f"{path}: not copied ({what})")
        plan.machines.setdefault(name, set()).update(machine.runs)
    for name, folder in loaded.items():
        if name not in res.machines:
            plan.warnings.append(
                f"{folder.path}: not copied (no machine.json and no result file: not a machine folder)"
            )
    return files


def _read_dest(dest: Path) -> Results | None:
    """DEST's results, None for a new or empty DEST; BadInput for a folder that holds something else."""
    if not dest.exists():
        return None
    try:
        entries = [p for p in dest.iterdir() if not p.name.startswith(".")]
    except OSError as exc:
        raise BadInput(f"cannot list DEST {dest}: {exc.strerror or exc}") from None
    if not entries:
        return None
    try:
        res = read_results(dest)
    except BadInput:
        if [p.name for p in entries] == [BENCHMARKS_FILE]:
            return None  # a suite and no results: nothing to keep but the file, which the union replaces
        raise BadInput(f"DEST {dest} is not empty and holds no asv results: choose a new or empty folder") from None
    if res.benchmarks_problem is not None and (dest / BENCHMARKS_FILE).exists():
        raise BadInput(f"DEST's {res.benchmarks_problem}: fix or remove it first")
    return res


def _json(data: bytes) -> dict | None:
    out, _ = asv_files.parse_json(data)
    return out if isinstance(out, dict) else None


def _rows(data: dict) -> dict[str, asv_files.Row]:
    return {name: row or {} for name, row in asv_files.rows(data).items()}


def _same(a: object, b: object) -> bool:
    """Equal results, asv's NaN (skipped) equal to NaN."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def join(rel: str, a: bytes, b: bytes) -> tuple[bytes | None, str | None]:
    """Two different files under one DEST path: (the file to keep, None) or (None, the real conflict).

    Result files of one machine, commit and environment conflict where a benchmark both hold has other
    parameters, version or values; else they are joined (``a``'s rows, then those only ``b`` has).
    machine.json files conflict where an identity key differs; else ``b``'s is kept.
    """
    x, y = _json(a), _json(b)
    if x is None or y is None:
        return None, "not JSON"
    if rel.endswith(f"/{MACHINE_FILE}"):
        differ = [k for k in IDENTITY_KEYS if str(x.get(k, "")) != str(y.get(k, ""))]
        return (None, f"{differ[0]} {x.get(differ[0])!r} against {y.get(differ[0])!r}") if differ else (b, None)
    rx, ry = _rows(x), _rows(y)
    for name in rx.keys() & ry.keys():
        for col in ("params", "version", "result"):
            if not _same(rx[name].get(col), ry[name].get(col)):
                return None, f"{name} has other {'values' if col == 'result' else col}"
    cols = asv_files.columns(x)
    cols += [c for c in asv_files.columns(y) if c not in cols]
    rows = {**{n: r for n, r in ry.items() if n not in rx}, **rx}
    joined = {
        **asv_files.with_rows(x, rows, cols),
        "durations": {**(y.get("durations") or {}), **(x.get("durations") or {})},
    }
    text = asv_files.result_text(joined).encode()
    return (a if not ry.keys() - rx.keys() else b if not rx.keys() - ry.keys() else text), None


def _conflict_kind(rel: str) -> str:
    if rel.endswith(f"/{MACHINE_FILE}"):
        return "two different machines under one name"
    return "the same machine, commit and benchmark with different values"


@dataclass(frozen=True)
class _Pick:
    """What a merge writes under one DEST path: a source file (copied) or the bytes of two files joined; its bytes
    and the source it came from."""

    file: Path | bytes
    data: bytes
    src: Path


def _read_source(src: Path) -> Results:
    res = read_results(src)
    if res.benchmarks_problem is not None:
        raise BadInput(f"shard {src}: {res.benchmarks_problem}; its suite cannot be checked (asv run writes it)")
    if not res.benchmarks:
        raise BadInput(f"shard {src}: {BENCHMARKS_FILE} lists no benchmark")
    return res


def _pick(chosen: dict[str, _Pick], rel: str, new: _Pick, plan: MergePlan, force: bool) -> str | None:
    """Put ``new`` under ``rel`` beside an earlier source's file there: the same bytes, or the two joined, or the
    later one (``force``); the conflict, where there is one and no ``force``."""
    old = chosen.get(rel)
    if old is None or old.data == new.data:
        chosen.setdefault(rel, new)
        return None
    kept, why = join(rel, old.data, new.data)
    if kept is None and not force:
        return f"{rel} differs between shards {old.src} and {new.src} ({why})"
    if kept is None:
        plan.warnings.append(f"{rel}: shards {old.src} and {new.src} differ ({why}); {new.src}'s taken (--force)")
    elif kept == old.data:
        return None
    chosen[rel] = new if kept is None or kept == new.data else _Pick(kept, kept, new.src)
    return None


def _choose(srcs: Sequence[Path], plan: MergePlan, suites: list[Suite], force: bool) -> tuple[dict[str, _Pick], list]:
    """Every source's files by DEST path, the sources' suites added to ``suites``; and the conflicts between them."""
    chosen: dict[str, _Pick] = {}
    conflicts: list[str] = []
    for src in srcs:
        res = _read_source(src)
        suites.append((f"shard {src}", {n: b.raw for n, b in res.benchmarks.items()}, False, latest_by_version(res)))
        for rel, file in _source_files(src, res, plan).items():
            conflict = _pick(chosen, rel, _Pick(file.path, file.raw or b"", src), plan, force)
            if conflict is not None:
                conflicts.append(conflict)
    return chosen, conflicts


def _in_dest(dest: Path, res: Results | None, rel: str) -> tuple[bool, bytes | None]:
    """Whether DEST holds ``rel``, and its bytes as read (None where it is not a file)."""
    loaded = res.folder.file(rel) if res is not None and res.folder is not None else None
    if loaded is not None and loaded.raw is not None:
        return True, loaded.raw
    path = dest / rel
    return path.exists(), (path.read_bytes() if path.is_file() else None)


def _against_dest(chosen: dict[str, _Pick], dest: Path, res: Results | None, plan: MergePlan, force: bool) -> list[str]:
    """Plan each chosen file against DEST's: new, already there, joined, or replaced (``force``); the conflicts."""
    conflicts = []
    for rel, pick in chosen.items():
        exists, old = _in_dest(dest, res, rel)
        if not exists:
            plan.files[rel] = pick.file
            continue
        if old == pick.data:
            plan.unchanged += 1
            continue
        kept, why = join(rel, old, pick.data) if old is not None else (None, "not a file")
        if kept is None and not force:
            conflicts.append(f"{rel} in {pick.src} differs from DEST's ({why})")
            continue
        if kept is not None and kept == old:
            plan.unchanged += 1
            continue
        plan.files[rel] = pick.file if kept is None or kept == pick.data else kept
        plan.displaced.append(rel)
        how = "(--force)" if kept is None else "(joined: nothing differs)"
        plan.warnings.append(f"{rel}: DEST's copy replaced by {pick.src}'s {how}; the old one is kept")
    return conflicts


def plan_merge(
    sources: Sequence[str | Path], dest: str | Path, force: bool = False, update_suite: bool = False
) -> MergePlan:
    """Read every input and decide what the merge writes; nothing is written. BadInput on any problem."""
    srcs, dest_real = check_paths(sources, dest)
    plan = MergePlan(dest=Path(dest), sources=srcs)
    dest_res = _read_dest(dest_real)
    suites: list[Suite] = []
    if dest_res is not None and dest_res.benchmarks:
        raw = {n: b.raw for n, b in dest_res.benchmarks.items()}
        suites.append((f"DEST {dest}", raw, True, latest_by_version(dest_res)))
    chosen, conflicts = _choose(srcs, plan, suites, force)
    conflicts += _against_dest(chosen, dest_real, dest_res, plan, force)
    if conflicts:
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise BadInput(
            f"conflict: {conflicts[0]}{more}: {_conflict_kind(conflicts[0].split(' ', 1)[0])}; "
            "nothing written (--force takes the last shard's and keeps DEST's in a displaced folder)"
        )
    plan.benchmarks, plan.widened, plan.redefined, plan.versions_mixed = merge_suites(suites, update_suite)
    dest_suite = {n: b.raw for n, b in dest_res.benchmarks.items()} if dest_res is not None else {}
    plan.benchmarks_changed = plan.benchmarks != dest_suite
    if dest_res is not None and not dest_res.benchmarks and dest_res.machines:
        plan.warnings.append(f"DEST {dest} had no {BENCHMARKS_FILE}; the shards' is written")
    return plan


def _bytes(file: Path | bytes) -> bytes:
    return file if isinstance(file, bytes) else file.read_bytes()


# ---- writing ---------------------------------------------------------------------------------


def _verify(tmp: Path, dest: Path, plan: MergePlan, before: set[str]) -> None:
    """The built folder holds every planned file byte for byte, every earlier DEST file, and reads back."""
    for rel, src in plan.files.items():
        if (tmp / rel).read_bytes() != _bytes(src):
            raise OSError(errno.EIO, f"{rel} differs from its source after copying")
    for rel in before:
        if rel not in plan.files and rel != BENCHMARKS_FILE and not filecmp.cmp(tmp / rel, dest / rel, shallow=False):
            raise OSError(errno.EIO, f"DEST's {rel} changed while copying")
    merged = read_results(tmp)
    if merged.benchmarks_problem is not None:
        raise OSError(errno.EIO, merged.benchmarks_problem)
    for name, commits in plan.machines.items():
        missing = commits - set(merged.machines[name].runs) if name in merged.machines else commits
        if missing:
            raise OSError(errno.EIO, f"machine {name} lacks commit(s) {', '.join(sorted(missing))} after merging")


def _displace(plan: MergePlan, dest: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    target = dest.parent / f"{dest.name}.displaced-{stamp}"
    n = 1
    while target.exists():
        n += 1
        target = dest.parent / f"{dest.name}.displaced-{stamp}-{n}"
    for rel in plan.displaced:
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dest / rel, target / rel)
    return target


def _build_and_swap(plan: MergePlan, dest: Path) -> None:
    before = {str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()} if dest.exists() else set()
    mode = (dest.stat().st_mode & 0o7777) if dest.exists() else None
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.merging-", dir=dest.parent))
    try:
        if dest.exists():
            shutil.copytree(dest, tmp, symlinks=True, dirs_exist_ok=True)
        for rel, src in plan.files.items():
            target = tmp / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                target.unlink()
            if isinstance(src, bytes):
                target.write_bytes(src)
            else:
                shutil.copy2(src, target)
        if plan.benchmarks_changed:
            (tmp / BENCHMARKS_FILE).unlink(missing_ok=True)
            (tmp / BENCHMARKS_FILE).write_text(asv_files.benchmarks_text(plan.benchmarks), encoding="utf-8")
        _verify(tmp, dest, plan, before)
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o777 & ~umask
        os.chmod(tmp, mode)
        asv_files.sync_tree(tmp)
        if plan.displaced:
            plan.displaced_to = _displace(plan, dest)
        asv_files.swap_in(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def merge(
    sources: Sequence[str | Path],
    dest: str | Path,
    force: bool = False,
    update_suite: bool = False,
    dry_run: bool = False,
) -> MergePlan:
    """Merge ``sources`` into ``dest`` (see the module docstring); returns the plan, ``written`` when done.

    BadInput (nothing written) on a missing shard, incompatible suites, a conflict without
    ``force``, or a DEST that cannot be written.
    """
    plan = plan_merge(sources, dest, force, update_suite)  # bad input stops here, before any file is made
    if dry_run:
        return plan
    _, dest_real = check_paths(sources, dest)
    with asv_files.locked(dest_real):
        plan = plan_merge(sources, dest, force, update_suite)  # under the lock: DEST as it is now
        if plan.changed:
            try:
                _build_and_swap(plan, dest_real)
            except OSError as exc:
                where = f" ({exc.filename})" if exc.filename else ""
                raise BadInput(f"cannot write DEST {dest}: {exc.strerror or exc}{where}; DEST left as it was") from None
            plan.written = True
    return plan
