import pytest

from roofline.errors import BadInput
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
