import json
from dataclasses import replace

import pytest

from roofline.model.knee import fit_knee
from roofline.report.cpu import SCHEMA, Point, Roofs, build_report
from roofline.report.text import render_text

FACTS = {
    "host": "box",
    "cpu": "Test CPU",
    "num_cpu": 2,
    "blas": "openblas, 2 threads",
    "blas_threads": 2,
    "llc_bytes": 32 * 2**20,
    "llc_source": "test",
}
ROOFS = Roofs(
    bandwidth={"copy": 40e9, "add": 25e9, "triad": 20e9},
    peaks={"float32": 300e9, "float64": 150e9},
    spreads={"copy": 1.01, "add": 1.02, "triad": 1.5},
)


TWIN = "decode.DecodeDRAM.time_decode_step"


def point(n, b, seconds, regime="dram", spread=1.05, pool=512 * 2**20):
    return Point(
        n=n,
        batch=b,
        regime=regime,
        seconds=seconds,
        gflops=2 * n * n * b / seconds / 1e9,
        gbps=4 * (n * n + 2 * n * b) / seconds / 1e9,
        spread=spread,
        single_call_seconds=seconds,
        pool_bytes=pool,
    )


def swept(points):
    """A sweep's points and their knee, as the run hands them to the report (:class:`roofline.suite.run.Crossover`)."""
    return {"sweep": tuple(points), "knee": fit_knee([p.batch for p in points], [p.seconds for p in points])}


def sample_report(**kw):
    return build_report(
        FACTS,
        ROOFS,
        decode=(point(2048, 1, 0.7e-3), point(2048, 64, 3e-3)),
        cache_resident=(point(1024, 1, 0.1e-3, "cache", pool=4 * 2**20),),
        sweep_n=2048,
        **swept([point(2048, b, max(0.7e-3, b * 0.7e-3 / 24)) for b in (1, 4, 16, 64, 256)]),
        **kw,
    )


def test_the_report_prints_the_runs_knee_and_fits_none_itself():
    """One knee fit (the run's, :func:`roofline.model.knee.fit_knee`): the report shows the knee it is handed."""
    r = sample_report()
    fitted = replace(r.knee, batch=30.0, within_sweep=False)
    x = replace(r, knee=fitted).crossover()
    assert x["observed_batch"] == 30.0 and x["observed_within_sweep"] is False
    assert "observed_batch" not in replace(r, knee=None).crossover()  # no knee handed, none made up


def test_report_keys_are_the_documented_ones():
    r = sample_report().as_dict()
    assert r["schema"] == SCHEMA
    assert set(r) == {
        "schema",
        "source",
        "lab",
        "machine",
        "ceilings",
        "crossover",
        "decode",
        "cache_resident",
        "overhead",
        "conditions",
        "warnings",
        "roofs",
        "compute_roofs",
        "compute_roofs_skipped",
        "read_write_roofs",
        "model_decode",
    }
    assert set(r["crossover"]) >= {"dtype", "bytes_per_param", "predicted_batch", "observed_batch", "sweep_n", "sweep"}
    assert set(r["decode"][0]) >= {
        "n",
        "batch",
        "gflops",
        "gbps",
        "intensity",
        "attainable_gflops",
        "roofline_fraction",
        "bound",
        "spread",
        "roof",
        "roof_gbps",
        "roof_attainable_gflops",
        "roof_fraction",
        "roof_bound",
        "measurement_error",
    }
    json.dumps(r, allow_nan=False)


def test_lab_section_and_crossovers():
    r = sample_report().as_dict()
    assert r["lab"]["ridge_flop_per_byte"] == pytest.approx(295.5, abs=0.1)
    assert [b["bound"] for b in r["lab"]["batches"]] == ["bandwidth"] * 3 + ["compute"]
    assert r["ceilings"]["bandwidth_roof_gbps"] == pytest.approx(25.0)
    assert r["crossover"]["predicted_batch"] == pytest.approx(300e9 / 25e9 * 4 / 2)
    assert r["crossover"]["observed_batch"] == pytest.approx(24, rel=0.05)


