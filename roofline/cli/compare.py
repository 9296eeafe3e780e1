"""``roofline compare``: machines side by side from asv results folders (``--model``: a model asked of
each), or two commits gated (``--commits``, as ``roofline regress`` shows its gate)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput
from ..model.llm import KV_BYTES, QUANT_FORMATS, WEIGHT_BYTES, lookup_model
from ..report import compare, gate
from ..report.compare_page import check_page_folder, write_page
from ..report.costs import read_costs
from ..report.llm_estimate import ask_machines
from ..report.summary import datasheet_summary, summarize
from ..suite.results import combine, read_results
from ..suite.revisions import env_names
from .common import (
    COMPUTE_DTYPES,
    add_reference,
    emit_json,
    int_list,
    output_path,
    positive_int,
    reference_device,
    threshold,
)

if TYPE_CHECKING:
    from ..report.gate import CommitComparison


def add_compare(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help="machines side by side from asv results folders; --commits A B gates on regressions",
        description="Reads each RESULTS_DIR (asv's results_dir: <machine>/machine.json, <machine>/*.json, "
        "benchmarks.json; e.g. .asv/results examples/results) and writes nothing there. Exit 0, 1 on a "
        "regression (--commits), 2 when nothing can be answered.",
    )
    p.add_argument(
        "results", type=Path, nargs="+", metavar="RESULTS_DIR", help="asv results folders, e.g. .asv/results"
    )
    p.add_argument("--machine", action="append", metavar="NAME", help="only this machine (repeatable)")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--commit", metavar="HASH", help="compare machines at this commit (default: each one's latest)")
    group.add_argument(
        "--commits",
        nargs=2,
        metavar=("BEFORE", "AFTER"),
        help="compare two commits recorded there (any git revision: HEAD~1, a tag, a hash): the CI gate",
    )
    p.add_argument("--baseline", metavar="NAME", help="a machine compared: every figure also as a ratio to its")
    p.add_argument(
        "--prices",
        type=Path,
        metavar="FILE",
        help="a TOML table per machine with dollars_per_hour and/or watts: figures per $/hour and per watt",
    )
    p.add_argument("--threshold", type=threshold, default=0.10, help="change that counts (default 10%%)")
    p.add_argument(
        "--env",
        action="append",
        metavar="ENV",
        help="with --commits: the asv environment (name or prefix) to read where a commit has several; "
        "once for both commits, twice for before and after",
    )
    p.add_argument("--plot", type=output_path, metavar="FILE", help="overlay every machine's roofline in one figure")
    add_reference(p)
    p.add_argument(
        "--html", type=Path, metavar="DIR", help="also write the comparison page DIR/compare.html (and its picture)"
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_compare_model(p)


#: The batches of ``compare --model`` without --batch (ModelDecode's).
COMPARE_BATCHES = "1,8,64"


#: compare's flags of a model asked of every machine: --model first, the others go with it.
MODEL_FLAGS = ("model", "dtype", "quant", "kv_dtype", "compute_dtype", "context", "batch", "hardware_also")


def _add_compare_model(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("a model on every machine (docs/compare.md#a-model-on-every-machine)")
    g.add_argument("--model", help="a preset (roofline decode's): each machine's bound and predicted tokens/s")
    g.add_argument("--dtype", choices=list(WEIGHT_BYTES), help="with --model: weight storage (default bf16)")
    g.add_argument("--quant", choices=list(QUANT_FORMATS), help="with --model: a quantization format instead")
    g.add_argument("--kv-dtype", choices=list(KV_BYTES), help="with --model: KV-cache storage (default bf16)")
    g.add_argument(
        "--compute-dtype", choices=list(COMPUTE_DTYPES), help="with --model: the roof that bounds "
        "arithmetic (default: the format's own, which a machine must have recorded)",
    )  # fmt: skip
    g.add_argument("--context", type=positive_int, help="with --model: tokens of KV cache per sequence (default 4096)")
    g.add_argument("--batch", type=int_list, help=f"with --model: batch sizes (default {COMPARE_BATCHES})")
    g.add_argument(
        "--hardware-also", type=_name_list, metavar="NAME,...",
        help="with --model: catalogue devices (h100,h200) beside the machines, their datasheet figures marked §",
    )  # fmt: skip


def _name_list(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"{text!r} names no device")
    return list(dict.fromkeys(names))


def _compare_question(args: argparse.Namespace, summaries: list, sources: list[str]):
    """``compare --model``: the catalogue columns added to ``summaries``, and the model asked of every one;
    (None, summaries) without --model (then its flags are refused)."""
    if args.model is None:
        given = [f for f in MODEL_FLAGS[1:] if getattr(args, f) is not None]
        if given:
            raise BadInput(f"--{given[0].replace('_', '-')} goes with --model")
        return None, summaries
    if args.dtype is not None and args.quant is not None:
        raise BadInput("give --dtype or --quant, not both")
    setup = {"model": lookup_model(args.model), "dtype": args.quant or args.dtype or "bf16"}
    setup |= {k: getattr(args, k) for k in ("kv_dtype", "context", "compute_dtype") if getattr(args, k) is not None}
    devices = [datasheet_summary(n) for n in args.hardware_also or ()]
    clash = {d.machine for d in devices} & {s.machine for s in summaries}
    if clash:
        raise BadInput(f"--hardware-also {sorted(clash)[0]} is also a machine compared: name it once")
    summaries = [*summaries, *devices]
    batches = args.batch or int_list(COMPARE_BATCHES)
    return ask_machines(summaries, ", ".join(sources), setup, batches), summaries


def _outside_results(path: Path, folders: Sequence[Path], flag: str) -> None:
    for folder in folders:
        if path.resolve().is_relative_to(folder.resolve()):
            raise BadInput(f"{flag} {path}: compare never writes into the results directory {folder}")


def _run_gate(args: argparse.Namespace, results) -> int:
    for flag in (*MODEL_FLAGS, "plot", "html", "baseline", "prices"):
        if getattr(args, flag) is not None:
            raise BadInput(f"--{flag.replace('_', '-')} goes with the machine comparison, not with --commits")

    cmp = gate.compare_commits(
        results, *args.commits, machines=args.machine, threshold=args.threshold, envs=args.env, preferred=env_names()
    )
    return show_gate(cmp, results.warnings + cmp.warnings, args.json)


def show_gate(cmp: CommitComparison, warnings: list[str], as_json: bool) -> int:
    """The gate of two commits, as compare --commits and regress show it: its warnings on stderr, then the
    table (or JSON); 1 on a regression, else 0."""
    for line in warnings:
        print(f"roofline: warning: {line}", file=sys.stderr)
    if as_json:
        emit_json(cmp.as_dict())
    else:
        print(gate.format_commits(cmp))
    return 1 if cmp.regressed else 0


def run_compare(args: argparse.Namespace) -> int:
    folders = [read_results(path) for path in dict.fromkeys(args.results)]
    if args.env and not args.commits:
        raise BadInput("--env goes with --commits")
    reference = reference_device(args, args.plot is not None)
    if args.commits:
        if len(folders) > 1:
            raise BadInput("--commits gates one results folder: give one RESULTS_DIR")
        return _run_gate(args, folders[0])
    for out, flag in ((args.plot, "--plot"), (args.html, "--html")):
        if out is not None:
            _outside_results(out, args.results, flag)
    results = combine(folders)
    summaries, warnings = summarize(results, machines=args.machine, commit=args.commit)
    sources = [str(p) for p in dict.fromkeys(args.results)]
    question, columns = _compare_question(args, summaries, sources)
    names = [s.machine for s in columns]
    costs: dict = {}
    if args.prices is not None:
        costs, more = read_costs(args.prices, names)
        warnings += more
    cmp = compare.build_comparison(columns, sources, args.baseline, costs, question)
    if args.html is not None:
        check_page_folder(args.html)
    warnings = [w for w in results.warnings if w not in results.version_notes] + warnings
    for line in warnings:
        print(f"roofline: warning: {line}", file=sys.stderr)
    if args.plot is not None:
        from ..report.plot import plot_overlay

        plot_overlay(summaries, args.plot, reference=reference)
    page = None
    if args.html is not None:
        page = write_page(cmp, args.html)
    if args.json:
        emit_json(cmp.as_dict(warnings))
        return 0
    where = ", ".join(sources)
    base = f"; baseline {args.baseline}" if args.baseline else ""
    also = f", {len(columns) - len(summaries)} catalogue device(s)" if len(columns) > len(summaries) else ""
    print(f"results: {where} ({len(summaries)} machine(s){also}{base})")
    print(compare.format_table(cmp))
    if args.plot is not None:
        print(f"plot: {args.plot}")
    if page is not None:
        print(f"page: {page}")
    return 0
