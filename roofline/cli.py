"""The ``roofline`` command: one subcommand per question, one-line errors, exit 2 on bad input.

Each subcommand has an ``_add_<name>`` (its flags) and a ``_run_<name>`` (its work, which
imports what it needs lazily so ``roofline --help`` stays fast).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from . import __version__
from .errors import BadInput, Interrupted, RooflineError

if TYPE_CHECKING:
    from .model.hardware import Hardware
    from .report.cpu import Report


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        exc = BadInput(message)
        exc.prog = self.prog  # printed once, as the prefix: "roofline decode: error: ..."
        raise exc


# ---- argument types shared by subcommands -------------------------------------------------


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive finite number")
    return value


def int_list(text: str) -> list[int]:
    from .suite.params import MAX_BATCH, positive_ints

    try:
        return list(positive_ints(text, "list", MAX_BATCH))
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("list: ")) from None


def output_path(text: str) -> Path:
    """A file to write: its folder must exist and take a new file (tried, then removed)."""
    from .files import probe_writable

    path = Path(text)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"folder {folder} does not exist")
    try:
        probe_writable(folder)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"folder {folder} is not writable ({exc.strerror or exc})") from None
    return path


def emit_json(obj: object) -> None:
    """Print one JSON object, strict (no NaN), sorted keys."""
    print(json.dumps(obj, indent=2, sort_keys=True, allow_nan=False, default=str))


# ---- subcommands ----------------------------------------------------------------------------


def _add_preflight(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="check the suite's environment variables and memory before asv runs")
    p.add_argument("--results", type=Path, default=Path(".asv/results"), help="asv results folder to check")


def _run_preflight(args: argparse.Namespace) -> int:
    from .suite.preflight import preflight

    for line in preflight(args.results):
        print(line)
    return 0


def _add_cache(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="show or clear the shared random weight pools")
    p.add_argument("--clear", action="store_true", help="delete the pools (they are rebuilt on demand)")


def _run_cache(args: argparse.Namespace) -> int:
    from .measure import pools

    directory = pools.cache_dir()
    if args.clear:
        freed = pools.clear_cache()
        print(f"removed {freed / 2**20:.0f} MiB from {directory}")
        return 0
    files = sorted(directory.glob("*.bin")) if directory.is_dir() else []
    total = sum(f.stat().st_size for f in files)
    print(f"{directory}: {len(files)} pool file(s), {total / 2**20:.0f} MiB")
    for f in files:
        print(f"  {f.name}  {f.stat().st_size / 2**20:.0f} MiB")
    return 0


def _add_measure_flags(p: argparse.ArgumentParser) -> None:
    from .measure.sweep import SWEEP_BATCHES
    from .suite import params

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


def _add_reference(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reference",
        metavar="DEVICE",
        help="also draw a catalogue device's roofline (e.g. h100), in a panel of its own beside this machine's",
    )


def _reference(args: argparse.Namespace, plotting: bool) -> Hardware | None:
    """The catalogue device ``--reference`` names (BadInput, with the closest names, if none), checked first."""
    if args.reference is None:
        return None
    if not plotting:
        raise BadInput("--reference goes with --plot: it draws a device beside this machine's roofline")
    from .model.catalogue import lookup

    return lookup(args.reference)


def _report_from_args(args: argparse.Namespace) -> Report:
    from tqdm import tqdm

    from .report.cpu import measure_report
    from .suite import params

    if args.results is not None:
        from .report.from_results import report_from_results

        return report_from_results(args.results, machine=args.machine)
    return measure_report(
        sizes=args.n or params.sizes(),
        batches=args.batch or params.batches(),
        cache_sizes=params.cache_sizes() if args.cache_n is None else args.cache_n,
        sweep_n=args.sweep_n or params.sweep_n(),
        sweep_batches=args.sweep_batch,
        progress=partial(tqdm, desc="measuring", unit="step", file=sys.stderr, disable=args.no_progress),
    )


def _add_report(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="the lab's H100 arithmetic, then this machine's measured roofline")
    _add_measure_flags(p)
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("--plot", type=output_path, metavar="FILE", help="also draw the roofline to FILE (.png or .svg)")
    _add_reference(p)


def _run_report(args: argparse.Namespace) -> int:
    from .report.cpu import render_text
    from .report.plot import check_plot_path, plot_report

    if args.plot is not None:
        check_plot_path(args.plot)
    reference = _reference(args, args.plot is not None)
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
    """EXIT_BUSY, with one line on stderr, for figures measured under contention; else 0."""
    from .errors import EXIT_BUSY

    headline = report.conditions.headline() if report.conditions is not None else None
    if headline is None or allow_busy:
        return 0
    print(f"roofline: {headline} (--allow-busy accepts them): exit {EXIT_BUSY}", file=sys.stderr)
    return EXIT_BUSY


def _add_plot(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("plot", help="draw this machine's roofline with its measured decode points")
    p.add_argument("-o", "--output", type=output_path, required=True, metavar="FILE", help="FILE.png or FILE.svg")
    _add_measure_flags(p)
    _add_reference(p)


def _run_plot(args: argparse.Namespace) -> int:
    from .report.plot import check_plot_path, plot_report

    check_plot_path(args.output)
    reference = _reference(args, True)
    report = _report_from_args(args)
    plot_report([report], args.output, reference=reference)
    print(f"roofline plot: {args.output.resolve()}")
    return _busy_status(report, args.allow_busy)


def non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number ≥ 0")
    return value


def interconnect_arg(text: str) -> object:
    """'450' (GB/s) → 450.0; 'nvlink4' → its Interconnect (bandwidth and latency)."""
    from .model.llm_estimate import lookup_interconnect

    try:
        float(text)
    except ValueError:
        try:
            return lookup_interconnect(text)
        except BadInput as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return positive_float(text)


def _add_decode(sub: argparse._SubParsersAction) -> None:
    from .model.llm import KV_BYTES, QUANT_FORMATS, SETTABLE_FIELDS, WEIGHT_BYTES, preset_names

    p = sub.add_parser("decode", help="tokens/s, bound and crossover batch of an LLM on catalogue or measured hardware")
    p.add_argument("--model", required=True, help=f"a preset ({', '.join(preset_names())}) or 'custom'")
    p.add_argument(
        "--hardware",
        required=True,
        help="a catalogue name (e.g. h100), a gallery machine (a folder of examples/results or --results: its "
        "recorded roofs, with a prediction) or 'local' (measures this machine, ~15 s)",
    )
    p.add_argument(
        "--results", type=Path, metavar="DIR", help="the asv results folder of --hardware NAME (default: the gallery)"
    )
    p.add_argument("--dtype", choices=list(WEIGHT_BYTES), help="weight storage (default bf16)")
    p.add_argument(
        "--quant",
        choices=list(QUANT_FORMATS),
        help="a quantization format instead of --dtype, with its scales and zeros counted (docs/models.md)",
    )
    p.add_argument("--kv-dtype", default="bf16", choices=list(KV_BYTES), help="KV-cache storage (default bf16)")
    p.add_argument(
        "--compute-dtype",
        choices=[d for d in _dtypes() if d != "fp64"],
        help="the peak that bounds arithmetic (default: fp32 for fp32 weights, fp8 for fp8 weights where the "
        "hardware has it, else bf16)",
    )
    p.add_argument(
        "--group-size",
        type=positive_int,
        help="weights per scale for int4, gptq, awq, int4-zp (default 128); other formats have fixed blocks",
    )
    p.add_argument(
        "--context", type=positive_int, help="tokens of KV cache per sequence (default 4096, or prompt + output)"
    )
    p.add_argument("--prompt", type=positive_int, metavar="P", help="prompt tokens per request (with --output)")
    p.add_argument(
        "--output", type=positive_int, metavar="O", help="output tokens per request: TTFT, mean step, e2e, tokens/s"
    )
    p.add_argument("--tp", type=positive_int, default=1, help="tensor parallel degree: devices sharing the model")
    p.add_argument(
        "--interconnect",
        type=interconnect_arg,
        metavar="GB/s|NAME",
        help="each device's all-reduce bandwidth, or a named link with its latency "
        "(nvlink3, nvlink4, nvlink5, pcie4, pcie5); without it communication is not counted",
    )
    p.add_argument(
        "--allreduce-latency",
        type=non_negative_float,
        metavar="µs",
        help="time of one all-reduce, 2 per layer when --tp > 1 (default: the named interconnect's; none for GB/s)",
    )
    p.add_argument("--batch", type=int_list, default="1,8,64,512", help="batch sizes (default 1,8,64,512)")
    p.add_argument(
        "--reserve",
        type=non_negative_float,
        metavar="GB",
        help="memory the runtime keeps per device beyond the driver's reservation (default 0)",
    )
    fit = p.add_mutually_exclusive_group()
    fit.add_argument("--require-fit", action="store_true", help="refuse (exit 2) when a batch does not fit in memory")
    fit.add_argument(
        "--ignore-memory",
        action="store_true",
        help="kept for compatibility: rows that do not fit are shown (fits = no) by default",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument(
        "--measure",
        action="store_true",
        help="with --hardware local: also decode the model (random weights, transformers and plain torch) here "
        f"and hold each step against the bound (context default {MEASURE_CONTEXT}; slice it with --layers)",
    )
    p.add_argument("--steps", type=positive_int, default=7, help="timed decode steps per batch with --measure")
    p.add_argument(
        "--engine",
        choices=["llama.cpp"],
        help="with --measure: decode a GGUF of the model (random weights, written here) with this engine instead, "
        "in --dtype fp16 / --quant q8_0, q4_0 (default: all three); docs/engines.md",
    )
    g = p.add_argument_group("model shape (with --model custom, or to change a preset)")
    for name in SETTABLE_FIELDS:
        g.add_argument(f"--{name.replace('_', '-')}", type=positive_int, metavar="N")
    g.add_argument("--tied-embeddings", action="store_const", const=True, help="output head shares the embedding")


def _decode_flags(args: argparse.Namespace) -> dict[str, object]:
    """The DecodeSetup keywords the decode flags give; BadInput where flags contradict each other."""
    from .model.llm import INT4_GROUP_SIZE, uses_group_size
    from .model.llm_estimate import Interconnect

    if args.dtype is not None and args.quant is not None:
        raise BadInput("give --dtype or --quant, not both")
    weights = args.quant or args.dtype or "bf16"
    if args.group_size is not None and not uses_group_size(weights):
        raise BadInput(f"--group-size applies to int4, gptq, awq and int4-zp; {weights} has a fixed layout")
    if (args.prompt is None) != (args.output is None):
        raise BadInput("--prompt and --output go together: give both or neither")
    if args.prompt is not None and args.context is not None:
        raise BadInput("give --context or --prompt/--output, not both (the context is then prompt + output)")
    context = args.context or (args.prompt + args.output if args.prompt is not None else 4096)
    link = args.interconnect
    if isinstance(link, Interconnect):
        bandwidth, latency = link.bandwidth, link.latency
    else:
        bandwidth, latency = (link * 1e9 if link else None), None
    if args.allreduce_latency is not None:
        latency = args.allreduce_latency * 1e-6
    return dict(
        dtype=weights,
        kv_dtype=args.kv_dtype,
        context=context,
        tp=args.tp,
        interconnect=bandwidth,
        group_size=args.group_size or INT4_GROUP_SIZE,
        allreduce_latency=latency,
        reserve=None if args.reserve is None else args.reserve * 1e9,
    )


def _run_decode(args: argparse.Namespace) -> int:
    from .model.llm import SETTABLE_FIELDS, custom_model, lookup_model
    from .model.llm_estimate import DecodeSetup, check_inputs, estimate, require_fits
    from .report.llm_estimate import check_fits, check_roofs, format_estimate, format_predicted, predict, resolve_roofs

    shape = {f: getattr(args, f) for f in (*SETTABLE_FIELDS, "tied_embeddings")}
    base = None if args.model.strip().lower() == "custom" else lookup_model(args.model)
    model = custom_model(base, **shape)
    engine_formats = _engine_formats(args)
    flags = _decode_flags(args)
    if args.engine is not None:
        return _run_engine_decode(args, base, model, flags, engine_formats)
    if args.measure:
        return _run_measured_decode(args, base, model, flags)
    check_inputs(model, **flags)  # before measuring the local machine
    measured: list[str] = []
    roofs = resolve_roofs(args.hardware, measured, args.results)
    check_roofs(roofs, str(flags["dtype"]), args.compute_dtype)
    setup = DecodeSetup(model, roofs.hardware, compute_dtype=args.compute_dtype, **flags)
    check_fits(setup, roofs)
    if args.require_fit:
        require_fits(setup, args.batch)
    result = estimate(setup, args.batch, args.prompt, args.output)
    predicted = predict(result, roofs)
    if args.json:
        out = {**result.as_dict(), **({"measured": measured} if measured else {})}
        if roofs.gemv_fraction is not None:
            out["prediction"] = {"gemv_fraction": roofs.gemv_fraction, "gemv_n": roofs.gemv_n,
                                 "rows": [r.as_dict() for r in predicted]}  # fmt: skip
        emit_json(out)
    else:
        lines = [*format_estimate(result), *format_predicted(predicted, roofs)]
        print("\n".join([*lines, *(f"note: {line}" for line in measured)]))
    return 0


#: Tokens prefilled before the timed decode steps of --measure when --context is not given (a CPU prefills slowly).
MEASURE_CONTEXT = 256


def _run_measured_decode(args: argparse.Namespace, base, model, flags: dict[str, object]) -> int:
    """--measure: the bound on this machine's ceilings, then the model decoded here against it."""
    from .measure.contention import watched
    from .measure.llm_build import MODEL_DTYPES, import_transformers
    from .measure.llm_decode import hold_against_bound, local_hardware, measure_model_decode
    from .model.llm_estimate import DecodeSetup, check_inputs, estimate
    from .report.llm_estimate import LOCAL, format_estimate, format_measured, measured_dict, watch_note

    if args.hardware.strip().lower() != LOCAL:
        raise BadInput(f"--measure decodes on this machine: give --hardware {LOCAL}, not {args.hardware!r}")
    if flags["dtype"] not in MODEL_DTYPES or args.quant is not None:
        raise BadInput(f"--measure runs the model in {', '.join(MODEL_DTYPES)}, not {flags['dtype']}")
    if flags["tp"] != 1:
        raise BadInput("--measure runs on one device: --tp must be 1")
    if args.prompt is not None:
        raise BadInput("--measure times decode steps after a prefilled --context; --prompt/--output do not apply")
    if args.compute_dtype not in (None, flags["dtype"]):
        raise BadInput(f"--measure computes in the model's dtype {flags['dtype']}: drop --compute-dtype")
    dtype = str(flags["dtype"])
    context = args.context or MEASURE_CONTEXT
    flags = {**flags, "kv_dtype": dtype, "context": context}
    check_inputs(model, **flags)
    import_transformers()  # BackendUnavailable before ten seconds of ceilings
    with watched() as watch:  # torch loaded above: its threads follow the watch's
        hw = local_hardware(dtype)
        run = measure_model_decode(model, args.batch, dtype, context, steps=args.steps)
    est = estimate(DecodeSetup(model, hw, **flags), args.batch)
    rows = hold_against_bound(run, hw)
    notes = watch_note(watch)
    if args.json:
        emit_json({**est.as_dict(), "measured": {**measured_dict(run, rows), "conditions": notes}})
    else:
        print("\n".join(format_estimate(est)))
        print()
        print("\n".join([*format_measured(run, rows, base.layers if base is not None else None)]))
        for line in notes:
            print(f"note: {line}")
    return 0


