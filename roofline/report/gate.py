"""``roofline compare --commits``: two commits the right way round, the CI gate asv cannot give.

:func:`compare_commits` reads every benchmark in the direction its unit has (time down is better,
throughput and fractions up), which asv cannot: asv reads every number as lower-is-better. Commits are
named as git names them (``HEAD~1``, a tag, a hash prefix: :func:`resolve`). Per machine, each side
comes from one asv environment, named in the output; where a commit was recorded in several
(``asv run --python=same`` beside asv's virtualenv) the one both commits share that this interpreter's
runs use is read, and the output says so (:func:`~roofline.suite.revisions.env_names`); ``envs`` picks
another. A change beyond the threshold is a regression or an improvement when a
significance test agrees, or when there are no samples to test: asv's own test, from asv's
statistics module (Mann-Whitney U at p < 0.002 on the raw samples of ``asv run
--record-samples``, else non-overlapping 99 % confidence intervals), so the gate and ``asv
compare`` agree on what is noise. The machine's own figures (its ceilings and the crossover batch
they set) are reported apart: they move with the machine, not the code, and never fail the gate.
Missing benchmarks read as n/a; nothing is written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from types import ModuleType

from ..errors import BadInput
from ..suite.names import MACHINE_FIGURES
from ..suite.results import Benchmark, EnvRun, MachineResults, Results, Run
from ..suite.revisions import resolve_revision
from ..units import NA, better, si, sig, table
from .summary import select_machines

DEFAULT_THRESHOLD = 0.10
#: asv's significance level (``asv._stats.is_different``'s default).
P_THRESHOLD = 0.002
SCHEMA = "roofline.gate/1"


def direction(name: str, bench: Benchmark | None) -> str | None:
    """'higher' or 'lower' is better for this benchmark, by its type and unit; None when neither."""
    short = name.rsplit(".", 1)[-1]
    kind = bench.type if bench and bench.type else short.split("_", 1)[0]
    unit = bench.unit if bench else ""
    if kind in ("time", "mem", "peakmemory"):
        return "lower"
    if better(unit):
        return better(unit)
    if not unit.strip() and any(word in short for word in ("gflops", "bandwidth", "fraction")):
        return "higher"
    return None


def is_machine_figure(name: str) -> bool:
    """A benchmark of the machine (ceilings, crossover batch), not of the code."""
    return name.startswith(MACHINE_FIGURES)


def _asv_stats() -> ModuleType | None:
    try:
        from asv import _stats  # asv's statistics: the test `asv compare` and `asv continuous` apply
    except ImportError:
        return None
    return _stats


@dataclass(frozen=True)
class Significance:
    """Whether before and after differ beyond noise: ``significant`` None when it cannot be told."""

    significant: bool | None
    p: float | None
    test: str  # "Mann-Whitney U", "99% CI", "no samples", "asv not installed"


def significance(
    samples_a: list[float] | None,
    samples_b: list[float] | None,
    stats_a: dict[str, float] | None,
    stats_b: dict[str, float] | None,
) -> Significance:
    """asv 0.6.6's own test (``asv._stats.is_different``), with the p-value it decides on.

    Raw samples on both sides, enough for the test to reach p < 0.002: Mann-Whitney U (ties broken
    conservatively). Else asv's 99 % confidence intervals: apart is significant. Else nothing to test.
    """
    stats = _asv_stats()
    if stats is None:
        return Significance(None, None, "asv not installed")
    if samples_a and samples_b:
        p_min = 1 / stats.binom(len(samples_a) + len(samples_b), min(len(samples_a), len(samples_b)))
        if p_min < P_THRESHOLD:
            _, p = stats.mann_whitney_u(samples_a, samples_b)
            return Significance(bool(p < P_THRESHOLD), float(p), "Mann-Whitney U")
    if stats_a and stats_b:
        return Significance(bool(stats.is_different(None, None, stats_a, stats_b)), None, "99% CI")
    return Significance(None, None, "no samples")


@dataclass(frozen=True)
class Change:
    """One benchmark at one parameter combination, before and after, on one machine."""

    machine: str
    benchmark: str
    params: dict[str, object]
    unit: str
    before: float | None
    after: float | None
    better: str | None
    #: code: "regression", "improvement", "same", "not significant", "changed" (no direction), "n/a";
    #: the machine's figures: "changed", "same", "n/a"
    verdict: str
    of: str = "code"  # "code", or "machine" for its ceilings and crossover batch
    significant: bool | None = None
    p: float | None = None
    test: str = "no samples"

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None or self.before == 0:
            return None
        return self.after / self.before - 1

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "change": self.change}


def judge(
    before: float | None, after: float | None, better: str | None, threshold: float, significant: bool | None = None
) -> str:
    """The verdict on one change of the code, the right way round for its direction."""
    if before is None or after is None or before <= 0:
        return "n/a"
    change = after / before - 1
    if abs(change) <= threshold:
        return "same"
    if better is None:
        return "changed"
    if significant is False:
        return "not significant"
    worse = change < 0 if better == "higher" else change > 0
    return "regression" if worse else "improvement"


@dataclass(frozen=True)
class Sides:
    """The environment each side of one machine's comparison was read from."""

    machine: str
    before_env: str
    after_env: str
    before_file: str
    after_file: str
    #: machine keys whose values differ between the two result files: {key: [before, after]}
    keys_changed: dict[str, list[object]] = field(default_factory=dict)
    #: why this environment was read where the commits have several ("" where there was no choice)
    env_note: str = ""


