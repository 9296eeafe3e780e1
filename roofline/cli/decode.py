"""``roofline decode``: an LLM's tokens/s, bound and crossover batch on catalogue, recorded or measured
hardware; ``--measure`` decodes the model here, ``--engine`` with llama.cpp."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import BackendUnavailable, BadInput
from ..model.gguf_layout import GGUF_FORMATS, check_shape, gguf_format
from ..model.llm import (
    INT4_GROUP_SIZE,
    KV_BYTES,
    QUANT_FORMATS,
    SETTABLE_FIELDS,
    WEIGHT_BYTES,
    custom_model,
    lookup_model,
    preset_names,
    uses_group_size,
)
from ..model.llm_estimate import DecodeSetup, Interconnect, check_inputs, estimate, lookup_interconnect, require_fits
from ..outcome import Skipped
from ..report.llm_estimate import (
    Roofs,
    check_fits,
    check_roofs,
    engine_dict,
    format_engine,
    format_estimate,
    format_measured,
    format_predicted,
    measured_dict,
    predict,
    resolve_roofs,
)
from ..suite import params
from .common import COMPUTE_DTYPES, emit_json, int_list, non_negative_float, positive_float, positive_int


def interconnect_arg(text: str) -> object:
    """'450' (GB/s) → 450.0; 'nvlink4' → its Interconnect (bandwidth and latency)."""
    try:
        float(text)
    except ValueError:
        try:
            return lookup_interconnect(text)
        except BadInput as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None
    return positive_float(text)


def add_decode(sub: argparse._SubParsersAction) -> None:
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
        choices=list(COMPUTE_DTYPES),
        help="the peak that bounds arithmetic (default: fp32 for fp32 weights, fp8 for fp8 weights where the "
        "hardware has it, else bf16)",
    )
    p.add_argument(
        "--group-size",
        type=positive_int,
        help="weights per scale for int4, gptq, awq, int4-zp (default 128); other formats have fixed blocks",
    )
    _add_deployment_flags(p)
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_measured_flags(p)
    g = p.add_argument_group("model shape (with --model custom, or to change a preset)")
    for name in SETTABLE_FIELDS:
        g.add_argument(f"--{name.replace('_', '-')}", type=positive_int, metavar="N")
    g.add_argument("--tied-embeddings", action="store_const", const=True, help="output head shares the embedding")


def _add_deployment_flags(p: argparse.ArgumentParser) -> None:
    """decode's flags of how the model is served: context, prompt and output, devices, batches, memory."""
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


def _add_measured_flags(p: argparse.ArgumentParser) -> None:
    """decode's flags of a decode measured here (--measure, --engine)."""
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


def _decode_flags(args: argparse.Namespace) -> dict[str, object]:
    """The DecodeSetup keywords the decode flags give; BadInput where flags contradict each other."""
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


def run_decode(args: argparse.Namespace) -> int:
    shape = {f: getattr(args, f) for f in (*SETTABLE_FIELDS, "tied_embeddings")}
    base = None if args.model.strip().lower() == "custom" else lookup_model(args.model)
    model = custom_model(base, **shape)
    engine_formats = _engine_formats(args)
    flags = _decode_flags(args)
    if args.engine is not None:
        return _run_engine_decode(args, base, model, flags, engine_formats)
    if args.measure:
        return _run_measured_decode(args, base, model, flags)
    from ..suite.live import is_local, local_hardware
    from ..suite.results import read_gallery

    check_inputs(model, **flags)  # before measuring the local machine
    measured: list[str] = []
    if is_local(args.hardware):
        roofs = Roofs(local_hardware(measured))
    else:
        roofs = resolve_roofs(args.hardware, read_gallery(args.results))
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


def _require_local(args: argparse.Namespace) -> None:
    """--measure decodes here: BadInput unless --hardware names this machine."""
    from ..suite.live import LOCAL, is_local

    if not is_local(args.hardware):
        raise BadInput(f"--measure decodes on this machine: give --hardware {LOCAL}, not {args.hardware!r}")


#: Tokens prefilled before the timed decode steps of --measure when --context is not given (a CPU prefills slowly).
MEASURE_CONTEXT = 256


def _run_measured_decode(args: argparse.Namespace, base, model, flags: dict[str, object]) -> int:
    """--measure: the bound on this machine's ceilings, then the model decoded here against it."""
    from ..measure.contention import watched
    from ..measure.llm_build import MODEL_DTYPES, import_transformers
    from ..measure.llm_decode import hold_against_bound, measure_model_decode
    from ..suite import run as run_
    from ..suite.live import watch_note

    _require_local(args)
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
        hw = run_.model_roofs(model, dtype, args.batch).require()  # the run's roofs at the model's layers
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
    from ..measure.engines import lookup_engine

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
    from ..measure.engine_decode import KV_DTYPE, crossovers, engine_setup, hold_engine, measure_engine_decode
    from ..measure.engines import lookup_engine
    from ..suite import run as run_

    if not args.measure:
        raise BadInput("--engine decodes on this machine: give it with --measure")
    _require_local(args)
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
    roofs = lambda: run_.engine_roofs(params.gemm_n())  # noqa: E731  the one entry point's rounds, a turn a round
    run = measure_engine_decode(engine, model, formats, args.batch, context, steps=args.steps, roofs=roofs)
    skipped = [o for o in run.outcomes.values() if isinstance(o, Skipped)]
    if skipped and run.hardware is None:
        raise BackendUnavailable(skipped[0].reason)
    rows = hold_engine(run)
    estimates = [estimate(engine_setup(run, fmt, run.hardware), args.batch) for fmt in formats]
    if args.json:
        emit_json({"estimates": [e.as_dict() for e in estimates], "measured": engine_dict(run, rows, crossovers(rows))})
        return 0
    for est in estimates:
        print("\n".join(format_estimate(est)))
        print()
    print("\n".join(format_engine(run, rows, crossovers(rows), base.layers if base is not None else None)))
    return 0