#: Tokens each sequence prefills before the timed steps of --engine when --context is not given.
ENGINE_CONTEXT = 32


def _engine_formats(args: argparse.Namespace) -> list[str] | None:
    """The GGUF formats --engine runs: the one --dtype/--quant names, or all the engine's (None without --engine)."""
    if args.engine is None:
        return None
    from .measure.engines import lookup_engine
    from .model.gguf_layout import gguf_format

    engine = lookup_engine(args.engine)
    weights = args.quant or args.dtype
    if weights is None:
        return list(engine.formats)
    try:
        fmt = gguf_format(weights)
    except BadInput:
        fmt = None
    if fmt not in engine.formats:
        raise BadInput(
            f"{engine.name} runs --dtype fp16 and --quant q8_0, q4_0 here (GGUF F16, Q8_0, Q4_0), not {weights}"
        )
    args.quant, args.dtype = None, None  # each format's weights go to the bound, one at a time
    return [fmt]


def _run_engine_decode(args: argparse.Namespace, base, model, flags: dict[str, object], formats: list[str]) -> int:
    """--measure --engine: the engine decodes the model's GGUF here, held to the bound of the same rounds' roofs."""
    from .errors import BackendUnavailable
    from .measure.engine_decode import KV_DTYPE, engine_setup, hold_engine, measure_engine_decode
    from .measure.engines import lookup_engine
    from .model.gguf_layout import GGUF_FORMATS, check_shape
    from .model.llm_estimate import check_inputs, estimate
    from .outcome import Skipped
    from .report.llm_estimate import LOCAL, engine_dict, format_engine, format_estimate
    from .suite import params

    if not args.measure:
        raise BadInput("--engine decodes on this machine: give it with --measure")
    if args.hardware.strip().lower() != LOCAL:
        raise BadInput(f"--measure decodes on this machine: give --hardware {LOCAL}, not {args.hardware!r}")
    if flags["tp"] != 1:
        raise BadInput("--measure runs on one device: --tp must be 1")
    if args.prompt is not None:
        raise BadInput("--measure times decode steps after a prefilled --context; --prompt/--output do not apply")
    if args.compute_dtype is not None:
        raise BadInput("--engine computes as the engine does: drop --compute-dtype")
    context = args.context or ENGINE_CONTEXT
    for fmt in formats:
        check_shape(model, fmt)
        check_inputs(model, **{**flags, "dtype": GGUF_FORMATS[fmt], "kv_dtype": KV_DTYPE, "context": context})
    engine = lookup_engine(args.engine)
    run = measure_engine_decode(engine, model, formats, args.batch, context, steps=args.steps, gemm_n=params.gemm_n())
    skipped = [o for o in run.outcomes.values() if isinstance(o, Skipped)]
    if skipped and run.hardware is None:
        raise BackendUnavailable(skipped[0].reason)
    rows = hold_engine(run)
    estimates = [estimate(engine_setup(run, fmt, run.hardware), args.batch) for fmt in formats]
    if args.json:
        emit_json({"estimates": [e.as_dict() for e in estimates], "measured": engine_dict(run, rows)})
        return 0
    for est in estimates:
        print("\n".join(format_estimate(est)))
        print()
    print("\n".join(format_engine(run, rows, base.layers if base is not None else None)))
    return 0