@dataclass
class CommitComparison:
    before: str
    after: str
    threshold: float
    changes: list[Change]
    sides: list[Sides]
    warnings: list[str] = field(default_factory=list)

    @property
    def machines(self) -> list[str]:
        return [s.machine for s in self.sides]

    def code(self) -> list[Change]:
        return [c for c in self.changes if c.of == "code"]

    def machine_figures(self) -> list[Change]:
        return [c for c in self.changes if c.of == "machine"]

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.code())

    @property
    def regressed(self) -> bool:
        return self.count("regression") > 0

    def as_dict(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "before": self.before,
            "after": self.after,
            "threshold": self.threshold,
            "p_threshold": P_THRESHOLD,
            "machines": [asdict(s) for s in self.sides],
            "regressions": self.count("regression"),
            "improvements": self.count("improvement"),
            "regressed": self.regressed,
            "changes": [c.as_dict() for c in self.code()],
            "machine_figures": [c.as_dict() for c in self.machine_figures()],
            "warnings": self.warnings,
        }


def pick_env(run: Run, wanted: str | None, side: str, machine: str) -> EnvRun:
    """The one environment of ``run`` to read: the only one, or the one ``wanted`` names (exactly or by prefix).

    BadInput when the commit holds several and none is picked, or when ``wanted`` matches none or several.
    """
    names = sorted(run.envs)
    where = f"machine {machine}, {side} commit {run.commit[:8]}"
    if not names:
        raise BadInput(f"{where}: no readable result file")
    if wanted is None:
        if len(names) > 1:
            raise BadInput(
                f"{where} has results from {len(names)} environments ({', '.join(names)}): pick one with --env"
            )
        return run.envs[names[0]]
    hits = [n for n in names if n == wanted] or [n for n in names if n.startswith(wanted)]
    if len(hits) != 1:
        how = "several" if hits else "none"
        raise BadInput(f"--env {wanted!r} matches {how} of the environments of {where} ({', '.join(names)})")
    return run.envs[hits[0]]


def pick_shared(runs: tuple[Run, Run], preferred: dict[str, str]) -> tuple[str, str] | None:
    """(environment, why) for two commits with several environments between them and none asked for: the first
    of ``preferred`` ({name: what runs there}) both have, else the only one both have; None where neither is."""
    shared = set(runs[0].envs) & set(runs[1].envs)
    everything = set(runs[0].envs) | set(runs[1].envs)
    picks = [(n, f"the one {what} uses") for n, what in preferred.items() if n in shared]
    if not picks and len(shared) == 1:
        picks = [(next(iter(shared)), "the only one recorded at both commits")]
    if not picks:
        return None
    name, why = picks[0]
    return name, f"{why}; also recorded: {', '.join(sorted(everything - {name}))} (--env picks another)"


#: The class whose ``time_`` twin times a class's point where it has none of its own (the roofline fraction
#: is DecodeDRAM's GFLOP/s over the roof).
TWIN_CLASS = {"decode.DecodeRooflineFraction": "decode.DecodeDRAM"}
TWIN = "time_decode_step"


def _samples_test(ea: EnvRun, eb: EnvRun, name: str, key: tuple) -> Significance:
    return significance(
        ea.samples.get(name, {}).get(key),
        eb.samples.get(name, {}).get(key),
        ea.stats.get(name, {}).get(key),
        eb.stats.get(name, {}).get(key),
    )


