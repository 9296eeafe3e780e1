"""A real model decoded here: transformers and the lean path, checked, timed, held against the bound.

Tiny configurations only (2 layers, hidden 64): the point is that both paths compute the same
network and that the timing and the comparison are wired right, never how fast anything is.
"""

import importlib.util
import json
from types import SimpleNamespace

import pytest

from roofline.cli import main
from roofline.errors import BadInput, KernelMismatch
from roofline.measure.llm_decode import ModelDecodeRun, PathTiming, hold_against_bound, measured_setup
from roofline.measure.timing import Timing
from roofline.model.hardware import Hardware
from roofline.model.llm import custom_model
from roofline.model.llm_estimate import BOUND_SLACK, beats_bound, bound_fraction, step
from roofline.outcome import Skipped
from roofline.report.llm_estimate import format_measured

HAVE_MODELS = all(importlib.util.find_spec(m) is not None for m in ("torch", "transformers"))
needs_models = pytest.mark.skipif(not HAVE_MODELS, reason="torch and transformers are not installed")

TINY = dict(layers=2, hidden=64, heads=4, kv_heads=2, intermediate=128, vocab=256)
SHAPES = {
    "llama": custom_model(name="tiny-llama", **TINY),
    "mistral": custom_model(name="tiny-mistral", sliding_window=6, **TINY),
    "mixtral": custom_model(name="tiny-mixtral", experts=4, experts_per_token=2, **TINY),
}
HW = Hardware("box", {"bf16": 1e11, "fp32": 1e11}, bandwidth=2e10, memory_bytes=2**34)


# ---- the bound and the fraction: pure arithmetic, no torch ---------------------------------------


def test_fraction_is_bound_over_measured_and_only_beating_the_bound_by_more_than_the_slack_is_flagged():
    assert bound_fraction(2.0, 4.0) == 0.5
    assert not beats_bound(BOUND_SLACK) and beats_bound(BOUND_SLACK * 1.001) and BOUND_SLACK == 1.05
    with pytest.raises(BadInput):
        bound_fraction(1.0, 0.0)


def _run(rows, shape=SHAPES["llama"], context=100, warmup=2, steps=7):
    return ModelDecodeRun(shape, "bf16", context, warmup, steps, tuple(rows), {"lean": 0.01}, 2, "torch x")


def test_each_row_is_held_against_the_bound_of_the_same_slice_at_the_mean_kv_length():
    slow, fast = Timing((0.5, 0.4, 0.6), 1, 0.5), Timing((1e-9,) * 3, 1, 1e-9)
    run = _run([PathTiming("transformers", 8, slow), PathTiming("lean", 8, fast)])
    assert run.mean_kv_tokens == 100 + 2 + 4  # context, warm-up, half the timed steps
    setup = measured_setup(run, HW)
    assert (setup.context, setup.kv_dtype, setup.model) == (106, "bf16", run.shape)
    bound = step(setup, 8).step_s
    rows = hold_against_bound(run, HW)
    assert rows[0].fraction == pytest.approx(bound / 0.5) and not rows[0].flagged
    assert rows[1].flagged  # a step a billion times faster than the roofline is a bug, and says so
    text = "\n".join(format_measured(run, rows, full_layers=32))
    assert "2 of 32 layers" in text and "BEATS THE BOUND" in text and "warning: 1 measurement" in text


# ---- the model and both paths -------------------------------------------------------------------


@pytest.fixture(scope="module")
def built():
    if not HAVE_MODELS:
        pytest.skip("torch and transformers are not installed")
    from roofline.measure.lean_llm import LeanModel
    from roofline.measure.llm_build import build_model

    return {arch: (m := build_model(shape, "bf16", 64), LeanModel(m)) for arch, shape in SHAPES.items()}


@needs_models
@pytest.mark.parametrize("arch", list(SHAPES))
def test_transformers_builds_the_architecture_with_the_parameters_the_shape_counts(built, arch):
    model, _ = built[arch]
    assert type(model).__name__ == f"{arch.capitalize()}ForCausalLM"
    assert sum(p.numel() for p in model.parameters()) == SHAPES[arch].params_total
    w = model.model.layers[0].self_attn.q_proj.weight.float()
    assert 0.015 < float(w.std()) < 0.025 and not bool((w[0] == w[1]).all())  # written, random, rows differ


@needs_models
@pytest.mark.parametrize("arch", list(SHAPES))
def test_both_paths_match_a_float64_run(built, arch):
    from roofline.measure.llm_decode import TOLERANCE, check_paths

    errors = check_paths(*built[arch], "bf16")
    assert set(errors) == {"transformers", "lean"} and max(errors.values()) < TOLERANCE["bf16"]


