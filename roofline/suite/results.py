"""Reading an asv results directory (asv 0.6 format) without asv, tolerant of bad files.

Nothing here ever writes to the directory. A file that cannot be read is skipped with a
warning; a benchmark that failed (asv stores null), was skipped (NaN) or comes from another
version of the suite than ``benchmarks.json`` describes reads as None ("n/a"), as asv publish
shows it; :attr:`Run.recorded` keeps the last kind with the version that recorded it, for
``roofline compare``, which sets machines side by side across versions (:func:`combine`).

API::

    res = read_results("results/")            # BadInput (exit 2) if missing or no machine in it
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
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from ..measure.ceilings import CEILING_KERNEL, roof_kernel
from .machine_file import IDENTITY_KEYS
from .names import BANDWIDTH_CEILING, LEVEL_BANDWIDTH, RETIRED_MEANINGS

#: asv 0.6's format versions of a result file and of benchmarks.json.
RESULT_API_VERSION = 2
BENCHMARKS_API_VERSION = 2

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


def _load_json(path: Path) -> tuple[object, str | None]:
    """(data, None) or (None, one-line reason)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return None, f"cannot read it ({exc.strerror or exc})"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    if not text.strip():
        return None, "empty file"
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}; truncated?)"


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
        """(kernel, GB/s) of the bandwidth roof this run recorded (:func:`~roofline.measure.ceilings.roof_kernel`)."""
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


def _read_benchmarks(path: Path, res: Results) -> dict[str, Benchmark]:
    file, warnings = path / "benchmarks.json", res.warnings
    if not file.exists():
        res.benchmarks_problem = f"{file}: missing"
        warnings.append(f"{file}: missing; parameter names unknown and suite versions not checked")
        return {}
    data, problem = _load_json(file)
    if problem is None and not isinstance(data, dict):
        problem = "not a JSON object"
    if problem is None and data.get("version") != BENCHMARKS_API_VERSION:
        problem = f"format version {data.get('version')!r}, expected {BENCHMARKS_API_VERSION}"
    if problem:
        res.benchmarks_problem = f"{file}: {problem}"
        warnings.append(f"{file}: skipped: {problem}; parameter names unknown")
        return {}
    out = {}
    for name, b in data.items():
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


def _env_name(file: Path, data: dict) -> str:
    """asv's environment name of a result file: its ``env_name``, else the file name after the hash."""
    name = data.get("env_name")
    if isinstance(name, str) and name:
        return name
    return file.stem.split("-", 1)[1] if "-" in file.stem else file.stem


def _column(cols: dict[str, object], name: str, count: int) -> list[object]:
    """One per-combination column of a row (asv trims trailing empty columns): ``count`` entries."""
    column = cols.get(name)
    return column if isinstance(column, list) and len(column) == count else [None] * count


def _add_file(run: Run, file: Path, data: dict, benchmarks: dict[str, Benchmark], res: Results) -> None:
    warnings = res.warnings
    columns = data.get("result_columns")
    results = data.get("results")
    if not isinstance(columns, list) or not isinstance(results, dict):
        warnings.append(f"{file}: skipped: no result_columns/results (not an asv 0.6 result file?)")
        return
    params = data["params"] if isinstance(data.get("params"), dict) else {}
    env = EnvRun(env=_env_name(file, data), file=file.name, params=params)
    if env.env in run.envs:  # two files of one environment at one commit: keep the first, as the merge does
        warnings.append(f"{file}: a second file of environment {env.env!r} at this commit; its values are merged")
    else:
        run.envs[env.env] = env
    failed, stale, malformed = [], [], []
    for name, row in results.items():
        if not isinstance(row, list):
            malformed.append(name)
            continue
        cols = dict(zip(columns, row, strict=False))
        params = cols.get("params") or []
        result = cols.get("result")
        bench = benchmarks.get(name)
        try:
            keys = [tuple(parse_param(v) for v in combo) for combo in itertools.product(*params)]
        except TypeError:
            malformed.append(name)
            continue
        if result is None:
            result = [None] * len(keys)
        if not isinstance(result, list) or len(result) != len(keys):
            malformed.append(name)
            continue
        version = cols.get("version") if isinstance(cols.get("version"), str) else None
        run.versions.setdefault(name, version or (bench.version if bench is not None else None))
        recorded = result
        if bench is not None and bench.version is not None and version not in (None, bench.version):
            stale.append(name)
            result = [None] * len(keys)
        if bench is not None and len(bench.param_names) == len(params):
            names = bench.param_names
        else:
            names = tuple(f"param{i + 1}" for i in range(len(params)))
        values = run.values.setdefault(name, {})
        kept = run.recorded.setdefault(name, {})
        run.param_names.setdefault(name, names)
        stats = {s: _column(cols, f"stats_{s}", len(keys)) for s in STATS}
        samples = _column(cols, "samples", len(keys))
        for i, (key, raw, raw_kept) in enumerate(zip(keys, result, recorded, strict=True)):
            value = _number(raw)
            if raw is None and name not in stale:  # asv's null: it failed; NaN: skipped on purpose
                failed.append(name)
            if values.get(key) is None:  # another environment's file may hold the value
                values[key] = value
            if kept.get(key) is None:
                kept[key] = _number(raw_kept)
            got = {s: _stat(stats[s][i]) for s in STATS}
            finite = [x for x in map(_number, samples[i]) if x is not None] if isinstance(samples[i], list) else []
            if _number(raw_kept) is not None:
                if all(v is not None for v in got.values()):
                    run.stats.setdefault(name, {}).setdefault(key, got)  # type: ignore[arg-type]
                if finite:
                    run.samples.setdefault(name, {}).setdefault(key, finite)
            if run.envs.get(env.env) is not env:
                continue
            env.values.setdefault(name, {})[key] = value
            if value is None:
                continue
            if all(v is not None for v in got.values()):
                env.stats.setdefault(name, {})[key] = got  # type: ignore[assignment]
            if finite:
                env.samples.setdefault(name, {})[key] = finite
    if failed:
        uniq = sorted(set(failed))
        warnings.append(f"{file}: {len(failed)} value(s) failed, shown as n/a ({', '.join(uniq)})")
    if stale:
        note = (
            f"{file}: {len(stale)} benchmark(s) from another suite version than benchmarks.json, "
            f"which asv publish and the gate leave out ({', '.join(sorted(stale))})"
        )
        warnings.append(note)
        res.version_notes.append(note)
    if malformed:
        warnings.append(f"{file}: {len(malformed)} malformed benchmark row(s) ignored ({', '.join(sorted(malformed))})")