def _add_bench(sub: argparse._SubParsersAction) -> None:
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


def _run_bench(args: argparse.Namespace) -> int:
    from .bench import allow_busy_from, run_bench

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


def _add_regress(sub: argparse._SubParsersAction) -> None:
    from .regress import DEFAULT_BENCH, ROUNDS

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


def _run_regress(args: argparse.Namespace) -> int:
    from .bench import allow_busy_from
    from .regress import run_regress

    return run_regress(
        args.before,
        args.after,
        args.results,
        args.machine,
        args.bench,
        args.rounds,
        allow_busy_from(args.allow_busy),
        args.threshold,
        args.asv_env_requirements,
        args.json,
    )


def _add_specs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("specs", help="catalogue devices: ridge point and crossover batch per dtype (datasheet figures)")
    p.add_argument("names", nargs="*", metavar="NAME", help="device names or aliases (default: every device)")
    p.add_argument("--dtype", action="append", choices=_dtypes(), help="only this dtype (repeatable)")
    p.add_argument("--sources", action="store_true", help="also print every figure's source and note")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _dtypes() -> tuple[str, ...]:
    from .model.dtypes import PEAKS

    return PEAKS


def _run_specs(args: argparse.Namespace) -> int:
    from .model import catalogue
    from .report.specs import device_specs, format_specs

    devices, problems = [], []
    for name in args.names or catalogue.names():
        try:
            hw = catalogue.lookup(name)
        except BadInput as exc:
            problems.append(str(exc))
            continue
        if hw not in devices:
            devices.append(hw)
    if not devices:
        raise BadInput(problems[0] if len(problems) == 1 else f"no catalogue device among the names ({problems[0]})")
    for problem in problems:
        print(f"roofline: warning: {problem}", file=sys.stderr)
    if args.json:
        emit_json({"devices": [device_specs(hw) for hw in devices]})
    else:
        print(format_specs(devices, args.dtype, args.sources))
    return 0


