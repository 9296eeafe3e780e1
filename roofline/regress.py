"""``roofline regress BEFORE AFTER``: the regression check in one command, every benchmark the right way round.

Both commits are built and benchmarked by asv in its own virtualenv (``make bench``'s), their rounds
interleaved (``asv run --interleave-rounds``: with two rounds, after, before, before, after), so a slow
minute of a shared machine lands on both; then the gate (:func:`roofline.report.gate.compare_commits`)
reads what this run recorded, GFLOP/s and GB/s higher-is-better and seconds lower-is-better, which
``asv continuous`` cannot (asv reads every number as lower-is-better).

It stays small: each asv round of a commit measures the run once (the decode classes' ``setup_cache``),
so by default only the code's figures that read that measurement run, :data:`DEFAULT_BENCH` (the decode
points' tracks and their ``time_`` twins), at the combinations the ``ROOFLINE_*`` variables choose,
in :data:`ROUNDS` rounds: four measurements in all, where ``asv continuous`` at asv's three rounds made
six for the ``time_`` benchmarks alone. ``--bench`` widens it (``--bench ''``: the whole suite).

Exit 0: no regression of the code; 1: a regression (or a benchmark failed); 2: bad input; 3: the machine
was busy before or during the run (the gate is printed, its figures flagged); 130/143: stopped.
"""

from __future__ import annotations

import itertools
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from . import asv_driver
from .asv_driver import RESULTS
from .errors import EXIT_BUSY, BadInput, Interrupted, busy_exit
from .interrupt import signals_raise
from .suite.asv_files import MachineFolder, ResultsFolder
from .suite.params import quick
from .suite.preflight import preflight

if TYPE_CHECKING:
    from .report.gate import CommitComparison

#: What ``roofline regress`` runs unless ``--bench`` says otherwise: every figure of the code that reads the
#: run's one measurement (the decode classes: GFLOP/s, GB/s, roofline fraction and the ``time_`` twins). Each
#: benchmark asv runs is a process per combination and round (about half a second here): the ceilings and
#: conditions, figures of the machine the gate never fails on, would add 26 a round.
DEFAULT_BENCH = r"^decode\."
#: asv rounds per commit, interleaved: beside two busy processes a single round per commit once read a 2×
#: slowdown as +6 % (the README's "asv by hand").
ROUNDS = 2


def selected_names(benchmarks: dict, regexes: Sequence[str]) -> set[str]:
    """The benchmarks of benchmarks.json that asv runs for ``--bench`` ``regexes`` (any combination matching,
    ``name(param, ...)`` as asv matches it)."""
    compiled = [re.compile(r) for r in regexes]
    out = set()
    for name, bench in benchmarks.items():
        params = [list(p) for p in bench.raw.get("params") or []]
        labels = [f"{name}({', '.join(c)})" for c in itertools.product(*params)] if params else [name]
        if not compiled or any(r.search(label) for r in compiled for label in labels):
            out.add(name)
    return out


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60)} s" if seconds >= 60 else f"{seconds:.0f} s"


@dataclass(frozen=True)
class Regression:
    """What ``roofline regress`` found, for the command to show. ``status``: the exit status. ``gate``: the two
    commits compared, with the results' ``warnings`` (None where the run stopped before the gate: a busy machine,
    nothing measured, a signal). ``closing``: the lines that end the run (its time, failures, contention)."""

    status: int
    gate: CommitComparison | None = None
    warnings: list[str] = field(default_factory=list)
    closing: list[str] = field(default_factory=list)


