"""What the commands share: argument types (one-line errors through argparse), the catalogue device
a plot may be drawn beside (``--reference``), and the one way a command prints JSON."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput
from ..files import probe_writable
from ..model.catalogue import lookup
from ..model.dtypes import PEAKS

if TYPE_CHECKING:
    from ..model.hardware import Hardware

#: The dtypes whose peak may bound a decode's arithmetic (``--compute-dtype`` of decode and compare --model).
COMPUTE_DTYPES = tuple(d for d in PEAKS if d != "fp64")


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def _finite(text: str, lowest: float, closed: bool, what: str) -> float:
    """A finite number above ``lowest`` (or equal to it, ``closed``); argparse's error saying ``what`` it must be."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < lowest or (value == lowest and not closed):
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}")
    return value


def positive_float(text: str) -> float:
    return _finite(text, 0.0, False, "a positive finite number")


def non_negative_float(text: str) -> float:
    return _finite(text, 0.0, True, "a finite number ≥ 0")


def int_list(text: str) -> list[int]:
    from ..suite.params import MAX_BATCH, positive_ints

    try:
        return list(positive_ints(text, "list", MAX_BATCH))
    except BadInput as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("list: ")) from None


def threshold(text: str) -> float:
    """'10%' or '0.1' → 0.1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction (0.1) or a percentage (10%)") from None
    if not 0 < value < 10:
        raise argparse.ArgumentTypeError(f"{text!r} must be a positive fraction such as 0.1, or a percentage")
    return value


def port_number(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0 to 65535)")
    return value


def output_path(text: str) -> Path:
    """A file to write: its folder must exist and take a new file (tried, then removed)."""
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


def add_reference(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--reference",
        metavar="DEVICE",
        help="also draw a catalogue device's roofline (e.g. h100), in a panel of its own beside this machine's",
    )


def reference_device(args: argparse.Namespace, plotting: bool) -> Hardware | None:
    """The catalogue device ``--reference`` names (BadInput, with the closest names, if none), checked first."""
    if args.reference is None:
        return None
    if not plotting:
        raise BadInput("--reference goes with --plot: it draws a device beside this machine's roofline")
    return lookup(args.reference)


def emit_json(obj: object) -> None:
    """Print one JSON object, strict (no NaN), sorted keys."""
    print(json.dumps(obj, indent=2, sort_keys=True, allow_nan=False, default=str))