def _tested(ea: EnvRun, eb: EnvRun, name: str, key: tuple, x, y, better: str | None) -> Significance:
    """asv's test on the benchmark's own samples; a track without any (a figure of the run's one measurement)
    borrows its point's ``time_`` twin's: the same step timed by asv at both commits, in rounds. A twin that
    moved the other way does not make the track's change significant."""
    own = _samples_test(ea, eb, name, key)
    cls, _, short = name.rpartition(".")
    if own.significant is not None or short == TWIN or x is None or y is None:
        return own
    twin = f"{TWIN_CLASS.get(cls, cls)}.{TWIN}"
    t = _samples_test(ea, eb, twin, key)
    tx, ty = ea.values.get(twin, {}).get(key), eb.values.get(twin, {}).get(key)
    if t.significant is None or tx is None or ty is None:
        return own
    slower, worse = ty > tx, (y < x if better == "higher" else y > x)
    return Significance(bool(t.significant and slower == worse), t.p, f"time_ twin's {t.test}")


def _compare_machine(
    results: Results,
    m: MachineResults,
    a: str,
    b: str,
    envs: tuple[str | None, str | None],
    threshold: float,
    warnings: list[str],
    preferred: dict[str, str] | None = None,
    only: set[str] | None = None,
) -> tuple[Sides, list[Change]]:
    note = ""
    runs = (m.runs[a], m.runs[b])
    if envs == (None, None) and max(len(runs[0].envs), len(runs[1].envs)) > 1:
        picked = pick_shared(runs, preferred or {})
        if picked is not None:
            envs, note = (picked[0], picked[0]), picked[1]
    ea = pick_env(m.runs[a], envs[0], "before", m.name)
    eb = pick_env(m.runs[b], envs[1], "after", m.name)
    if ea.env != eb.env:
        warnings.append(f"machine {m.name}: before and after come from different environments ({ea.env}, {eb.env})")
    if only is not None:
        ea = replace(ea, values={k: v for k, v in ea.values.items() if k in only})
        eb = replace(eb, values={k: v for k, v in eb.values.items() if k in only})
    one_sided = sorted(set(ea.values) ^ set(eb.values))
    if one_sided:
        warnings.append(
            f"machine {m.name}: {len(one_sided)} benchmark(s) recorded at only one of the commits, "
            f"not compared ({', '.join(one_sided)})"
        )
    names = m.runs[a].param_names | m.runs[b].param_names
    changes, undirected = [], set()
    for name in sorted(set(ea.values) & set(eb.values)):
        bench = results.benchmarks.get(name)
        better = direction(name, bench)
        unit = bench.unit if bench else ""
        of = "machine" if is_machine_figure(name) else "code"
        if better is None and of == "code":
            undirected.add(f"{name} ({unit or 'no unit'})")
        for key in dict.fromkeys([*ea.values[name], *eb.values[name]]):
            x, y = ea.values[name].get(key), eb.values[name].get(key)
            if x is None and y is None:  # skipped or failed at both: nothing to compare
                continue
            params = dict(zip(names.get(name, ()), key, strict=False))
            if of == "machine":
                verdict = judge(x, y, None, threshold)
                changes.append(Change(m.name, name, params, unit, x, y, better, verdict, of="machine"))
                continue
            s = _tested(ea, eb, name, key, x, y, better)
            verdict = judge(x, y, better, threshold, s.significant)
            changes.append(
                Change(m.name, name, params, unit, x, y, better, verdict, significant=s.significant, p=s.p, test=s.test)
            )
    if undirected:
        warnings.append(f"machine {m.name}: no direction for {', '.join(sorted(undirected))}: changes are not judged")
    keys = {k: [ea.params.get(k), eb.params.get(k)] for k in sorted(set(ea.params) | set(eb.params))}
    moved = {k: v for k, v in keys.items() if v[0] != v[1]}
    return Sides(m.name, ea.env, eb.env, ea.file, eb.file, moved, note), changes