@needs_models
@pytest.mark.parametrize("arch", list(SHAPES))
def test_lean_decode_with_its_static_cache_follows_transformers_with_its_cache(built, arch):
    """Prefill 5 tokens, then 4 decode steps (past the sliding window of 6): the same logits each step."""
    import torch
    from transformers import DynamicCache

    model, lean = built[arch]
    ids = torch.randint(0, 256, (2, 9), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        cache, mine = DynamicCache(config=model.config), lean.new_cache(2, 9)
        theirs = model(ids[:, :5], cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
        ours = lean.forward(ids[:, :5], 0, mine)
        for pos in range(5, 9):
            rel = float((ours.float() - theirs.float()).norm() / theirs.float().norm())
            assert rel < 0.02, f"step at position {pos}: {rel:.3g}"
            theirs = model(ids[:, pos : pos + 1], cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1]
            ours = lean.forward(ids[:, pos : pos + 1], pos, mine)


@needs_models
def test_a_tied_head_is_the_embedding_table_as_the_shape_counts():
    """Llama-3.2's presets tie the head to the embedding table; transformers built it apart (a second table,
    and ModelDecode stopped on the parameter count: ROOFLINE_MODEL=llama-3.2-1b could not run)."""
    from roofline.measure.lean_llm import LeanModel
    from roofline.measure.llm_build import build_model
    from roofline.measure.llm_decode import TOLERANCE, check_paths

    shape = custom_model(name="tiny-tied", tied_embeddings=True, **TINY)
    model = build_model(shape, "bf16", 64)
    assert model.lm_head.weight is model.model.embed_tokens.weight
    assert sum(p.numel() for p in model.parameters()) == shape.params_total
    assert max(check_paths(model, LeanModel(model), "bf16").values()) < TOLERANCE["bf16"]


@needs_models
def test_a_wrong_path_is_refused_before_anything_is_timed(monkeypatch):
    """A lean path without rotary embeddings. At hidden 64 the random weights' attention is almost
    uniform, where positions hardly matter, so q and k are scaled up as at a real model's width."""
    import torch

    from roofline.measure.lean_llm import LeanModel
    from roofline.measure.llm_build import build_model
    from roofline.measure.llm_decode import check_paths

    model = build_model(SHAPES["llama"], "bf16", 64)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(8)
            layer.self_attn.k_proj.weight.mul_(8)
    assert max(check_paths(model, LeanModel(model), "bf16").values()) < 0.05
    monkeypatch.setattr(LeanModel, "_rope", staticmethod(lambda t, cos, sin: t))
    with pytest.raises(KernelMismatch, match="do not compute the same network"):
        check_paths(model, LeanModel(model), "bf16")


@needs_models
def test_measure_times_both_paths_at_each_batch():
    from roofline.measure.llm_decode import measure_model_decode

    run = measure_model_decode(SHAPES["mixtral"], [1, 3], context=8, warmup=1, steps=3)
    assert [(r.path, r.batch) for r in run.rows] == [("transformers", 1), ("lean", 1), ("transformers", 3), ("lean", 3)]
    assert all(len(r.timing.per_call) == 3 and min(r.timing.per_call) > 0 for r in run.rows)
    assert run.mean_kv_tokens == 8 + 1 + 2 and "transformers" in run.versions


@needs_models
def test_a_models_roofs_are_the_runs_roofs_at_its_own_layers(monkeypatch):
    """decode --measure and ModelDecode's own roofs come from the one entry point: the DRAM roof, numpy's fp32 GEMM
    and the model's own layers as F.linear in its dtype at its batches, each roof its fastest round's median."""
    from roofline.suite import run

    asked = []
    real = run.measure_roofs
    monkeypatch.setattr(run, "measure_roofs", lambda ask: asked.append(ask) or real(ask))
    monkeypatch.setenv("ROOFLINE_GEMM_N", "128")
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    m = run.model_roofs(SHAPES["llama"], "bf16", [2])
    (ask,) = asked
    layers, rows = ask.linear["bf16"]
    assert ask.kinds == ("read",) and ask.dtypes == ("float32",) and ask.gemm_n == 128 and rows == (2, 8)
    assert (SHAPES["llama"].hidden, SHAPES["llama"].intermediate) in layers
    hw = m.require()
    assert hw.peak("bf16") == m.compute.value["bf16"].value.gflops * 1e9 and hw.peak("fp32") > 0
    assert hw.bandwidth == m.ceilings.value.bandwidth_gbps["read"] * 1e9 and hw.memory_bytes
    assert set(run.model_linear(SHAPES["llama"], "fp32", [1])) == {"fp32"}  # torch's own fp32, beside numpy's GEMM
    assert run.model_linear(SHAPES["llama"], "int8", [1]) == {} and run.model_linear(SHAPES["llama"], "bf16", []) == {}


# ---- the command ----------------------------------------------------------------------------------

TINY_FLAGS = ["--model", "custom", *(f"--{k.replace('_', '-')}={v}" for k, v in TINY.items())]


@needs_models
def test_cli_measure_prints_measured_and_bound_for_both_paths(monkeypatch, capsys):
    from roofline.suite import run

    roofs = SimpleNamespace(require=lambda: HW)
    monkeypatch.setattr(run, "model_roofs", lambda shape, dtype, batches: roofs)  # the roofs are tested elsewhere
    argv = [*TINY_FLAGS, "--hardware", "local", "--measure", "--batch", "1,2", "--context", "8", "--steps", "2"]
    assert main(["decode", *argv]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.split()[1:2] in (["transformers"], ["lean"])]
    assert [(r[0], r[1]) for r in rows] == [("1", "transformers"), ("1", "lean"), ("2", "transformers"), ("2", "lean")]
    assert "bound/measured" in out and "checked against float64" in out
    assert main(["decode", *argv, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)["measured"]
    assert len(got["rows"]) == 4 and all(0 < r["fraction"] == r["bound_step_s"] / r["step_s"] for r in got["rows"])


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--hardware", "h100"], "--hardware local"),
        (["--hardware", "local", "--quant", "q8_0"], "runs the model in"),
        (["--hardware", "local", "--dtype", "int8"], "runs the model in"),
        (["--hardware", "local", "--tp", "2"], "one device"),
        (["--hardware", "local", "--prompt", "8", "--output", "8"], "--prompt/--output do not apply"),
    ],
)
def test_cli_measure_refuses_what_it_cannot_run_in_one_line(capsys, extra, words):
    assert main(["decode", *TINY_FLAGS, "--measure", *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_cli_measure_without_transformers_says_so(monkeypatch, capsys):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a)
    )
    assert main(["decode", *TINY_FLAGS, "--hardware", "local", "--measure"]) == 2
    assert "transformers is not installed" in capsys.readouterr().err


# ---- the asv side: models.ModelDecode -------------------------------------------------------------


def test_the_benchmarks_model_is_a_preset_with_fields_changed(monkeypatch):
    from roofline.suite import params

    monkeypatch.delenv("ROOFLINE_MODEL", raising=False)
    assert params.model_decode().layers == 1 and params.model_decode().hidden == 4096
    monkeypatch.setenv("ROOFLINE_MODEL", "llama-3-8b:layers=2,hidden=64,heads=4,kv_heads=2,head_dim=16")
    assert (params.model_decode().layers, params.model_decode().hidden) == (2, 64)
    for bad in ("llama-3-8b:layers", "llama-3-8b:depth=2", "llama-3-8b:layers=0", "no-such-model"):
        monkeypatch.setenv("ROOFLINE_MODEL", bad)
        with pytest.raises(BadInput):
            params.model_decode()


@needs_models
def test_model_decode_grid_feeds_the_benchmark_floats_and_skips_what_overruns_the_budget(monkeypatch):
    from benchmarks.models import ModelDecode
    from roofline.errors import BackendUnavailable
    from roofline.suite import harness

    monkeypatch.setenv("ROOFLINE_MODEL_BATCH", "1,2")  # the batches this run chooses
    grid = harness.model_decode_grid([1, 2], SHAPES["llama"], context=8, steps=2, hardware=HW)
    bench = ModelDecode()
    for batch in (1, 2):
        bench.setup(grid, batch)
        got = [bench.track_tokens_per_s(grid, batch), bench.track_bound_tokens_per_s(grid, batch)]
        lean = bench.track_lean_tokens_per_s(grid, batch)
        assert all(type(v) is float and v > 0 for v in (*got, lean))
        assert lean == pytest.approx(grid[batch].value["lean_tokens_per_s"], rel=1e-3)
        fraction = bench.track_roofline_fraction(grid, batch)
        # bound time ÷ measured time; each of the three figures is rounded to TRACK_DIGITS significant
        # digits, off by up to half a unit in its last (1e-3 failed once: 0.001008 against 0.0010092)
        rounding = 3 * 0.5 * 10.0 ** (1 - harness.TRACK_DIGITS) + 1e-6
        assert fraction == pytest.approx(got[0] / got[1], rel=rounding)
    slow = Hardware("slow", {"bf16": 1e3}, bandwidth=1e3)
    skipped = harness.model_decode_grid([1], SHAPES["llama"], hardware=slow)
    assert isinstance(skipped[1], Skipped) and "over the budget" in skipped[1].reason
    with pytest.raises(BackendUnavailable, match="over the budget"):
        bench.setup(skipped, 1)


@needs_models
def test_the_models_bound_divides_by_the_runs_roofs_where_this_asv_run_left_them(monkeypatch):
    """Issue 39, every bound a roof: the bound's roofs are the run's (measured in its rounds, printed with the
    others), not the model's own of another moment; without them it measures its own and says so."""
    from roofline.suite import handoff, harness, run

    monkeypatch.setenv("ROOFLINE_MODEL_BATCH", "1")
    own = SimpleNamespace(require=lambda: Hardware("own", {"bf16": 2e12}, bandwidth=2e12))
    calls, said = [], []
    monkeypatch.setattr(run, "model_roofs", lambda shape, dtype, batches: calls.append(dtype) or own)
    monkeypatch.setattr(harness, "_warn", said.extend)
    monkeypatch.setattr(harness, "_under_asv", lambda: True)
    monkeypatch.setattr(handoff, "read", lambda dtype: HW)
    left = harness.model_decode_grid([1], SHAPES["llama"], context=8, steps=2)
    given = harness.model_decode_grid([1], SHAPES["llama"], context=8, steps=2, hardware=HW)
    assert left[1].value["bound_tokens_per_s"] == given[1].value["bound_tokens_per_s"] and not calls
    monkeypatch.setattr(handoff, "read", lambda dtype: None)
    mine = harness.model_decode_grid([1], SHAPES["llama"], context=8, steps=2)
    assert calls == ["bf16"] and any("no run of this asv run left its roofs" in line for line in said)
    assert mine[1].value["bound_tokens_per_s"] != given[1].value["bound_tokens_per_s"]


def test_model_decode_grid_without_transformers_skips_every_batch(monkeypatch):
    from roofline.suite import harness

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "transformers" else real(name, *a)
    )
    grid = harness.model_decode_grid([1, 8], SHAPES["llama"], hardware=HW)
    assert all(isinstance(e, Skipped) for e in grid.values()) and "not installed" in grid[8].reason


