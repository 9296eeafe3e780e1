"""The roofline pictures: log-log FLOP/s against FLOP/byte, roofs and measured decode points.

:func:`plot_report` draws reports (``roofline report --plot``, ``roofline plot``, ``make bench``): every
measured roof labelled (one per memory level, one per dtype), points coloured by the level they live in;
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
from ..model.dtypes import SUITE
from ..model.hardware import H100, Hardware
from ..model.hierarchy import DRAM
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


#: One colour per memory level: its roof and the points whose working set fits in it.
LEVEL_COLORS = {"L1": "tab:purple", "L2": "tab:blue", "L3": "tab:green", "L4": "tab:olive", DRAM: "tab:red"}


def _level_color(level: str) -> str:
    return LEVEL_COLORS.get(level, "tab:gray")


def _draw_hierarchy(ax, rep: Report, xs: Sequence[float], host: str, style: str) -> None:
    """Every roof of one report, labelled on the line (ERT and Advisor style): a diagonal per memory
    level up to the highest compute roof, a horizontal line per dtype from the fastest level's diagonal."""
    h = rep.roofs_by_level
    top = max((c.gflops for c in h.compute), default=None)
    fastest = max((r.gbps for r in h.levels), default=None)
    lo, hi = xs[0], xs[-1]
    for i, r in enumerate(h.levels):
        end = min(hi, top / r.gbps) if top else hi
        color = _level_color(r.level)
        ax.plot([lo, end], [lo * r.gbps * 1e9, end * r.gbps * 1e9], color=color, ls=style, lw=1.6)
        at = lo * (end / lo) ** (0.12 + 0.22 * i)  # labels staggered along their lines, so close roofs stay readable
        ax.annotate(
            f"{r.level} {r.gbps:.3g} GB/s",
            (at, at * r.gbps * 1e9),
            textcoords="offset points",
            xytext=(-6, 4),
            ha="right",
            fontsize=7,
            color=color,
        )
    for i, c in enumerate(sorted(h.compute, key=lambda c: -c.gflops)):
        start = max(lo, c.gflops / fastest) if fastest else lo
        ax.plot([start, hi], [c.gflops * 1e9] * 2, color="0.25", ls=style if i == 0 else ":", lw=1.2)
        unit = "GOP/s" if c.dtype == "int8" else "GFLOP/s"
        ax.annotate(
            f"{c.dtype} {c.gflops:.3g} {unit}",
            (hi, c.gflops * 1e9),
            textcoords="offset points",
            xytext=(-4, 3),
            ha="right",
            fontsize=7,
            color="0.25",
        )
    if len(h.levels) or len(h.compute):
        ax.plot([], [], color="0.25", ls=style, label=f"{host}: measured roofs (per level and dtype)")


def plot_report(reports: Sequence[Report], path: Path, title: str | None = None) -> Path:
    """Draw one or more reports (see :mod:`roofline.report.cpu`) on one roofline plot.

    Each report contributes every measured roof, labelled: one bandwidth roof per memory level and
    one compute roof per dtype; and its decode points (DRAM pool: filled, cache-resident: hollow),
    coloured by the level their working set fits in and labelled by batch. The H100 datasheet roof
    is drawn for reference. A second report's roofs are dashed.
    """
    path = Path(path)
    check_plot_path(path)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9, 6), dpi=110)
    xs = [2 ** (i / 8) for i in range(-24, 8 * 12)]  # 1/8 .. 4096 FLOP/byte
    _roof(ax, H100, "bf16", xs, f"{H100.name} datasheet, bf16", color="0.6", ls="--")
    for i, rep in enumerate(reports):
        host = rep.facts.get("host") or f"machine {i + 1}"
        _draw_hierarchy(ax, rep, xs, host, "-" if i == 0 else "--")
        seen: set[tuple[str, str]] = set()
        for regime, points in (("DRAM pool", rep.decode), ("cache-resident", rep.cache_resident)):
            for p in (p for p in points if p.gflops):
                own = rep.row(p).own
                level = own.level if own else DRAM
                color = _level_color(level)
                label = f"{host}: decode, {regime}, working set in {level}"
                ax.plot(
                    p.intensity,
                    p.gflops * 1e9,
                    ls="",
                    marker="o" if regime == "DRAM pool" else "s",
                    markersize=6,
                    markerfacecolor=color if regime == "DRAM pool" else "none",
                    markeredgecolor=color,
                    label=None if (regime, level) in seen else label,
                )
                seen.add((regime, level))
                ax.annotate(
                    f"n={p.n} b={p.batch}",
                    (p.intensity, p.gflops * 1e9),
                    textcoords="offset points",
                    xytext=(4, -11 if regime == "DRAM pool" else 5),
                    fontsize=6,
                    color=color,
                )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("FLOP/s")
    ax.set_title(title or "Decode roofline: every measured roof, each point under the roof of the level it lives in")
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
