import pytest

from roofline.errors import BadInput
from roofline.report.plot import plot_report

from .test_report import sample_report


def test_png_is_a_png(tmp_path):
    out = plot_report([sample_report()], tmp_path / "roof.png")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_svg_carries_the_labels(tmp_path):
    import matplotlib

    matplotlib.rcParams["svg.fonttype"] = "none"  # keep text as text
    svg = plot_report([sample_report()], tmp_path / "roof.svg").read_text()
    labels = ("n=2048 b=1", "b=64", "H100 SXM datasheet", "DRAM 25 GB/s", "fp32 300 GFLOP/s", "arithmetic intensity")
    for label in labels:
        assert label in svg


@pytest.mark.parametrize("name", ["roof.jpg", "roof", "roof.pdf"])
def test_unsupported_format(tmp_path, name):
    with pytest.raises(BadInput, match="unsupported plot format"):
        plot_report([sample_report()], tmp_path / name)
