"""The committed example results read, report and compare out of the box, and stay untouched."""

from pathlib import Path

from roofline.cli import main

from .asv_fixtures import snapshot

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "results"


def test_example_results_report_and_compare(capsys, tmp_path):
    before = snapshot(EXAMPLES)
    assert main(["compare", str(EXAMPLES)]) == 0
    out = capsys.readouterr().out
    machines = sorted(p.name for p in EXAMPLES.iterdir() if p.is_dir())
    assert out.splitlines()[1].split() == ["machine", *machines] and "crossover batch, observed" in out
    args = ["report", "--results", str(EXAMPLES), "--machine", "xeon-2core-vm", "--plot", str(tmp_path / "r.png")]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "decode, weights from DRAM" in out and "predicted from measured ceilings" in out
    assert (tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"
    assert snapshot(EXAMPLES) == before