def test_fraction_uses_the_exact_intensity():
    r = sample_report().as_dict()
    row = r["decode"][0]
    expected_attainable = min(300e9, row["intensity"] * 25e9)
    assert row["roofline_fraction"] == pytest.approx(row["gflops"] * 1e9 / expected_attainable)
    assert row["bound"] == "bandwidth" and r["decode"][1]["bound"] == "compute"


def test_guards_fire():
    text = "\n".join(sample_report().warnings)
    assert "triad bandwidth: slowest ÷ fastest pass 1.50" in text
    fits = build_report(FACTS, ROOFS, decode=(point(256, 1, 1e-6, pool=2**20),))
    assert any("fits in the 32 MiB LLC" in w for w in fits.warnings)
    assert any("the measured ceiling" in w for w in fits.warnings)  # 1e-6 s is faster than DRAM allows
    few = build_report({**FACTS, "blas_threads": 1}, ROOFS)
    assert any("BLAS runs 1 thread" in w for w in few.warnings)


def test_text_rendering_has_the_lab_lines_and_the_table():
    text = render_text(sample_report())
    assert "296 FLOPs per byte at the ridge" in text
    assert "batch 512: intensity   512 FLOP/byte -> compute-bound" in text
    assert "predicted from measured ceilings 24, observed 24" in text
    assert "cache-resident" in text
    assert "batch 64 delivers" in text


def test_report_without_ceilings_says_n_a():
    r = build_report(FACTS, None, decode=(point(2048, 1, 1e-3),))
    assert r.as_dict()["crossover"]["predicted_batch"] is None
    assert r.as_dict()["decode"][0]["roofline_fraction"] is None
    assert "n/a" in render_text(r)


def test_the_overhead_roof():
    r = build_report(
        FACTS, ROOFS, decode=(point(2048, 1, 0.7e-3),), overhead_seconds=2e-6, overhead_single_seconds=4e-6
    )
    # n* = sqrt(2 µs · 25 GB/s / 4 B) ≈ 112: a smaller matrix reads faster than a call is issued
    assert r.as_dict()["overhead"]["overhead_bound_n"] == pytest.approx((2e-6 * 25e9 / 4) ** 0.5)
    assert "overhead roof: a tiny step costs 2.0 µs back to back, 4.0 µs timed alone; below n ≈ 112" in render_text(r)
    assert sample_report().as_dict()["overhead"] is None


def test_the_report_is_frozen_and_one_recorded_crossover_stands_in_for_a_sweep():
    r = build_report(FACTS, ROOFS, recorded_crossover=21.0)
    with pytest.raises(AttributeError):
        r.source = "elsewhere"
    assert r.as_dict()["crossover"]["observed_batch"] == 21.0 and "sweep" not in r.as_dict()["crossover"]


def test_asv_time_twins_are_set_beside_their_tracks_and_a_gap_over_ten_percent_is_warned_of():
    """Issue 13: the twin and the run's own measurement time the same step; the report shows twin ÷ track."""
    agree = replace(point(2048, 1, 1e-3, spread=0.0), twin_seconds=1.05e-3)
    apart = replace(point(2048, 64, 3e-3, spread=0.02), twin_seconds=3.6e-3)
    fast = replace(point(1024, 1, 1e-4, "cache", spread=0.0, pool=4 * 2**20), twin_seconds=0.85e-4)
    r = build_report(FACTS, ROOFS, decode=(agree, apart), cache_resident=(fast,))
    twins = [w for w in r.warnings if "time_ twin" in w]
    assert len(twins) == 1, r.warnings  # one line for the kind, naming every point it covers
    assert twins[0].startswith(
        "asv's time_ twins read beyond the spread of this run's timing: n=2048 batch=64 (DRAM) 1.20× (±10%), "
        "n=1024 batch=1 (cache-resident) 0.85× (±10%)"
    )
    text = render_text(r)
    assert "twin×" in text and " 1.05 " in text and " 1.20 " in text and " 0.85 " in text
    rows = r.as_dict()
    assert [p["twin_seconds"] for p in rows["decode"]] == [1.05e-3, 3.6e-3]
    live = sample_report()  # measured live: no twin, no column
    assert "twin×" not in render_text(live) and all(p["twin_seconds"] is None for p in live.as_dict()["decode"])


