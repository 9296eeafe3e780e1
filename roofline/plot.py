"""The roofline picture: log-log FLOP/s against FLOP/byte, roofs and measured decode points.

matplotlib with the Agg backend (no display needed); PNG or SVG by the file's suffix.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import BadInput
from .files import atomic_path
from .hardware import H100

FORMATS = (".png", ".svg")


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise BadInput("plotting needs matplotlib: pip install 'roofline[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(path: Path) -> None:
    """BadInput unless the suffix is .png or .svg."""
    if path.suffix.lower() not in FORMATS:
        raise BadInput(f"unsupported plot format {path.suffix or '(none)'!r} for {path}: use .png or .svg")


def _roof(ax, peak: float, bandwidth: float, xs: Sequence[float], label: str, **style) -> None:
    ax.plot(xs, [min(peak, x * bandwidth) for x in xs], label=label, **style)


def plot_report(reports: Sequence[Mapping[str, object]], path: Path, title: str | None = None) -> Path:
    """Draw one or more reports (see :mod:`roofline.report`) on one roofline plot.

    Each report contributes its measured roofs (bandwidth roof to each GEMM peak) and its DRAM
    decode points, labelled by batch. The H100 datasheet roof is drawn for reference.
    """
    path = Path(path)
    check_plot_path(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    xs = [2 ** (i / 8) for i in range(-24, 8 * 12)]  # 1/8 .. 4096 FLOP/byte
    _roof(ax, H100.peak("bf16"), H100.bandwidth, xs, f"{H100.name} datasheet, bf16", color="0.6", ls="--")
    markers = "osD^vP*X"
    for i, rep in enumerate(reports):
        host = rep.get("machine", {}).get("host") or f"machine {i + 1}"
        c = rep.get("ceilings") or {}
        color = f"C{i}"
        roof = c.get("bandwidth_roof_gbps")
        for j, (dtype, peak) in enumerate(sorted((c.get("peak_gflops") or {}).items())):
            if roof:
                _roof(
                    ax,
                    peak * 1e9,
                    roof * 1e9,
                    xs,
                    f"{host}: {dtype} roof (measured)",
                    color=color,
                    ls="-" if j == 0 else ":",
                )
        rows = [r for r in rep.get("decode", []) if r.get("gflops")]
        sizes = sorted({r["n"] for r in rows})
        for k, n in enumerate(sizes):
            pts = sorted((r for r in rows if r["n"] == n), key=lambda r: r["batch"])
            ax.plot(
                [r["intensity"] for r in pts],
                [r["gflops"] * 1e9 for r in pts],
                ls="",
                color=color,
                marker=markers[k % len(markers)],
                label=f"{host}: decode n={n} (DRAM)",
            )
            for r in pts:  # labels alternate below / above so two sizes at one batch stay readable
                ax.annotate(
                    f"b={r['batch']}",
                    (r["intensity"], r["gflops"] * 1e9),
                    textcoords="offset points",
                    xytext=(4, -11 if k % 2 == 0 else 5),
                    fontsize=7,
                    color=color,
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(title or "Decode roofline: where y = W·X turns from memory-bound to compute-bound")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp)
    except OSError as exc:
        raise BadInput(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        plt.close(fig)
    return path