def compare_commits(
    results: Results,
    before: str,
    after: str,
    machines: list[str] | None = None,
    threshold: float = DEFAULT_THRESHOLD,
    envs: list[str] | None = None,
    repo: Path | None = None,
    preferred: dict[str, str] | None = None,
    names: set[str] | None = None,
) -> CommitComparison:
    """Every benchmark value of ``before`` against ``after`` on each chosen machine; revisions as
    :func:`~roofline.suite.revisions.resolve_revision` reads them.

    ``envs``: one environment name (or prefix) for both sides, or two (before, after); without them, where a
    commit has results from several environments, the first of ``preferred`` ({name: what runs there}) both
    commits have. ``names``: only these benchmarks (what ``roofline regress`` just ran).
    """
    if not threshold > 0:
        raise BadInput(f"threshold must be positive, got {threshold!r}")
    if envs and len(envs) > 2:
        raise BadInput(f"--env goes once (both commits) or twice (before, after), got {len(envs)}")
    pair = (envs[0], envs[-1]) if envs else (None, None)
    warnings: list[str] = []
    chosen = select_machines(results, machines, warnings)
    pool = Results(path=results.path, benchmarks=results.benchmarks, machines={m.name: m for m in chosen})
    a, b = resolve_revision(pool, before, repo), resolve_revision(pool, after, repo)
    if a == b:
        raise BadInput(f"before and after are the same commit ({a[:8]})")
    changes: list[Change] = []
    sides = []
    for m in chosen:
        missing = [c[:8] for c in (a, b) if c not in m.runs]
        if missing:
            warnings.append(f"machine {m.name}: no results for commit {', '.join(missing)}; not compared")
            continue
        side, found = _compare_machine(results, m, a, b, pair, threshold, warnings, preferred, names)  # only names
        sides.append(side)
        changes += found
    if not sides:
        raise BadInput(f"no machine has results for both {a[:8]} and {b[:8]}: " + "; ".join(warnings))
    return CommitComparison(a, b, threshold, changes, sides, warnings)


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return NA
    if unit == "seconds":
        return si(v, "s")
    return f"{sig(v)} {unit}".rstrip() if unit and unit != "unit" else sig(v)


def _significance(c: Change) -> str:
    if c.p is not None:
        return f"{'twin ' if c.test.startswith('time_ twin') else ''}p={c.p:.2g}"
    if c.test == "99% CI" and c.significant is not None:
        return "CIs apart" if c.significant else "CIs overlap"
    return "-"


def format_commits(cmp: CommitComparison) -> str:
    """What ``roofline compare --commits`` prints: the code's changes, then the machine's, then a verdict."""
    lines = [
        f"commits {cmp.before[:8]} → {cmp.after[:8]}, threshold {cmp.threshold:.0%}, significance p < {P_THRESHOLD} "
        "(GFLOP/s, GB/s and fractions: higher is better; s and µs: lower is better)"
    ]
    for s in cmp.sides:
        env = s.before_env if s.before_env == s.after_env else f"{s.before_env} → {s.after_env}"
        why = f": {s.env_note}" if s.env_note else ""
        lines.append(f"machine {s.machine}: environment {env} ({s.before_file}, {s.after_file}){why}")
    rows = [["machine", "benchmark", "params", "before", "after", "change", "significance", "verdict"]]
    for c in cmp.code():
        verdict = c.verdict.upper() if c.verdict in ("regression", "improvement") else c.verdict
        if c.verdict in ("regression", "improvement") and c.better:
            verdict += f" ({c.better} is better)"
        rows.append([*_cells(c), _significance(c), verdict])
    lines += ["", "the code:"] + table(rows, right={3, 4, 5})
    figures = cmp.machine_figures()
    if figures:
        lines += ["", "the machine's figures (ceilings and crossover batch: they move with the machine, not the code):"]
        rows = [["machine", "benchmark", "params", "before", "after", "change", "verdict"]]
        rows += [[*_cells(c), c.verdict] for c in figures]
        lines += table(rows, right={3, 4, 5})
    for s in cmp.sides:
        if s.keys_changed:
            moved = ", ".join(f"{k} {v[0]!r} → {v[1]!r}" for k, v in s.keys_changed.items())
            lines.append(f"machine {s.machine}: its keys changed between the commits: {moved}")
    lines.append("")
    for m in cmp.machines:
        mine = [c for c in cmp.code() if c.machine == m]
        counts = {
            v: sum(c.verdict == v for c in mine)
            for v in ("regression", "improvement", "same", "not significant", "changed", "n/a")
        }
        moved = sum(c.verdict == "changed" for c in figures if c.machine == m)
        lines.append(
            f"{m}: {counts['regression']} regression(s), {counts['improvement']} improvement(s), "
            f"{counts['same']} within {cmp.threshold:.0%}, {counts['not significant']} beyond it but not significant, "
            f"{counts['changed']} changed without a direction, {counts['n/a']} n/a; "
            f"the machine's figures: {moved} moved beyond {cmp.threshold:.0%}"
        )
    lines.append("REGRESSION: exit 1" if cmp.regressed else "no regression of the code beyond the threshold")
    return "\n".join(lines)


def _cells(c: Change) -> list[str]:
    params = " ".join(f"{k}={v}" for k, v in c.params.items()) or "-"
    change = f"{c.change:+.1%}" if c.change is not None else NA
    return [c.machine, c.benchmark, params, _value(c.before, c.unit), _value(c.after, c.unit), change]