def _add_machine(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "machine",
        help="write this machine's asv entry: asv's keys plus BLAS, GPU and LLC; --migrate RESULTS retires old keys",
    )
    p.add_argument("--machine", help="the name results are filed under (default: what it is: CPU, core, cores, LLC)")
    p.add_argument("--file", type=Path, help="machine file to update (default: ~/.asv-machine.json, asv's)")
    p.add_argument(
        "--migrate",
        type=Path,
        metavar="RESULTS",
        help="take the keys roofline no longer writes (measured figures, llc_source, device) out of the machine "
        "file and every result in RESULTS, after a backup beside RESULTS, keeping each history whole",
    )
    p.add_argument(
        "--rename",
        nargs=2,
        metavar=("OLD", "NEW"),
        help="with --results DIR: file machine OLD's recorded runs under NEW (its folder, machine.json and every "
        "result file's machine key, at once); refused when NEW exists",
    )
    p.add_argument("--results", type=Path, metavar="DIR", help="with --rename: the asv results folder")
    p.add_argument("--dry-run", action="store_true", help="print the entry (or the migration), write nothing")
    p.add_argument("--json", action="store_true", help="print the entry (or the migration) as JSON")
    # accepted from scripts written for earlier versions, which measured ceilings here
    p.add_argument("--no-measure", "--remeasure", dest="old_measure_flag", action="store_true", help=argparse.SUPPRESS)


