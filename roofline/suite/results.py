"""An asv results directory (asv 0.6 format) as typed values, without asv, tolerant of bad files.

The files are read once by :func:`roofline.suite.asv_files.load`, which owns their format; :func:`results_of`
makes them :class:`Results`, and :func:`read_results` does both. Nothing here ever writes to the directory. A
file that cannot be read is skipped with a warning; a benchmark that failed (asv stores null), was skipped (NaN)
or comes from another version of the suite than ``benchmarks.json`` describes reads as None ("n/a"), as asv
publish shows it; :attr:`Run.recorded` keeps the last kind with the version that recorded it, for
``roofline compare``, which sets machines side by side across versions (:func:`combine`).

API::

    res = read_results("results/")            # BadInput (exit 2) if missing or no machine in it
    res = results_of(asv_files.load("results/"))  # the same, from files already loaded
    res.folder                                # the files as read (asv_files.ResultsFolder)
    res.warnings                              # list[str], one line each: files skipped, n/a values
    res.benchmarks                            # {name: Benchmark} from benchmarks.json ({} if absent)
    res.benchmarks_problem                    # why benchmarks.json was not read, or None
    res.machines                              # {name: MachineResults}, sorted by name
    res.resolve_commit("1a2b", "alpha")       # hash prefix → full hash (BadInput if unknown/ambiguous)

    m = res.machines["alpha"]
    m.info                                    # machine.json as a dict (asv's keys and roofline's)
    m.commits()                               # full hashes, oldest first
    run = m.run(m.latest())                   # Run: one commit, its result files merged
    run.value("decode.DecodeDRAM.track_gflops", n=256, batch=8)   # float, or None for n/a
    run.points("decode.DecodeDRAM.track_gflops")  # [({"n": 256, "batch": 1}, 12.3), ...]
    run.envs["virtualenv-py3.11"]             # EnvRun: one environment's file alone, with asv's
                                              # statistics and raw samples (--record-samples)
    run.recorded, run.versions                # every value whatever its version, and that version
    combine([read_results(a), read_results(b)])   # several folders as one (BadInput on conflicting values)

The layout read: ``<dir>/benchmarks.json`` (name → type, unit, params, param_names, version),
``<dir>/<machine>/machine.json`` and ``<dir>/<machine>/<hash8>-<env>.json``, whose
``results`` map a benchmark to a row of ``result_columns`` ("result", "params", "version", ...);
"result" holds one value per combination of "params" (asv's repr strings, e.g. "256", "'add'");
"stats_ci_99_a", "stats_ci_99_b", "stats_q_25", ... and "samples" one entry per combination too.
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from ..model.hierarchy import CEILING_KERNEL, roof_kernel
from . import asv_files
from .asv_files import BENCHMARKS_FILE, MACHINE_FILE, AsvFile, MachineFolder, ResultsFolder, Row, identity
from .names import BANDWIDTH_CEILING, LEVEL_BANDWIDTH, RETIRED_MEANINGS

Value = float | None
ParamKey = tuple[object, ...]


def parse_param(text: object) -> object:
    """asv's repr of a parameter value → the value ('256' → 256, "'add'" → 'add'); other text as is."""
    if not isinstance(text, str):
        return text
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text


