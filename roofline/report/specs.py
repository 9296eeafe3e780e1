"""``roofline specs``: per catalogue device and dtype, the ridge point and the crossover batch.

Crossover batch = peak / bandwidth · bytes_per_param / 2, for weights of 2 bytes (bf16),
1 byte (fp8) and 0.5 byte (int4) per parameter, whatever dtype the arithmetic runs in.
"""

from __future__ import annotations

from ..model.arithmetic import crossover_batch, ridge_point
from ..model.dtypes import DTYPES, PEAKS
from ..model.hardware import Hardware
from ..units import si, sig, table

#: Weight formats a decode step may read, and their bytes per parameter.
BYTES_PER_PARAM = {w: DTYPES[w].bytes for w in ("bf16", "fp8", "int4")}


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
            "crossover_batch": {w: crossover_batch(hw, b, dtype) for w, b in BYTES_PER_PARAM.items()},
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
    """The table ``roofline specs`` prints; with ``sources``, each figure's source and note below it."""
    head = ["device", "dtype", "peak", "bandwidth", "ridge FLOP/B"]
    head += [f"batch@{w} ({b:g} B/param)" for w, b in BYTES_PER_PARAM.items()]
    rows = [head]
    for hw in devices:
        spec = device_specs(hw)
        for dtype, d in spec["dtypes"].items():
            if dtypes and dtype not in dtypes:
                continue
            rows.append(
                [hw.name, dtype, si(d["peak"], d["unit"], 4, True), si(hw.bandwidth, "B/s", 4, True)]
                + [sig(d["ridge_flop_per_byte"])]
                + [sig(x) for x in d["crossover_batch"].values()]
            )
    lines = ["crossover batch = peak / bandwidth × bytes per parameter / 2 (dense peaks; sources: --sources)"]
    lines += table(rows, right=set(range(2, len(head))))
    if sources:
        for hw in devices:
            lines += ["", f"{hw.name} ({hw.extra.get('vendor')}): {hw.notes}".rstrip(": ")]
            for fig, f in hw.extra.get("figures", {}).items():
                note = f" — {f['note']}" if f.get("note") else ""
                lines.append(f"  {fig}: {f['text']}{note}. Source: {f['source']}")
    return "\n".join(lines)
