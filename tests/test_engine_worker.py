"""A crash inside an engine is one failed row, never a dead process: the worker, on any machine.

The engine here (tests/fake_engines.py) kills itself with SIGILL or SIGSEGV where a rule says, as
llama.cpp's AMX path killed the whole asv setup_cache on a Xeon (family 6, model 207) with SIGILL.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from pathlib import Path

import pytest

from roofline.errors import BadInput
from roofline.measure.engine_worker import Died, Done, Job, Worker, death, engine_path
from roofline.measure.engines import EngineMeasured
from roofline.model.llm import custom_model, lookup_model
from roofline.outcome import Failed

from .clitools import interrupt
from .fake_engines import CRASH_VARIABLE, CrashingEngine
from .machine_profiles import PROFILES

ROOT = Path(__file__).resolve().parents[1]
TINY = dict(layers=1, hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=128, vocab=256)


def job(fmt: str = "Q4_0", batch: int = 1, path: str | None = None, **change) -> Job:
    name = path or f"/nonexistent/llama-1l-64h-{fmt.lower()}-0.gguf"
    fields = dict(vocab=256, batch=batch, chunk=4, threads=1, context=4, warmup=1, steps=3, seed=0)
    return Job(engine_path(CrashingEngine), name, f"{fmt} batch {batch}", **{**fields, **change})


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("Q4_0:loading:SIGILL:any", "crashing died of SIGILL (illegal instruction) while loading Q4_0 batch 1"),
        ("Q4_0:decoding:SIGSEGV:any", "crashing died of SIGSEGV (segmentation fault) while decoding Q4_0 batch 1"),
    ],
)
def test_a_worker_killed_by_a_signal_is_one_line_naming_the_signal_and_the_stage(monkeypatch, rule, expected):
    monkeypatch.setenv(CRASH_VARIABLE, rule)
    with Worker("crashing") as worker:
        got = worker.run(job())
        assert got == Died(expected)
        again = worker.run(job("F16", 2))  # a fresh worker for the next job
        assert isinstance(again, Done) and len(again.wall.per_call) == 3 and again.kernel_path == "AMX"


def test_one_worker_serves_every_job_that_does_not_crash(monkeypatch):
    monkeypatch.delenv(CRASH_VARIABLE, raising=False)
    with Worker("crashing") as worker:
        first = worker.run(job("F16"))
        pid = worker.proc.pid
        second = worker.run(job("Q8_0", 2, extra_buffers=False))
        assert worker.proc.pid == pid
    assert (first.kernel_path, second.kernel_path) == ("AMX", "plain")
    assert second.counters is not None and len(second.counters.per_call) == 3
    assert worker.proc is None  # closed on leaving


def test_an_engine_error_in_the_worker_is_raised_here_as_itself(monkeypatch):
    monkeypatch.delenv(CRASH_VARIABLE, raising=False)
    with Worker("crashing") as worker:
        with pytest.raises(BadInput, match=r"^crashing cannot load /nonexistent/bad-q4_0\.gguf$"):
            worker.run(job(path="/nonexistent/bad-q4_0.gguf"))
        assert isinstance(worker.run(job()), Done)  # the worker lives on


def test_a_worker_that_exits_gives_its_status_and_last_line():
    assert death("llama.cpp", 1, "loading", "F16 batch 8", "noise\nRuntimeError: boom\n") == (
        "llama.cpp's worker exited with status 1 while loading F16 batch 8: RuntimeError: boom"
    )
    assert death("e", -int(signal.SIGABRT), "decoding", "Q8_0 batch 1").startswith("e died of SIGABRT (aborted)")


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    pytest.importorskip("gguf", reason="the gguf package writes the model files")
    return tmp_path / "cache"


def _measure(batches=(1, 2)):
    from roofline.measure.engine_decode import measure_engine_decode
    from roofline.suite.run import engine_roofs

    shape = custom_model(lookup_model("llama-3.2-1b"), **TINY)
    formats = ["F16", "Q8_0", "Q4_0"]
    return measure_engine_decode(
        CrashingEngine(), shape, formats, list(batches), 4, 1, 3, 2, roofs=lambda: engine_roofs(128)
    )


def test_a_format_whose_default_kernels_crash_falls_back_and_the_others_are_unchanged(cache, monkeypatch):
    """Q4_0 dies on its default kernels while loading (llama.cpp's AMX repack on the Xeon): every Q4_0 row is
    measured on the plain kernels and says why; F16 and Q8_0 keep the default; no process but the worker died."""
    monkeypatch.setenv(CRASH_VARIABLE, "Q4_0:loading:SIGILL:default")
    run = _measure()
    assert all(isinstance(o, EngineMeasured) for o in run.outcomes.values()), run.outcomes
    paths = {key: o.kernel_path for key, o in run.outcomes.items()}
    assert paths == {(f, b): "plain" if f == "Q4_0" else "AMX" for f in ("F16", "Q8_0", "Q4_0") for b in (1, 2)}
    why = run.outcomes[("Q4_0", 2)].fallback
    assert "died of SIGILL (illegal instruction) while loading Q4_0 batch 1" in why and "plain kernels" in why
    assert run.outcomes[("F16", 1)].fallback == ""
    assert any(w.startswith("crashing Q4_0: its default kernels died") for w in run.warnings)


def test_a_row_that_crashes_on_every_path_fails_alone_and_the_rest_are_measured(cache, monkeypatch):
    monkeypatch.setenv(CRASH_VARIABLE, "Q8_0:decoding:SIGSEGV:any")
    run = _measure()
    failed = {k: o for k, o in run.outcomes.items() if not o.ok}
    assert set(failed) == {("Q8_0", 1), ("Q8_0", 2)}
    assert failed[("Q8_0", 2)] == Failed("crashing died of SIGSEGV (segmentation fault) while decoding Q8_0 batch 2")
    assert all(isinstance(run.outcomes[(f, b)], EngineMeasured) for f in ("F16", "Q4_0") for b in (1, 2))
    from roofline.measure.engine_decode import hold_engine

    rows = {(r.format, r.batch): r.as_dict() for r in hold_engine(run)}
    assert set(rows) == {(f, b) for f in ("F16", "Q4_0") for b in (1, 2)}
    assert rows[("F16", 1)]["kernel_path"] == "AMX" and rows[("F16", 1)]["kernel_path_code"] == 2.0


def test_the_asv_grid_fails_the_crashed_row_with_its_reason_and_measures_the_rest(cache, monkeypatch):
    from roofline.measure import engines
    from roofline.suite import harness

    monkeypatch.setenv(CRASH_VARIABLE, "Q4_0:loading:SIGILL:any")
    monkeypatch.setitem(engines.ENGINES, "crashing", CrashingEngine)
    monkeypatch.setenv("ROOFLINE_ENGINE_MODEL", "llama-3.2-1b:layers=1,hidden=64,heads=4,kv_heads=2,intermediate=128")
    monkeypatch.setenv("ROOFLINE_GEMM_N", "128")
    monkeypatch.setenv("ROOFLINE_QUICK", "1")
    grid = harness.engine_decode_grid("crashing", ["F16", "Q4_0"], [1])
    with pytest.raises(AssertionError, match="died of SIGILL .* while loading Q4_0 batch 1"):
        harness.engine_entry(grid, "Q4_0", 1)
    entry = harness.engine_entry(grid, "F16", 1)
    assert entry["tokens_per_s"] > 0 and entry["kernel_path_code"] == 2.0
    assert "engine_roof_gflops" not in entry  # a quick look times no prompt: no engine roof
    monkeypatch.setenv("ROOFLINE_QUICK", "0")
    full = harness.engine_entry(harness.engine_decode_grid("crashing", ["F16"], [1]), "F16", 1)
    assert full["engine_roof_gflops"] > 0 and full["predicted_crossover"] > 0


# ---- the decisions about the engine that read the machine, on every machine profile ------------------


@pytest.mark.parametrize("profile", PROFILES, ids=str)
def test_the_default_engine_model_is_dram_sized_or_its_rows_are_flagged(profile, monkeypatch):
    """The rule asks a step to read ≥ 4× the LLC. The default model (llama-3.2-1b, 4 layers) does on the EPYCs'
    32 MiB; on the Xeon's 300 MiB it would need 1.26 GB a step in every format, minutes of file writing and
    prefill a make bench: there its rows are flagged as partly cache-resident instead, in the run's warnings
    and in the report (docs/engines.md says why)."""
    from roofline.measure import pools
    from roofline.model.gguf_layout import step_bytes
    from roofline.report.cpu import EnginePoint
    from roofline.report.text import render_engine_decode
    from roofline.suite import params

    monkeypatch.delenv("ROOFLINE_ENGINE_MODEL", raising=False)
    monkeypatch.delenv("ROOFLINE_LLC_BYTES", raising=False)
    monkeypatch.delenv("ROOFLINE_QUICK", raising=False)
    shape = params.engine_model()
    run_says = {f for f in ("F16", "Q8_0", "Q4_0") if step_bytes(shape, f) < pools.escape_bytes(profile.llc_bytes)}
    report_says = {
        f
        for f in ("F16", "Q8_0", "Q4_0")
        if EnginePoint("llama.cpp", f, 1, 1.0, None, 1.0, None, step_bytes=step_bytes(shape, f)).cache_sized(
            profile.llc_bytes
        )
    }
    expected = {"xeon-amx": {"F16", "Q8_0", "Q4_0"}}.get(profile.name, set())
    assert run_says == report_says == expected
    rows = [EnginePoint("llama.cpp", f, 1, 1.0, None, 1.0, None, step_bytes=step_bytes(shape, f)) for f in expected]
    assert not expected or render_engine_decode(rows, profile.llc_bytes)[-1].startswith("  * partly cache-resident")


SLOW_RUN = """
import sys
from roofline.errors import Interrupted
from roofline.interrupt import signals_raise
from roofline.measure.engine_worker import Job, Worker, engine_path
from tests.fake_engines import CrashingEngine

job = Job(engine_path(CrashingEngine), "/nonexistent/x-f16-0.gguf", "F16 batch 1", 256, 1, 4, 1, 4, 1, 10**7, 0)
try:
    with signals_raise(), Worker("crashing") as worker:
        print("started", flush=True)
        worker.run(job)
except Interrupted as exc:
    sys.exit(exc.exit_code)
"""


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found |= {int(c) for c in (task / "children").read_text().split()}
    return found


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux's /proc to find the worker")
def test_ctrl_c_stops_a_run_in_its_worker_within_5_s_and_the_worker_goes_too():
    workers: set[int] = set()

    def running(proc):
        assert proc.stdout.readline() == "started\n"
        deadline = time.monotonic() + 20
        while not workers and time.monotonic() < deadline:
            workers.update(_children(proc.pid))
            time.sleep(0.05)
        assert workers, "no worker started"
        time.sleep(0.5)  # well inside its ten million steps

    status, took, err = interrupt([sys.executable, "-c", SLOW_RUN], running, cwd=ROOT)
    assert status == 130 and took < 5, (status, took, err)
    assert "Traceback" not in err
    for pid in workers:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text()
