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
from pathlib import Path

from . import __version__
from .errors import BadInput, RooflineError


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise BadInput(message if self.prog == "roofline" else f"{self.prog}: {message}")


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
    from .params import MAX_BATCH, positive_ints

    try:
        return list(positive_ints(text, "list", MAX_BATCH))
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("list: ")) from None


def output_path(text: str) -> Path:
    """A file to write: its folder must exist and be writable."""
    path = Path(text)
    folder = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a directory, not a file")
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"folder {folder} does not exist")
    import os

    if not os.access(folder, os.W_OK):
        raise argparse.ArgumentTypeError(f"folder {folder} is not writable")
    return path


def emit_json(obj: object) -> None:
    """Print one JSON object, strict (no NaN), sorted keys."""
    print(json.dumps(obj, indent=2, sort_keys=True, allow_nan=False, default=str))


# ---- subcommands ----------------------------------------------------------------------------


def _add_preflight(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("preflight", help="check the suite's environment variables and memory before asv runs")
    p.add_argument("--results", type=Path, default=Path(".asv/results"), help="asv results folder to check")


def _run_preflight(args: argparse.Namespace) -> int:
    from .preflight import preflight

    for line in preflight(args.results):
        print(line)
    return 0


def _add_cache(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cache", help="show or clear the shared random weight pools")
    p.add_argument("--clear", action="store_true", help="delete the pools (they are rebuilt on demand)")


def _run_cache(args: argparse.Namespace) -> int:
    from . import data

    directory = data.cache_dir()
    if args.clear:
        freed = data.clear_cache()
        print(f"removed {freed / 2**20:.0f} MiB from {directory}")
        return 0
    files = sorted(directory.glob("*.bin")) if directory.is_dir() else []
    total = sum(f.stat().st_size for f in files)
    print(f"{directory}: {len(files)} pool file(s), {total / 2**20:.0f} MiB")
    for f in files:
        print(f"  {f.name}  {f.stat().st_size / 2**20:.0f} MiB")
    return 0


def _add_specs(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("specs", help="catalogue devices: ridge point and crossover batch per dtype (datasheet figures)")
    p.add_argument("names", nargs="*", metavar="NAME", help="device names or aliases (default: every device)")
    p.add_argument("--dtype", action="append", choices=_dtypes(), help="only this dtype (repeatable)")
    p.add_argument("--sources", action="store_true", help="also print every figure's source and note")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def _dtypes() -> tuple[str, ...]:
    from .catalogue import DTYPES

    return DTYPES


def _run_specs(args: argparse.Namespace) -> int:
    from . import catalogue
    from .specs import device_specs, format_specs

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


COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], None], Callable[[argparse.Namespace], int]]] = {
    "preflight": (_add_preflight, _run_preflight),
    "cache": (_add_cache, _run_cache),
    "specs": (_add_specs, _run_specs),
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
    """Entry point: returns the exit code (0 ok, 1 failure or regression, 2 bad input)."""
    try:
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command][1](args)
    except RooflineError as exc:
        print(f"roofline: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("roofline: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
