"""llama.cpp decoding a GGUF written here: the file's layout and bytes, the writer's cache, the real engine on a
tiny file, the bound it is held to, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from roofline.errors import BadInput
from roofline.measure.engines import EngineMeasured, LlamaCpp, lookup_engine
from roofline.model.gguf_layout import GGUF_FORMATS, check_shape, data_bytes, gguf_format, llama_tensors, step_bytes
from roofline.model.hardware import Hardware
from roofline.model.llm import custom_model, lookup_model
from roofline.model.llm_estimate import DecodeSetup
from roofline.outcome import Skipped

from .clitools import interrupt, one_line_error

ROOT = Path(__file__).resolve().parents[1]

#: A Llama-3.2-1B of one layer at width 64: a GGUF of tens of kB that llama.cpp decodes in microseconds.
TINY = dict(layers=1, hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=128, vocab=256)
TINY_FLAGS = [f"--{k.replace('_', '-')}={v}" for k, v in TINY.items()]


def tiny(**change):
    return custom_model(lookup_model("llama-3.2-1b"), **{**TINY, **change})


def _engine_missing() -> str | None:
    try:
        import gguf  # noqa: F401
    except ImportError:
        return "the gguf package is not installed"
    return LlamaCpp().unavailable()


needs_engine = pytest.mark.skipif(_engine_missing() is not None, reason=str(_engine_missing()))


# ---- the layout, pure -------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "fmt"), [("q8_0", "Q8_0"), ("Q4_0", "Q4_0"), ("fp16", "F16"), ("f16", "F16")])
def test_formats_are_named_as_llama_cpp_or_as_roofline(name, fmt):
    assert gguf_format(name) == fmt


def test_an_unknown_format_is_refused_by_name():
    with pytest.raises(BadInput, match="q4_k.*F16, Q8_0, Q4_0"):
        gguf_format("q4_k")


@pytest.mark.parametrize("fmt", GGUF_FORMATS)
def test_a_step_reads_the_bytes_the_bound_counts(fmt):
    """The bound (roofline decode --quant) counts what llama.cpp reads of the file: every matrix at its block
    bytes, the tied head once, no embedding table; only the norms differ (F32 in the file)."""
    for shape in (lookup_model("llama-3.2-1b"), custom_model(lookup_model("llama-3-8b"), layers=2)):
        hw = Hardware("x", {"bf16": 1e12}, 1e11)
        setup = DecodeSetup(shape, hw, dtype=GGUF_FORMATS[fmt])
        bound = setup.weight_bytes_read(1)
        assert bound == pytest.approx(step_bytes(shape, fmt), rel=1e-3)
        norms = (2 * shape.layers + 1) * shape.hidden
        assert step_bytes(shape, fmt) - bound == pytest.approx(norms * (4 - setup.bytes_per_weight))


def test_a_tied_model_stores_its_head_once_and_an_untied_one_twice():
    tied, untied = tiny(), tiny(tied_embeddings=False)
    assert [t.name for t in llama_tensors(untied, "Q8_0")][-1] == "output.weight"
    assert "output.weight" not in {t.name for t in llama_tensors(tied, "Q8_0")}
    head = 256 * 64 * 34 // 32
    assert data_bytes(untied, "Q8_0") - data_bytes(tied, "Q8_0") == head
    assert step_bytes(untied, "Q8_0") == step_bytes(tied, "Q8_0")  # the untied table is looked up, not read


def test_shapes_llama_cpp_or_a_block_format_cannot_hold_are_refused():
    with pytest.raises(BadInput, match="not a multiple of Q4_0's block of 32"):
        check_shape(tiny(intermediate=100), "Q4_0")
    check_shape(tiny(intermediate=100), "F16")
    with pytest.raises(BadInput, match="dense Llama"):
        check_shape(lookup_model("mixtral-8x7b"), "Q8_0")


# ---- the files --------------------------------------------------------------------------------


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    return tmp_path / "cache"


@needs_engine
def test_a_file_is_written_once_whole_and_written_again_when_it_is_not(cache, monkeypatch):
    from roofline.measure import gguf_files
    from roofline.measure.gguf_files import is_whole, model_file

    first = model_file(tiny(), "Q4_0")
    assert first.nbytes == first.path.stat().st_size and is_whole(first.path)
    assert first.nbytes - data_bytes(tiny(), "Q4_0") < 2**16  # the header, the metadata, the alignment
    stamp = first.path.stat().st_mtime_ns
    assert model_file(tiny(), "Q4_0").path.stat().st_mtime_ns == stamp  # reused
    data = first.path.read_bytes()
    os.truncate(first.path, first.nbytes - 100)
    assert not is_whole(first.path)
    again = model_file(tiny(), "Q4_0")
    assert again.path.read_bytes() == data  # the same seeded bytes, whole
    flipped = bytearray(data)
    flipped[-1] ^= 0xFF
    again.path.write_bytes(bytes(flipped))
    assert not is_whole(again.path)  # a write moves its time: the hash reads it
    assert model_file(tiny(), "Q4_0").path.read_bytes() == data
    written = json.loads(again.path.with_suffix(".json").read_text())["mtime_ns"]
    assert again.path.stat().st_mtime_ns == written
    os.utime(again.path, ns=(written, written - 1))
    calls = []
    monkeypatch.setattr(gguf_files, "file_sha256", lambda path: calls.append(path) or "0")
    assert not is_whole(again.path) and calls  # another time: hashed
    os.utime(again.path, ns=(written, written))
    assert is_whole(again.path) and len(calls) == 1  # its own time, its size: not read again (1.7 s a run)
    assert sorted(p.name for p in cache.iterdir()) == sorted([first.path.name, first.path.with_suffix(".json").name])


@needs_engine
def test_a_write_that_fails_midway_leaves_nothing_behind(cache, monkeypatch):
    from roofline.measure import gguf_files

    def fail(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(gguf_files, "_tensor_data", fail)
    with pytest.raises(KeyboardInterrupt):
        gguf_files.model_file(tiny(), "Q8_0")
    assert list(cache.iterdir()) == []


def test_a_file_that_would_not_fit_is_refused_before_anything_is_written(cache):
    huge = custom_model(lookup_model("llama-3-70b"))
    with pytest.raises(BadInput, match="GiB"):
        from roofline.measure.gguf_files import model_file

        model_file(huge, "F16")
    assert not cache.exists() or list(cache.iterdir()) == []


# ---- the real engine ----------------------------------------------------------------------------


def default_kernels_survive(path: Path, fmt: str) -> bool:
    """Whether llama.cpp's default kernels load and decode ``path`` here, asked of a worker process: on a Xeon
    with AMX they died of SIGILL, and a test that opens llama.cpp in its own process then takes the fallback."""
    from roofline.measure.engine_worker import Died, Job, Worker, engine_path

    with Worker("llama.cpp") as worker:
        job = Job(engine_path(LlamaCpp), str(path), f"{fmt} batch 1", 256, 1, 4, 1, 8, 1, 2, 0)
        return not isinstance(worker.run(job), Died)


@needs_engine
def test_llama_cpp_decodes_a_batch_and_counts_what_it_timed(cache):
    """Two sequences, greedy tokens fed back; llama.cpp's counters count the timed tokens exactly."""
    from roofline.measure.engines import prompt, time_steps
    from roofline.measure.gguf_files import model_file

    path = model_file(tiny(), "Q8_0").path
    extra = default_kernels_survive(path, "Q8_0")
    for batch in (1, 2):
        session = LlamaCpp().open(path, batch, 8 + 1 + 4, threads=1, chunk=4, extra_buffers=extra)
        try:
            first = session.prefill(prompt(8, 256))
            assert 0 <= first < 256
            timing, counters, note = time_steps(session, first, 8, 1, 4)
            assert len(timing.per_call) == len(counters.per_call) == 4 and note == ""
            for counted, wall in zip(counters.per_call, timing.per_call, strict=True):
                assert 0 < counted <= wall + 2e-6  # llama.cpp times part of each step the wall clock times
            again, _, _ = time_steps(session, first, 8, 1, 4)  # rewound to the prompt: the same cache length
            assert len(again.per_call) == 4
        finally:
            session.close()


