"""The roofline pictures: log-log FLOP/s against FLOP/byte, a machine's measured roofs and decode points.

:func:`draw_report` (``roofline report --plot``, ``roofline plot``, ``make bench``) and :func:`draw_overlay`
(``roofline compare --plot``) return a matplotlib figure; :func:`plot_report` and :func:`plot_overlay`
write it, PNG or SVG by the file's suffix. The rules, as ERT and Intel Advisor draw a roofline:

- the axes are fitted to the measured machine, so its roofs span most of the height; a catalogue
  device (``reference``, ``--reference h100``) gets a panel of its own: an H100's roofs sit five
  decades above a 2-core CPU's and, on the same axes, would squeeze them into a fifth of the frame;
- each roof is labelled once, at its end, with its figure: a bandwidth roof at its left end, a
  compute roof at its right end;
- no label's box overlaps another's: :class:`_Labels` places each at the first of its positions that
  is free, from matplotlib's own text extents, and leaves out a point label that fits nowhere (the
  legend and the report's table carry what it said);
- the predicted and observed crossover batches are vertical lines, each labelled with its batch.

matplotlib (the ``plot`` extra), Agg backend, is imported only here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BadInput
from ..files import atomic_path
from ..model.arithmetic import gemm_intensity, ridge_point
from ..model.dtypes import DTYPES, SUITE
from ..model.gguf_layout import GGUF_FORMATS
from ..model.hardware import Hardware
from ..model.hierarchy import DRAM
from ..model.llm import bytes_per_weight
from ..units import si, sig
from .cpu import Report
from .summary import MachineSummary

FORMATS = (".png", ".svg")
#: A slide's shape; text sizes in points at this DPI stay readable on a projector.
SIZE, DPI = (12.0, 6.4), 120
#: One colour per memory level: its roof and the points whose working set fits in it.
LEVEL_COLORS = {"L1": "tab:purple", "L2": "tab:blue", "L3": "tab:green", "L4": "tab:olive", DRAM: "tab:red"}
ROOF_TEXT, POINT_TEXT = 9.0, 8.0
#: gid of every line that is one of the measured machine's roofs (the tests measure their extent).
ROOF_GID = "machine-roof"


def pyplot():
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


def _level_color(level: str) -> str:
    return LEVEL_COLORS.get(level, "tab:gray")


def _rate(value: float, dtype: str = "fp32") -> str:
    """A compute roof's figure: '351 GFLOP/s' ('GOP/s' for int8)."""
    unit = "OP/s" if DTYPES.get(dtype) and DTYPES[dtype].peak_unit == "OP/s" else "FLOP/s"
    return si(value, unit, trim=True)


# ---- labels that never overlap --------------------------------------------------------------------

#: (dx, dy) in points from the anchor, horizontal and vertical alignment.
Offset = tuple[float, float, str, str]
#: A point label's places, nearest first: right, left, above, below, then the diagonals.
AROUND: tuple[Offset, ...] = (
    (6, 0, "left", "center"),
    (-6, 0, "right", "center"),
    (0, 6, "center", "bottom"),
    (0, -6, "center", "top"),
    (5, 5, "left", "bottom"),
    (5, -5, "left", "top"),
    (-5, 5, "right", "bottom"),
    (-5, -5, "right", "top"),
)


def _slid(offsets: Sequence[Offset], step: float, steps: int = 12) -> tuple[Offset, ...]:
    """``offsets``, then each moved up and down by ``step`` points at a time: a roof label that must be shown."""
    out = list(offsets)
    for k in range(1, steps + 1):
        for sign in (1, -1):
            out += [(dx, dy + sign * k * step, ha, va) for dx, dy, ha, va in offsets]
    return tuple(out)


@dataclass
class _Label:
    ax: object
    text: str
    xy: tuple[float, float]
    color: str
    offsets: tuple[Offset, ...]
    size: float
    rotation: float = 0.0
    boxed: bool = False


