"""The roofline pictures, measured from matplotlib's own text extents: no two labels overlap, the machine's
roofs fill the frame, every roof is labelled once with its figure, and a catalogue device only on request."""

import json
import shutil
from pathlib import Path

import matplotlib
import pytest
from matplotlib.text import Text

from roofline.cli import main
from roofline.errors import BadInput
from roofline.model.catalogue import lookup
from roofline.model.hierarchy import DRAM, ComputeRoof, Hierarchy, LevelRoof
from roofline.report import summary
from roofline.report.cpu import Roofs, build_report
from roofline.report.from_results import report_from_results
from roofline.report.plot import ROOF_GID, draw_overlay, draw_report, plot_report
from roofline.suite.results import read_results

from .asv_fixtures import two_machines
from .clitools import EXAMPLE_MACHINE
from .test_report import FACTS, point, sample_report, swept

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "results"
KIB, MIB = 2**10, 2**20
#: A 2-core EPYC's measured roofs (docs/measured/epyc-2core): L1, L2 and L3 within 1.6×, the hardest to label.
EPYC = Hierarchy(
    levels=(
        LevelRoof("L1", 64 * KIB, 151.1, "load"),
        LevelRoof("L2", 1 * MIB, 140.3, "load"),
        LevelRoof("L3", 8 * MIB, 95.9, "load"),
        LevelRoof(DRAM, 16 * 2**30, 22.3, "load"),
    ),
    compute=(ComputeRoof("fp64", 32.8, "blas"), ComputeRoof("fp32", 73.8, "blas")),
    caches=(("L1", 64 * KIB), ("L2", 1 * MIB), ("L3", 8 * MIB)),
)


def epyc_report():
    """Its roofs, and decode points at its figures (GFLOP/s) with a batch sweep whose knee is at 8."""
    roofs = Roofs(bandwidth={"read": 22.3e9, "add": 20e9}, peaks={"float32": 73.8e9, "float64": 32.8e9})
    decode = tuple(point(n, b, 2 * n * n * b / g / 1e9) for n in (2048, 8192) for b, g in ((1, 9), (8, 20), (64, 60)))
    cache = tuple(
        point(1024, b, 2 * 1024 * 1024 * b / g / 1e9, "cache", pool=4 * MIB) for b, g in ((1, 33), (8, 42), (64, 65))
    )
    sweep = swept([point(4096, b, max(1.5e-3, b * 1.5e-3 / 8)) for b in (1, 2, 4, 8, 16, 32, 64)])
    return build_report(FACTS, roofs, hierarchy=EPYC, decode=decode, cache_resident=cache, sweep_n=4096, **sweep)


def texts(fig) -> list[Text]:
    """Every drawn, non-empty text of the figure: labels, tick labels, titles, axis labels, the legend's."""
    fig.canvas.draw()
    found = [t for legend in fig.legends for t in legend.get_texts()]
    for ax in fig.axes:
        (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
        found += [t for t in ax.get_xticklabels() if x0 <= t.get_position()[0] <= x1]  # matplotlib keeps labels
        found += [t for t in ax.get_yticklabels() if y0 <= t.get_position()[1] <= y1]  # of ticks it does not draw
        found += [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label]
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def overlaps(fig) -> list[tuple[str, str]]:
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts(fig)]
    return [(a, b) for i, (a, box_a) in enumerate(boxes) for b, box_b in boxes[i + 1 :] if box_a.overlaps(box_b)]


def roof_share(fig) -> float:
    """The height the machine's roofs span, as a share of their axes' height (log axes: pixel extents)."""
    ax = fig.axes[0]
    ys = [y for line in ax.get_lines() if line.get_gid() == ROOF_GID for y in line.get_ydata()]
    low, high = ax.transData.transform([(1, min(ys)), (1, max(ys))])[:, 1]
    return (high - low) / ax.get_window_extent().height


