"""The backend registry: what runs here, and the reason when it doesn't (no torch needed)."""

from __future__ import annotations

import importlib.util
import types

import pytest

from roofline.errors import BackendUnavailable, BadInput
from roofline.measure import backends
from roofline.model.dtypes import STEPS
from roofline.suite import params

HAS_TORCH = importlib.util.find_spec("torch") is not None


def test_unavailable_is_what_asv_skips_on():
    assert issubclass(BackendUnavailable, NotImplementedError)


def test_every_backend_offers_dtypes_a_step_can_run_in():
    for dtypes in backends.BACKENDS.values():
        assert set(dtypes) <= set(STEPS)
    assert backends.BACKENDS["torch-cuda"] == ("fp32", "tf32", "bf16", "fp16", "fp8")


def test_unknown_names_are_bad_input():
    with pytest.raises(BadInput, match="unknown backend 'cupy'"):
        backends.available("cupy", "fp32")
    with pytest.raises(BadInput, match="unknown dtype 'int4'"):
        backends.available("numpy", "int4")


def test_numpy_has_no_bf16_and_says_what_it_offers():
    backends.available("numpy", "fp32")
    with pytest.raises(BackendUnavailable, match="numpy offers no bf16 .it offers fp32, fp64"):
        backends.available("numpy", "bf16")


def test_torch_missing_is_a_stated_skip(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(BackendUnavailable, match="torch is not installed"):
        backends.available("torch-cpu", "fp32")
    assert backends.torch_threads() is None


def fake_torch(cuda: str | None, visible: bool, capability=(9, 0), scaled_mm=True):
    """Just enough of torch's surface for the CUDA availability rules."""
    cuda_mod = types.SimpleNamespace(
        is_available=lambda: visible,
        get_device_capability=lambda: capability,
        get_device_name=lambda: "Fake GPU",
    )
    t = types.SimpleNamespace(__version__="9.9", version=types.SimpleNamespace(cuda=cuda), cuda=cuda_mod)
    if scaled_mm:
        t._scaled_mm = object()
        t.float8_e4m3fn = object()
    return t


@pytest.mark.parametrize(
    ("torch", "dtype", "reason"),
    [
        (fake_torch(None, False), "bf16", "CPU-only build"),
        (fake_torch("12.4", False), "fp32", r"CUDA 12\.4\) sees no CUDA device"),
        (fake_torch("12.4", True, (7, 5)), "bf16", r"bf16 needs compute capability 8\.0; Fake GPU has 7\.5"),
        (fake_torch("12.4", True, (8, 0)), "fp8", r"fp8 needs compute capability 8\.9"),
        (fake_torch("12.4", True, (9, 0), scaled_mm=False), "fp8", "no float8_e4m3fn _scaled_mm"),
    ],
)
def test_cuda_rules_give_the_reason(monkeypatch, torch, dtype, reason):
    monkeypatch.setattr(backends, "import_torch", lambda: torch)
    with pytest.raises(BackendUnavailable, match=reason):
        backends.available("torch-cuda", dtype)


def test_cuda_rules_pass_on_a_capable_device(monkeypatch):
    monkeypatch.setattr(backends, "import_torch", lambda: fake_torch("12.4", True, (9, 0)))
    for dtype in backends.BACKENDS["torch-cuda"]:
        backends.available("torch-cuda", dtype)
    monkeypatch.setattr(backends, "import_torch", lambda: fake_torch("12.4", True, (8, 0)))
    backends.available("torch-cuda", "tf32")


def test_inventory_lists_every_pair_with_a_reason_when_absent():
    rows = backends.inventory()
    assert len(rows) == sum(len(d) for d in backends.BACKENDS.values())
    for r in rows:
        assert r["available"] == (r["reason"] is None)
    numpy_rows = [r for r in rows if r["backend"] == "numpy"]
    assert all(r["available"] for r in numpy_rows)
    torch_cpu = [r for r in rows if r["backend"] == "torch-cpu"]
    assert all(r["available"] == HAS_TORCH for r in torch_cpu)


def test_build_step_numpy(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))
    step = backends.build_step("numpy", "fp32", 128, 2)
    assert step.dtype == "float32" and step.pool_bytes >= 4 * 2**20
    with pytest.raises(BackendUnavailable):
        backends.build_step("numpy", "fp16", 128, 2)


def test_gpu_params_default_by_device_and_env(monkeypatch):
    monkeypatch.setattr(params, "gpu_present", lambda: False)
    for var in ("ROOFLINE_GPU_N", "ROOFLINE_GPU_BATCH", "ROOFLINE_GPU_DTYPES"):
        monkeypatch.delenv(var, raising=False)
    assert params.gpu_sizes() == params.NO_GPU_N and params.gpu_batches() == params.NO_GPU_BATCH
    monkeypatch.setattr(params, "gpu_present", lambda: True)
    assert 192 in params.gpu_batches() and {1, 8, 64, 512} <= set(params.gpu_batches())
    monkeypatch.setenv("ROOFLINE_GPU_DTYPES", "bf16, fp8,bf16")
    assert params.gpu_dtypes() == ("bf16", "fp8")
    monkeypatch.setenv("ROOFLINE_GPU_BATCH", "1,190")
    assert params.gpu_batches() == (1, 190)


@pytest.mark.parametrize(
    ("var", "value", "message"),
    [
        ("ROOFLINE_GPU_DTYPES", "bf16,int3", "ROOFLINE_GPU_DTYPES: unknown dtype 'int3'"),
        ("ROOFLINE_GPU_DTYPES", "", "ROOFLINE_GPU_DTYPES must be a comma-separated list"),
        ("ROOFLINE_GPU_N", "8192,x", "ROOFLINE_GPU_N: 'x' is not an integer"),
        ("ROOFLINE_BACKEND_BATCH", "0", "ROOFLINE_BACKEND_BATCH: 0 is not positive"),
    ],
)
def test_bad_backend_variables_name_themselves(monkeypatch, var, value, message):
    from roofline.suite.preflight import backends_plan

    monkeypatch.setenv(var, value)
    with pytest.raises(BadInput, match=message):
        backends_plan()


@pytest.mark.parametrize("device", [True, False])
def test_the_plan_announces_the_cuda_class_only_where_a_device_is(monkeypatch, device):
    """Issue 39: a machine with no GPU announced "CUDA: fp32, tf32, … × n 8192" for a class it never runs."""
    from roofline.suite.preflight import backends_plan

    monkeypatch.setenv("ROOFLINE_GPU_DTYPES", "bf16,fp8")
    (line,) = backends_plan(device=lambda: device)
    assert ("CUDA: bf16, fp8 × n 8192" in line) is device
    assert ("CUDA: none (no CUDA device here)" in line) is not device