@dataclass
class _Labels:
    """Labels placed one at a time, in the order added (roofs first): each at its first offset whose text box
    overlaps no box placed before, nor a marker, and lies inside its axes; a label placed nowhere is
    left out and returned by :meth:`place`."""

    fig: object
    pending: list[_Label] = field(default_factory=list)
    markers: list[tuple[object, float, float]] = field(default_factory=list)

    def add(self, ax, text, xy, color, offsets, size=POINT_TEXT, rotation=0.0, boxed=False) -> None:
        """A label for ``xy`` (data), tried at each of ``offsets`` in turn (a roof's: slid up and down)."""
        self.pending.append(_Label(ax, text, xy, color, tuple(offsets), size, rotation, boxed))

    def marker(self, ax, x: float, y: float) -> None:
        """A point's marker, which no label may cover."""
        self.markers.append((ax, x, y))

    def place(self) -> list[str]:
        """Fix the layout, fit the ticks, then place every label; returns the texts of those left out."""
        self.fig.canvas.draw()  # the layout is final from here: labels go where the axes now are
        self.fig.set_layout_engine("none")
        for ax in self.fig.axes:
            _fit_ticks(ax)
        renderer = self.fig.canvas.get_renderer()
        taken = self._obstacles(renderer)
        return [label.text for label in self.pending if not self._put(label, renderer, taken)]

    def _obstacles(self, renderer) -> list:
        """The boxes no label may cover: every marker (a circle of 4.5 points) and the legend."""
        from matplotlib.transforms import Bbox

        radius = 4.5 * self.fig.dpi / 72
        taken = []
        for ax, x, y in self.markers:
            px, py = ax.transData.transform((x, y))
            taken.append(Bbox.from_extents(px - radius, py - radius, px + radius, py + radius))
        return taken + [legend.get_window_extent(renderer) for legend in self.fig.legends]

    def _put(self, label: _Label, renderer, taken: list) -> bool:
        """``label`` at its first free offset inside its axes, its box added to ``taken``; False if none."""
        frame = label.ax.get_window_extent(renderer).padded(-2)
        box_style = {"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85}
        for dx, dy, ha, va in label.offsets:
            text = label.ax.annotate(
                label.text,
                label.xy,
                xytext=(dx, dy),
                textcoords="offset points",
                ha=ha,
                va=va,
                fontsize=label.size,
                color=label.color,
                rotation=label.rotation,
                annotation_clip=False,
                bbox=box_style if label.boxed else None,
            )
            box = text.get_window_extent(renderer).padded(1.5)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                return True
            text.remove()
        return False


# ---- axes -----------------------------------------------------------------------------------------


def _pow2_below(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x))


def _pow2_above(x: float) -> float:
    return 2.0 ** math.ceil(math.log2(x))