def test_a_twin_inside_the_spread_its_timings_measured_is_not_warned_of():
    """Issue 39: the VM's weather moved twins 0.86–0.89× with no defect; a gap is news only beyond the spread
    of the two timings (the run's samples' and asv's), and never within ±10 %."""
    wide = replace(point(2048, 1, 1e-3), twin_seconds=0.8e-3, spread=0.15, twin_spread=0.1)
    narrow = replace(point(2048, 64, 3e-3), twin_seconds=2.4e-3, spread=0.05, twin_spread=0.05)
    steady = replace(point(1024, 1, 1e-3), twin_seconds=1.09e-3, spread=0.0, twin_spread=0.0)
    r = build_report(FACTS, ROOFS, decode=(wide, narrow, steady))
    (line,) = [w for w in r.warnings if "time_ twin" in w]
    assert "n=2048 batch=64 (DRAM) 0.80× (±10%)" in line
    assert "batch=1" not in line  # 0.80× inside ±25 %, 1.09× inside ±10 %


def test_the_report_from_results_reads_each_points_time_twin(tmp_path):
    from roofline.report.from_results import report_from_results
    from roofline.suite.results import read_results

    from . import asv_fixtures as fx

    fx.write_benchmarks(tmp_path)
    fx.write_machine(tmp_path, "box")
    # n=256: 10 GFLOP/s at batch 1 is 13.1 µs a step; 50 GFLOP/s at batch 8 is 21.0 µs
    fx.write_run(tmp_path, "box", "c" * 40, fx.full_values(gflops=(10.0, 50.0), seconds=(13.5e-6, float("nan"))))
    rep = report_from_results(read_results(tmp_path))
    (one, eight) = rep.decode
    assert one.twin_seconds == 13.5e-6 and one.twin_ratio == pytest.approx(13.5e-6 / (2 * 256 * 256 / 10e9))
    assert eight.twin_seconds is None and eight.twin_ratio is None  # skipped twin (NaN): no ratio, no warning
    assert not [w for w in rep.warnings if "time_ twin" in w]
    assert "  1.03  " in render_text(rep)
    assert one.twin_spread is None  # no statistics recorded: the ±10 % floor alone


def test_the_report_from_results_reads_the_spread_of_each_twin(tmp_path):
    from roofline.report.from_results import report_from_results
    from roofline.suite.results import read_results

    from . import asv_fixtures as fx

    fx.write_benchmarks(tmp_path)
    fx.write_machine(tmp_path, "box")
    # 8 samples of the batch-1 twin: asv's q_25 = 12 µs and q_75 = 15 µs about its 13.5 µs
    samples = [[11e-6, 11.5e-6, 12e-6, 13e-6, 14e-6, 14.5e-6, 15e-6, 16e-6], [21e-6]]
    fx.write_run(tmp_path, "box", "c" * 40, fx.full_values(seconds=(13.5e-6, 21e-6)), samples={TWIN: samples})
    (one, eight) = report_from_results(read_results(tmp_path)).decode
    assert one.twin_spread == pytest.approx((15e-6 - 12e-6) / 13.5e-6)
    assert eight.twin_spread == 0.0


