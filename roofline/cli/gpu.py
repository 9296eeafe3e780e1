"""``roofline gpu``: the CUDA GPU measured (ceilings, overhead, decode sweep and crossover)."""

from __future__ import annotations

import argparse
import json
import sys

from ..errors import BackendUnavailable, BadInput
from ..files import atomic_write
from .common import emit_json, int_list, output_path


def _dtype_list(text: str) -> list[str]:
    from ..suite.params import dtypes_from

    try:
        return list(dtypes_from(text, "list"))
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("list: ")) from None


def add_gpu(sub: argparse._SubParsersAction) -> None:
    from ..measure.backends import GPU_DTYPES
    from ..suite.gpu import GPU_SWEEP_BATCHES, GPU_SWEEP_N

    p = sub.add_parser("gpu", help="measure the CUDA GPU: ceilings, overhead, decode sweep and crossover")
    p.add_argument("--dtypes", type=_dtype_list, default=list(GPU_DTYPES), help="default " + ",".join(GPU_DTYPES))
    p.add_argument("--n", type=int_list, default=list(GPU_SWEEP_N), help="sizes (default 8192,16384)")
    p.add_argument("--batch", type=int_list, default=list(GPU_SWEEP_BATCHES), help="sweep batches (default 1..4096)")
    p.add_argument("--sweep-dtype", type=_dtype_list, default=["bf16"], help="dtype of the batch sweep (default bf16)")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    p.add_argument("-o", "--output", type=output_path, metavar="FILE", help="also write the JSON to FILE (a new file)")
    p.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")


def run_gpu(args: argparse.Namespace) -> int:
    from ..report.gpu import render_gpu_text
    from ..suite.gpu import gpu_roofline

    if args.output is not None and args.output.exists():
        raise BadInput(f"{args.output} exists; roofline never overwrites a result (choose a new name)")
    if len(args.sweep_dtype) != 1:
        raise BadInput("--sweep-dtype takes one dtype")

    def progress(msg: str) -> None:
        if not args.no_progress:
            print(f"roofline gpu: {msg}", file=sys.stderr, flush=True)

    try:
        run = gpu_roofline(
            dtypes=args.dtypes, sizes=args.n, batches=args.batch, sweep_dtype=args.sweep_dtype[0], progress=progress
        )
    except BackendUnavailable as exc:
        raise BackendUnavailable(f"no CUDA GPU to measure: {exc}") from None
    if args.output is not None:
        text = json.dumps(run, indent=2, sort_keys=True, allow_nan=False, default=str)
        atomic_write(args.output, text, exclusive=True)
    if args.json:
        emit_json(run)
    else:
        print(render_gpu_text(run))
    return 0