def _read_machine(folder: Path, benchmarks: dict[str, Benchmark], res: Results) -> MachineResults | None:
    warnings = res.warnings
    machine = MachineResults(name=folder.name)
    info_file = folder / "machine.json"
    data, problem = _load_json(info_file) if info_file.exists() else (None, "missing")
    if problem is None and not isinstance(data, dict):
        problem = "not a JSON object"
    if problem:
        warnings.append(f"{info_file}: {problem}; machine details unknown")
    else:
        machine.info = {k: v for k, v in data.items() if k != "version"}
    result_files = sorted(p for p in folder.glob("*.json") if p.name != "machine.json" and not p.name.startswith("."))
    for file in result_files:
        data, problem = _load_json(file)
        if problem is None and not isinstance(data, dict):
            problem = "not a JSON object"
        if problem is None and data.get("version") != RESULT_API_VERSION:
            problem = f"asv result format version {data.get('version')!r}, expected {RESULT_API_VERSION} (`asv update`)"
        commit = data.get("commit_hash") if problem is None else None
        if problem is None and not (isinstance(commit, str) and commit):
            problem = "no commit_hash"
        if problem:
            warnings.append(f"{file}: skipped: {problem}")
            continue
        run = machine.runs.setdefault(commit, Run(machine=machine.name, commit=commit, suite=benchmarks))
        run.files.append(file.name)
        if isinstance(data.get("date"), int | float):
            run.date = int(data["date"])
        if isinstance(data.get("params"), dict):
            run.params = {**data["params"], **run.params}
        _add_file(run, file, data, benchmarks, res)
    if not machine.runs and not machine.info:
        return None
    if not machine.runs:
        warnings.append(f"{folder}: machine.json but no readable result file")
    return machine


def read_results(path: str | Path) -> Results:
    """Read ``path`` (asv's results_dir). BadInput if it is missing, not a folder, or holds no machine."""
    path = Path(path)
    if not path.exists():
        raise BadInput(f"results directory {path} does not exist")
    if not path.is_dir():
        raise BadInput(f"{path} is not a directory (give asv's results directory, e.g. .asv/results)")
    res = Results(path=path, paths=[path])
    res.benchmarks = _read_benchmarks(path, res)
    try:
        folders: Iterable[Path] = sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise BadInput(f"cannot list {path}: {exc.strerror or exc}") from None
    for folder in folders:
        machine = _read_machine(folder, res.benchmarks, res)
        if machine is not None:
            res.machines[machine.name] = machine
    if not res.machines:
        raise BadInput(f"no asv results in {path} (expected <machine>/machine.json and result files)")
    return res


# ---- several folders as one, across benchmark versions -------------------------------------------


def meaning(benchmark: str, version: str | None) -> str | None:
    """What ``benchmark`` measured at ``version`` where that is not what it measures now
    (:data:`~roofline.suite.names.RETIRED_MEANINGS`); None for the current meaning."""
    return RETIRED_MEANINGS.get(benchmark, {}).get(version[:16]) if version else None


def same_quantity(a: Benchmark, b: Benchmark) -> bool:
    """Two definitions of one benchmark record the same quantity: one unit, one list of parameter names
    (their values may differ), versions that mean the same thing."""
    return (a.unit, a.param_names, meaning(a.name, a.version)) == (b.unit, b.param_names, meaning(b.name, b.version))


def _identity(info: dict[str, object]) -> dict[str, str]:
    return {k: str(info[k]) for k in IDENTITY_KEYS if str(info.get(k, "")).strip()}


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
            a, b = _identity(have.info), _identity(m.info)
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
