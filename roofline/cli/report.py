"""``roofline report`` and ``roofline plot``: this machine's roofline, measured now or read from asv's
results; figures measured under contention exit 3 (:func:`~roofline.errors.busy_exit`)."""

from __future__ import annotations

import argparse
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import EXIT_BUSY, busy_exit
from ..suite import params
from .common import add_reference, emit_json, int_list, output_path, positive_int, reference_device

if TYPE_CHECKING:
    from ..report.cpu import Report


def _add_measure_flags(p: argparse.ArgumentParser) -> None:
    from ..measure.sweep import SWEEP_BATCHES

    p.add_argument("--results", type=Path, help="build from an asv results folder instead of measuring")
    p.add_argument("--machine", help="with --results: the machine to report (required when RESULTS holds several)")
    p.add_argument("--n", type=int_list, help=f"DRAM decode sizes (default {','.join(map(str, params.sizes()))})")
    p.add_argument("--batch", type=int_list, help=f"batches (default {','.join(map(str, params.batches()))})")
    p.add_argument(
        "--cache-n",
        type=int_list,
        help="cache-resident sizes (default " + ",".join(map(str, params.cache_sizes())) + ")",
    )
    p.add_argument("--sweep-n", type=positive_int, help=f"size of the crossover sweep (default {params.sweep_n()})")
    p.add_argument(
        "--sweep-batch",
        type=int_list,
        default=list(SWEEP_BATCHES),
        help="batches of the crossover sweep (default 1,2,4..1024)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument(
        "--allow-busy",
        action="store_true",
        help="accept figures measured while other processes took the CPUs (still flagged; exit 0 instead of 3)",
    )


def _report_from_args(args: argparse.Namespace) -> Report:
    from tqdm import tqdm

    from ..report.from_run import report_from_run
    from ..suite.live import measure_live

    if args.results is not None:
        from ..report.from_results import report_from_results
        from ..suite.results import read_results

        return report_from_results(read_results(args.results), machine=args.machine)
    live = measure_live(
        sizes=args.n or params.sizes(),
        batches=args.batch or params.batches(),
        cache_sizes=params.cache_sizes() if args.cache_n is None else args.cache_n,
        sweep_n=args.sweep_n or params.sweep_n(),
        sweep_batches=args.sweep_batch,
        progress=partial(tqdm, desc="measuring", unit="step", file=sys.stderr, disable=args.no_progress),
    )
    return report_from_run(live.state, live.facts, live.overhead)


def add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="the lab's H100 arithmetic, then this machine's measured roofline")
    _add_measure_flags(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--plot", type=output_path, metavar="FILE", help="also draw the roofline to FILE (.png or .svg)")
    add_reference(p)


def run_report(args: argparse.Namespace) -> int:
    from ..report.plot import check_plot_path, plot_report
    from ..report.text import render_text

    if args.plot is not None:
        check_plot_path(args.plot)
    reference = reference_device(args, args.plot is not None)
    report = _report_from_args(args)
    if args.json:
        emit_json(report.as_dict())
    else:
        print(render_text(report))
    if args.plot is not None:
        plot_report([report], args.plot, reference=reference)
        print(f"roofline plot: {args.plot.resolve()}", file=sys.stderr if args.json else sys.stdout)
    return _busy_status(report, args.allow_busy)


def _busy_status(report: Report, allow_busy: bool) -> int:
    """EXIT_BUSY, with one line on stderr, for figures measured under contention (:func:`~roofline.errors.busy_exit`);
    else 0."""
    headline = report.conditions.headline() if report.conditions is not None else None
    status = busy_exit(0, headline is not None, allow_busy)
    if status:
        print(f"roofline: {headline} (--allow-busy accepts them): exit {EXIT_BUSY}", file=sys.stderr)
    return status


def add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="draw this machine's roofline with its measured decode points")
    p.add_argument("-o", "--output", type=output_path, required=True, metavar="FILE", help="FILE.png or FILE.svg")
    _add_measure_flags(p)
    add_reference(p)


def run_plot(args: argparse.Namespace) -> int:
    from ..report.plot import check_plot_path, plot_report

    check_plot_path(args.output)
    reference = reference_device(args, True)
    report = _report_from_args(args)
    plot_report([report], args.output, reference=reference)
    print(f"roofline plot: {args.output.resolve()}")
    return _busy_status(report, args.allow_busy)