def _run_machine(args: argparse.Namespace) -> int:
    from .host import gpu_facts
    from .suite import machine_file

    if (args.rename is None) != (args.results is None):
        raise BadInput("--rename OLD NEW and --results DIR go together")
    if args.rename is not None:
        return _rename(args)
    path = args.file or machine_file.machine_file_path()
    if args.old_measure_flag:
        print(
            "roofline: roofline machine measures nothing now: the ceilings are in each run's results", file=sys.stderr
        )
    gpu = gpu_facts()  # None without torch or a CUDA device
    if args.migrate is not None:
        return _migrate(args, path, gpu)
    name, entry, retired = machine_file.register(args.machine, path, write=not args.dry_run, gpu=gpu)
    if args.json:
        emit_json(entry)
        return 0
    width = max(map(len, entry))
    for key in sorted(entry):
        print(f"{key.ljust(width)}  {entry[key]}")
    print("not written (--dry-run)" if args.dry_run else f"wrote machine {name!r} to {path}")
    if retired:
        print(f"kept keys roofline no longer writes ({', '.join(retired)}): {_MIGRATE_HINT}", file=sys.stderr)
    return 0


_MIGRATE_HINT = "`roofline machine --migrate RESULTS` takes them out of the machine file and the results together"


def _migrate(args: argparse.Namespace, path: Path, gpu: dict | None) -> int:
    from .suite import machine_file

    host = machine_file.this_host()
    plan = machine_file.plan_migration(args.migrate, path, lambda name: machine_file.machine_keys(name, host, gpu))
    if not args.dry_run:
        machine_file.apply_migration(plan)
    if args.json:
        emit_json({**plan.as_dict(), "dry_run": args.dry_run})
        return 0
    if not plan.rewrites:
        print(f"nothing to migrate in {args.migrate} or {path}")
        return 0
    for where, keys in plan.removed.items():
        print(f"{where}: took out " + ", ".join(f"{k}={' / '.join(map(repr, v))}" for k, v in keys.items()))
    for where, keys in plan.filled.items():
        print(f"{where}: filled in " + ", ".join(f"{k}={v!r}" for k, v in keys.items()) + " where missing")
    for note in plan.notes:
        print(f"note: {note}")
    files = len(plan.rewrites)
    if args.dry_run:
        print(f"would rewrite {files} file(s) (--dry-run: nothing written)")
    else:
        print(f"rewrote {files} file(s); the files as they were are in {plan.backup}")
    return 0