def _number(value: object) -> Value:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _stat(value: object) -> float | None:
    """A statistic as asv stores it: a number, infinite allowed (too few samples for an interval)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Benchmark:
    """One benchmark as benchmarks.json describes it."""

    name: str
    type: str = ""
    unit: str = ""
    param_names: tuple[str, ...] = ()
    params: tuple[tuple[object, ...], ...] = ()
    version: str | None = None
    #: the entry as benchmarks.json holds it (asv's repr strings), for tools that write one back
    raw: dict[str, object] = field(default_factory=dict, compare=False, repr=False)


#: The gallery of a checkout: the machines make bench's comparison page sets this one beside, and where
#: ``decode --hardware NAME`` finds a machine when no --results folder is given.
GALLERY = Path("examples/results")

#: asv's statistics columns of a result row (``stats_<name>``), kept per combination for the gate.
STATS = ("ci_99_a", "ci_99_b", "q_25", "q_75", "number", "repeat")


@dataclass
class EnvRun:
    """One environment's result file at one commit, not merged with any other environment's.

    ``params`` the file's machine keys (asv's copy of machine.json, plus ``python``); ``values`` as
    :attr:`Run.values`; ``stats[benchmark][key]`` asv's statistics ({"ci_99_a": ...},
    time benchmarks only) and ``samples[benchmark][key]`` the raw samples (``asv run
    --record-samples``); a combination without them is absent.
    """

    env: str
    file: str
    params: dict[str, object] = field(default_factory=dict)
    values: dict[str, dict[ParamKey, Value]] = field(default_factory=dict)
    stats: dict[str, dict[ParamKey, dict[str, float]]] = field(default_factory=dict)
    samples: dict[str, dict[ParamKey, list[float]]] = field(default_factory=dict)


@dataclass
class Run:
    """One machine at one commit: the values of every result file for that commit, merged.

    ``values[benchmark][key]`` with ``key`` the parameter values in ``param_names`` order
    (``()`` for an unparameterized benchmark); None is n/a.
    """

    machine: str
    commit: str
    date: int | None = None
    files: list[str] = field(default_factory=list)
    params: dict[str, object] = field(default_factory=dict)
    values: dict[str, dict[ParamKey, Value]] = field(default_factory=dict)
    param_names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: each environment's file alone, by asv's environment name (e.g. "virtualenv-py3.11")
    envs: dict[str, EnvRun] = field(default_factory=dict)
    #: every value as recorded, whatever version of its benchmark recorded it (``values`` reads those of
    #: another version than benchmarks.json's as n/a), and the version each benchmark's row names
    recorded: dict[str, dict[ParamKey, Value]] = field(default_factory=dict)
    versions: dict[str, str | None] = field(default_factory=dict)
    #: asv's raw samples and statistics per combination (any version), from the first file holding them
    samples: dict[str, dict[ParamKey, list[float]]] = field(default_factory=dict)
    stats: dict[str, dict[ParamKey, dict[str, float]]] = field(default_factory=dict)
    #: the suite that describes this run: its folder's benchmarks.json
    suite: dict[str, Benchmark] = field(default_factory=dict, repr=False)

    def benchmarks(self) -> list[str]:
        return sorted(self.values)

    def value(self, benchmark: str, **params: object) -> Value:
        """The value at these parameter values (all of them, by name), None if absent or n/a."""
        names = self.param_names.get(benchmark)
        values = self.values.get(benchmark)
        if values is None or names is None or set(params) != set(names):
            return None
        return values.get(tuple(params[n] for n in names))

    def recorded_run(self) -> Run:
        """This run with its values of other benchmark versions than benchmarks.json's too, where they mean
        what that version means (:func:`meaning`): one run's own figures."""
        same = {
            name: values
            for name, values in self.recorded.items()
            if name not in self.suite
            or meaning(name, self.versions.get(name)) == meaning(name, self.suite[name].version)
        }
        return dataclasses.replace(self, values={**self.values, **same})

    def points(self, benchmark: str) -> list[tuple[dict[str, object], Value]]:
        """Every parameter combination of ``benchmark`` with its value, in asv's order."""
        names = self.param_names.get(benchmark, ())
        return [(dict(zip(names, key, strict=True)), v) for key, v in self.values.get(benchmark, {}).items()]

    def stream_gbps(self) -> dict[str, float]:
        """GB/s per STREAM kernel this run recorded (the bandwidth ceilings); n/a left out."""
        return {p["kind"]: v for p, v in self.points(BANDWIDTH_CEILING) if v and "kind" in p}

    def level_gbps(self) -> dict[str, float]:
        """GB/s per memory level this run recorded (ceilings.CacheBandwidth), DRAM's the bandwidth roof wherever
        that is STREAM read: one DRAM roof per run, as the report's (``Report.roofs_by_level``). The sweep's
        read-only DRAM plateau stands in only beside add, which also writes; here it read 57.1 GB/s where
        read gave 32.7 and likwid-bench's load 36.4."""
        levels = {str(p["level"]): v for p, v in self.points(LEVEL_BANDWIDTH) if v and "level" in p}
        roof = self.bandwidth_roof()
        if roof is not None and roof[0] == CEILING_KERNEL and "DRAM" in levels:
            levels["DRAM"] = roof[1]
        return levels

    def bandwidth_roof(self) -> tuple[str, float] | None:
        """(kernel, GB/s) of the bandwidth roof this run recorded (:func:`~roofline.model.hierarchy.roof_kernel`)."""
        rates = self.stream_gbps()
        kind = roof_kernel(rates)
        return (kind, rates[kind]) if kind else None