@needs_engine
@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"GGUF" + b"\0" * 60, "bad GGUF version"),
        (b"not a gguf file at all" * 10, "invalid magic"),
        (None, "No such file"),
    ],
)
def test_a_file_llama_cpp_cannot_load_is_one_line_of_bad_input(tmp_path, content, why):
    bad = tmp_path / "bad.gguf"
    if content is not None:
        bad.write_bytes(content)
    with pytest.raises(BadInput, match="llama.cpp cannot load") as exc:
        LlamaCpp().open(bad, 1, 16, 1, 4)
    assert why in str(exc.value) and "\n" not in str(exc.value)


@needs_engine
def test_a_truncated_gguf_of_real_tensors_is_refused(cache, tmp_path):
    from roofline.measure.gguf_files import model_file

    whole = model_file(tiny(), "F16").path.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(BadInput, match="llama.cpp cannot load .*not within the file bounds"):
        LlamaCpp().open(cut, 1, 16, 1, 4)


@needs_engine
def test_every_format_is_measured_and_held_to_its_bound(cache):
    from roofline.measure.engine_decode import hold_engine, measure_engine_decode
    from roofline.suite.run import engine_roofs

    roofs = lambda: engine_roofs(256)  # noqa: E731  the one entry point's rounds, a turn per engine round
    run = measure_engine_decode(lookup_engine("llama.cpp"), tiny(), list(GGUF_FORMATS), [1, 2], 8, 1, 3, 1, roofs=roofs)
    assert set(run.outcomes) == {(f, b) for f in GGUF_FORMATS for b in (1, 2)}
    assert all(isinstance(o, EngineMeasured) for o in run.outcomes.values()), run.outcomes
    assert all(o.counter_s is not None for o in run.outcomes.values())
    assert 0 < run.gemv_fraction
    rows = hold_engine(run)
    assert len(rows) == 6 and all(r.fraction > 0 for r in rows)
    assert run.warnings  # a file of kB is no DRAM-bound case, and the run says so
    bw, overhead = run.hardware.bandwidth, run.overhead.median
    assert 0 < overhead < min(r.measured.step_s for r in rows) * 10
    for r in rows:
        assert r.bound.weight_bytes == pytest.approx(step_bytes(tiny(), r.format), rel=0.05)
        peak = run.engine_peak(r.format)  # each format's own prompt rate, int8 formats included
        assert peak > 0 and r.roofs.engine_peak == peak
        memory, compute = r.nbytes / bw, r.bound.flops / peak
        assert r.bound_s == max(memory, compute)
        assert r.batch / r.predicted_tokens_per_s == pytest.approx(memory / run.gemv_fraction + compute + overhead)
        assert r.as_dict()["effective_gbps"] == pytest.approx(r.nbytes / r.measured.step_s / 1e9)
    from roofline.measure.engine_decode import crossovers

    for c in crossovers(rows):  # two batches: predicted, never observed
        assert c.predicted > 0 and c.observed is None