def _log_axes(ax, xlim: tuple[float, float], ylim: tuple[float, float]) -> None:
    """Log-log axes at these limits, ticks as plain numbers (FLOP/byte) and with units (FLOP/s)."""
    from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(*xlim)
    ax.set_ylim(*ylim)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_major_formatter(EngFormatter(unit="FLOP/s", places=0, sep=" "))
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0), numticks=30))
        axis.set_minor_formatter(NullFormatter())
    ax.tick_params(labelsize=9)
    ax.set_xlabel("arithmetic intensity (FLOP/byte)", fontsize=10)
    ax.set_ylabel("attainable FLOP/s", fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    ax.grid(True, which="minor", alpha=0.1)


#: Room a decade needs for its 1, 2 and 5 to be labelled (pixels at :data:`DPI`): x labels are wider.
DECADE_ROOM = {"x": 190, "y": 110}


def _fit_ticks(ax) -> None:
    """Label 1, 2 and 5 in each decade where the axes have the room, the decades alone where not."""
    from matplotlib.ticker import LogLocator

    box = ax.get_window_extent()
    for name, axis, pixels, (lo, hi) in (
        ("x", ax.xaxis, box.width, ax.get_xlim()),
        ("y", ax.yaxis, box.height, ax.get_ylim()),
    ):
        room = pixels / max(math.log10(hi / lo), 1e-9)
        subs = (1.0, 2.0, 5.0) if room >= DECADE_ROOM[name] else (1.0,)
        axis.set_major_locator(LogLocator(base=10, subs=subs, numticks=30))


def _limits(xs: Sequence[float], ys: Sequence[float], xmin: float = 0.125) -> tuple[tuple[float, float], ...]:
    """Limits that hold every point and roof end given, with room for the labels at both ends."""
    xs = [x for x in xs if x and x > 0] or [1.0]
    ys = [y for y in ys if y and y > 0] or [1e9]
    xlim = (min(_pow2_below(min(xs) / 2), xmin), _pow2_above(max(xs) * 3))
    return xlim, (min(ys) / 2.5, max(ys) * 2.5)


def _crossover_marks(labels: _Labels | None, ax, marks: Sequence[tuple[str, float | None, str]], color: str) -> None:
    """Vertical lines at the crossover batches: (what, batch, line style), each labelled with its batch, on
    the line or (``labels`` None: several machines' lines side by side) in the legend.

    A batch b of fp32 weights (4 bytes/param) sits at 2·b/4 FLOP/byte, the weights-only intensity the
    predicted crossover (peak ÷ bandwidth × 4 / 2) is defined at.
    """
    drawn = [(what, b, ls) for what, b, ls in marks if b]
    drawn.sort(key=lambda m: m[1])
    bottom = ax.get_ylim()[0]
    for i, (what, batch, ls) in enumerate(drawn):
        x = 2 * batch / SUITE.bytes
        text = f"{what} crossover, batch {sig(batch, trim=True)}"
        ax.axvline(x, color=color, ls=ls, lw=1.2, alpha=0.8, label=None if labels else text)
        if labels is None:
            continue
        right, left = (3, 6, "left", "bottom"), (-3, 6, "right", "bottom")
        first = left if i == 0 and len(drawn) > 1 else right
        second = right if first is left else left
        labels.add(
            ax,
            text,
            (x, bottom),
            color,
            _slid((first, second), 14, 6),
            size=POINT_TEXT,
            rotation=90,
        )


# ---- one report: every measured roof, points under their own roof --------------------------------


def _report_roofs(rep: Report) -> tuple[list[tuple[str, float]], list[tuple[str, float]]]:
    """(level, B/s) innermost first and (dtype, FLOP/s) fastest first, each engine format's own roof among them."""
    h = rep.roofs_by_level
    levels = [(r.level, r.gbps * 1e9) for r in h.levels]
    engines = {f"{e.engine} {e.format}": e.engine_roof * 1e9 for e in rep.engine_decode if e.engine_roof}
    compute = sorted([*((c.dtype, c.gflops * 1e9) for c in h.compute), *engines.items()], key=lambda c: -c[1])
    return levels, compute


#: The engine's formats' markers: a colour each, triangles (the suite's own points are circles and squares).
ENGINE_COLORS = {"F16": "tab:purple", "Q8_0": "tab:brown", "Q4_0": "tab:olive"}


def _engine_points(rep: Report) -> list[tuple[str, int, float, float]]:
    """(engine and format, batch, FLOP/byte, FLOP/s) of each engine row: its intensity 2·batch ÷ bytes per
    weight, and that intensity × the bytes it read per second (its effective GB/s)."""
    out = []
    for e in rep.engine_decode:
        if e.effective_gbps and e.format in GGUF_FORMATS:
            x = 2 * e.batch / bytes_per_weight(GGUF_FORMATS[e.format])
            out.append((f"{e.engine} {e.format}", e.batch, x, x * e.effective_gbps * 1e9))
    return out


def _draw_engine_points(labels: _Labels, ax, points) -> None:
    """The engine's rows under their format's roof; the smallest and largest batch of each format labelled."""
    for name in dict.fromkeys(p[0] for p in points):
        mine = [p for p in points if p[0] == name]
        color = ENGINE_COLORS.get(name.split()[-1], "tab:gray")
        ax.plot([p[2] for p in mine], [p[3] for p in mine], ls=":", marker="^", markersize=6, color=color, label=name)
        for _, batch, x, y in (mine[0], mine[-1]) if len(mine) > 1 else mine:
            labels.marker(ax, x, y)
            labels.add(ax, f"b={batch}", (x, y), color, AROUND)


def _report_points(rep: Report) -> list[tuple[str, str, int, float, float]]:
    """(regime, level, batch, FLOP/byte, FLOP/s) of every point with a figure."""
    out = []
    for regime, points in (("DRAM pool", rep.decode), ("cache-resident", rep.cache_resident)):
        for p in points:
            if p.gflops:
                own = rep.row(p).own
                out.append((regime, own.level if own else DRAM, p.batch, p.intensity, p.gflops * 1e9))
    return out


def _draw_roofs(labels: _Labels, ax, xlim, levels, compute, style: str, prefix: str = "") -> None:
    """A diagonal per memory level up to the highest compute roof, a horizontal per dtype from the fastest
    level's diagonal; each labelled at its end."""
    lo, hi = xlim
    top = compute[0][1] if compute else None
    fastest = max((bw for _, bw in levels), default=None)
    for level, bw in levels:
        end = min(hi, top / bw) if top else hi
        color = _level_color(level)
        ax.plot([lo, end], [lo * bw, end * bw], color=color, ls=style, lw=2.0, gid=ROOF_GID)
        labels.add(
            ax,
            f"{prefix}{level} {si(bw, 'B/s', trim=True)}",
            (lo, lo * bw),
            color,
            _slid(((4, 3, "left", "bottom"), (4, -3, "left", "top")), ROOF_TEXT + 3),
            size=ROOF_TEXT,
            boxed=True,
        )
    for i, (dtype, peak) in enumerate(compute):
        start = max(lo, peak / fastest) if fastest else lo
        ax.plot([start, hi], [peak, peak], color="0.2", ls=style if i == 0 else ":", lw=1.6, gid=ROOF_GID)
        labels.add(
            ax,
            f"{prefix}{dtype} {_rate(peak, dtype)}",
            (hi, peak),
            "0.2",
            _slid(((-4, 3, "right", "bottom"), (-4, -3, "right", "top")), ROOF_TEXT + 3),
            size=ROOF_TEXT,
            boxed=True,
        )


def _draw_points(labels: _Labels, ax, points, prefix: str = "") -> None:
    """Markers coloured by level (DRAM pool filled, cache-resident hollow); one label per batch and group."""
    seen, labelled = set(), {}
    for regime, level, batch, x, y in points:
        color = _level_color(level)
        filled = regime == "DRAM pool"
        ax.plot(
            x,
            y,
            ls="",
            marker="o" if filled else "s",
            markersize=7,
            markerfacecolor=color if filled else "none",
            markeredgecolor=color,
            markeredgewidth=1.5,
            label=None if (regime, level) in seen else f"{prefix}decode, {regime}, working set in {level}",
        )
        seen.add((regime, level))
        labels.marker(ax, x, y)
        key = (regime, level, batch)
        if key not in labelled or y > labelled[key][1]:
            labelled[key] = (x, y, color)
    for (_, _, batch), (x, y, color) in sorted(labelled.items(), key=lambda kv: kv[0][2]):
        labels.add(ax, f"b={batch}", (x, y), color, AROUND)


def _reference_dtype(hw: Hardware) -> str:
    return next((d for d in ("bf16", "fp16", "fp32") if d in hw.peak_flops), max(hw.peak_flops, key=hw.peak_flops.get))


def _draw_reference(labels: _Labels, ax, hw: Hardware, machines: Sequence[tuple[str, str, list]]) -> None:
    """The catalogue device's roofline in a panel of its own, the machines' beside it (thin) for scale.

    ``machines``: (name, colour, corners) with the measured roofline's corners as (FLOP/byte, FLOP/s):
    left end, ridge, right end.
    """
    dtype = _reference_dtype(hw)
    peak, ridge = hw.peak(dtype), ridge_point(hw, dtype)
    xlim = (0.25, _pow2_above(ridge * 6))
    ys = [xlim[0] * hw.bandwidth, peak] + [y for *_, corners in machines for _, y in corners]
    _log_axes(ax, xlim, (min(ys) / 3, peak * 3))
    ax.plot([xlim[0], ridge, xlim[1]], [xlim[0] * hw.bandwidth, peak, peak], color="0.35", lw=2.0, ls="--")
    labels.add(
        ax,
        f"{hw.name} {si(hw.bandwidth, 'B/s')}",
        (xlim[0], xlim[0] * hw.bandwidth),
        "0.35",
        _slid(((4, 3, "left", "bottom"),), ROOF_TEXT + 3),
        size=ROOF_TEXT,
        boxed=True,
    )
    labels.add(
        ax,
        f"{dtype} {_rate(peak, dtype)}",
        (xlim[1], peak),
        "0.35",
        _slid(((-4, 3, "right", "bottom"),), ROOF_TEXT + 3),
        size=ROOF_TEXT,
        boxed=True,
    )
    batch = ridge * DTYPES[dtype].bytes / 2
    ax.axvline(ridge, color="0.35", ls=":", lw=1.2)
    labels.add(
        ax,
        f"crossover, batch {sig(batch, trim=True)} ({dtype} weights)",
        (ridge, ax.get_ylim()[0]),
        "0.35",
        _slid(((-3, 6, "right", "bottom"), (3, 6, "left", "bottom")), 14, 6),
        size=POINT_TEXT,
        rotation=90,
    )
    for name, color, corners in machines:
        ax.plot([x for x, _ in corners], [y for _, y in corners], color=color, lw=1.2)
        offsets = _slid(((-4, -3, "right", "top"), (-4, 3, "right", "bottom")), ROOF_TEXT)
        labels.add(ax, name, (corners[-1][0], corners[-1][1]), color, offsets, size=POINT_TEXT)
    ax.set_title(f"reference: {hw.name} datasheet", fontsize=10)


def _figure(reference: Hardware | None):
    plt = pyplot()
    if reference is None:
        fig, ax = plt.subplots(figsize=SIZE, dpi=DPI, layout="constrained")
        return fig, ax, None
    fig, (ax, ref) = plt.subplots(
        1, 2, figsize=SIZE, dpi=DPI, layout="constrained", gridspec_kw={"width_ratios": [2.3, 1]}
    )
    return fig, ax, ref


def _finish(fig, ax, labels: _Labels) -> None:
    """The legend below the axes, then every label placed."""
    handles, names = ax.get_legend_handles_labels()
    if handles:
        fig.legend(handles, names, fontsize=8, loc="outside lower center", ncol=min(3, len(handles)), frameon=False)
    left_out = labels.place()
    fig.roofline_left_out = left_out  # the labels that fit nowhere (tests read it; the table carries them)


def draw_report(reports: Sequence[Report], title: str | None = None, reference: Hardware | None = None):
    """The roofline figure of one or more reports (a second report's roofs dashed).

    Every measured roof, labelled: one bandwidth roof per memory level, one compute roof per dtype; the
    decode points (DRAM pool: filled, cache-resident: hollow), coloured by the level their working set
    fits in and labelled by batch; the predicted and observed crossover. ``reference``: a catalogue
    device drawn in a panel of its own.
    """
    fig, ax, ref = _figure(reference)
    drawn = [(rep, *_report_roofs(rep), _report_points(rep)) for rep in reports]
    engine = _engine_points(reports[0]) if reports else []
    xs = [x for *_, pts in drawn for *_, x, _ in pts] + [p[2] for p in engine]
    ys = [y for *_, pts in drawn for *_, y in pts] + [p[3] for p in engine]
    for _, levels, compute, _ in drawn:
        top = compute[0][1] if compute else None
        xs += [top / bw for _, bw in levels] if top else []
        ys += [peak for _, peak in compute]
    xlim, _ = _limits(xs, ys)
    ys += [xlim[0] * bw for _, levels, _, _ in drawn for _, bw in levels]
    xlim, ylim = _limits(xs, ys)
    _log_axes(ax, xlim, ylim)
    labels = _Labels(fig)
    hosts = [str(rep.facts.get("host") or f"machine {i + 1}") for i, (rep, *_) in enumerate(drawn)]
    prefixes = [f"{host}: " if len(drawn) > 1 else "" for host in hosts]
    for i, (_, levels, compute, _) in enumerate(drawn):
        _draw_roofs(labels, ax, xlim, levels, compute, "-" if i == 0 else "--", prefixes[i])
    if drawn:
        cross = drawn[0][0].crossover()
        marks = [("predicted", cross.get("predicted_batch"), "--"), ("observed", cross.get("observed_batch"), "-.")]
        _crossover_marks(labels, ax, marks, "0.15")
    for i, (*_, points) in enumerate(drawn):  # after the roofs and crossovers: their labels give way
        _draw_points(labels, ax, points, prefixes[i])
    _draw_engine_points(labels, ax, engine)
    if ref is not None:
        corners = _machine_corners(drawn, xlim)
        _draw_reference(labels, ref, reference, [(hosts[0], LEVEL_COLORS[DRAM], corners)] if corners else [])
    ax.set_title(
        title or f"{', '.join(hosts) or 'this machine'}: measured roofs and decode steps (y = W·X, fp32)", fontsize=12
    )
    _finish(fig, ax, labels)
    return fig


def _machine_corners(drawn, xlim) -> list[tuple[float, float]]:
    """The first report's DRAM roofline as (FLOP/byte, FLOP/s) corners, for the reference panel's scale."""
    if not drawn:
        return []
    _, levels, compute, _ = drawn[0]
    dram = dict(levels).get(DRAM) or (levels[-1][1] if levels else None)
    if not dram or not compute:
        return []
    peak = compute[0][1]
    return [(0.25, 0.25 * dram), (peak / dram, peak), (xlim[1], peak)]


def save_figure(fig, path: Path) -> Path:
    plt = pyplot()
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=DPI, format=path.suffix.lower().lstrip("."))
    except (OSError, ValueError) as exc:
        raise BadInput(f"cannot write the plot to {path}: {getattr(exc, 'strerror', None) or exc}") from None
    finally:
        plt.close(fig)
    return path


