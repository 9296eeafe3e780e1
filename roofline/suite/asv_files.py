"""asv's results folder as files (asv 0.6 format): the one place that reads and writes them.

:func:`load` reads a results folder once, each file once: ``benchmarks.json``, every ``<machine>/machine.json``
and every ``<machine>/<hash8>-<env>.json`` result file, with its bytes and, where it is usable, its JSON. A file
that is not usable says why (:attr:`AsvFile.problem`) and is never an error here: the readers above decide.
:func:`roofline.suite.results.results_of` builds the typed :class:`~roofline.suite.results.Results` from what
:func:`load` returns; merge, rename, the migration, the gallery and the commands use the same loaded value.

A result file maps each benchmark to a row of values in the order of its ``result_columns`` ("result",
"params", "version", "stats_ci_99_a", ..., "samples"); :func:`rows` is the only place that zips the two, and
:func:`with_rows` the only way back. A machine is the same hardware as another where its
:data:`IDENTITY_KEYS` agree (:func:`identity`).

Writing: each file as asv writes it (:func:`result_text`, :func:`machine_text`, :func:`benchmarks_text`),
replaced atomically (:func:`write`); a whole folder is built beside the results and put in their place in one
step (:func:`swap_in`), under an exclusive lock (:func:`locked`).

API::

    folder = load("results/")                  # BadInput (exit 2) if missing or not a folder
    folder.benchmarks                           # AsvFile of benchmarks.json, or None when there is none
    m = folder.machines["alpha"]                # MachineFolder: every sub-folder, by name
    m.info, m.files, m.others                   # machine.json (AsvFile or None), result files, anything else
    f = m.files[0]; f.problem, f.commit, f.env, f.params, f.rows()
    m.snapshot()                                # {path: bytes} of its JSON files, to restore or compare with
    folder.machine("beta")                      # the same, an empty MachineFolder where there is none
"""

from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import errno
import json
import math
import os
import shutil
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from ..files import atomic_write

BENCHMARKS_FILE = "benchmarks.json"
MACHINE_FILE = "machine.json"
#: asv 0.6's format versions of a result file, of benchmarks.json, and of machine.json (and ~/.asv-machine.json).
RESULT_API_VERSION = 2
BENCHMARKS_API_VERSION = 2
MACHINE_FILE_VERSION = 1
#: The keys of machine.json that say which hardware a result is from (arch, cpu, cores, memory).
IDENTITY_KEYS = ("arch", "cpu", "num_cpu", "ram")

#: Row = one benchmark's row of a result file, by column name ("result", "params", "version", ...).
Row = dict[str, object]


def identity(info: Mapping[str, object]) -> dict[str, str]:
    """The :data:`IDENTITY_KEYS` that ``info`` (a machine.json, a machine entry, a result file's params) gives."""
    return {k: str(info[k]) for k in IDENTITY_KEYS if str(info.get(k, "")).strip()}


def parse_json(raw: bytes) -> tuple[object, str | None]:
    """(data, None) or (None, one-line reason) for a file's bytes."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    if not text.strip():
        return None, "empty file"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated?)"


@dataclass(frozen=True)
class AsvFile:
    """One file of the folder as read: its bytes, its JSON, and why it is not usable (None when it is)."""

    path: Path
    raw: bytes | None
    json: object = None
    problem: str | None = None
    #: whether its bytes parse as JSON (a file a crash cut short does not)
    parsed: bool = False
    mtime: float = 0.0

    def object(self, undone: str) -> dict:
        """A copy of the file's JSON object; BadInput in one line naming it and what was not done (``undone``)."""
        if not self.parsed:
            raise BadInput(f"{self.path} cannot be read as JSON ({self.problem}); fix or move it: nothing was {undone}")
        if not isinstance(self.json, dict):
            raise BadInput(f"{self.path} is not a JSON object; fix or move it: nothing was {undone}")
        return dict(self.json)

    @property
    def text(self) -> str:
        """The file's text as read ('' where it could not be read)."""
        return self.raw.decode("utf-8", errors="replace") if self.raw is not None else ""

    @property
    def data(self) -> dict:
        """The JSON object ({} where the file holds none)."""
        return self.json if isinstance(self.json, dict) else {}

    @property
    def commit(self) -> str:
        commit = self.data.get("commit_hash")
        return commit if isinstance(commit, str) else ""

    @property
    def env(self) -> str:
        """asv's environment name of a result file: its ``env_name``, else the file name after the hash."""
        name = self.data.get("env_name")
        if isinstance(name, str) and name:
            return name
        stem = self.path.stem
        return stem.split("-", 1)[1] if "-" in stem else stem

    @property
    def params(self) -> dict[str, object]:
        """A result file's machine keys (asv's copy of machine.json, plus ``python``); {} where absent."""
        params = self.data.get("params")
        return params if isinstance(params, dict) else {}

    @property
    def date(self) -> int | None:
        date = self.data.get("date")
        return int(date) if isinstance(date, int | float) and not isinstance(date, bool) else None

    @property
    def has_rows(self) -> bool:
        """Whether this is a result file of asv 0.6's layout: ``result_columns`` and ``results``."""
        return isinstance(self.data.get("result_columns"), list) and isinstance(self.data.get("results"), dict)

    def rows(self) -> dict[str, Row | None]:
        """:func:`rows` of this result file."""
        return rows(self.data)

    def measured(self) -> bool:
        """Whether any row of this result file holds a finite value (asv's null is a failure, NaN a skip)."""
        for row in self.rows().values():
            values = row.get("result") if row is not None else None
            values = values if isinstance(values, list) else [values]
            if any(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values):
                return True
        return False


