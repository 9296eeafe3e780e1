"""One figure for ``roofline compare --plot``: every machine's measured roofline and decode points.

x: arithmetic intensity (FLOP per byte moved, the exact W·X intensity of each point), y: GFLOP/s,
both logarithmic. A machine's roofline is min(peak, intensity × bandwidth) from its measured
ceilings; filled markers are DRAM points, hollow ones cache-resident. matplotlib (the ``plot``
extra) is imported only here, with the Agg backend.
"""

from __future__ import annotations

from pathlib import Path

from .arithmetic import gemm_intensity
from .compare import BYTES_PER_WEIGHT, MachineSummary
from .errors import BadInput
from .files import atomic_path


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise BadInput("--plot needs matplotlib: pip install 'roofline[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_overlay(summaries: list[MachineSummary], path: Path) -> Path:
    """Draw every machine in ``summaries`` into one figure at ``path`` (format from its suffix)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5), layout="constrained")
    intensities = [
        gemm_intensity(n, b, BYTES_PER_WEIGHT) for s in summaries for pts in s.decode.values() for (n, b) in pts
    ]
    ridges = [s.ridge for s in summaries if s.ridge]
    lo = min([*intensities, *ridges, 1.0]) / 4
    hi = max([*intensities, *ridges, 1.0]) * 4
    drawn = 0
    for i, s in enumerate(summaries):
        color = f"C{i % 10}"
        if s.peak and s.bandwidth:
            xs = [lo, s.ridge, hi]
            ax.plot(
                xs,
                [min(s.peak, x * s.bandwidth) / 1e9 for x in xs],
                color=color,
                lw=1.8,
                label=f"{s.machine} roofline ({s.bandwidth / 1e9:.3g} GB/s, {s.peak / 1e9:.3g} GFLOP/s)",
            )
            drawn += 1
        for regime, points in s.decode.items():
            xy = [(gemm_intensity(n, b, BYTES_PER_WEIGHT), v) for (n, b), v in sorted(points.items()) if v]
            if not xy:
                continue
            hollow = regime != "DRAM"
            ax.scatter(
                [x for x, _ in xy],
                [y for _, y in xy],
                s=36,
                marker="o",
                facecolors="none" if hollow else color,
                edgecolors=color,
                label=f"{s.machine} decode, {regime}",
            )
            drawn += 1
    if not drawn:
        plt.close(fig)
        raise BadInput("nothing to plot: no machine has measured ceilings or decode results")
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("arithmetic intensity (FLOP/byte, float32 W·X)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("roofline compare: measured rooflines and decode steps")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=120)
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot write the plot to {path}: {exc}") from None
    finally:
        plt.close(fig)
    return path
