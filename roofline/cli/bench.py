"""``roofline bench`` and ``roofline regress``: the commands that run asv (:mod:`roofline.bench`,
:mod:`roofline.regress`, their driver :mod:`roofline.asv_driver`); regress's gate is shown as compare's."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import BadInput
from .common import positive_int, threshold
from .compare import show_gate


def add_bench(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "bench", help="preflight, asv run, asv publish, then the report and plot (what `make bench` runs)"
    )
    p.add_argument(
        "--results",
        type=Path,
        help="asv results folder (default: asv.conf.json's, .asv/results; a quick look's, ROOFLINE_QUICK=1: "
        ".asv/quick/results)",
    )
    p.add_argument("--html", type=Path, help="asv html folder (default: .asv/html; a quick look's: .asv/quick/html)")
    p.add_argument("--machine", help="the name results are filed under (default: what it is: CPU, core, cores, LLC)")
    p.add_argument(
        "--python-same",
        action="store_true",
        help="run in this Python environment (asv run --python=same) instead of asv's own virtualenv",
    )
    p.add_argument("--bench", metavar="REGEX", help="only benchmarks matching REGEX (asv run --bench)")
    p.add_argument(
        "--allow-busy",
        action="store_true",
        help="measure even when other processes take the CPUs (the run is flagged; exit 0 instead of 3); "
        "ROOFLINE_ALLOW_BUSY=1 alike",
    )
    p.add_argument(
        "--asv-env-requirements",
        type=Path,
        action="append",
        metavar="FILE",
        help="pip-install FILE's requirements into asv's virtualenv first, each FILE on its own (make bench: torch "
        "and transformers for models.ModelDecode, llama.cpp for engines.LlamaCppDecode); if one does not "
        "install, what needs it skips",
    )
    p.add_argument(
        "--gallery",
        type=Path,
        metavar="DIR",
        help="make gallery: a full default run filed under what the machine is (CPU, cores, LLC; --machine to "
        "choose), merged into DIR (examples/results) when it ran clean",
    )
    p.add_argument("--trial", action="store_true", help="with --gallery: accept smaller sizes (ROOFLINE_N, ...)")


def run_bench(args: argparse.Namespace) -> int:
    from ..asv_driver import allow_busy_from
    from ..bench import run_bench

    if args.trial and args.gallery is None:
        raise BadInput("--trial goes with --gallery")

    return run_bench(
        args.results,
        args.html,
        args.machine,
        args.python_same,
        args.bench,
        allow_busy_from(args.allow_busy),
        args.asv_env_requirements,
        args.gallery,
        args.trial,
    )


def add_regress(sub: argparse._SubParsersAction) -> None:
    from ..regress import DEFAULT_BENCH, ROUNDS

    p = sub.add_parser(
        "regress",
        help="the regression check: benchmark two commits in turn with asv, then gate them the right way round",
        description="Builds and benchmarks BEFORE and AFTER (any git revision) in asv's virtualenv, their asv rounds "
        "interleaved, records the results like asv run, then compares every benchmark it ran (GFLOP/s higher is "
        "better, seconds lower). Exit 0, 1 on a regression or a failed benchmark, 2 on bad input, 3 on a busy "
        "machine.",
    )
    p.add_argument("before", metavar="BEFORE", help="the commit to compare against (HEAD~1, a tag, a hash)")
    p.add_argument("after", metavar="AFTER", help="the commit under test (HEAD, a branch, a hash)")
    p.add_argument("--results", type=Path, default=Path(".asv/results"), help="asv results folder (asv.conf.json's)")
    p.add_argument(
        "--machine",
        help="the name results are filed under (default: as asv run's, the machine file's only entry; else what it is)",
    )
    p.add_argument(
        "--bench",
        metavar="REGEX",
        default=DEFAULT_BENCH,
        help=f"the benchmarks to run and gate (default {DEFAULT_BENCH!r}: the decode points; '' the whole suite)",
    )
    p.add_argument("--rounds", type=positive_int, default=ROUNDS, help=f"asv rounds per commit (default {ROUNDS})")
    p.add_argument("--threshold", type=threshold, default=0.10, help="change that counts (default 10%%)")
    p.add_argument(
        "--allow-busy",
        action="store_true",
        help="measure and gate even on a busy machine (flagged; ROOFLINE_ALLOW_BUSY=1 alike)",
    )
    p.add_argument(
        "--asv-env-requirements",
        type=Path,
        action="append",
        metavar="FILE",
        help="pip-install FILE into asv's virtualenv first (as roofline bench; needed with --bench for "
        "models.ModelDecode or engines.LlamaCppDecode)",
    )
    p.add_argument("--json", action="store_true", help="print the gate as JSON instead of a table")


def run_regress(args: argparse.Namespace) -> int:
    from ..asv_driver import allow_busy_from
    from ..regress import run_regress

    run = run_regress(
        args.before,
        args.after,
        args.results,
        args.machine,
        args.bench,
        args.rounds,
        allow_busy_from(args.allow_busy),
        args.threshold,
        args.asv_env_requirements,
    )
    if run.gate is not None:
        show_gate(run.gate, run.warnings, args.json)
    for line in run.closing:
        print(f"roofline: {line}", file=sys.stderr)
    return run.status