def columns(data: Mapping[str, object]) -> list[str]:
    """A result file's ``result_columns`` ([] where it has none)."""
    cols = data.get("result_columns")
    return list(cols) if isinstance(cols, list) else []


def rows(data: Mapping[str, object]) -> dict[str, Row | None]:
    """A result file's rows by benchmark, each zipped with ``result_columns`` (asv trims trailing empty
    columns); None for a row that is not a list. {} where the file has no ``result_columns``/``results``."""
    columns, results = data.get("result_columns"), data.get("results")
    if not isinstance(columns, list) or not isinstance(results, dict):
        return {}
    return {
        name: dict(zip(columns, row, strict=False)) if isinstance(row, list) else None for name, row in results.items()
    }


def with_rows(data: Mapping[str, object], rows: Mapping[str, Row], columns: Sequence[str]) -> dict[str, object]:
    """``data`` (a result file) holding ``rows`` instead, in ``columns`` order, benchmarks sorted."""
    cols = list(columns)
    return {**data, "result_columns": cols, "results": {n: [r.get(c) for c in cols] for n, r in sorted(rows.items())}}


def _read(path: Path) -> AsvFile:
    try:
        raw, mtime = path.read_bytes(), path.stat().st_mtime
    except OSError as exc:
        return AsvFile(path, None, problem=f"cannot read it ({exc.strerror or exc})")
    data, problem = parse_json(raw)
    return AsvFile(path, raw, data, problem, parsed=problem is None, mtime=mtime)


def _checked(file: AsvFile, problem: str | None) -> AsvFile:
    return file if file.problem or problem is None else dataclasses.replace(file, problem=problem)


def _object(file: AsvFile) -> str | None:
    return None if isinstance(file.json, dict) else "not a JSON object"


def _version_problem(file: AsvFile, expected: int, what: str) -> str | None:
    """Why ``file`` is not a JSON object of asv's format ``expected`` (``what``: how to say the version), or None."""
    if not isinstance(file.json, dict):
        return "not a JSON object"
    version = file.json.get("version")
    return None if version == expected else f"{what} {version!r}, expected {expected}"


def _result_problem(file: AsvFile) -> str | None:
    problem = _version_problem(file, RESULT_API_VERSION, "asv result format version")
    if problem is not None and problem.startswith("asv result"):
        return f"{problem} (`asv update`)"
    return problem or (None if file.commit else "no commit_hash")


def _benchmarks_problem(file: AsvFile) -> str | None:
    return _version_problem(file, BENCHMARKS_API_VERSION, "format version")


@dataclass
class MachineFolder:
    """One ``<machine>/`` folder: its machine.json (None where missing), result files, and anything else."""

    name: str
    path: Path
    info: AsvFile | None = None
    #: every ``*.json`` file but machine.json (dot files left out), sorted by name, usable or not
    files: list[AsvFile] = field(default_factory=list)
    #: sub-folders and other files (dot files left out)
    others: list[Path] = field(default_factory=list)

    def file(self, name: str) -> AsvFile | None:
        return next((f for f in self.files if f.path.name == name), None)

    def snapshot(self) -> dict[Path, bytes]:
        """Every JSON file of the folder (machine.json too) with its bytes, as read."""
        files = ([self.info] if self.info is not None else []) + self.files
        return {f.path: f.raw for f in sorted(files, key=lambda f: f.path) if f.raw is not None}


