"""The roofline pictures: log-log FLOP/s against FLOP/byte, roofs and measured decode points.

:func:`plot_report` draws reports (``roofline report --plot``, ``roofline plot``, ``make bench``);
:func:`plot_overlay` draws every machine of ``roofline compare --plot`` in one figure, filled
markers for DRAM points and hollow ones for cache-resident. matplotlib (the ``plot`` extra) with
the Agg backend, imported only here; PNG or SVG by the file's suffix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ..errors import BadInput
from ..files import atomic_path
from ..model.arithmetic import attainable, gemm_intensity
from ..model.dtypes import SUITE, by_numpy
from ..model.hardware import H100, Hardware
from .compare import MachineSummary
from .cpu import Report

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


def _roof(ax, hw: Hardware, dtype: str, xs: Sequence[float], label: str, scale: float = 1.0, **style) -> None:
    ax.plot(xs, [attainable(hw, x, dtype) / scale for x in xs], label=label, **style)


def plot_report(reports: Sequence[Report], path: Path, title: str | None = None) -> Path:
    """Draw one or more reports (see :mod:`roofline.report.cpu`) on one roofline plot.

    Each report contributes its measured roofs (bandwidth roof to each GEMM peak) and its DRAM
    decode points, labelled by batch. The H100 datasheet roof is drawn for reference.
    """
    path = Path(path)
    check_plot_path(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    xs = [2 ** (i / 8) for i in range(-24, 8 * 12)]  # 1/8 .. 4096 FLOP/byte
    _roof(ax, H100, "bf16", xs, f"{H100.name} datasheet, bf16", color="0.6", ls="--")
    markers = "osD^vP*X"
    for i, rep in enumerate(reports):
        host = rep.facts.get("host") or f"machine {i + 1}"
        color = f"C{i}"
        hw = rep.hardware
        for j, dtype in enumerate(sorted(rep.roofs.peaks) if hw else ()):
            _roof(
                ax,
                hw,
                by_numpy(dtype).name,
                xs,
                f"{host}: {dtype} roof (measured)",
                color=color,
                ls="-" if j == 0 else ":",
            )
        points = [p for p in rep.decode if p.gflops]
        for k, n in enumerate(sorted({p.n for p in points})):
            pts = sorted((p for p in points if p.n == n), key=lambda p: p.batch)
            ax.plot(
                [p.intensity for p in pts],
                [p.gflops * 1e9 for p in pts],
                ls="",
                color=color,
                marker=markers[k % len(markers)],
                label=f"{host}: decode n={n} (DRAM)",
            )
            for p in pts:  # labels alternate below / above so two sizes at one batch stay readable
                ax.annotate(
                    f"b={p.batch}",
                    (p.intensity, p.gflops * 1e9),
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


def plot_overlay(summaries: list[MachineSummary], path: Path) -> Path:
    """Draw every machine in ``summaries`` into one figure at ``path`` (format from its suffix)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5), layout="constrained")
    intensities = [gemm_intensity(n, b, SUITE.bytes) for s in summaries for pts in s.decode.values() for (n, b) in pts]
    ridges = [s.ridge for s in summaries if s.ridge]
    lo = min([*intensities, *ridges, 1.0]) / 4
    hi = max([*intensities, *ridges, 1.0]) * 4
    drawn = 0
    for i, s in enumerate(summaries):
        color = f"C{i % 10}"
        if s.peak and s.bandwidth:
            xs = [lo, s.ridge, hi]
            _roof(
                ax,
                s.measured,
                SUITE.name,
                xs,
                scale=1e9,
                color=color,
                lw=1.8,
                label=f"{s.machine} roofline ({s.bandwidth / 1e9:.3g} GB/s, {s.peak / 1e9:.3g} GFLOP/s)",
            )
            drawn += 1
        for regime, points in s.decode.items():
            xy = [(gemm_intensity(n, b, SUITE.bytes), v) for (n, b), v in sorted(points.items()) if v]
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