def plot_report(
    reports: Sequence[Report], path: Path, title: str | None = None, reference: Hardware | None = None
) -> Path:
    """:func:`draw_report` written to ``path`` (.png or .svg)."""
    path = Path(path)
    check_plot_path(path)
    return save_figure(draw_report(reports, title, reference), path)


# ---- several machines: roofline compare --plot ---------------------------------------------------


def _machine_roof(ax, labels: _Labels, s: MachineSummary, xlim: tuple[float, float], color: str) -> None:
    """One machine's measured roofline (DRAM roof, fp32 peak) across ``xlim``, each roof labelled at its end."""
    lo, hi = xlim
    ax.plot([lo, s.ridge, hi], [lo * s.bandwidth, s.peak, s.peak], color=color, lw=2.0, gid=ROOF_GID)
    labels.add(
        ax,
        f"{s.machine} {si(s.bandwidth, 'B/s')}",
        (lo, lo * s.bandwidth),
        color,
        _slid(((4, 3, "left", "bottom"), (4, -3, "left", "top")), ROOF_TEXT + 3),
        size=ROOF_TEXT,
        boxed=True,
    )
    labels.add(
        ax,
        f"{s.machine} fp32 {_rate(s.peak)}",
        (hi, s.peak),
        color,
        _slid(((-4, 3, "right", "bottom"), (-4, -3, "right", "top")), ROOF_TEXT + 3),
        size=ROOF_TEXT,
        boxed=True,
    )