@needs_engine
def test_given_the_runs_roofs_the_rounds_time_none_and_the_bound_divides_by_them(cache, monkeypatch):
    """Issue 39, every bound a roof: in an asv run the engine's bound divides by the run's roofs (measured in
    its rounds, printed with the others); its own rounds then time the engine and the GEMV only."""
    from roofline.measure.engine_decode import hold_engine, measure_engine_decode
    from roofline.model.hardware import Hardware
    from roofline.suite import run as suite_run

    monkeypatch.setattr(suite_run, "CeilingRounds", None)  # a ceiling timed here would fail the test
    roofs = Hardware("the run's", {"fp32": 150e9}, 30e9)
    run = measure_engine_decode(lookup_engine("llama.cpp"), tiny(), ["F16"], [1], 8, 1, 3, 1, roofs=roofs)
    assert run.roofs == roofs and (run.hardware.bandwidth, run.hardware.peak("fp32")) == (30e9, 150e9)
    (row,) = hold_engine(run)
    assert row.bound_tokens_per_s == pytest.approx(1 / row.bound_s) and row.fraction > 0


def test_without_the_engine_every_combination_is_skipped_with_the_reason(cache, monkeypatch):
    from roofline.measure.engine_decode import measure_engine_decode

    monkeypatch.setattr(LlamaCpp, "unavailable", lambda self: "llama.cpp is not installed (test)")
    run = measure_engine_decode(LlamaCpp(), tiny(), ["Q8_0", "F16"], [1, 8])
    skipped = Skipped("llama.cpp is not installed (test)")
    assert run.outcomes == {(f, b): skipped for f in ("Q8_0", "F16") for b in (1, 8)}
    assert run.hardware is None and not cache.exists()


