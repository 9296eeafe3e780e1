"""`roofline decode` end to end: tables, JSON, local hardware, and one-line errors with exit 2."""

import json
import platform
import subprocess
import sys
from contextlib import contextmanager

import pytest

from roofline import host as system
from roofline.cli import main
from roofline.measure import contention
from roofline.model.conditions import Conditions
from roofline.model.hardware import Hardware
from roofline.outcome import Measured
from roofline.suite import run as run_

from .clitools import one_line_error

FAKE_HOST = Hardware("fake-host", {"fp32": 2e11, "fp64": 1e11}, 2e10, source="measured on fake-host")


@pytest.fixture
def local(monkeypatch):
    """--hardware local answers from a fake measurement (measuring takes ~15 s) and 64 GB of RAM."""
    calls = []

    def fake_measure(ask):
        calls.append(1)
        assert (ask.backend, ask.compute, ask.levels, ask.referee) == ("cpu", (), False, False)  # the ceilings
        peaks = {"float32": FAKE_HOST.peak("fp32") / 1e9, "float64": FAKE_HOST.peak("fp64") / 1e9}
        return run_.MachineRoofs(Measured(run_.RunRoofs({"read": FAKE_HOST.bandwidth / 1e9}, peaks)))

    monkeypatch.setattr(run_, "measure_roofs", fake_measure)
    monkeypatch.setattr(platform, "node", lambda: "fake-host")
    monkeypatch.setattr(system, "total_memory_bytes", lambda: 64e9)
    monkeypatch.setattr(contention, "watched", lambda: fake_watch(Conditions()))
    return calls


@contextmanager
def fake_watch(conditions, threads=2):
    """The contention watch without its 2 s of watching: it saw ``conditions``."""
    watch = contention.Watched(threads, 2)
    yield watch
    watch.conditions = conditions


def test_local_hardware_is_measured_under_the_contention_watch_and_says_when_contended(capsys, local, monkeypatch):
    busy = Conditions(lost_share=0.5, run_queue=1.2, blas_threads=1, cores=2)
    monkeypatch.setattr(contention, "watched", lambda: fake_watch(busy, threads=1))
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1,8")
    assert code == 0, err
    (note,) = [line for line in out.splitlines() if "contention" in line]
    assert note.startswith("note: measured under contention: 50% of CPU time lost") and "not this machine's" in note
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1,8", "--json")
    assert json.loads(out)["measured"] == [note.removeprefix("note: ")]
    monkeypatch.setattr(contention, "watched", lambda: fake_watch(Conditions()))
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1,8", "--json")
    assert "measured" not in json.loads(out)  # quiet: nothing to say


def test_the_output_gives_one_crossover(capsys, local):
    """The crossover as the report defines it; the saturation batch is another name; no third turn in the text."""
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1,8")
    assert code == 0, err
    assert [w for line in out.splitlines() for w in [line.split(":")[0]] if "batch" in w and "crossover" in w] == [
        "crossover batch 10.0"
    ]
    assert "turns compute-bound" not in out and "compute-bound at no batch" not in out


