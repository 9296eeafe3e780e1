import pytest

from roofline.errors import BadInput
from roofline.measure import pools
from roofline.model.gguf_layout import step_bytes
from roofline.suite import params


def test_defaults(monkeypatch):
    for v in ("ROOFLINE_N", "ROOFLINE_BATCH", "ROOFLINE_CACHE_N"):
        monkeypatch.delenv(v, raising=False)
    assert 2048 in params.sizes() and max(params.sizes()) > 2048
    assert params.batches() == (1, 8, 64, 512)


def test_env_override(monkeypatch):
    monkeypatch.setenv("ROOFLINE_N", " 256, 512,256")
    monkeypatch.setenv("ROOFLINE_BATCH", "1,8")
    assert params.sizes() == (256, 512)
    assert params.batches() == (1, 8)


@pytest.mark.parametrize("bad", ["0", "-8", "1.5", "abc", "", "1,,2", "1e3", "99999999"])
def test_bad_env_names_the_variable(monkeypatch, bad):
    monkeypatch.setenv("ROOFLINE_BATCH", bad)
    with pytest.raises(BadInput, match="ROOFLINE_BATCH"):
        params.batches()


@pytest.mark.parametrize("name, read", [("ROOFLINE_REFEREE", params.referee), ("ROOFLINE_LEVELS", params.levels)])
def test_the_referees_and_the_level_sweep_are_on_unless_switched_off(monkeypatch, name, read):
    monkeypatch.delenv(name, raising=False)
    assert read() is True
    for text, want in (("off", False), (" OFF ", False), ("on", True)):
        monkeypatch.setenv(name, text)
        assert read() is want
    for bad in ("0", "no", ""):
        monkeypatch.setenv(name, bad)
        with pytest.raises(BadInput, match=f"{name} must be on or off"):
            read()


@pytest.mark.parametrize("name, read", [("ROOFLINE_SWEEP_N", params.sweep_n), ("ROOFLINE_GEMM_N", params.gemm_n)])
def test_a_one_size_variable_takes_one_size_or_its_default(monkeypatch, name, read):
    monkeypatch.delenv(name, raising=False)
    default = read()
    monkeypatch.setenv(name, " 512")
    assert read() == 512 != default
    for bad in ("256,512", "0", "abc", ""):
        monkeypatch.setenv(name, bad)
        with pytest.raises(BadInput, match=name):
            read()


def test_a_quick_look_shrinks_every_class_and_a_variable_set_wins(monkeypatch):
    """Issue 39: the README's quick look shrank the decode classes only; the backends still ran at n 2048 and
    ModelDecode at batches 1, 8 and 64. ROOFLINE_QUICK=1 (make bench QUICK=1) gives every class small sizes."""
    for name in (*params.QUICK, params.QUICK_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    full = (params.sizes(), params.backend_sizes(), params.model_batches(), params.engine_batches(), params.sweep_n())
    assert full == ((2048, 8192), (2048,), (1, 8, 64), (1, 2, 4, 8, 16, 32, 64), 4096) and params.gemm_n() is None
    models = (params.model_decode(), params.engine_model())
    monkeypatch.setenv(params.QUICK_VARIABLE, "1")
    assert (params.sizes(), params.batches(), params.cache_sizes()) == ((1024,), (1, 64), (1024,))
    assert (params.backend_sizes(), params.backend_batches()) == ((256,), (1,))
    assert (params.model_batches(), params.engine_batches(), params.sweep_n()) == ((1,), (1,), 1024)
    assert params.gemm_n() is None  # the default run's GEMMs: the roofs are no weaker in a quick look
    engine = params.engine_model()  # smaller, still read from DRAM on this project's VM (32 MiB of L3)
    assert params.model_decode() == models[0] and engine.params_read(1) < models[1].params_read(1)
    assert step_bytes(engine, "Q4_0") > pools.escape_bytes(32 * 2**20)
    assert not params.referee() and not params.levels()  # a quick look has no referees and no level sweep
    monkeypatch.setenv("ROOFLINE_N", "2048")
    monkeypatch.setenv("ROOFLINE_REFEREE", "on")
    assert params.sizes() == (2048,) and params.batches() == (1, 64) and params.referee()
    monkeypatch.setenv(params.QUICK_VARIABLE, "yes")
    with pytest.raises(BadInput, match="ROOFLINE_QUICK must be 0 or 1, got 'yes'"):
        params.batches()


def test_the_model_and_engine_batches_start_no_process_where_not_chosen(monkeypatch):
    import re

    grid = {"ROOFLINE_MODEL_BATCH": (1, 8, 64), "ROOFLINE_ENGINE_BATCH": (1, 8)}
    monkeypatch.setenv("ROOFLINE_MODEL_BATCH", "1")
    monkeypatch.setenv("ROOFLINE_ENGINE_BATCH", "8")
    picked = params.selection(grid)

    def runs(name):
        return any(re.search(r, name) for r in picked)

    assert runs("models.ModelDecode.track_tokens_per_s(1)") and not runs("models.ModelDecode.track_tokens_per_s(8)")
    assert runs("engines.LlamaCppDecode.track_tokens_per_s('Q4_0', 8)")
    assert not runs("engines.LlamaCppDecode.track_tokens_per_s('Q4_0', 1)")
    # a grid from before the variables chose (benchmarks/ of an older checkout): every batch runs
    assert any(re.search(r, "models.ModelDecode.track_tokens_per_s(8)") for r in params.selection({}))
