"""``roofline specs``: per catalogue device and arithmetic dtype, the crossover batch of the weights it reads.

Crossover batch = peak / bandwidth × bytes per weight / 2. Each arithmetic dtype is shown with the
weight formats a decode step in it reads (:data:`WEIGHTS`): its own, and for bf16 and fp16 the
weight-only formats that kernels widen to it; no fp64 arithmetic over int4 weights.
"""

from __future__ import annotations

from ..model.arithmetic import crossover_batch, ridge_point
from ..model.dtypes import DTYPES, PEAKS
from ..model.hardware import Hardware
from ..units import si, sig, table

#: Arithmetic dtype → the weight formats a decode step in it reads: its own format (fp32 storage for
#: tf32), and for bf16/fp16 arithmetic the weight-only fp8 and int4 formats widened to it (W8A16, W4A16).
WEIGHTS = {
    "fp64": ("fp64",),
    "fp32": ("fp32",),
    "tf32": ("fp32",),
    "bf16": ("bf16", "fp8", "int4"),
    "fp16": ("fp16", "int4"),
    "fp8": ("fp8",),
    "int8": ("int8",),
}


def device_specs(hw: Hardware) -> dict[str, object]:
    """One device as a JSON-ready dict: figures, sources, and per dtype its ridge and crossovers."""
    figures = hw.extra.get("figures", {})
    dtypes = {}
    for dtype in (d for d in PEAKS if d in hw.peak_flops):
        fig = figures.get(dtype, {})
        dtypes[dtype] = {
            "peak": hw.peak_flops[dtype],
            "unit": DTYPES[dtype].peak_unit,
            "ridge_flop_per_byte": ridge_point(hw, dtype),
            "crossover_batch": {w: crossover_batch(hw, DTYPES[w].bytes, dtype) for w in WEIGHTS.get(dtype, (dtype,))},
            "source": fig.get("source", hw.source),
            "note": fig.get("note", ""),
        }
    return {
        "name": hw.name,
        "vendor": hw.extra.get("vendor"),
        "kind": hw.extra.get("kind"),
        "aliases": hw.extra.get("aliases", []),
        "bandwidth": hw.bandwidth,
        "memory_bytes": hw.memory_bytes,
        "memory_reserved_bytes": hw.memory_reserved,
        "notes": hw.notes,
        "figures": figures,
        "dtypes": dtypes,
    }


def format_specs(devices: list[Hardware], dtypes: list[str] | None = None, sources: bool = False) -> str:
    """The table ``roofline specs`` prints, a row per weight format; with ``sources``, each figure's source and note."""
    rows = [["device", "arithmetic", "peak", "bandwidth", "weights", "crossover batch"]]
    for hw in devices:
        spec = device_specs(hw)
        for dtype, d in spec["dtypes"].items():
            if dtypes and dtype not in dtypes:
                continue
            first = [hw.name, dtype, si(d["peak"], d["unit"], 4, True), si(hw.bandwidth, "B/s", 4, True)]
            for i, (weights, batch) in enumerate(d["crossover_batch"].items()):
                fmt = f"{weights}, {DTYPES[weights].bytes:g} B" + (" (weight-only)" if weights != _own(dtype) else "")
                rows.append([*(first if i == 0 else [""] * 4), fmt, sig(batch)])
    lines = ["crossover batch = peak / bandwidth × bytes per weight / 2 (dense peaks; sources: --sources)"]
    lines += table(rows, right={2, 3, 5})
    if sources:
        for hw in devices:
            lines += ["", f"{hw.name} ({hw.extra.get('vendor')}): {hw.notes}".rstrip(": ")]
            for fig, f in hw.extra.get("figures", {}).items():
                note = f" — {f['note']}" if f.get("note") else ""
                lines.append(f"  {fig}: {f['text']}{note}. Source: {f['source']}")
    return "\n".join(lines)


def _own(dtype: str) -> str:
    """The weight format of ``dtype``'s own arithmetic (tf32 math reads fp32 weights)."""
    return WEIGHTS.get(dtype, (dtype,))[0]