def run(capsys, *argv):
    code = main(["decode", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, out, err):
    assert code == 2
    assert out == ""
    one_line_error(err)
    assert "Traceback" not in err


def test_table_on_local_hardware(capsys, local):
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1,8,64")
    assert code == 0, err
    assert local == [1]
    lines = out.splitlines()
    assert lines[0] == "Llama-3-8B (8.03 B params) on fake-host, context 4096"
    assert "131,072 B per token" in out and "200 GFLOP/s fp32, 20 GB/s, 64 GB" in out  # 64e9 B of RAM
    rows = [line.split() for line in lines if line.split() and line.split()[0] in {"1", "8", "64"}]
    # The fake host's ridge is 10 FLOP/byte: batch 64 does 64 · 15 GFLOP = 960 GFLOP (4.8 s) against 49 GB (2.5 s).
    assert [r[:2] for r in rows] == [["1", "bandwidth"], ["8", "bandwidth"], ["64", "compute"]]
    # batch 1 by hand: (7,504,924,672 · 2 + 131,072 · 4096) B / 20 GB/s = 777.3 ms, every phase bandwidth-bound,
    # so the per-phase sum and the whole-step max agree.
    assert float(rows[0][2]) == pytest.approx((7_504_924_672 * 2 + 131_072 * 4096) / 2e10 * 1e3, rel=1e-3)
    assert float(rows[0][3]) == pytest.approx(float(rows[0][2]), rel=1e-3)
    assert rows[0][4:6] == ["mlp", "(bandwidth)"]
    # At batch 64 the MLP and projections are compute-bound (64 FLOP per 2 B > 10) while attention is not
    # (4 FLOP per byte): the sum of phases is longer than the whole-step max.
    assert float(rows[2][2]) > float(rows[2][3])
    assert "largest batch that fits: 89" in out
    assert "note: fake-host has no bf16 peak: the fp32 roof is used for the arithmetic" in out


def test_json_keys_and_values(capsys, local):
    code, out, _ = run(
        capsys,
        "--model",
        "mixtral-8x7b",
        "--hardware",
        "local",
        "--batch",
        "1,4",
        "--json",
        "--dtype",
        "int4",
        "--context",
        "1024",
    )
    assert code == 0
    doc = json.loads(out)
    assert set(doc) == {
        "model",
        "hardware",
        "devices",
        "dtype",
        "kv_dtype",
        "compute_dtype",
        "bytes_per_weight",
        "context",
        "kv_tokens",
        "kv_bytes_per_token",
        "kv_bytes_per_sequence_per_device",
        "weight_bytes_per_device",
        "interconnect_bandwidth",
        "allreduce_latency_s",
        "allreduces_per_step",
        "memory_capacity_bytes",
        "batching",
        "max_batch_that_fits",
        "steps",
        "requests",
        "notes",
    }
    assert doc["compute_dtype"] == "fp32" and doc["bytes_per_weight"] == 0.515625
    assert doc["model"]["params_active"] == 12_879_925_248 and doc["model"]["experts"] == 8
    assert doc["hardware"] == {
        "name": "fake-host",
        "bandwidth": 2e10,
        "peak_flops": 2e11,
        "memory_bytes": 64e9,
        "memory_reserved_bytes": 0.0,
        "source": f"measured on fake-host: read bandwidth, the fastest GEMM ({system.blas_summary()}); "
        "memory: total RAM",
    }
    assert set(doc["batching"]) == {
        "crossover",
        "saturation",
        "limited_by",
        "ceiling_tokens_per_s",
        "compute_bound_from",
        "kv_equals_weights",
    }
    first = doc["steps"][0]
    assert set(first) == {
        "batch",
        "bound",
        "step_s",
        "memory_s",
        "compute_s",
        "comm_s",
        "tokens_per_s_per_sequence",
        "tokens_per_s",
        "weight_bytes",
        "kv_bytes",
        "weight_share",
        "kv_share",
        "flops",
        "memory_needed_bytes",
        "fits",
        "whole_step_s",
        "binding_phase",
        "phases",
    }
    assert [p["name"] for p in first["phases"]] == ["qkv_o", "attention", "mlp", "head"]
    assert sum(p["time_s"] for p in first["phases"]) + first["comm_s"] == pytest.approx(first["step_s"])
    assert doc["requests"] == []
    assert [s["batch"] for s in doc["steps"]] == [1, 4]
    assert first["tokens_per_s"] == pytest.approx(1 / first["step_s"])
    assert first["weight_share"] + first["kv_share"] == pytest.approx(1)


def test_custom_model_and_a_changed_preset(capsys, local):
    code, out, err = run(
        capsys,
        "--model",
        "custom",
        "--layers",
        "2",
        "--hidden",
        "64",
        "--heads",
        "4",
        "--intermediate",
        "128",
        "--vocab",
        "100",
        "--hardware",
        "local",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["model"]["params_total"] == 2 * 41_088 + 12_800 + 64
    code, out, _ = run(
        capsys, "--model", "llama-3-8b", "--layers", "16", "--hardware", "local", "--batch", "1", "--json"
    )
    assert json.loads(out)["model"]["name"] == "Llama-3-8B (modified)"


def fits_column(out, batches):
    rows = [line.split() for line in out.splitlines() if line.split()[:1] in ([str(b)] for b in batches)]
    return [r[-1] for r in rows]


@pytest.mark.parametrize("extra", [[], ["--ignore-memory"]])
def test_rows_that_do_not_fit_are_shown_with_what_they_need(capsys, local, extra):
    code, out, _ = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1,128", *extra)
    assert code == 0
    assert fits_column(out, (1, 128)) == ["yes", "no"]
    # batch 128 needs 16.06 GB of weights + 128 × 537 MB of KV = 84.8 GB
    row = next(line.split() for line in out.splitlines() if line.split()[:1] == ["128"])
    assert float(row[-2]) == pytest.approx((8_030_261_248 * 2 + 128 * 131_072 * 4096) / 1e9, abs=0.05)
    assert "note: batch 128 does not fit in 64 GB per device (GB/device is what each needs); --require-fit" in out


def test_require_fit_refuses(capsys, local):
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1,128", "--require-fit")
    assert_one_line_error(code, out, err)
    assert "batch 128 does not fit on fake-host (64 GB) at context 4096" in err


def test_documented_example_exits_0_on_a_24_gb_machine(capsys, local, monkeypatch):
    monkeypatch.setattr(system, "total_memory_bytes", lambda: 24e9)
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local")
    assert code == 0, err
    assert fits_column(out, (1, 8, 64, 512)) == ["yes", "yes", "no", "no"]  # (24 − 16.06) GB / 537 MB = 14.8
    assert "largest batch that fits: 14" in out


def test_quant_formats_count_their_scales(capsys, local):
    def weights(*flags):
        code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1", "--json", *flags)
        assert code == 0, err
        doc = json.loads(out)
        return doc["bytes_per_weight"], doc["weight_bytes_per_device"]

    assert weights("--quant", "q8_0") == (1.0625, 8_030_261_248 * 1.0625)
    assert weights("--quant", "gptq")[0] == 0.51953125
    assert weights("--quant", "gptq", "--group-size", "32")[0] == (16 + 2.5) / 32
    assert weights("--quant", "int4-zp", "--group-size", "32")[0] == 0.625
    assert weights("--dtype", "int8")[0] == 1


def test_prompt_and_output_give_a_request(capsys, local):
    code, out, err = run(
        capsys, "--model", "llama-3-8b", "--hardware", "local", "--batch", "1", "--prompt", "5", "--output", "200"
    )
    assert code == 0, err
    assert "context 205" in out.splitlines()[0]
    assert "requests: prompt 5, output 200 (first token from the prefill, 199 decode steps at context 6–204)" in out
    code, out, _ = run(
        capsys,
        "--model",
        "llama-3-8b",
        "--hardware",
        "local",
        "--batch",
        "1,4",
        "--json",
        "--prompt",
        "5",
        "--output",
        "3",
    )
    (one, four) = json.loads(out)["requests"]
    assert (one["prompt"], one["output"], one["decode_steps"]) == (5, 3, 2)
    assert one["e2e_s"] == pytest.approx(one["ttft_s"] + 2 * one["step_mean_s"])
    assert four["tokens_per_s"] == pytest.approx(4 * 3 / four["e2e_s"])
    slowest = max(four["prefill_phases"], key=lambda p: p["time_s"])
    assert four["prefill_binding_phase"] == slowest["name"]
    assert slowest["time_s"] > min(p["time_s"] for p in four["prefill_phases"])


def test_named_interconnect_brings_its_latency(capsys, local):
    def doc(*flags):
        code, out, err = run(
            capsys, "--model", "llama-3-8b", "--hardware", "local", "--tp", "8", "--batch", "1", "--json", *flags
        )
        assert code == 0, err
        return json.loads(out)

    named = doc("--interconnect", "NVLink4")
    assert named["interconnect_bandwidth"] == 450e9 and named["allreduce_latency_s"] == 3.7e-6
    assert named["allreduces_per_step"] == 64
    # 64 all-reduces × 3.7 µs, plus 64 × 2 · 7/8 · 4096 · 4 B (fp32 arithmetic on this host) / 450 GB/s
    expected = 64 * 3.7e-6 + 64 * 2 * 7 / 8 * 4096 * 4 / 450e9
    assert named["steps"][0]["comm_s"] == pytest.approx(expected)
    override = doc("--interconnect", "nvlink4", "--allreduce-latency", "8")
    assert override["allreduce_latency_s"] == pytest.approx(8e-6)
    plain = doc("--interconnect", "450")
    assert plain["allreduce_latency_s"] is None
    assert any("latency not counted" in n for n in plain["notes"])
    latency_only = doc("--allreduce-latency", "8")
    assert latency_only["steps"][0]["comm_s"] == pytest.approx(64 * 8e-6)


def test_interconnect_flag_is_in_gb_per_s(capsys, local):
    code, out, _ = run(
        capsys,
        "--model",
        "llama-3-8b",
        "--hardware",
        "local",
        "--tp",
        "2",
        "--interconnect",
        "100",
        "--batch",
        "1",
        "--json",
    )
    doc = json.loads(out)
    assert doc["interconnect_bandwidth"] == 100e9 and doc["steps"][0]["comm_s"] > 0


# ---- bad input: one line, exit 2 ------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--model", "llama-3-7b"], "unknown model 'llama-3-7b'; closest: llama-3-70b"),
        (["--model", "llama-3-8b", "--batch", "0"], "--batch: 0 is not positive"),
        (["--model", "llama-3-8b", "--batch", "1,-8"], "--batch"),
        (["--model", "llama-3-8b", "--context", "0"], "--context: 0 is not positive"),
        (["--model", "llama-3-8b", "--context", "-4096"], "--context"),
        (["--model", "llama-3-8b", "--tp", "3"], "tensor parallel degree 3 does not divide Llama-3-8B's 8 KV heads"),
        (["--model", "llama-3-8b", "--batch", "1,64,128", "--require-fit"], "the largest batch that fits is 89"),
        (["--model", "llama-3-70b", "--require-fit"], "so no batch fits"),
        (["--model", "llama-3-8b", "--require-fit", "--ignore-memory"], "not allowed with argument"),
        (["--model", "llama-3-8b", "--quant", "q3_0"], "--quant: invalid choice: 'q3_0'"),
        (["--model", "llama-3-8b", "--quant", "q8_0", "--dtype", "int8"], "give --dtype or --quant, not both"),
        (["--model", "llama-3-8b", "--quant", "q4_0", "--group-size", "64"], "q4_0 has a fixed layout"),
        (["--model", "llama-3-8b", "--group-size", "0"], "--group-size: 0 is not positive"),
        (["--model", "llama-3-8b", "--prompt", "128"], "--prompt and --output go together"),
        (["--model", "llama-3-8b", "--output", "128"], "--prompt and --output go together"),
        (["--model", "llama-3-8b", "--prompt", "1", "--output", "1", "--context", "9"], "--context or --prompt"),
        (["--model", "llama-3-8b", "--prompt", "0", "--output", "1"], "--prompt: 0 is not positive"),
        (["--model", "llama-3-8b", "--prompt", "8", "--output", "x"], "--output: 'x' is not an integer"),
        (["--model", "llama-3-8b", "--interconnect", "nvlink9"], "unknown interconnect 'nvlink9'"),
        (["--model", "llama-3-8b", "--interconnect", "-5"], "--interconnect"),
        (["--model", "llama-3-8b", "--allreduce-latency", "-1"], "--allreduce-latency: '-1' is not a finite number"),
        (["--model", "llama-3-8b", "--allreduce-latency", "nan"], "--allreduce-latency"),
        (["--model", "llama-3-8b", "--reserve", "inf"], "--reserve"),
        (["--model", "llama-3-8b", "--reserve", "64"], "memory reserve 64 GB leaves nothing of fake-host's 64 GB"),
        (["--model", "deepseek-v3"], "DeepSeek-V3 uses multi-head latent attention"),
        (["--model", "llama-3-8b", "--dtype", "int3"], "invalid choice: 'int3'"),
        (["--model", "llama-3-8b", "--compute-dtype", "fp8"], "fake-host has no peak for dtype 'fp8'"),
        (["--model", "llama-3-8b", "--interconnect", "0"], "--interconnect"),
        (["--model", "custom", "--layers", "2"], "a custom model needs --hidden, --heads, --intermediate, --vocab"),
        (["--model", "llama-3-8b", "--kv-heads", "5"], "32 heads is not a multiple of 5 KV heads"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, local, argv, needle):
    code, out, err = run(capsys, *argv, "--hardware", "local")
    assert_one_line_error(code, out, err)
    assert needle in err


def test_model_errors_come_before_measuring(capsys, local):
    run(capsys, "--model", "nosuch", "--hardware", "local")
    run(capsys, "--model", "llama-3-8b", "--tp", "3", "--hardware", "local")
    assert local == []


def test_missing_hardware_is_one_line(capsys):
    assert_one_line_error(*run(capsys, "--model", "llama-3-8b"))


def test_python_dash_m_bad_input_is_one_line_and_exit_2():
    proc = subprocess.run(
        [sys.executable, "-m", "roofline", "decode", "--model", "llama-3-8b", "--hardware", "local", "--tp", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "roofline: error: tensor parallel degree 3 does not divide Llama-3-8B's 8 KV heads\n"


# ---- the catalogue (issue 4) ----------------------------------------------------------------------


def test_catalogue_h100(capsys):
    code, out, err = run(
        capsys, "--model", "llama-3-70b", "--hardware", "h100", "--tp", "2", "--batch", "1,8", "--json"
    )
    assert code == 0, err
    first = json.loads(out)["steps"][0]
    assert first["bound"] == "bandwidth"
    assert first["step_s"] == pytest.approx(140e9 / (2 * 3.35e12), rel=0.02)


def test_catalogue_unknown_hardware_is_one_line(capsys):
    code, out, err = run(capsys, "--model", "llama-3-8b", "--hardware", "h10")
    assert_one_line_error(code, out, err)
    assert "h100" in err.lower()
