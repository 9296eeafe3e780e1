"""``roofline specs``: catalogue devices' ridge points and crossover batches (datasheet figures)."""

from __future__ import annotations

import argparse
import sys

from ..errors import BadInput
from ..model import catalogue
from ..model.dtypes import PEAKS
from ..report.specs import device_specs, format_specs
from .common import emit_json


def add_specs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("specs", help="catalogue devices: ridge point and crossover batch per dtype (datasheet figures)")
    p.add_argument("names", nargs="*", metavar="NAME", help="device names or aliases (default: every device)")
    p.add_argument("--dtype", action="append", choices=PEAKS, help="only this dtype (repeatable)")
    p.add_argument("--sources", action="store_true", help="also print every figure's source and note")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def run_specs(args: argparse.Namespace) -> int:
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
