"""The hardware catalogue: datasheet figures with their sources, validated when loaded.

The data lives in ``catalogue.toml`` beside this module (read it: every figure carries its unit,
its source and a note where the vendor prints sparse figures or sources disagree).

- :func:`lookup` (``"h100"``, ``"H100-SXM5"``, ``"MI300X"``) → :class:`~roofline.model.hardware.Hardware`;
  an unknown name is a BadInput naming the closest matches.
- :func:`devices` / :func:`names`: every device, in file order.
- :func:`match_host`: the device a measured machine is (by GPU name or CPU model), if any.

Each Hardware's ``extra`` holds ``vendor``, ``kind``, ``aliases``, ``match`` and ``figures``:
figure name → ``{"value", "unit", "text", "source", "note"}`` for every figure loaded.
``peak_flops["int8"]`` is in integer OP/s.
"""

from __future__ import annotations

import difflib
import functools
import math
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path

from ..errors import BadInput
from .dtypes import DTYPES, PEAKS
from .hardware import Hardware

CATALOGUE_PATH = Path(__file__).with_name("catalogue.toml")

#: Peaks that must not decrease along this chain, where present.
ORDERED = ("tf32", "bf16", "fp8")

#: The unit each figure must be written in (after its SI prefix).
UNITS = {**{d: DTYPES[d].peak_unit for d in PEAKS}, "bandwidth": "B/s", "memory": "B", "reserved": "B"}

_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BINARY = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40}
_FIGURE = re.compile(
    r"^\s*([0-9][0-9_]*(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?)\s*(Ki|Mi|Gi|Ti|[kKMGTP]?)(FLOP/s|OP/s|B/s|B)\s*$"
)
_DEVICE_KEYS = {"name", "vendor", "kind", "aliases", "match", "notes", "documents", "figures"}
_FIGURE_KEYS = {"value", "source", "note"}


