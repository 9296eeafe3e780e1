"""The ``roofline`` command: one subcommand per question, one-line errors, exit 2 on bad input.

One module per command or small family of commands, each with its ``add_<name>`` (the subcommand's
flags) and ``run_<name>`` (its work: what is slow to import, numpy, torch, matplotlib, asv, is imported
there, so ``roofline --help`` stays fast); :mod:`.common` holds the argument types they share.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .. import __version__
from ..errors import BadInput, Interrupted, RooflineError
from ..interrupt import signals_raise
from .bench import add_bench, add_regress, run_bench, run_regress
from .compare import add_compare, run_compare
from .decode import add_decode, run_decode
from .environment import add_backends, add_cache, add_preflight, run_backends, run_cache, run_preflight
from .gpu import add_gpu, run_gpu
from .machine import add_machine, run_machine
from .report import add_plot, add_report, run_plot, run_report
from .results import add_merge, add_serve, run_merge, run_serve
from .specs import add_specs, run_specs


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        exc = BadInput(message)
        exc.prog = self.prog  # printed once, as the prefix: "roofline decode: error: ..."
        raise exc


COMMANDS: dict[str, tuple[Callable[[argparse._SubParsersAction], None], Callable[[argparse.Namespace], int]]] = {
    "preflight": (add_preflight, run_preflight),
    "cache": (add_cache, run_cache),
    "report": (add_report, run_report),
    "plot": (add_plot, run_plot),
    "decode": (add_decode, run_decode),
    "bench": (add_bench, run_bench),
    "regress": (add_regress, run_regress),
    "specs": (add_specs, run_specs),
    "machine": (add_machine, run_machine),
    "compare": (add_compare, run_compare),
    "serve": (add_serve, run_serve),
    "backends": (add_backends, run_backends),
    "gpu": (add_gpu, run_gpu),
    "merge": (add_merge, run_merge),
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
