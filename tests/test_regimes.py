"""Three regimes (overhead, bandwidth, compute), and the GPU run's logic driven on CPU."""

from __future__ import annotations

import json
import math

import pytest

from roofline.cli import main
from roofline.errors import BadInput
from roofline.measure import overhead
from roofline.model import regimes


def test_floors_and_the_binding_roof():
    f = regimes.floors(flops=2e9, bytes_moved=1e9, overhead_s=1e-5, bandwidth=1e11, peak=1e12)
    assert f == {"overhead": 1e-5, "bandwidth": 1e-2, "compute": 2e-3}
    assert regimes.binding_roof(f) == "bandwidth"
    tiny = regimes.floors(flops=2e3, bytes_moved=1e3, overhead_s=1e-5, bandwidth=1e11, peak=1e12)
    assert regimes.binding_roof(tiny) == "overhead"
    big = regimes.floors(flops=2e15, bytes_moved=1e9, overhead_s=1e-5, bandwidth=1e11, peak=1e12)
    assert regimes.binding_roof(big) == "compute"
    with pytest.raises(BadInput):
        regimes.floors(1, 1, 0, 1, 1)


def test_overhead_bound_n_is_where_a_read_lasts_one_overhead():
    # 20 µs of launch latency at 4.2 TB/s in bf16: n* = sqrt(20e-6 · 4.2e12 / 2) ≈ 6481
    n = regimes.overhead_bound_n(20e-6, 4.2e12, 2)
    assert n == pytest.approx(math.sqrt(20e-6 * 4.2e12 / 2))
    assert n * n * 2 / 4.2e12 == pytest.approx(20e-6)


def test_classify_an_h200_like_point():
    # bf16 n=8192 batch 1: 35 µs amortized, 54.5 µs alone (the figures the issue quotes)
    n, b = 8192, 1
    seconds = 35e-6
    moved = 2 * (n * n + 2 * n * b)
    m = {"n": n, "batch": b, "seconds": seconds, "single_call_seconds": 54.5e-6, "gbps": moved / seconds / 1e9}
    o = {"amortized_seconds": 2.5e-6, "single_call_seconds": 20e-6}
    c = regimes.classify(m, o, bandwidth=4.2e12, peak=780e12)
    assert c["bound"] == "bandwidth" and c["single_call"]["bound"] == "bandwidth"
    assert c["overhead_share"] == pytest.approx(1 - 35 / 54.5)
    assert c["single_call"]["predicted_seconds"] == pytest.approx(20e-6 + moved / 4.2e12)
    small = {**m, "n": 1024, "gbps": 2 * 1024 * 1024 / 5e-6 / 1e9, "seconds": 5e-6, "single_call_seconds": 22e-6}
    assert regimes.classify(small, o, 4.2e12, 780e12)["single_call"]["bound"] == "overhead"