@dataclass
class MachineResults:
    """One machine's folder: its machine.json and its runs by commit."""

    name: str
    info: dict[str, object] = field(default_factory=dict)
    runs: dict[str, Run] = field(default_factory=dict)

    def commits(self) -> list[str]:
        """Full commit hashes, oldest first (commit date, then hash)."""
        return sorted(self.runs, key=lambda c: (self.runs[c].date or 0, c))

    def latest(self) -> str | None:
        commits = self.commits()
        return commits[-1] if commits else None

    def run(self, commit: str) -> Run | None:
        return self.runs.get(commit)


@dataclass
class Results:
    """A whole results directory, read once."""

    path: Path
    benchmarks: dict[str, Benchmark] = field(default_factory=dict)
    machines: dict[str, MachineResults] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    #: why benchmarks.json could not be used (missing, corrupt, other format), None when it was read
    benchmarks_problem: str | None = None
    #: the warnings (also in :attr:`warnings`) about values of another benchmark version, read as n/a
    version_notes: list[str] = field(default_factory=list)
    #: every folder read (several after :func:`combine`)
    paths: list[Path] = field(default_factory=list)
    #: the files as read (:func:`~roofline.suite.asv_files.load`); None after :func:`combine` of several
    folder: ResultsFolder | None = field(default=None, repr=False)

    def resolve_commit(self, prefix: str, machine: str | None = None) -> str:
        """The full hash that ``prefix`` names among the results (of ``machine``, if given).

        BadInput when no result has it, or when it names several commits.
        """
        text = (prefix or "").strip().lower()
        if not text or any(c not in "0123456789abcdef" for c in text):
            raise BadInput(f"commit {prefix!r} is not a hexadecimal hash (prefix)")
        pool = [self.machines[machine]] if machine in self.machines else self.machines.values()
        known = {c for m in pool for c in m.runs}
        hits = sorted(c for c in known if c.startswith(text))
        where = f"machine {machine!r}" if machine else str(self.path)
        if not hits:
            sample = ", ".join(c[:8] for c in sorted(known)[:6]) or "none"
            raise BadInput(f"unknown commit {prefix!r}: no results for it in {where} (known: {sample})")
        if len(hits) > 1:
            raise BadInput(f"commit {prefix!r} is ambiguous in {where}: {', '.join(h[:12] for h in hits)}")
        return hits[0]


def _read_benchmarks(folder: ResultsFolder, res: Results) -> dict[str, Benchmark]:
    file, warnings, loaded = folder.path / BENCHMARKS_FILE, res.warnings, folder.benchmarks
    if loaded is None:
        res.benchmarks_problem = f"{file}: missing"
        warnings.append(f"{file}: missing; parameter names unknown and suite versions not checked")
        return {}
    if loaded.problem:
        res.benchmarks_problem = f"{file}: {loaded.problem}"
        warnings.append(f"{file}: skipped: {loaded.problem}; parameter names unknown")
        return {}
    out = {}
    for name, b in loaded.data.items():
        if name == "version" or not isinstance(b, dict):
            continue
        try:
            out[name] = Benchmark(
                name=name,
                type=str(b.get("type", "")),
                unit=str(b.get("unit", "")),
                param_names=tuple(str(p) for p in b.get("param_names") or ()),
                params=tuple(tuple(parse_param(v) for v in vals) for vals in b.get("params") or ()),
                version=b.get("version"),
                raw=b,
            )
        except TypeError:
            warnings.append(f"{file}: benchmark {name!r} is malformed; ignored")
    return out


def _column(row: Row, name: str, count: int) -> list[object]:
    """One per-combination column of a row (asv trims trailing empty columns): ``count`` entries."""
    column = row.get(name)
    return column if isinstance(column, list) and len(column) == count else [None] * count