def _machine_points(
    ax, labels: _Labels, machine: str, points: list[tuple[str, int, float, float]], color: str
) -> list[tuple[str, tuple[float, float], str]]:
    """One machine's decode points, (regime, batch, intensity, FLOP/s), a series per regime (DRAM filled, the
    others hollow); the batch labels to place once every roof is labelled: the highest point of each batch."""
    pending = []
    for regime in sorted({r for r, *_ in points}):
        mine = [(b, x, y) for r, b, x, y in points if r == regime]
        hollow = regime != "DRAM"
        ax.scatter(
            [x for _, x, _ in mine],
            [y for *_, y in mine],
            s=45,
            marker="o",
            facecolors="none" if hollow else color,
            edgecolors=color,
            linewidths=1.5,
            label=f"{machine}: decode, {regime}",
        )
        top: dict[int, tuple[float, float]] = {}
        for b, x, y in mine:
            labels.marker(ax, x, y)
            if b not in top or y > top[b][1]:
                top[b] = (x, y)
        pending += [(f"b={b}", xy, color) for b, xy in sorted(top.items())]
    return pending


def draw_overlay(summaries: list[MachineSummary], reference: Hardware | None = None):
    """Every machine's measured roofline (DRAM roof, fp32 peak) and decode points in one figure, a colour each;
    BadInput when no machine has anything to draw."""
    points = {
        s.machine: [
            (regime, b, gemm_intensity(n, b, SUITE.bytes), v * 1e9)
            for regime, pts in s.decode.items()
            for (n, b), v in sorted(pts.items())
            if v
        ]
        for s in summaries
    }
    roofs = [s for s in summaries if s.peak and s.bandwidth]
    if not roofs and not any(points.values()):
        raise BadInput("nothing to plot: no machine has measured ceilings or decode results")
    fig, ax, ref = _figure(reference)
    xs = [x for pts in points.values() for *_, x, _ in pts] + [s.ridge for s in roofs]
    ys = [y for pts in points.values() for *_, y in pts] + [s.peak for s in roofs]
    xlim, _ = _limits(xs, ys)
    xlim, ylim = _limits(xs, ys + [xlim[0] * s.bandwidth for s in roofs])
    _log_axes(ax, xlim, ylim)
    labels = _Labels(fig)
    hi = xlim[1]
    pending: list[tuple[str, tuple[float, float], str]] = []
    for i, s in enumerate(summaries):
        color = f"C{i % 10}"
        if s.peak and s.bandwidth:
            _machine_roof(ax, labels, s, xlim, color)
        pending += _machine_points(ax, labels, s.machine, points[s.machine], color)
    for i, s in enumerate(summaries):
        observed = next((v for _, v in s.observed_crossover if v), None)
        prefix = f"{s.machine}: " if len(summaries) > 1 else ""
        marks = [(f"{prefix}predicted", s.predicted_crossover, "--"), (f"{prefix}observed", observed, "-.")]
        _crossover_marks(labels if len(summaries) == 1 else None, ax, marks, f"C{i % 10}")
    for text, xy, color in pending:  # after the roofs' and crossovers' labels: these give way
        labels.add(ax, text, xy, color, AROUND)
    if ref is not None:
        machines = [
            (s.machine, f"C{i % 10}", [(0.25, 0.25 * s.bandwidth), (s.ridge, s.peak), (hi, s.peak)])
            for i, s in enumerate(summaries)
            if s.peak and s.bandwidth
        ]
        _draw_reference(labels, ref, reference, machines)
    ax.set_title("roofline compare: each machine's measured roofline and decode steps (fp32)", fontsize=12)
    _finish(fig, ax, labels)
    return fig


def plot_overlay(summaries: list[MachineSummary], path: Path, reference: Hardware | None = None) -> Path:
    """:func:`draw_overlay` written to ``path`` (format from its suffix)."""
    path = Path(path)
    check_plot_path(path)
    return save_figure(draw_overlay(summaries, reference), path)