def labels(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


def two_real_machines(tmp_path) -> Path:
    """The gallery's machine at the current suite and a copy of it at 0.6× every rate, under another name."""
    root = tmp_path / "results"
    root.mkdir()
    shutil.copy(EXAMPLES / "benchmarks.json", root)
    src, dst = root / EXAMPLE_MACHINE, root / "slower-vm"
    shutil.copytree(EXAMPLES / EXAMPLE_MACHINE, src)
    dst.mkdir()
    for path in src.iterdir():
        data = json.loads(path.read_text())
        data.setdefault("params", {})["machine"] = "slower-vm"
        data["machine"] = "slower-vm" if "machine" in data else data.get("machine")
        for name, row in data.get("results", {}).items():
            if name.endswith(("gflops", "bandwidth", "bandwidth_ceiling", "gemm_ceiling")) and row[0]:
                row[0] = [v * 0.6 if isinstance(v, float) else v for v in row[0]]
        (dst / path.name).write_text(json.dumps({k: v for k, v in data.items() if v is not None}))
    return root


def cases(tmp_path):
    example = report_from_results(read_results(EXAMPLES), EXAMPLE_MACHINE)
    summaries, _ = summary.summarize(read_results(two_real_machines(tmp_path)))
    fixture, _ = summary.summarize(read_results(two_machines(tmp_path / "fixture")))
    return {
        "default report (examples/results)": draw_report([example]),
        "the default report with --reference h100": draw_report([example], reference=lookup("h100")),
        "a 2-core EPYC's four memory roofs": draw_report([epyc_report()]),
        "the EPYC with --reference h100": draw_report([epyc_report()], reference=lookup("h100")),
        "two machines, compare --plot": draw_overlay(summaries),
        "two machines, compare --plot --reference h100": draw_overlay(summaries, reference=lookup("h100")),
        "compare --plot of the hand-made two machines": draw_overlay(fixture),
    }


def test_no_two_labels_overlap_and_the_machines_roofs_fill_the_frame(tmp_path):
    import matplotlib.pyplot as plt

    for case, fig in cases(tmp_path).items():
        try:
            assert overlaps(fig) == [], case
            assert roof_share(fig) >= 0.5, case
        finally:
            plt.close(fig)


def test_every_roof_is_labelled_once_with_its_figure():
    import matplotlib.pyplot as plt

    fig = draw_report([epyc_report()])
    try:
        shown = labels(fig)
        for roof in ("L1 151 GB/s", "L2 140 GB/s", "L3 95.9 GB/s", "DRAM 22.3 GB/s", "fp32 73.8 GFLOP/s"):
            assert shown.count(roof) == 1, (roof, shown)
        assert "fp64 32.8 GFLOP/s" in shown
        assert any(t.startswith("predicted crossover, batch") for t in shown)
        assert any(t.startswith("observed crossover, batch") for t in shown)
        assert fig.roofline_left_out == [] or all(t.startswith("b=") for t in fig.roofline_left_out)
    finally:
        plt.close(fig)


def test_the_h100_is_drawn_only_when_asked_for_in_a_panel_of_its_own():
    import matplotlib.pyplot as plt

    rep = report_from_results(read_results(EXAMPLES), EXAMPLE_MACHINE)
    plain, ref = draw_report([rep]), draw_report([rep], reference=lookup("h100"))
    try:
        assert len(plain.axes) == 1 and not any("H100" in t for t in labels(plain))
        assert len(ref.axes) == 2 and "H100 SXM 3.35 TB/s" in labels(ref) and "bf16 990 TFLOP/s" in labels(ref)
        assert "crossover, batch 296 (bf16 weights)" in labels(ref)
        assert ref.axes[0].get_ylim() == plain.axes[0].get_ylim()  # the machine's axes are not stretched
    finally:
        plt.close(plain)
        plt.close(ref)


def test_ticks_read_as_numbers_with_units_on_both_log_axes():
    import matplotlib.pyplot as plt

    fig = draw_report([report_from_results(read_results(EXAMPLES), EXAMPLE_MACHINE)])
    try:
        fig.canvas.draw()
        ax = fig.axes[0]
        assert ax.get_xscale() == ax.get_yscale() == "log"
        x = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
        y = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
        assert {"1", "10", "100"} <= set(x) and len(set(x)) == len(x)
        assert "100 GFLOP/s" in y and all(t.endswith("FLOP/s") for t in y) and len(set(y)) == len(y) >= 4
        assert "FLOP/byte" in ax.get_xlabel() and "FLOP/s" in ax.get_ylabel()
    finally:
        plt.close(fig)


def test_png_is_a_png(tmp_path):
    out = plot_report([sample_report()], tmp_path / "roof.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_svg_carries_the_labels(tmp_path):
    matplotlib.rcParams["svg.fonttype"] = "none"  # keep text as text
    svg = plot_report([sample_report()], tmp_path / "roof.svg").read_text()
    for label in ("b=1", "b=64", "DRAM 25 GB/s", "fp32 300 GFLOP/s", "arithmetic intensity", "FLOP/s"):
        assert label in svg
    assert "H100" not in svg


@pytest.mark.parametrize("name", ["roof.jpg", "roof", "roof.pdf"])
def test_unsupported_format(tmp_path, name):
    with pytest.raises(BadInput, match="unsupported plot format"):
        plot_report([sample_report()], tmp_path / name)


def test_reference_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "r.png"
    plot = ["plot", "--results", str(EXAMPLES), "--machine", EXAMPLE_MACHINE, "-o", str(out)]
    assert main([*plot, "--reference", "h100"]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"
    cmp = tmp_path / "c.png"
    assert main(["compare", str(EXAMPLES), "--plot", str(cmp), "--reference", "h100"]) == 0
    capsys.readouterr()
    assert main([*plot, "--reference", "no-such-gpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no-such-gpu" in err


def test_each_engine_format_sits_under_its_own_roof_at_its_own_intensity():
    """Issue 55: a format's rows at 2·batch ÷ bytes per weight, under the roof its prompt measured."""
    import dataclasses

    import matplotlib.pyplot as plt

    from roofline.report.cpu import EnginePoint

    rows = [
        EnginePoint("llama.cpp", "Q4_0", b, 40.0 * b, None, 50.0 * b, None, effective_gbps=gbps, engine_roof=120.0)
        for b, gbps in ((1, 25.0), (8, 20.0), (64, 3.0))
    ]
    report = dataclasses.replace(epyc_report(), engine_decode=tuple(rows))
    fig = draw_report([report])
    try:
        shown = labels(fig)
        assert shown.count("llama.cpp Q4_0 120 GFLOP/s") == 1, shown
        (line,) = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "llama.cpp Q4_0"]
        assert list(line.get_xdata()) == pytest.approx([2 / 0.5625, 16 / 0.5625, 128 / 0.5625])
        rates = zip(line.get_xdata(), (25, 20, 3), strict=True)
        assert list(line.get_ydata()) == pytest.approx([x * g * 1e9 for x, g in rates])
        assert overlaps(fig) == []
    finally:
        plt.close(fig)