def test_a_decode_above_its_bound_is_the_report_s_headline_never_a_silent_row():
    """Issue 39: model rows read 1.31 and 1.43 of their bound with no warning. Above 1.05 a roof the bound
    divides by read low: the report says so first."""
    from roofline.report.cpu import EnginePoint, ModelPoint

    models = (ModelPoint(1, 10.0, 10.4, 10.0), ModelPoint(8, 131.0, 70.0, 100.0))  # 1.00, 1.04; 1.31, 0.70
    engines = (EnginePoint("llama.cpp", "Q4_0", 1, 143.0, 144.0, 100.0, 95.0),)  # 1.43
    text = render_text(build_report(FACTS, ROOFS, model_decode=models, engine_decode=engines))
    first = text.splitlines()[0]
    assert first.startswith(
        "ABOVE ITS BOUND: models.ModelDecode transformers batch 8 at 1.31×, llama.cpp Q4_0 batch 1 at 1.43×"
    )
    assert "batch 1 at 1.04" not in first and "lean torch" not in first
    quiet = render_text(build_report(FACTS, ROOFS, model_decode=models[:1]))
    assert "ABOVE ITS BOUND" not in quiet


def test_noisy_points_are_one_line_naming_each():
    """Issue 39: one line per kind of warning, with the points it covers."""
    steady = point(2048, 1, 1e-3, spread=0.05)
    r = build_report(FACTS, ROOFS, decode=(steady, point(2048, 8, 2e-3, spread=0.12), point(2048, 64, 3e-3)))
    (line,) = [w for w in r.warnings if "spread beyond" in w]
    assert line.endswith("(interquartile range; noisy machine?): n=2048 batch=8 12%, n=2048 batch=64 105%")


def test_a_model_or_engine_row_without_figures_gives_the_runs_reason_or_says_where_it_is():
    """A row the run said nothing of (a report from results) points at asv's output; one the run noted says
    its true reason: not chosen (the variable), skipped (what is missing), failed (the error)."""
    from roofline.report.cpu import EnginePoint, ModelPoint
    from roofline.report.text import render_engine_decode, render_model_decode

    (model,) = [line for line in render_model_decode((ModelPoint(8, None, None, None),)) if line.startswith("      8")]
    assert model.endswith("not measured: no figure recorded (not chosen, skipped or failed: asv's output of the run "
                          "says which and why)")  # fmt: skip
    died = "failed: llama.cpp died of SIGILL (illegal instruction) while loading Q4_0 batch 1"
    engine = render_engine_decode((EnginePoint("llama.cpp", "Q4_0", 1, None, None, None, None, reason=died),))[-1]
    assert engine == f"  llama.cpp Q4_0       1 not measured: {died}"
    noted = ModelPoint(64, None, None, None, reason="not chosen this run (ROOFLINE_MODEL_BATCH)")
    assert render_model_decode((noted,))[-1].endswith("not measured: not chosen this run (ROOFLINE_MODEL_BATCH)")


def test_an_engine_row_names_its_kernels_and_a_cache_sized_file_is_marked():
    from roofline.report.cpu import EnginePoint
    from roofline.report.text import render_engine_decode

    row = dict(tokens_per_s=50.0, counter_tokens_per_s=52.0, bound_tokens_per_s=60.0, predicted_tokens_per_s=55.0)
    small = EnginePoint("llama.cpp", "Q4_0", 1, **row, kernel_path=2.0, step_bytes=285e6)
    big = EnginePoint("llama.cpp", "F16", 1, **row, kernel_path=0.0, step_bytes=2.5e9)
    lines = render_engine_decode((small, big), llc_bytes=300 * 2**20)  # the Xeon's LLC: the rule asks 1.26 GB
    assert lines[-3].endswith("  AMX *") and lines[-2].endswith("  plain")
    assert lines[-1].startswith("  * partly cache-resident: a step reads under 4× the last-level cache")
    assert render_engine_decode((small,), llc_bytes=32 * 2**20)[-1].endswith("  AMX")  # 4× 32 MiB: DRAM-sized