@dataclass
class ResultsFolder:
    """A whole results folder as read by :func:`load`."""

    path: Path
    #: benchmarks.json, None where there is none
    benchmarks: AsvFile | None = None
    #: every sub-folder that is not a dot folder, by name (sorted)
    machines: dict[str, MachineFolder] = field(default_factory=dict)

    def machine(self, name: str) -> MachineFolder:
        """The folder of machine ``name`` as read (an empty one where there was none)."""
        return self.machines.get(name) or MachineFolder(name, self.path / name)

    def file(self, rel: str) -> AsvFile | None:
        """The file at ``rel`` (``<machine>/<file>``, or ``benchmarks.json``) as read; None where it was not."""
        if rel == BENCHMARKS_FILE:
            return self.benchmarks
        machine, _, name = rel.partition("/")
        folder = self.machines.get(machine)
        if folder is None:
            return None
        return folder.info if name == MACHINE_FILE else folder.file(name)


def load_machine(folder: Path) -> MachineFolder:
    """One machine's folder (an empty one where it does not exist)."""
    folder = Path(folder)
    out = MachineFolder(folder.name, folder)
    if not folder.is_dir():
        return out
    for path in sorted(folder.iterdir()):
        if path.name.startswith("."):
            continue
        if path.name == MACHINE_FILE and path.is_file():
            out.info = _checked(file := _read(path), _object(file))
        elif path.suffix == ".json" and path.is_file():
            out.files.append(_checked(file := _read(path), _result_problem(file)))
        else:
            out.others.append(path)
    return out


def load(path: str | Path) -> ResultsFolder:
    """Read the results folder ``path``, every file once; BadInput if it is missing or not a folder."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"results directory {path} does not exist")
    if not path.is_dir():
        raise BadInput(f"{path} is not a directory (give asv's results directory, e.g. .asv/results)")
    try:
        folders = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise BadInput(f"cannot list {path}: {exc.strerror or exc}") from None
    out = ResultsFolder(path, machines={p.name: load_machine(p) for p in folders})
    if (path / BENCHMARKS_FILE).exists():
        out.benchmarks = _checked(file := _read(path / BENCHMARKS_FILE), _benchmarks_problem(file))
    return out


# ---- writing ---------------------------------------------------------------------------------


def result_text(data: Mapping[str, object]) -> str:
    """A result file as asv writes it: one line, keys in their order."""
    return json.dumps(data)


def machine_text(info: Mapping[str, object]) -> str:
    """A machine.json as asv writes it: indented, keys sorted."""
    return json.dumps(info, indent=4, sort_keys=True)


def benchmarks_text(entries: Mapping[str, object]) -> str:
    """A benchmarks.json as asv writes it, with its format version."""
    return json.dumps({**entries, "version": BENCHMARKS_API_VERSION}, indent=4, sort_keys=True)


def write(path: Path, text: str | bytes) -> None:
    """Replace ``path`` atomically: a reader sees the old file or the whole new one."""
    atomic_write(path, text)


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """An exclusive lock on ``.<folder>.merge-lock`` beside ``folder`` (fcntl where there is one): merges and
    renames of one folder, such as ReFrame jobs finishing together, take turns."""
    lock = folder.parent / f".{folder.name}.merge-lock"
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError as exc:
        raise BadInput(f"DEST {folder}: cannot write in {folder.parent} ({exc.strerror or exc})") from None
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover (Windows)
            fcntl = None
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux renameat2 RENAME_EXCHANGE); False where that is unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    at_fdcwd, rename_exchange = -100, 2
    if fn(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def sync_tree(root: Path) -> None:
    """fsync every file under ``root``."""
    for folder, _, names in os.walk(root):
        for name in names:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


def swap_in(tmp: Path, dest: Path) -> None:
    """Put the folder ``tmp`` (built beside ``dest``, synced) in ``dest``'s place in one step, where Linux allows
    (elsewhere two renames); ``tmp`` and the old ``dest`` are gone after."""
    if not dest.exists():
        os.rename(tmp, dest)
    elif exchange(tmp, dest):
        shutil.rmtree(tmp, ignore_errors=True)  # tmp now holds the old DEST
    else:
        previous = dest.parent / f".{dest.name}.previous-{os.getpid()}"
        os.rename(dest, previous)
        os.rename(tmp, dest)
        shutil.rmtree(previous, ignore_errors=True)