def test_the_report_from_results_tables_the_model_and_says_which_batch_was_skipped(tmp_path):
    from roofline.report.from_results import report_from_results
    from roofline.report.text import render_text
    from roofline.suite.names import MODEL_BOUND_TOKENS, MODEL_LEAN_TOKENS, MODEL_TOKENS
    from roofline.suite.results import read_results
    from tests.asv_fixtures import SUITE, full_values, write_benchmarks, write_machine, write_run

    batches = [["1", "8", "64"]]
    suite = {
        **SUITE,
        **{name: ("track", "tokens/s", ["batch"], batches, name) for name in (MODEL_TOKENS, MODEL_LEAN_TOKENS)},
        MODEL_BOUND_TOKENS: ("track", "tokens/s", ["batch"], batches, MODEL_BOUND_TOKENS),
    }
    write_benchmarks(tmp_path, suite)
    write_machine(tmp_path, "box")
    models = {MODEL_TOKENS: [5.0, 6.0, None], MODEL_LEAN_TOKENS: [4.0, 7.5, None]}
    models[MODEL_BOUND_TOKENS] = [8.0, 30.0, None]
    write_run(tmp_path, "box", "a" * 40, {**full_values(), **models}, suite=suite)
    report = report_from_results(read_results(tmp_path))
    rows = report.as_dict()["model_decode"]
    assert [r["batch"] for r in rows] == [1, 8, 64]
    assert rows[0]["fraction"] == pytest.approx(5.0 / 8.0) and rows[1]["lean_fraction"] == pytest.approx(7.5 / 30.0)
    assert rows[2]["tokens_per_s"] is None and rows[2]["fraction"] is None
    text = render_text(report)
    assert "a real model decoded here (models.ModelDecode" in text
    lines = text.splitlines()
    assert any(line.split() == ["1", "5", "4", "8", "0.62", "0.50"] for line in lines)
    assert any(line.split()[:3] == ["64", "not", "measured:"] for line in lines)
    # results without the benchmark (older runs, the examples) have no such section
    plain = tmp_path / "plain"
    write_benchmarks(plain)
    write_machine(plain, "box")
    write_run(plain, "box", "a" * 40, full_values())
    older = report_from_results(read_results(plain))
    assert older.model_decode == () and "models.ModelDecode" not in render_text(older)
