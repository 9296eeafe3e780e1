"""The torch decode step on CPU end to end; CUDA paths run only where CUDA is, else skip saying why."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (make test installs the CPU build)")

from roofline.errors import BackendUnavailable, BadInput, KernelMismatch  # noqa: E402
from roofline.measure import backends, overhead  # noqa: E402
from roofline.measure.step import measure_step  # noqa: E402
from roofline.measure.torch_step import torch_decode_step, validate  # noqa: E402
from roofline.model.dtypes import DTYPES, STEPS  # noqa: E402
from roofline.outcome import Failed, Skipped  # noqa: E402
from roofline.suite import harness  # noqa: E402

CUDA = torch.cuda.is_available()
NO_CUDA = f"CUDA is absent: torch {torch.__version__} here has no GPU (CUDA {torch.version.cuda})"
HAS_FP8 = hasattr(torch, "_scaled_mm") and hasattr(torch, "float8_e4m3fn")


@pytest.fixture(autouse=True)
def small(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_LLC_BYTES", "1M")
    monkeypatch.setenv("ROOFLINE_CACHE_DIR", str(tmp_path))


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
@pytest.mark.parametrize("batch", [1, 8])
def test_torch_cpu_end_to_end(dtype, batch):
    step = backends.build_step("torch-cpu", dtype, 256, batch)
    assert step.backend == "torch-cpu" and step.dtype == dtype
    assert step.pool_bytes >= 4 * 2**20  # ≥ 4× the (1 MiB) LLC
    assert step.bytes_per_param == DTYPES[dtype].bytes
    y = step()
    assert tuple(y.shape) == (batch, 256)
    m = measure_step(step, repeats=3)
    assert m.backend == "torch-cpu" and m.timer == "host" and m.dtype == dtype
    assert m.threads == torch.get_num_threads()
    assert m.seconds > 0 and m.single_call_seconds > 0
    assert m.gflops == pytest.approx(step.flops / m.seconds / 1e9)
    assert m.gbps == pytest.approx(step.bytes_moved / m.seconds / 1e9)


def test_torch_cpu_steps_are_timed_like_numpy_steps_and_together(monkeypatch):
    """On the CPU, torch's fp32 and bf16 steps take the numpy steps' host samples (≥ MIN_SAMPLE_S each,
    ≥ MIN_TOTAL_S in all), interleaved; they never time themselves in short samples, one after the other."""
    from roofline.measure import step as step_module

    def self_timed(*args, **kwargs):
        raise AssertionError("a torch CPU step timed itself")

    seen = []

    def interleaved(fns, repeats, warmup, **kwargs):
        seen.append((list(fns), kwargs))
        return real(fns, repeats, warmup, **kwargs)

    real = step_module.time_interleaved
    monkeypatch.setattr(type(backends.build_step("torch-cpu", "fp32", 64, 1)), "time", self_timed)
    monkeypatch.setattr(step_module, "time_interleaved", interleaved)
    steps = [backends.build_step("torch-cpu", dtype, 64, 1) for dtype in ("fp32", "bf16")]
    got = step_module.measure_steps(steps)
    assert [m.dtype for m in got] == ["fp32", "bf16"] and all(m.timer == "host" for m in got)
    assert [fns for fns, _ in seen] == [steps]
    assert seen[0][1] == {"min_sample_s": step_module.MIN_SAMPLE_S, "min_total_s": step_module.MIN_TOTAL_S}


def test_bytes_and_flops_of_one_call():
    step = torch_decode_step(128, 4, "bf16", "cpu")
    assert step.flops == 2 * 128 * 128 * 4
    assert step.bytes_moved == 2 * (128 * 128 + 128 * 4) + 2 * 128 * 4
    one = torch_decode_step(64, 1, "fp32", "cpu", regime="cache")
    assert len(one.pool) == 1


@pytest.mark.parametrize(
    "wrong",
    [
        lambda x, w: torch.nn.functional.linear(x, w) * 1.05,  # 5 % off
        lambda x, w: torch.nn.functional.linear(x, w.t()),  # transposed weights
        lambda x, w: torch.nn.functional.linear(x, w) * float("nan"),
    ],
)
def test_validation_catches_a_wrong_kernel(wrong):
    step = torch_decode_step(128, 4, "fp32", "cpu")
    step.op = wrong
    with pytest.raises(KernelMismatch, match="no figure will be reported"):
        validate(step)


def test_tolerances_cover_every_dtype_and_order_by_precision():
    t = {d: DTYPES[d].tolerance for d in STEPS}
    assert all(t.values())
    assert t["fp64"] < t["fp32"] < t["tf32"] <= t["fp16"] < t["bf16"] < t["fp8"]
    assert t["bf16"] == pytest.approx(1e-2)


def test_bf16_error_is_real_and_inside_its_tolerance():
    """bf16 rounding shows (fp32's tolerance would reject it) yet stays inside bf16's."""
    err = validate(torch_decode_step(512, 8, "bf16", "cpu"))
    assert DTYPES["fp32"].tolerance < err < DTYPES["bf16"].tolerance
    assert validate(torch_decode_step(512, 8, "fp32", "cpu")) < DTYPES["fp32"].tolerance


@pytest.mark.skipif(not HAS_FP8, reason=f"torch {torch.__version__} has no float8 _scaled_mm")
def test_fp8_path_through_scaled_mm_on_cpu():
    try:
        step = torch_decode_step(256, 4, "fp8", "cpu")
    except BackendUnavailable as exc:
        pytest.skip(f"fp8 _scaled_mm unavailable on this CPU build: {exc}")
    assert step.itemsize == 1 and step.out_itemsize == 2 and len(step.w_scales) == len(step.pool)
    err = validate(step)
    assert 0 < err < DTYPES["fp8"].tolerance
    y = step()
    assert y.dtype == torch.bfloat16
    with pytest.raises(BackendUnavailable, match="divisible by 16"):
        torch_decode_step(100, 1, "fp8", "cpu")


def test_bad_shapes_and_names_are_bad_input():
    with pytest.raises(BadInput):
        torch_decode_step(0, 1, "fp32", "cpu")
    with pytest.raises(BadInput, match="unknown dtype"):
        torch_decode_step(64, 1, "int8", "cpu")


@pytest.mark.skipif(CUDA, reason="a CUDA device is present: this checks the CPU-only answer")
def test_cuda_request_without_cuda_is_a_stated_skip():
    with pytest.raises(BackendUnavailable, match="CPU-only build|sees no CUDA device"):
        backends.build_step("torch-cuda", "bf16", 256, 1)
    with pytest.raises(BackendUnavailable):
        torch_decode_step(256, 1, "bf16", "cuda")


def test_gpu_grid_records_reasons_and_figures():
    grid = harness.gpu_grid(["fp32", "bf16"], [128], [1], backend="torch-cpu")
    entry = harness.grid_entry(grid, "torch-cpu", "fp32", 128, 1)
    assert entry["timer"] == "host"
    assert isinstance(harness.grid_value(entry, "gflops"), float)
    assert harness.grid_value(entry, "seconds", 1e6) == pytest.approx(entry["seconds"] * 1e6, rel=1e-3)  # 4 digits
    cuda = harness.gpu_grid(["fp8"], [256], [1])
    if not CUDA:
        assert isinstance(cuda[("torch-cuda", "fp8", 256, 1)], Skipped)
        with pytest.raises(BackendUnavailable):
            harness.grid_entry(cuda, "torch-cuda", "fp8", 256, 1)
    with pytest.raises(KernelMismatch, match="boom"):
        harness.grid_entry({("b", "d", 1, 1): Failed("boom")}, "b", "d", 1, 1)
    with pytest.raises(BackendUnavailable, match="not measured"):
        harness.grid_entry({}, "b", "d", 1, 1)


def test_overhead_roof_torch_cpu():
    o = overhead.measure_overhead("torch-cpu", "fp32", repeats=3)
    assert o.backend == "torch-cpu" and o.n == overhead.OVERHEAD_N and o.timer == "host"
    assert o.single_call_seconds > 0 and o.amortized_seconds > 0


# ---- CUDA: real device only ----------------------------------------------------------------


@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
@pytest.mark.parametrize("dtype", ["fp32", "tf32", "bf16", "fp16", "fp8"])
def test_cuda_step_end_to_end(dtype):
    try:
        step = backends.build_step("torch-cuda", dtype, 1024, 8)
    except BackendUnavailable as exc:
        pytest.skip(str(exc))
    m = measure_step(step, repeats=3)
    assert m.backend == "torch-cuda" and m.timer in ("cuda-graph", "cuda-events")
    assert step.pool_bytes >= 4 * torch.cuda.get_device_properties(0).L2_cache_size
    assert m.single_call_seconds > 0 and m.seconds > 0


@pytest.mark.skipif(not CUDA, reason=NO_CUDA)
def test_cuda_ceilings_and_facts():
    from roofline.host import gpu_facts
    from roofline.measure.cuda_ceilings import copy_bandwidth, gemm_rate

    facts = gpu_facts()
    assert facts and facts["gpu_sm_count"] > 0 and facts["gpu_l2_bytes"] > 0
    assert copy_bandwidth(2**28, repeats=3).best > 0
    assert gemm_rate("fp32", 1024, repeats=3).best > 0


class HostDevice:
    """The Device protocol on the host clock: events read perf_counter, a 'graph' replays eagerly."""

    def __init__(self, capture_fails: bool = False):
        self.capture_fails = capture_fails
        self.captured = 0

    def event(self):
        import time

        class Event:
            def record(self) -> None:
                self.t = time.perf_counter()

            def elapsed_time(self, end) -> float:
                return (end.t - self.t) * 1e3

        return Event()

    def synchronize(self) -> None:
        pass

    def graph(self, fn, calls):
        if self.capture_fails:
            raise RuntimeError("operation not permitted when stream is capturing")
        self.captured = calls

        def replay() -> None:
            for _ in range(calls):
                fn()

        return replay


@pytest.mark.parametrize(("fails", "timer"), [(False, "cuda-graph"), (True, "cuda-events")])
def test_device_timing_path_of_a_torch_step(fails, timer):
    """The CUDA timing path (graph, or events when capture fails) driven by a real torch op on CPU."""
    step = torch_decode_step(256, 4, "bf16", "cpu")
    step.clock = dev = HostDevice(capture_fails=fails)
    m = measure_step(step, repeats=3)
    assert m.timer == timer and m.seconds > 0 and m.single_call_seconds > 0
    assert m.calls_per_sample % len(step.pool) == 0  # every sample reads every matrix equally
    if not fails:
        assert dev.captured == m.calls_per_sample
    t, how = step.time(repeats=2, method="events")
    assert how == "cuda-events" and t.number % len(step.pool) == 0


@pytest.mark.parametrize("dtype", ["fp32", "bf16", "fp8"])
def test_gemm_ceiling_logic_on_cpu(dtype):
    """The GPU GEMM ceiling's data, validation and timing, run on the CPU with the host clock."""
    from roofline.measure.cuda_ceilings import gemm_rate

    if dtype == "fp8" and not HAS_FP8:
        pytest.skip(f"torch {torch.__version__} has no float8 _scaled_mm")
    p = gemm_rate(dtype, 128, repeats=3, device="cpu", clock=HostDevice())
    assert p.dtype == dtype and p.n == 128 and p.best >= p.median > 0 and p.spread >= 1  # high / low
    assert p.low <= p.median <= p.high and p.confidence > 0


def test_copy_ceiling_logic_on_cpu():
    from roofline.measure.cuda_ceilings import GPU_CEILING_KERNEL, copy_bandwidth

    bw = copy_bandwidth(2**20, repeats=3, device="cpu", clock=HostDevice())
    assert bw.kind == GPU_CEILING_KERNEL and bw.array_bytes == 2**20 and bw.best >= bw.median > 0
    with pytest.raises(BadInput):
        copy_bandwidth(None, device="cpu", clock=HostDevice())


def test_gemm_ceiling_refuses_bad_sizes():
    from roofline.measure.cuda_ceilings import gemm_rate

    with pytest.raises(BadInput, match="multiple of 16"):
        gemm_rate("fp32", 100, device="cpu", clock=HostDevice())
    with pytest.raises(BadInput, match="unknown dtype"):
        gemm_rate("int8", 128, device="cpu", clock=HostDevice())