@dataclass
class _Found:
    """What one result file held that is no figure: benchmarks failed, of another version, malformed."""

    failed: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)
    malformed: list[str] = field(default_factory=list)

    def stale_note(self, file: Path) -> str | None:
        if not self.stale:
            return None
        return (
            f"{file}: {len(self.stale)} benchmark(s) from another suite version than benchmarks.json, "
            f"which asv publish and the gate leave out ({', '.join(sorted(self.stale))})"
        )

    def warnings(self, file: Path) -> list[str]:
        out = []
        if self.failed:
            uniq = sorted(set(self.failed))
            out.append(f"{file}: {len(self.failed)} value(s) failed, shown as n/a ({', '.join(uniq)})")
        if self.stale:
            out.append(str(self.stale_note(file)))
        if self.malformed:
            rows = ", ".join(sorted(self.malformed))
            out.append(f"{file}: {len(self.malformed)} malformed benchmark row(s) ignored ({rows})")
        return out


def _keys(row: Row | None) -> list[ParamKey] | None:
    """The parameter combinations of a row, in asv's order, with their values parsed; None where malformed."""
    if row is None:
        return None
    try:
        keys = [tuple(parse_param(v) for v in combo) for combo in itertools.product(*(row.get("params") or []))]
    except TypeError:
        return None
    result = row.get("result")
    return keys if result is None or (isinstance(result, list) and len(result) == len(keys)) else None


def _add_value(
    run: Run,
    env: EnvRun | None,
    name: str,
    key: ParamKey,
    raw: object,
    stale: bool,
    got: dict[str, float | None],
    finite: list[float],
) -> None:
    """One combination's value into ``run`` (and ``env``, the file's own environment): ``raw`` as recorded, n/a in
    :attr:`Run.values` where ``stale``; its statistics (``got``) and samples (``finite``) where it has a value."""
    value = None if stale else _number(raw)
    values, kept = run.values[name], run.recorded[name]
    if values.get(key) is None:  # another environment's file may hold the value
        values[key] = value
    if kept.get(key) is None:
        kept[key] = _number(raw)
    if _number(raw) is not None:
        if all(v is not None for v in got.values()):
            run.stats.setdefault(name, {}).setdefault(key, got)
        if finite:
            run.samples.setdefault(name, {}).setdefault(key, finite)
    if env is None:
        return
    env.values.setdefault(name, {})[key] = value
    if value is None:
        return
    if all(v is not None for v in got.values()):
        env.stats.setdefault(name, {})[key] = got
    if finite:
        env.samples.setdefault(name, {})[key] = finite


def _add_row(run: Run, env: EnvRun | None, name: str, row: Row | None, bench: Benchmark | None, found: _Found) -> None:
    """One benchmark's row of a result file into ``run``: its version, parameter names and every combination."""
    keys = _keys(row)
    if row is None or keys is None:
        found.malformed.append(name)
        return
    params = row.get("params") or []
    result = row.get("result") or [None] * len(keys)
    version = row.get("version") if isinstance(row.get("version"), str) else None
    run.versions.setdefault(name, version or (bench.version if bench is not None else None))
    stale = bench is not None and bench.version is not None and version not in (None, bench.version)
    if stale:
        found.stale.append(name)
    if bench is not None and len(bench.param_names) == len(params):
        names = bench.param_names
    else:
        names = tuple(f"param{i + 1}" for i in range(len(params)))
    run.values.setdefault(name, {})
    run.recorded.setdefault(name, {})
    run.param_names.setdefault(name, names)
    stats = {s: _column(row, f"stats_{s}", len(keys)) for s in STATS}
    samples = _column(row, "samples", len(keys))
    for i, (key, raw) in enumerate(zip(keys, result, strict=True)):
        if raw is None and not stale:  # asv's null: it failed; NaN: skipped on purpose
            found.failed.append(name)
        sample = samples[i]
        finite = [x for x in map(_number, sample) if x is not None] if isinstance(sample, list) else []
        got = {s: _stat(stats[s][i]) for s in STATS}
        _add_value(run, env, name, key, raw, stale, got, finite)


