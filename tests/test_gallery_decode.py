"""A gallery machine as hardware: `roofline decode --hardware NAME`, `roofline compare --model`, its picture,
and `roofline machine --rename`, on the committed gallery (examples/results) and copies of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from roofline.cli import main
from roofline.model.arithmetic import gemm_intensity
from roofline.model.hardware import Hardware
from roofline.model.llm import lookup_model
from roofline.model.llm_estimate import DecodeSetup, estimate
from roofline.report import compare_page, summary
from roofline.report.llm_estimate import Roofs, gallery_roofs, predict
from roofline.suite.results import read_results

from .asv_fixtures import snapshot
from .clitools import EXAMPLE_MACHINE, one_line_error

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "results"
#: The gallery machine of an older suite: its roofs meant something else, so it bounds no model.
OLD_SUITE = "xeon-2core-vm"
#: The gallery's machines recorded at the current suite (each has a DRAM roof and a bf16 compute roof).
CURRENT = sorted(
    p.name for p in EXAMPLES.iterdir() if (p / "machine.json").is_file() and p.name != OLD_SUITE
)  # fmt: skip


def _decode(capsys, *args: str) -> dict:
    assert main(["decode", "--model", "llama-3-8b", "--json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_gallery_holds_two_machines_of_the_current_suite():
    assert len(CURRENT) >= 2 and EXAMPLE_MACHINE in CURRENT
    for name in CURRENT:
        roofs = gallery_roofs(name, read_results(EXAMPLES))
        assert roofs.measured and roofs.gemv_fraction and "bf16" in roofs.hardware.peak_flops


@pytest.mark.parametrize("machine", CURRENT)
def test_decode_on_a_gallery_machine_uses_its_recorded_roofs(capsys, machine):
    """The bound is the run's DRAM roof over the step's bytes; the prediction that × its batch-1 GEMV fraction."""
    (s,), _ = summary.summarize(read_results(EXAMPLES), [machine])
    n, gflops = max((n, v) for (n, b), v in s.decode["DRAM"].items() if b == 1)
    fraction = gflops * 1e9 / (gemm_intensity(n, 1, 4) * s.bandwidth)  # the GEMV is bandwidth-bound
    out = _decode(capsys, "--quant", "q4_0", "--hardware", machine, "--results", str(EXAMPLES), "--batch", "1")
    step, row = out["steps"][0], out["prediction"]["rows"][0]
    assert out["hardware"]["bandwidth"] == s.bandwidth and out["hardware"]["memory_bytes"] == s.ram_bytes
    assert step["bound"] == "bandwidth" and step["step_s"] == pytest.approx(step["memory_s"])
    assert step["memory_s"] == pytest.approx((step["weight_bytes"] + step["kv_bytes"]) / s.bandwidth)
    assert out["prediction"]["gemv_fraction"] == pytest.approx(fraction)
    assert row["predicted_tokens_per_s"] == pytest.approx(row["bound_tokens_per_s"] * fraction)
    assert f"commit {s.commit[:8]} of 20" in out["hardware"]["source"] and machine in out["hardware"]["source"]


def test_decode_finds_the_gallery_from_the_checkout_and_prints_the_prediction(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["decode", "--model", "llama-3-8b", "--quant", "q4_0", "--hardware", EXAMPLE_MACHINE]) == 0
    out = capsys.readouterr().out
    assert f"source   measured: asv results examples/results, {EXAMPLE_MACHINE}, commit " in out
    assert "predicted: the bound × 0." in out and "batch-1 GEMV (fp32, n=8192)" in out


def test_a_compute_bound_step_and_a_batch_that_does_not_fit_have_no_prediction():
    hw = Hardware("tiny", {"bf16": 1e9}, 1e10, memory_bytes=8e9)
    roofs = Roofs(hw, gemv_fraction=0.5, gemv_n=8192, measured=True)
    rows = predict(estimate(DecodeSetup(lookup_model("llama-3-8b"), hw, dtype="q4_0"), [1, 8]), roofs)
    assert [(r.bound, r.fits) for r in rows] == [("compute", True), ("compute", False)]
    assert [r.tokens_per_s for r in rows] == [None, None] and rows[1].bound_text == "compute, does not fit"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--hardware", "no-such-machine"], "nor is it a machine of"),
        (["--hardware", OLD_SUITE], "recorded no DRAM roof the current suite reads"),
        (["--hardware", EXAMPLE_MACHINE, "--dtype", "fp8"], "recorded no fp8 compute roof"),
        (["--hardware", EXAMPLE_MACHINE, "--model", "llama-3-70b"], "does not fit on"),
        (["--hardware", EXAMPLE_MACHINE, "--results", "/nonexistent"], "no such results folder"),
    ],
)
def test_decode_refuses_what_a_gallery_machine_cannot_answer_in_one_line(capsys, args, says):
    assert main(["decode", "--model", "llama-3-8b", "--results", str(EXAMPLES), *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and says in one_line_error(captured.err)


def test_a_missing_compute_roof_can_be_named_instead(capsys):
    out = _decode(capsys, "--hardware", EXAMPLE_MACHINE, "--results", str(EXAMPLES), "--dtype", "fp8",
                  "--compute-dtype", "fp32")  # fmt: skip
    assert out["compute_dtype"] == "fp32"


def test_compare_model_tables_each_machines_prediction_per_core_and_per_dollar(capsys, tmp_path):
    prices = tmp_path / "prices.toml"
    prices.write_text(f'[{CURRENT[0]}]\ndollars_per_hour = 0.5\n[h100]\ndollars_per_hour = 2.0\n')
    args = ["compare", str(EXAMPLES), "--model", "llama-3-8b", "--quant", "q4_0", "--batch", "1,8"]
    assert main([*args, "--hardware-also", "h100", "--prices", str(prices), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    table = {r["key"]: r["cells"] for r in data["table"]}
    for m in CURRENT:
        assert table["model/1/predicted"][m]["value"] > 0 and table["model/1/bound/per-core"][m]["value"] > 0
    assert table["model/1/predicted"]["h100"]["value"] is None
    assert table["model/1/bound"]["h100"]["source"] == "datasheet"
    dollar = table["model/1/bound/per-dollar"]
    assert dollar["h100"]["value"] == pytest.approx(table["model/1/bound"]["h100"]["value"] / 2.0)
    assert OLD_SUITE in data["model"]["not_answered"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "decode Llama-3-8B q4_0, context 4096" in out and f"no decode figures for {OLD_SUITE}: " in out


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--quant", "q4_0"], "--quant goes with --model"),
        (["--model", "llama-3-8b", "--commits", "HEAD~1", "HEAD"], "--model goes with the machine comparison"),
        (["--model", "llama-3-8b", "--hardware-also", "nonesuch"], "unknown device 'nonesuch'"),
        (["--model", "llama-3-70b", "--machine", EXAMPLE_MACHINE], "no machine compared can answer: "),
    ],
)
def test_compare_model_refuses_bad_input_in_one_line_writing_nothing(capsys, tmp_path, args, says):
    assert main(["compare", str(EXAMPLES), *args, "--html", str(tmp_path / "page")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and says in one_line_error(captured.err)
    assert not (tmp_path / "page").exists()


def test_the_page_draws_the_predictions_beside_the_rooflines(tmp_path, capsys):
    args = ["compare", str(EXAMPLES), "--model", "llama-3-8b", "--quant", "q4_0", "--hardware-also", "h100"]
    assert main([*args, "--html", str(tmp_path / "page")]) == 0
    capsys.readouterr()
    text = (tmp_path / "page" / compare_page.PAGE).read_text()
    svg = (tmp_path / "page" / compare_page.DECODE_PICTURE).read_text()
    assert f'<img class="decode" src="{compare_page.DECODE_PICTURE}"' in text and compare_page.PICTURE in text
    for name in [*CURRENT, "h100 bound (datasheet)"]:
        assert name in svg
    assert f"{OLD_SUITE} predicted" not in svg


def _gallery_copy(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "results")
    return tmp_path / "results"


def test_rename_files_a_machines_runs_under_the_new_name_and_nothing_else(tmp_path, capsys):
    results = _gallery_copy(tmp_path)
    before = read_results(results)
    others = {k: v for k, v in snapshot(results).items() if not k.startswith(f"{EXAMPLE_MACHINE}/")}
    assert main(["machine", "--rename", EXAMPLE_MACHINE, "renamed-box", "--results", str(results)]) == 0
    assert "filed" in capsys.readouterr().out
    after = read_results(results)
    assert EXAMPLE_MACHINE not in after.machines and after.machines["renamed-box"].info["machine"] == "renamed-box"
    for commit, run in before.machines[EXAMPLE_MACHINE].runs.items():
        moved = after.machines["renamed-box"].runs[commit]
        assert moved.recorded == run.recorded and moved.params["machine"] == "renamed-box"
    assert {k: v for k, v in snapshot(results).items() if not k.startswith("renamed-box/")} == others


@pytest.mark.parametrize(
    ("old", "new", "says"),
    [
        (EXAMPLE_MACHINE, OLD_SUITE, "exists: a rename never joins two machines"),
        ("nonesuch", "x", "no machine 'nonesuch'"),
        (EXAMPLE_MACHINE, ".hidden", "must be letters, digits"),
    ],
)
def test_rename_refuses_in_one_line_and_writes_nothing(tmp_path, capsys, old, new, says):
    results = _gallery_copy(tmp_path)
    before = snapshot(results)
    assert main(["machine", "--rename", old, new, "--results", str(results)]) == 2
    assert says in one_line_error(capsys.readouterr().err)
    assert snapshot(results) == before


def test_rename_dry_run_writes_nothing(tmp_path, capsys):
    results = _gallery_copy(tmp_path)
    before = snapshot(results)
    assert main(["machine", "--rename", EXAMPLE_MACHINE, "x", "--results", str(results), "--dry-run"]) == 0
    assert "nothing written" in capsys.readouterr().out and snapshot(results) == before