def test_the_asv_grid_skips_every_combination_with_the_reason(cache, monkeypatch):
    from roofline.suite import harness

    monkeypatch.setattr(LlamaCpp, "unavailable", lambda self: "llama.cpp is not installed (test)")
    monkeypatch.setenv("ROOFLINE_ENGINE_MODEL", "llama-3.2-1b:layers=1,hidden=64,heads=4,kv_heads=2,intermediate=128")
    grid = harness.engine_decode_grid("llama.cpp", ["F16", "Q4_0"], [1, 8])
    assert grid[("Q4_0", 8)] == Skipped("llama.cpp is not installed (test)")
    with pytest.raises(NotImplementedError, match="not installed"):
        harness.engine_entry(grid, "F16", 1)


# ---- the command --------------------------------------------------------------------------------


def _cli(capsys, argv):
    from roofline.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


BASE = ["decode", "--model", "llama-3.2-1b", *TINY_FLAGS, "--hardware", "local", "--measure", "--engine", "llama.cpp"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (BASE + ["--quant", "q4_k"], "llama.cpp runs --dtype fp16 and --quant q8_0, q4_0"),
        (BASE + ["--dtype", "bf16"], "not bf16"),
        ([a if a != "local" else "h100" for a in BASE], "--hardware local"),
        ([a for a in BASE if a != "--measure"], "with --measure"),
        (BASE + ["--tp", "2"], "--tp must be 1"),
        (BASE + ["--intermediate", "100"], "block of 32"),
    ],
)
def test_bad_engine_flags_are_one_line_and_exit_2(capsys, cache, argv, message):
    code, out, err = _cli(capsys, argv)
    assert code == 2 and out == ""
    assert message in one_line_error(err)


@needs_engine
def test_a_model_whose_file_would_not_fit_is_one_line_and_nothing_is_written(capsys, cache):
    argv = ["decode", "--model", "llama-3-70b", "--hardware", "local", "--measure", "--engine", "llama.cpp"]
    code, out, err = _cli(capsys, [*argv, "--dtype", "fp16"])
    assert code == 2 and out == ""
    assert "GiB" in one_line_error(err)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_an_unknown_engine_is_a_usage_error(capsys):
    code, _, err = _cli(capsys, [*BASE[:-1], "vllm"])
    assert code == 2 and "invalid choice: 'vllm'" in one_line_error(err)


@needs_engine
def test_the_command_decodes_the_tiny_model_and_prints_the_bound_beside_it(capsys, cache, monkeypatch):
    monkeypatch.setenv("ROOFLINE_GEMM_N", "256")
    code, out, err = _cli(capsys, [*BASE, "--quant", "q4_0", "--batch", "1,2", "--steps", "2", "--json"])
    assert code == 0, err
    import json

    got = json.loads(out)["measured"]
    assert [(r["format"], r["batch"]) for r in got["rows"]] == [("Q4_0", 1), ("Q4_0", 2)]
    assert all(r["counter_tokens_per_s"] > 0 and r["bound_tokens_per_s"] > 0 for r in got["rows"])


@needs_engine
def test_ctrl_c_during_an_engine_run_stops_it_within_5_s(cache, tmp_path):
    """A run of many steps is stopped by SIGINT wherever it is (writing, the roofs, the engine): exit 130."""
    env = {**os.environ, "ROOFLINE_CACHE_DIR": str(cache), "ROOFLINE_LLC_BYTES": "1M", "ROOFLINE_GEMM_N": "256"}
    argv = [sys.executable, "-m", "roofline", *BASE, "--quant", "q8_0", "--batch", "1", "--steps", "8000"]

    def running(proc):
        time.sleep(4)
        assert proc.poll() is None, proc.communicate()

    status, took, err = interrupt(argv, running, cwd=ROOT, env=env)
    assert status == 130, err
    assert took < 5, took
    assert "Traceback" not in err