def _add_file(run: Run, file: AsvFile, benchmarks: dict[str, Benchmark], res: Results) -> None:
    """One result file's rows into ``run`` and into its environment's :class:`EnvRun`, with a warning for each
    kind of row that gave no figure."""
    if not file.has_rows:
        res.warnings.append(f"{file.path}: skipped: no result_columns/results (not an asv 0.6 result file?)")
        return
    env: EnvRun | None = EnvRun(env=file.env, file=file.path.name, params=file.params)
    if env.env in run.envs:  # two files of one environment at one commit: keep the first, as the merge does
        res.warnings.append(
            f"{file.path}: a second file of environment {env.env!r} at this commit; its values are merged"
        )
        env = None
    else:
        run.envs[env.env] = env
    found = _Found()
    for name, row in file.rows().items():
        _add_row(run, env, name, row, benchmarks.get(name), found)
    res.warnings += found.warnings(file.path)
    stale = found.stale_note(file.path)
    if stale is not None:
        res.version_notes.append(stale)


def _read_machine(folder: MachineFolder, benchmarks: dict[str, Benchmark], res: Results) -> MachineResults | None:
    warnings = res.warnings
    machine = MachineResults(name=folder.name)
    problem = "missing" if folder.info is None else folder.info.problem
    if problem or folder.info is None:
        warnings.append(f"{folder.path / MACHINE_FILE}: {problem}; machine details unknown")
    else:
        machine.info = {k: v for k, v in folder.info.data.items() if k != "version"}
    for file in folder.files:
        if file.problem:
            warnings.append(f"{file.path}: skipped: {file.problem}")
            continue
        run = machine.runs.setdefault(file.commit, Run(machine=machine.name, commit=file.commit, suite=benchmarks))
        run.files.append(file.path.name)
        if file.date is not None:
            run.date = file.date
        if isinstance(file.data.get("params"), dict):
            run.params = {**file.params, **run.params}
        _add_file(run, file, benchmarks, res)
    if not machine.runs and not machine.info:
        return None
    if not machine.runs:
        warnings.append(f"{folder.path}: machine.json but no readable result file")
    return machine


def results_of(folder: ResultsFolder) -> Results:
    """The typed results of a folder :func:`~roofline.suite.asv_files.load` read. BadInput if it holds no machine."""
    res = Results(path=folder.path, paths=[folder.path], folder=folder)
    res.benchmarks = _read_benchmarks(folder, res)
    for loaded in folder.machines.values():
        machine = _read_machine(loaded, res.benchmarks, res)
        if machine is not None:
            res.machines[machine.name] = machine
    if not res.machines:
        raise BadInput(f"no asv results in {folder.path} (expected <machine>/machine.json and result files)")
    return res


def read_results(path: str | Path) -> Results:
    """Read ``path`` (asv's results_dir), each file once (:func:`roofline.suite.asv_files.load`). BadInput if it is
    missing, not a folder, or holds no machine."""
    return results_of(asv_files.load(path))


def read_gallery(results: Path | None) -> Results | None:
    """The folder ``decode --hardware NAME`` finds recorded machines in: ``results`` (BadInput when it is no folder),
    else :data:`GALLERY` where a checkout has it; None when the folder holds no machine."""
    folder = GALLERY if results is None else Path(results)
    if results is not None and not folder.is_dir():
        raise BadInput(f"--results {folder}: no such results folder")
    if not folder.is_dir() or not any((p / asv_files.MACHINE_FILE).is_file() for p in folder.iterdir()):
        return None
    return read_results(folder)


# ---- several folders as one, across benchmark versions -------------------------------------------


def meaning(benchmark: str, version: str | None) -> str | None:
    """What ``benchmark`` measured at ``version`` where that is not what it measures now
    (:data:`~roofline.suite.names.RETIRED_MEANINGS`); None for the current meaning."""
    return RETIRED_MEANINGS.get(benchmark, {}).get(version[:16]) if version else None


