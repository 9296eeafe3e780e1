"""Every missing row says its true reason: not chosen (the variable), skipped (what is missing), failed (the error)."""

from __future__ import annotations

import pytest

from roofline.outcome import Failed, Measured, Skipped
from roofline.report.cpu import EnginePoint, ModelPoint
from roofline.report.text import render_engine_decode
from roofline.suite.notes import NOTES_VARIABLE, Note, notes_of, read_notes, reason_for, write_notes

GRID = {
    ("F16", 1): Measured({"tokens_per_s": 10.0}),
    ("F16", 8): Skipped("not chosen this run (ROOFLINE_ENGINE_BATCH)"),
    ("Q4_0", 1): Failed("llama.cpp died of SIGILL (illegal instruction) while loading Q4_0 batch 1"),
    ("Q8_0", 1): Skipped("llama.cpp is not installed (pip install 'roofline[engines]' builds it, minutes)"),
}


def test_a_grid_is_noted_by_kind_and_read_back(tmp_path):
    path = tmp_path / "notes.jsonl"
    write_notes(notes_of("engines.LlamaCppDecode", GRID), {NOTES_VARIABLE: str(path)})
    write_notes(notes_of("models.ModelDecode", {64: Failed("wrong logits")}), {NOTES_VARIABLE: str(path)})
    got = read_notes(path)
    assert [(n.params, n.kind) for n in got] == [
        (("F16", 8), "not chosen"),
        (("Q4_0", 1), "failed"),
        (("Q8_0", 1), "skipped"),
        ((64,), "failed"),
    ]
    assert reason_for(got, "engines.LlamaCppDecode", ("F16", 8)) == "not chosen this run (ROOFLINE_ENGINE_BATCH)"
    assert reason_for(got, "engines.LlamaCppDecode", ("Q4_0", 1)).startswith("failed: llama.cpp died of SIGILL")
    assert reason_for(got, "engines.LlamaCppDecode", ("F16", 1)) is None  # measured: nothing to say
    assert reason_for(got, "models.ModelDecode", (64,)) == "failed: wrong logits"


def test_a_class_left_out_whole_explains_every_row_and_a_rows_own_note_wins():
    notes = (
        Note("engines.LlamaCppDecode", (), "skipped", "llama_cpp not installed where the benchmarks run"),
        Note("engines.LlamaCppDecode", ("Q4_0", 1), "failed", "boom"),
    )
    assert reason_for(notes, "engines.LlamaCppDecode", ("F16", 8)).endswith("llama_cpp not installed where the "
                                                                            "benchmarks run")  # fmt: skip
    assert reason_for(notes, "engines.LlamaCppDecode", ("Q4_0", 1)) == "failed: boom"


def test_without_the_variable_nothing_is_written_and_a_missing_file_reads_as_none(tmp_path):
    write_notes(notes_of("engines.LlamaCppDecode", GRID), {})
    assert read_notes(tmp_path / "absent.jsonl") == ()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('not json\n{"class": "x", "params": [], "kind": "skipped", "reason": "r"}\n')
    assert read_notes(bad) == (Note("x", (), "skipped", "r"),)


def test_the_report_gives_each_empty_row_the_reason_the_run_noted():
    from roofline.report.cpu import Report
    from roofline.report.from_results import with_reasons

    notes = tuple(notes_of("engines.LlamaCppDecode", GRID)) + tuple(
        notes_of("models.ModelDecode", {8: Skipped("not chosen this run (ROOFLINE_MODEL_BATCH)")})
    )
    empty = tuple(EnginePoint("llama.cpp", f, b, None, None, None, None) for f, b in GRID)
    report = Report({"host": "box"}, None, model_decode=(ModelPoint(8, None, None, None),), engine_decode=empty)
    report = with_reasons(report, notes)
    lines = render_engine_decode(report.engine_decode)
    assert lines[-4].endswith("F16        1 not measured: no figure recorded (not chosen, skipped or failed: asv's "
                              "output of the run says which and why)")  # fmt: skip
    assert lines[-3].endswith("F16        8 not measured: not chosen this run (ROOFLINE_ENGINE_BATCH)")
    assert lines[-2].endswith("not measured: failed: llama.cpp died of SIGILL (illegal instruction) while loading "
                              "Q4_0 batch 1")  # fmt: skip
    assert "skipped: llama.cpp is not installed" in lines[-1]
    assert report.model_decode[0].reason == "not chosen this run (ROOFLINE_MODEL_BATCH)"


@pytest.fixture
def cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    return tmp_path / "cache"


def test_the_engine_grid_notes_its_missing_rows_where_roofline_bench_asks(cache, monkeypatch, tmp_path):
    from roofline.measure.engines import LlamaCpp
    from roofline.suite import harness

    path = tmp_path / "notes.jsonl"
    monkeypatch.setenv(NOTES_VARIABLE, str(path))
    monkeypatch.setenv("ROOFLINE_ENGINE_BATCH", "1")
    monkeypatch.setattr(LlamaCpp, "unavailable", lambda self: "llama.cpp is not installed (test)")
    harness.engine_decode_grid("llama.cpp", ["F16"], [1, 8])
    got = {n.params: n.text() for n in read_notes(path)}
    assert got == {
        ("F16", 8): "not chosen this run (ROOFLINE_ENGINE_BATCH)",
        ("F16", 1): "skipped: llama.cpp is not installed (test)",
    }
