"""``roofline compare --commits``: two commits the right way round, the CI gate asv cannot give.

:func:`compare_commits` reads throughput (GFLOP/s, GB/s, fractions) as higher-is-better and time
as lower-is-better, which asv cannot, and marks changes beyond a threshold as regressions or
improvements. Missing benchmarks read as n/a; nothing is written.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..errors import BadInput
from ..suite.results import Benchmark, Results
from ..units import NA, si, sig, table
from .compare import select_machines

DEFAULT_THRESHOLD = 0.10


def direction(name: str, bench: Benchmark | None) -> str | None:
    """'higher' or 'lower' is better for this benchmark, or None when neither (e.g. a crossover batch)."""
    short = name.rsplit(".", 1)[-1]
    kind = bench.type if bench and bench.type else short.split("_", 1)[0]
    unit = bench.unit if bench else ""
    if kind in ("time", "mem", "peakmemory"):
        return "lower"
    if "crossover" in short:
        return None
    if unit.endswith("/s") or "fraction" in short:
        return "higher"
    if not unit and any(word in short for word in ("gflops", "bandwidth", "ceiling")):
        return "higher"
    return None


@dataclass(frozen=True)
class Change:
    """One benchmark at one parameter combination, before and after."""

    machine: str
    benchmark: str
    params: dict[str, object]
    unit: str
    before: float | None
    after: float | None
    better: str | None
    verdict: str  # "regression", "improvement", "same", "changed" (no direction), "n/a"

    @property
    def change(self) -> float | None:
        if self.before is None or self.after is None or self.before == 0:
            return None
        return self.after / self.before - 1

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "change": self.change}


def judge(before: float | None, after: float | None, better: str | None, threshold: float) -> str:
    """The verdict on one change, the right way round for its direction."""
    if before is None or after is None or before <= 0:
        return "n/a"
    change = after / before - 1
    if abs(change) <= threshold:
        return "same"
    if better is None:
        return "changed"
    worse = change < 0 if better == "higher" else change > 0
    return "regression" if worse else "improvement"


@dataclass
class CommitComparison:
    before: str
    after: str
    threshold: float
    changes: list[Change]
    machines: list[str]
    warnings: list[str]

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.changes)

    @property
    def regressed(self) -> bool:
        return self.count("regression") > 0

    def as_dict(self) -> dict[str, object]:
        return {
            "before": self.before,
            "after": self.after,
            "threshold": self.threshold,
            "machines": self.machines,
            "regressions": self.count("regression"),
            "improvements": self.count("improvement"),
            "changes": [c.as_dict() for c in self.changes],
            "warnings": self.warnings,
        }


def compare_commits(
    results: Results, before: str, after: str, machines: list[str] | None = None, threshold: float = DEFAULT_THRESHOLD
) -> CommitComparison:
    """Every benchmark value of ``before`` against ``after`` (hash prefixes) on each chosen machine."""
    if not threshold > 0:
        raise BadInput(f"threshold must be positive, got {threshold!r}")
    warnings: list[str] = []
    chosen = select_machines(results, machines, warnings)
    pool = Results(path=results.path, benchmarks=results.benchmarks, machines={m.name: m for m in chosen})
    a, b = pool.resolve_commit(before), pool.resolve_commit(after)
    changes: list[Change] = []
    compared = []
    for m in chosen:
        missing = [c[:8] for c in (a, b) if c not in m.runs]
        if missing:
            warnings.append(f"machine {m.name}: no results for commit {', '.join(missing)}; not compared")
            continue
        compared.append(m.name)
        ra, rb = m.runs[a], m.runs[b]
        one_sided = sorted(set(ra.values) ^ set(rb.values))
        if one_sided:
            warnings.append(
                f"machine {m.name}: {len(one_sided)} benchmark(s) recorded at only one of the commits, "
                f"not compared ({', '.join(one_sided)})"
            )
        for name in sorted(set(ra.values) & set(rb.values)):
            bench = results.benchmarks.get(name)
            better = direction(name, bench)
            unit = bench.unit if bench else ""
            keys = list(dict.fromkeys([*ra.values.get(name, {}), *rb.values.get(name, {})]))
            names = ra.param_names.get(name) or rb.param_names.get(name) or ()
            for key in keys:
                x, y = ra.values.get(name, {}).get(key), rb.values.get(name, {}).get(key)
                if x is None and y is None:  # skipped or failed at both: nothing to compare
                    continue
                params = dict(zip(names, key, strict=False))
                changes.append(Change(m.name, name, params, unit, x, y, better, judge(x, y, better, threshold)))
    if not compared:
        raise BadInput(f"no machine has results for both {a[:8]} and {b[:8]}: " + "; ".join(warnings))
    return CommitComparison(a, b, threshold, changes, compared, warnings)


def _value(v: float | None, unit: str) -> str:
    if v is None:
        return NA
    if unit == "seconds":
        return si(v, "s")
    return f"{sig(v)} {unit}".rstrip() if unit and unit != "unit" else sig(v)


def format_commits(cmp: CommitComparison) -> str:
    """The table ``roofline compare --commits`` prints, and a one-line verdict per machine."""
    head = [
        f"commits {cmp.before[:8]} → {cmp.after[:8]}, threshold {cmp.threshold:.0%} "
        "(GFLOP/s, GB/s and fractions: higher is better; time: lower is better)"
    ]
    rows = [["machine", "benchmark", "params", "before", "after", "change", "verdict"]]
    for c in cmp.changes:
        params = " ".join(f"{k}={v}" for k, v in c.params.items()) or "-"
        change = f"{c.change:+.1%}" if c.change is not None else NA
        verdict = c.verdict.upper() if c.verdict in ("regression", "improvement") else c.verdict
        if c.verdict in ("regression", "improvement") and c.better:
            verdict += f" ({c.better} is better)"
        rows.append(
            [c.machine, c.benchmark, params, _value(c.before, c.unit), _value(c.after, c.unit), change, verdict]
        )
    lines = head + table(rows, right={3, 4, 5})
    for m in cmp.machines:
        mine = [c for c in cmp.changes if c.machine == m]
        counts = {v: sum(c.verdict == v for c in mine) for v in ("regression", "improvement", "same", "changed", "n/a")}
        lines.append(
            f"{m}: {counts['regression']} regression(s), {counts['improvement']} improvement(s), "
            f"{counts['same']} within {cmp.threshold:.0%}, {counts['changed']} changed without a direction, "
            f"{counts['n/a']} n/a"
        )
    lines.append("REGRESSION: exit 1" if cmp.regressed else "no regression beyond the threshold")
    return "\n".join(lines)