def _join_runs(first: Run, other: Run, where: str) -> Run:
    """One commit of one machine found in two folders: one run, or BadInput where a value differs.

    Values are compared environment by environment (asv keeps one file per machine, commit and
    environment); what only ``other`` holds is added.
    """
    for env in first.envs.keys() & other.envs.keys():
        a, b = first.envs[env].values, other.envs[env].values
        for name in a.keys() & b.keys():
            for key in a[name].keys() & b[name].keys():
                x, y = a[name][key], b[name][key]
                if x is not None and y is not None and x != y:
                    params = ", ".join(f"{n}={v}" for n, v in zip(first.param_names.get(name, ()), key, strict=False))
                    raise BadInput(
                        f"conflict: machine {first.machine} at commit {first.commit[:8]} ({env}): {name}"
                        f"{f' ({params})' if params else ''} is {x:g} in one folder but {y:g} in {where}: "
                        "the same machine, commit and benchmark with different values; compare one of them"
                    )
    run = dataclasses.replace(
        first,
        files=[*first.files, *(f for f in other.files if f not in first.files)],
        envs={**other.envs, **first.envs},
        suite={**other.suite, **first.suite},
    )
    for attr in ("values", "recorded", "versions", "param_names", "samples", "stats"):
        setattr(run, attr, {**getattr(other, attr), **getattr(first, attr)})
    return run


def latest_by_version(res: Results) -> dict[str, int]:
    """benchmark → the latest commit date of a result recorded under benchmarks.json's version of it."""
    latest: dict[str, int] = {}
    for machine in res.machines.values():
        for run in machine.runs.values():
            for name, version in run.versions.items():
                bench = res.benchmarks.get(name)
                measured = any(v is not None for v in run.recorded.get(name, {}).values())
                if bench is not None and version in (None, bench.version) and measured:
                    latest[name] = max(latest.get(name, 0), run.date or 0)
    return latest


def combine(parts: Sequence[Results]) -> Results:
    """Several results folders as one, each run keeping the suite (benchmarks.json) of its own folder.

    The reference suite (:attr:`Results.benchmarks`) holds each benchmark's definition of the version
    recorded latest, as ``roofline merge`` keeps it (the first folder's on a tie). A machine in several
    folders is one machine where its identity keys (arch, cpu, cores, memory) agree, and one commit of
    it one run where every value both hold is equal (BadInput otherwise, naming the first difference).
    Machines that share a name but not an identity (two VMs of one CPU model: results are filed under what
    a machine is) stand side by side, the later one named ``name [its folder]``, with a warning.
    """
    if len(parts) == 1:
        return parts[0]
    out = Results(path=parts[0].path, paths=[p for r in parts for p in r.paths])
    out.benchmarks_problem = parts[0].benchmarks_problem
    newest: dict[str, int] = {}
    latest = [latest_by_version(r) for r in parts]
    for r, when in zip(parts, latest, strict=True):
        for name, bench in r.benchmarks.items():
            seen = out.benchmarks.get(name)
            if seen is None or when.get(name, 0) > newest.get(name, 0):
                out.benchmarks[name], newest[name] = bench, when.get(name, 0)
    found: dict[str, Path] = {}
    for r in parts:
        out.warnings += r.warnings
        out.version_notes += r.version_notes
        for name, m in r.machines.items():
            have = out.machines.get(name)
            if have is None:
                out.machines[name], found[name] = MachineResults(name, dict(m.info), dict(m.runs)), r.path
                continue
            a, b = identity(have.info), identity(m.info)
            differ = [k for k in a.keys() & b.keys() if a[k] != b[k]]
            if differ:  # two machines of one model (a gallery name): side by side, the later one labelled
                k, label = differ[0], f"{name} [{r.path}]"
                out.warnings.append(
                    f"two machines are named {name}: {k} {a[k]!r} in {found[name]}, {b[k]!r} in {r.path}; the one "
                    f"in {r.path} is shown as {label!r}"
                )
                out.machines[label], found[label] = MachineResults(label, dict(m.info), dict(m.runs)), r.path
                continue
            for commit, run in m.runs.items():
                old = have.runs.get(commit)
                have.runs[commit] = run if old is None else _join_runs(old, run, str(r.path))
            have.info = {**m.info, **have.info}
    out.machines = dict(sorted(out.machines.items()))
    return out