def test_numpy_overhead_roof(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    o = overhead.measure_overhead("numpy", "fp32", repeats=3)
    assert o.timer == "host" and o.single_call_seconds > 0 and o.amortized_seconds > 0
    assert set(o.as_dict()) >= {"backend", "single_call_seconds", "amortized_seconds"}


def test_gpu_run_logic_on_cpu(monkeypatch, tmp_path):
    """The whole GPU run, with torch-cpu steps standing in for CUDA ones and fake facts; its ceilings measured
    through the one entry point (suite.run.measure_roofs, the torch-cuda backend: a round each pass)."""
    pytest.importorskip("torch", reason="torch is not installed")
    from roofline.measure import backends
    from roofline.measure.ceilings import Bandwidth, Ceilings, GemmPeak
    from roofline.model.hardware import Hardware
    from roofline.report.gpu import render_gpu_text
    from roofline.suite import gpu
    from roofline.suite import run as suite_run

    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    bw = Bandwidth("d2d-copy", 2e10, 1.9e10, 1.05, 2**28, 132, 3)
    peaks = {d: GemmPeak(d, 256, 2e11, 1.9e11, 1.02, "fake", None, 3) for d in ("bf16", "fp32")}
    hw = Hardware("Fake GPU", {d: p.best for d, p in peaks.items()}, bw.best, "fake")
    monkeypatch.setattr(gpu, "available", lambda *a: None)
    monkeypatch.setattr(gpu, "gpu_facts", lambda: {"name": "Fake GPU", "clocks": {"clocks.sm": 345.0}})
    monkeypatch.setattr(gpu, "gpu_clocks", lambda: {"clocks.sm": 1980.0})
    rounds = []

    class CudaRounds:  # the GPU's ceilings, as measure_roofs times them
        def __init__(self, dtypes, gemm_n):
            rounds.append(("made", dtypes, gemm_n))

        def time(self):
            rounds.append("round")

        def ceilings(self):
            return Ceilings({"d2d-copy": bw}, peaks, 0, hw)

    monkeypatch.setattr(suite_run, "CudaCeilingRounds", CudaRounds)
    monkeypatch.setattr(gpu, "build_step", lambda _b, d, n, b: backends.build_step("torch-cpu", d, n, b))
    real = overhead.measure_overhead
    monkeypatch.setattr(gpu, "measure_overhead", lambda _b, d, **k: real("torch-cpu", d, repeats=3))
    said = []
    run = gpu.gpu_roofline(
        dtypes=("bf16", "fp32", "fp8"),
        sizes=(256,),
        batches=(1, 16, 64),
        decode_batches=(1,),
        repeats=3,
        progress=said.append,
    )
    assert run["schema"] == gpu.SCHEMA and said[0] == "ceilings"
    assert rounds == [("made", ("bf16", "fp32", "fp8"), gpu.GEMM_N), *["round"] * suite_run.passes()]
    assert run["machine"]["clocks_start"] == {"clocks.sm": 345.0} and run["machine"]["clocks_end"]["clocks.sm"] == 1980
    assert [p["batch"] for p in run["sweeps"][0]["points"]] == [1, 16, 64]
    assert run["sweeps"][0]["knee"]["batch"] > 0
    x = run["crossover"]
    assert x["predicted_batch"] == pytest.approx(2e11 / 2e10 * 2 / 2)
    assert x["observed_over_predicted"]["256"] == pytest.approx(x["observed_batch"]["256"] / x["predicted_batch"])
    dtypes = {r["dtype"] for r in run["decode"]}
    assert dtypes == {"bf16", "fp32", "fp8"} - ({"fp8"} if run["unavailable"] else set())
    for r in run["decode"]:
        if r["dtype"] in peaks:
            assert r["regime"]["bound"] in regimes.ROOFS
    json.dumps(run, allow_nan=False, default=str)
    text = render_gpu_text(run)
    assert "Fake GPU" in text and "crossover (bf16)" in text and "clocks end" in text


def test_cli_gpu_without_cuda_is_one_line_exit_2(capsys):
    torch = pytest.importorskip("torch", reason="torch is not installed")
    if torch.cuda.is_available():
        pytest.skip("a CUDA device is present")
    assert main(["gpu", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("roofline: error: no CUDA GPU to measure")


def test_cli_gpu_never_overwrites_and_checks_dtypes(tmp_path, capsys):
    existing = tmp_path / "gpu.json"
    existing.write_text("{}")
    assert main(["gpu", "-o", str(existing)]) == 2
    assert "never overwrites" in capsys.readouterr().err
    assert existing.read_text() == "{}"
    assert main(["gpu", "--dtypes", "bf16,int3"]) == 2
    assert "unknown dtype 'int3'" in capsys.readouterr().err


def test_cli_backends_json(capsys):
    assert main(["backends", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["backend"] for r in out["backends"]} == {"numpy", "torch-cpu", "torch-cuda"}
    assert main(["backends"]) == 0
    assert "numpy" in capsys.readouterr().out