def normalize(name: str) -> str:
    """The form names are compared in: lower case, letters and digits only ('H100-SXM5' → 'h100sxm5')."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def parse_figure(text: str, unit: str, where: str) -> float:
    """'989.5 TFLOP/s' with ``unit`` 'FLOP/s' → 9.895e14; BadInput naming ``where`` otherwise."""
    if not isinstance(text, str):
        raise BadInput(f"{where}: write the figure as a string with its unit (e.g. '3.35 TB/s'), got {text!r}")
    m = _FIGURE.match(text)
    if not m:
        raise BadInput(f"{where}: cannot read {text!r} (expected a number, a prefix and {unit})")
    number, prefix, got_unit = m.groups()
    if got_unit != unit:
        raise BadInput(f"{where}: {text!r} is in {got_unit}, expected {unit}")
    if prefix in _BINARY and unit != "B":
        raise BadInput(f"{where}: binary prefix {prefix} only applies to a capacity in bytes")
    value = float(number.replace("_", "")) * (_BINARY.get(prefix) or _PREFIX[prefix])
    if not math.isfinite(value) or value <= 0:
        raise BadInput(f"{where}: {text!r} must be positive")
    return value


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BadInput(f"{where}: must be a non-empty string, got {value!r}")
    return value.strip()


def _device(entry: object, index: int, origin: str) -> Hardware:
    if not isinstance(entry, dict):
        raise BadInput(f"{origin}: device #{index + 1} is not a table")
    label = f"{origin}: device #{index + 1}"
    name = _text(entry.get("name"), f"{label}: name")
    label = f"{origin}: {name}"
    unknown = set(entry) - _DEVICE_KEYS
    if unknown:
        raise BadInput(f"{label}: unknown key(s) {', '.join(sorted(unknown))}")
    aliases = entry.get("aliases", [])
    patterns = entry.get("match", [])
    for key, value in (("aliases", aliases), ("match", patterns)):
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise BadInput(f"{label}: {key} must be a list of strings")
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise BadInput(f"{label}: match pattern {pattern!r} is not a regular expression: {exc}") from None
    documents = entry.get("documents")
    if not isinstance(documents, dict) or not documents:
        raise BadInput(f"{label}: needs a [documents] table naming at least one source")
    documents = {k: _text(v, f"{label}: documents.{k}") for k, v in documents.items()}
    figures_in = entry.get("figures")
    if not isinstance(figures_in, dict):
        raise BadInput(f"{label}: needs a [figures] table")
    figures: dict[str, dict[str, object]] = {}
    for fig, spec in figures_in.items():
        where = f"{label}: {fig}"
        if fig not in UNITS:
            raise BadInput(f"{where}: unknown figure (use {', '.join(UNITS)})")
        if not isinstance(spec, dict) or "value" not in spec or "source" not in spec:
            raise BadInput(f"{where}: write {{ value = '...', source = '<document>' }}")
        if set(spec) - _FIGURE_KEYS:
            raise BadInput(f"{where}: unknown key(s) {', '.join(sorted(set(spec) - _FIGURE_KEYS))}")
        source = spec["source"]
        if source not in documents:
            raise BadInput(f"{where}: source {source!r} is not one of the device's documents ({', '.join(documents)})")
        figures[fig] = {
            "value": parse_figure(spec["value"], UNITS[fig], where),
            "unit": UNITS[fig],
            "text": spec["value"].strip(),
            "source": documents[source],
            "note": _text(spec["note"], f"{where}: note") if "note" in spec else "",
        }
    for required in ("bandwidth", "memory"):
        if required not in figures:
            raise BadInput(f"{label}: missing the {required} figure")
    peaks = {d: float(figures[d]["value"]) for d in PEAKS if d in figures}
    if not peaks:
        raise BadInput(f"{label}: no peak FLOP/s for any dtype")
    present = [d for d in ORDERED if d in peaks]
    for low, high in zip(present, present[1:], strict=False):
        if peaks[low] > peaks[high]:
            raise BadInput(
                f"{label}: {low} peak {figures[low]['text']} exceeds {high} peak {figures[high]['text']} "
                f"(expected {' <= '.join(ORDERED)}; a sparse figure left un-halved?)"
            )
    return Hardware(
        name=name,
        peak_flops=peaks,
        bandwidth=float(figures["bandwidth"]["value"]),
        source="; ".join(dict.fromkeys(str(f["source"]) for f in figures.values())),
        memory_bytes=float(figures["memory"]["value"]),
        memory_reserved=float(figures["reserved"]["value"]) if "reserved" in figures else 0.0,
        notes=_text(entry["notes"], f"{label}: notes") if "notes" in entry else "",
        extra={
            "vendor": _text(entry.get("vendor"), f"{label}: vendor"),
            "kind": _text(entry.get("kind"), f"{label}: kind"),
            "aliases": list(aliases),
            "match": list(patterns),
            "documents": documents,
            "figures": figures,
        },
    )


def load(path: str | Path | None = None) -> dict[str, Hardware]:
    """Read and validate a catalogue file (default: the packaged one); name → Hardware, in file order."""
    path = Path(path) if path is not None else CATALOGUE_PATH
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except OSError as exc:
        raise BadInput(f"catalogue {path}: cannot read it: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise BadInput(f"catalogue {path}: not valid TOML: {exc}") from None
    entries = data.get("device")
    if set(data) - {"device"} or not isinstance(entries, list) or not entries:
        raise BadInput(f"catalogue {path}: expected only [[device]] tables")
    out: dict[str, Hardware] = {}
    seen: dict[str, str] = {}
    for i, entry in enumerate(entries):
        hw = _device(entry, i, f"catalogue {path.name}")
        for key in _keys(hw):
            if key in seen and seen[key] != hw.name:
                raise BadInput(f"catalogue {path.name}: {hw.name!r} and {seen[key]!r} both answer to {key!r}")
            seen[key] = hw.name
        out[hw.name] = hw
    return out


def _keys(hw: Hardware) -> list[str]:
    """Every normalized name a device answers to: its name, vendor + name, its aliases."""
    names = [hw.name, f"{hw.extra.get('vendor', '')} {hw.name}", *hw.extra.get("aliases", [])]
    return list(dict.fromkeys(normalize(n) for n in names if normalize(n)))


@functools.cache
def _catalogue() -> dict[str, Hardware]:
    return load()


@functools.cache
def _index() -> dict[str, str]:
    return {key: hw.name for hw in _catalogue().values() for key in _keys(hw)}


def devices() -> list[Hardware]:
    """Every device of the packaged catalogue, in file order."""
    return list(_catalogue().values())


def names() -> list[str]:
    """Canonical names of the packaged catalogue's devices."""
    return list(_catalogue())


def closest(name: str, n: int = 3) -> list[str]:
    """Canonical names that look most like ``name``."""
    index = _index()
    hits = difflib.get_close_matches(normalize(name), list(index), n=3 * n, cutoff=0.5)
    return list(dict.fromkeys(index[h] for h in hits))[:n]


def lookup(name: str) -> Hardware:
    """The device called ``name`` (canonical name or alias, any case/punctuation).

    BadInput ``unknown device 'x' (closest: ...)`` when nothing answers to it.
    """
    hw_name = _index().get(normalize(name or ""))
    if hw_name is None:
        near = closest(name or "")
        hint = f"closest: {', '.join(near)}" if near else f"known: {', '.join(names())}"
        raise BadInput(f"unknown device {name!r} ({hint}; `roofline specs` lists them)")
    return _catalogue()[hw_name]


def match_host(facts: Mapping[str, object]) -> Hardware | None:
    """The catalogue device a machine is, from its ``gpu`` name (GPUs, TPUs) or ``cpu`` model (CPUs, SoCs).

    ``facts`` is e.g. :func:`roofline.host.host_facts` or an asv machine.json; a GPU, where
    present, wins over the CPU. None when nothing matches.
    """
    probes = [("gpu", ("gpu", "tpu")), ("cpu", ("cpu", "soc"))]
    for key, kinds in probes:
        text = facts.get(key)
        if not isinstance(text, str) or not text.strip() or text.strip().lower() in ("none", "n/a"):
            continue
        for hw in devices():
            if hw.extra["kind"] in kinds and any(re.search(p, text, re.IGNORECASE) for p in hw.extra["match"]):
                return hw
    return None