def run_regress(
    before: str,
    after: str,
    results: Path = RESULTS,
    machine: str | None = None,
    bench: str | None = DEFAULT_BENCH,
    rounds: int = ROUNDS,
    allow_busy: bool = False,
    threshold: float | None = None,
    requirements: Sequence[Path] | Path | None = None,
) -> Regression:
    """Benchmark ``before`` and ``after`` (git revisions) in turn with asv, then gate them."""
    a, b = _commits(before, after, rounds, requirements)
    stage, folder, snap = ["preflight"], results, MachineFolder(results.name, results)
    start = time.monotonic()
    with signals_raise():
        try:
            for line in preflight(results):
                print(f"roofline: {line}")
            stage[0] = "the contention check"
            busy = asv_driver.busy_before(allow_busy)
            if busy is not None:
                return Regression(busy)
            stage[0] = "the machine file"
            from .host import gpu_facts
            from .suite.machine_file import asv_machine_name, register

            machine = register(asv_machine_name(machine), gpu=gpu_facts())[0]  # where asv by hand files it too
            folder = results / machine
            snap = asv_driver.snapshot(results).machine(machine)
            regexes = asv_driver.asv_selection(bench)
            version, asv_rc, lost = _run_both(a, b, machine, rounds, regexes, requirements, stage)
            after = asv_driver.snapshot(results)  # read once: what asv wrote, and the gate's figures
            if asv_rc != 0 and not asv_driver.measured_anything(after.machine(machine), snap):
                print(f"roofline: {asv_driver.NOTHING_MEASURED}", file=sys.stderr)
                return Regression(1)
            stage[0] = "the gate"
            cmp, warnings = _gate(after, a, b, machine, version, regexes, threshold)
        except Interrupted as exc:
            print(f"roofline: {exc} during {stage[0]}", file=sys.stderr)
            print(f"roofline: {asv_driver.kept_results(folder, snap)}", file=sys.stderr)
            return Regression(exc.exit_code)
    closing = [f"regress took {_minutes(time.monotonic() - start)}: 2 commits × {rounds} round(s) of asv"]
    status = 1 if cmp.regressed else 0
    if asv_rc != 0:
        closing.append("some benchmarks failed (see above): exit 1 at least")
        status = max(status, 1)
    status = _busy_after(lost, allow_busy, status, closing)
    return Regression(status, cmp, warnings, closing)


def _commits(before: str, after: str, rounds: int, requirements: Sequence[Path] | Path | None) -> tuple[str, str]:
    """The two commits' hashes; BadInput in one line where regress cannot compare them here."""
    try:
        import asv  # noqa: F401
    except ImportError:
        raise BadInput("roofline regress needs asv: pip install 'roofline[bench]'") from None
    from .suite.revisions import commit_of

    a, b = commit_of(before), commit_of(after)
    if a == b:
        raise BadInput(f"{before!r} and {after!r} are the same commit ({a[:8]})")
    if rounds < 1:
        raise BadInput(f"--rounds must be at least 1, got {rounds}")
    if quick():
        raise BadInput("regress gates the time_ twins, which a quick look leaves out: unset ROOFLINE_QUICK (QUICK=1)")
    asv_driver.check_requirements(requirements, False)
    return a, b


def _run_both(
    a: str, b: str, machine: str, rounds: int, regexes: list[str], requirements, stage: list[str]
) -> tuple[str, int, float | None]:
    """asv run of both commits in asv's virtualenv, rounds interleaved: (Python version, asv's exit status, the
    share of CPU time others took meanwhile)."""
    with tempfile.TemporaryDirectory(prefix="roofline-regress-") as tmp:
        version, env = asv_driver.asv_virtualenv(Path(tmp), requirements, stage)
        commits = Path(tmp) / "commits.txt"
        commits.write_text(f"{a}\n{b}\n")
        run = ["run", "--show-stderr", "--record-samples", "--machine", machine, f"--python={version}"]
        run += [*asv_driver.launch_method(), "-a", f"rounds={rounds}", "--interleave-rounds"]
        run += [f"HASHFILE:{commits}", *regexes]
        stage[0] = "asv run"
        rc, lost = asv_driver.run_asv_watched(*run, env=env)
    return version, rc, lost


def _gate(
    results: ResultsFolder, a: str, b: str, machine: str, version: str, regexes: list[str], threshold: float | None
) -> tuple[CommitComparison, list[str]]:
    """The gate on what this run recorded (this machine, asv's virtualenv, the benchmarks it ran), with the
    warnings of reading it."""
    from .report import gate
    from .suite.results import results_of
    from .suite.revisions import env_names

    res = results_of(results)
    names = selected_names(res.benchmarks, regexes[1::2])
    env = next(iter(env_names(version)))
    cmp = gate.compare_commits(
        res, a, b, machines=[machine], threshold=threshold or gate.DEFAULT_THRESHOLD, envs=[env], names=names
    )
    return cmp, res.warnings + cmp.warnings


def _busy_after(lost: float | None, allow_busy: bool, status: int, closing: list[str]) -> int:
    """``status``, or :data:`EXIT_BUSY` where others took the machine during the run (unless ``allow_busy``);
    the line that says so goes to ``closing``."""
    from .model.conditions import Conditions

    reasons = Conditions(lost_share=lost).reasons()
    busy = busy_exit(status, bool(reasons), allow_busy)
    if not reasons:
        return status
    line = f"measured under contention ({'; '.join(reasons)}): the gate's figures are not this machine's"
    if allow_busy:
        closing.append(f"{line} (--allow-busy)")
    else:
        closing.append(f"{line}; rerun on a quiet machine (--allow-busy accepts them): exit {EXIT_BUSY}")
    return busy