def _rename(args: argparse.Namespace) -> int:
    from .suite.rename import apply_rename, plan_rename

    for flag in ("migrate", "machine", "file"):
        if getattr(args, flag) is not None:
            raise BadInput(f"--{flag} does not go with --rename")
    plan = plan_rename(args.results, *args.rename)
    if not args.dry_run:
        apply_rename(plan)
    if args.json:
        emit_json({**plan.as_dict(), "dry_run": args.dry_run})
        return 0
    verb, tail = ("would file", " (--dry-run: nothing written)") if args.dry_run else ("filed", "")
    runs = ", ".join(c[:8] for c in plan.commits)
    print(f"{verb} {plan.old}'s {len(plan.commits)} run(s) ({runs}) under {plan.new} in {plan.results}{tail}")
    return 0


def threshold(text: str) -> float:
    """'10%' or '0.1' → 0.1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction (0.1) or a percentage (10%)") from None
    if not 0 < value < 10:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive fraction such as 0.1, or a percentage")
    return value


def _add_compare(sub: argparse._SubParsersAction) -> None:
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
    _add_reference(p)
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
    from .model.llm import KV_BYTES, QUANT_FORMATS, WEIGHT_BYTES

    g = p.add_argument_group("a model on every machine (docs/compare.md#a-model-on-every-machine)")
    g.add_argument("--model", help="a preset (roofline decode's): each machine's bound and predicted tokens/s")
    g.add_argument("--dtype", choices=list(WEIGHT_BYTES), help="with --model: weight storage (default bf16)")
    g.add_argument("--quant", choices=list(QUANT_FORMATS), help="with --model: a quantization format instead")
    g.add_argument("--kv-dtype", choices=list(KV_BYTES), help="with --model: KV-cache storage (default bf16)")
    g.add_argument(
        "--compute-dtype", choices=[d for d in _dtypes() if d != "fp64"], help="with --model: the roof that bounds "
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
    from .model.llm import lookup_model
    from .report.compare import datasheet_summary
    from .report.llm_estimate import ask_machines

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
    from .report import gate

    for flag in (*MODEL_FLAGS, "plot", "html", "baseline", "prices"):
        if getattr(args, flag) is not None:
            raise BadInput(f"--{flag.replace('_', '-')} goes with the machine comparison, not with --commits")
    from .suite.revisions import env_names

    cmp = gate.compare_commits(
        results, *args.commits, machines=args.machine, threshold=args.threshold, envs=args.env, preferred=env_names()
    )
    for line in results.warnings + cmp.warnings:
        print(f"roofline: warning: {line}", file=sys.stderr)
    if args.json:
        emit_json(cmp.as_dict())
    else:
        print(gate.format_commits(cmp))
    return 1 if cmp.regressed else 0


def _run_compare(args: argparse.Namespace) -> int:
    from .report import compare
    from .suite.results import combine, read_results

    folders = [read_results(path) for path in dict.fromkeys(args.results)]
    if args.env and not args.commits:
        raise BadInput("--env goes with --commits")
    reference = _reference(args, args.plot is not None)
    if args.commits:
        if len(folders) > 1:
            raise BadInput("--commits gates one results folder: give one RESULTS_DIR")
        return _run_gate(args, folders[0])
    for out, flag in ((args.plot, "--plot"), (args.html, "--html")):
        if out is not None:
            _outside_results(out, args.results, flag)
    results = combine(folders)
    summaries, warnings = compare.summarize(results, machines=args.machine, commit=args.commit)
    sources = [str(p) for p in dict.fromkeys(args.results)]
    question, columns = _compare_question(args, summaries, sources)
    names = [s.machine for s in columns]
    costs: dict = {}
    if args.prices is not None:
        from .report.costs import read_costs

        costs, more = read_costs(args.prices, names)
        warnings += more
    cmp = compare.build_comparison(columns, sources, args.baseline, costs, question)
    if args.html is not None:
        from .report.compare_page import check_page_folder

        check_page_folder(args.html)
    warnings = [w for w in results.warnings if w not in results.version_notes] + warnings
    for line in warnings:
        print(f"roofline: warning: {line}", file=sys.stderr)
    if args.plot is not None:
        from .report.plot import plot_overlay

        plot_overlay(summaries, args.plot, reference=reference)
    page = None
    if args.html is not None:
        from .report.compare_page import write_page

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


def _add_serve(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve asv's published HTML on 127.0.0.1, offline (asv preview listens on every interface)",
        description="Serves the folder read-only on 127.0.0.1 only, with asv's JavaScript libraries from roofline "
        "instead of CDNs, until Ctrl-C.",
    )
    p.add_argument("--html", type=Path, default=Path(".asv/html"), help="asv's html folder (default .asv/html)")
    p.add_argument("--port", type=port_number, default=8080, help="port on 127.0.0.1 (default 8080; 0: any free one)")


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0 to 65535)")
    return value


def _run_serve(args: argparse.Namespace) -> int:
    from .suite.offline_html import local_server

    server = local_server(args.html, args.port)
    host, port = server.server_address[:2]
    print(f"serving {args.html} on http://{host}:{port}/ with asv's libraries from roofline (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def _add_backends(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("backends", help="which backends and dtypes run here, and why not where they don't")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")


def _run_backends(args: argparse.Namespace) -> int:
    from .host import gpu_facts
    from .measure.backends import inventory, torch_threads

    rows, gpu = inventory(), gpu_facts()
    if args.json:
        emit_json({"backends": rows, "gpu": gpu, "torch_threads": torch_threads()})
        return 0
    for r in rows:
        print(f"{r['backend']:>10} {r['dtype']:>5}  {'yes' if r['available'] else 'no: ' + str(r['reason'])}")
    if gpu:
        print(f"GPU: {gpu['name']}, {gpu['gpu_sm_count']} SMs, {gpu['gpu_memory_bytes'] / 2**30:.0f} GiB")
    return 0


def _dtype_list(text: str) -> list[str]:
    from .suite.params import dtypes_from

    try:
        return list(dtypes_from(text, "list"))
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("list: ")) from None


def _add_gpu(sub: argparse._SubParsersAction) -> None:
    from .measure.backends import GPU_DTYPES
    from .report.gpu import GPU_SWEEP_BATCHES, GPU_SWEEP_N

    p = sub.add_parser("gpu", help="measure the CUDA GPU: ceilings, overhead, decode sweep and crossover")
    p.add_argument("--dtypes", type=_dtype_list, default=list(GPU_DTYPES), help="default " + ",".join(GPU_DTYPES))
    p.add_argument("--n", type=int_list, default=list(GPU_SWEEP_N), help="sizes (default 8192,16384)")
    p.add_argument("--batch", type=int_list, default=list(GPU_SWEEP_BATCHES), help="sweep batches (default 1..4096)")
    p.add_argument("--sweep-dtype", type=_dtype_list, default=["bf16"], help="dtype of the batch sweep (default bf16)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("-o", "--output", type=output_path, metavar="FILE", help="also write the JSON to FILE (a new file)")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def _run_gpu(args: argparse.Namespace) -> int:
    from .report.gpu import gpu_roofline, render_gpu_text

    if args.output is not None and args.output.exists():
        raise BadInput(f"{args.output} exists; roofline never overwrites a result (choose a new name)")
    if len(args.sweep_dtype) != 1:
        raise BadInput("--sweep-dtype takes one dtype")

    def progress(msg: str) -> None:
        if not args.no_progress:
            print(f"roofline gpu: {msg}", file=sys.stderr, flush=True)

    from .errors import BackendUnavailable

    try:
        run = gpu_roofline(
            dtypes=args.dtypes, sizes=args.n, batches=args.batch, sweep_dtype=args.sweep_dtype[0], progress=progress
        )
    except BackendUnavailable as exc:
        raise BackendUnavailable(f"no CUDA GPU to measure: {exc}") from None
    if args.output is not None:
        from .files import atomic_write

        text = json.dumps(run, indent=2, sort_keys=True, allow_nan=False, default=str)
        atomic_write(args.output, text, exclusive=True)
    if args.json:
        emit_json(run)
    else:
        print(render_gpu_text(run))
    return 0


def _add_merge(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "merge",
        help="merge sharded asv results directories (one per machine or job) into one, safely",
        description="Copies each shard's <machine>/ folders into DEST after checking that the suites are "
        "compatible and that no file (machine, commit, environment) differs; never writes a shard; DEST is "
        "replaced in one step and keeps everything it held. Exit 2 on any problem, nothing written.",
    )
    p.add_argument("paths", nargs="+", type=Path, metavar="SRC... DEST", help="asv results directories, then DEST")
    p.add_argument("--force", action="store_true", help="on a conflict take the last shard's file (DEST's kept aside)")
    p.add_argument(
        "--update-suite", action="store_true", help="where a benchmark changed, the shards' definition replaces DEST's"
    )
    p.add_argument("--dry-run", action="store_true", help="check and say what would be merged; write nothing")


def _run_merge(args: argparse.Namespace) -> int:
    from .suite.merge import merge

    if len(args.paths) < 2:
        raise BadInput("merge needs at least one SRC and a DEST (roofline merge SRC... DEST)")
    plan = merge(args.paths[:-1], args.paths[-1], args.force, args.update_suite, args.dry_run)
    for line in plan.warnings:
        print(f"roofline: warning: {line}", file=sys.stderr)
    print("\n".join(plan.summary()))
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], None], Callable[[argparse.Namespace], int]]] = {
    "preflight": (_add_preflight, _run_preflight),
    "cache": (_add_cache, _run_cache),
    "report": (_add_report, _run_report),
    "plot": (_add_plot, _run_plot),
    "decode": (_add_decode, _run_decode),
    "bench": (_add_bench, _run_bench),
    "regress": (_add_regress, _run_regress),
    "specs": (_add_specs, _run_specs),
    "machine": (_add_machine, _run_machine),
    "compare": (_add_compare, _run_compare),
    "serve": (_add_serve, _run_serve),
    "backends": (_add_backends, _run_backends),
    "gpu": (_add_gpu, _run_gpu),
    "merge": (_add_merge, _run_merge),
}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="roofline", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"roofline {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: returns the exit code (0 ok, 1 failure or regression, 2 bad input, 3 measured on a busy
    machine, 130/143 on SIGINT/SIGTERM)."""
    from .interrupt import signals_raise

    with signals_raise(final=True):
        try:
            args = build_parser().parse_args(argv)
            return COMMANDS[args.command][1](args)
        except Interrupted as exc:
            print(f"roofline: {exc}", file=sys.stderr)
            return exc.exit_code
        except RooflineError as exc:
            print(f"{getattr(exc, 'prog', 'roofline')}: error: {exc}", file=sys.stderr)
            return exc.exit_code
        except KeyboardInterrupt:
            print("roofline: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:
            return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
