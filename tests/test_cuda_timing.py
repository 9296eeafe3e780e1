"""Device timing and CUDA facts, tested on CPU with a simulated device (no torch needed)."""

from __future__ import annotations

import pytest

from roofline.errors import BadInput
from roofline.measure import cuda_timing


class FakeDevice:
    """A stream with a host clock and a device clock, in seconds.

    Each eager call costs the host ``launch`` seconds, then runs ``kernel`` seconds on the
    device once both are free; a graph replay is one launch for all its calls, with no gaps.
    Events complete when the stream reaches them.
    """

    def __init__(self, kernel: float, launch: float, capture_fails: bool = False):
        self.kernel, self.launch, self.capture_fails = kernel, launch, capture_fails
        self.host = self.device = 0.0
        self.calls = 0

    def fn(self) -> None:
        self.host += self.launch
        self.device = max(self.device, self.host) + self.kernel
        self.calls += 1

    def event(self):
        dev = self

        class Event:
            def record(self) -> None:
                dev.device = max(dev.device, dev.host)
                self.t = dev.device

            def elapsed_time(self, end) -> float:
                return (end.t - self.t) * 1e3

        return Event()

    def synchronize(self) -> None:
        self.host = max(self.host, self.device)

    def graph(self, fn, calls):
        if self.capture_fails:
            raise RuntimeError("capture not supported")
        dev = self

        def replay() -> None:
            dev.host += dev.launch
            dev.device = max(dev.device, dev.host) + calls * dev.kernel

        return replay


def test_events_amortize_launches_when_the_kernel_is_longer():
    dev = FakeDevice(kernel=35e-6, launch=20e-6)
    t = cuda_timing.time_events(dev.fn, dev, repeats=5, warmup=2, min_sample_s=0.005)
    assert t.median == pytest.approx(35e-6, rel=0.01)  # launches hide behind the kernels
    assert t.single_call == pytest.approx(55e-6, rel=1e-6)  # latency + kernel, as timed alone
    assert t.number * t.median >= 0.005 * 0.99


def test_events_are_launch_bound_when_launches_are_slower():
    dev = FakeDevice(kernel=5e-6, launch=12e-6)
    t = cuda_timing.time_events(dev.fn, dev, repeats=3, warmup=1)
    assert t.median == pytest.approx(12e-6, rel=0.01)


def test_graph_replay_removes_launch_gaps():
    dev = FakeDevice(kernel=5e-6, launch=12e-6)
    t = cuda_timing.time_graph(dev.fn, dev, repeats=3, warmup=1, min_sample_s=0.001)
    assert t.median == pytest.approx(5e-6, rel=0.01)
    assert t.single_call == pytest.approx(17e-6, rel=1e-6)


def test_calls_per_sample_round_up_to_the_pool():
    dev = FakeDevice(kernel=1e-3, launch=1e-6)
    t = cuda_timing.time_events(dev.fn, dev, repeats=2, warmup=0, min_sample_s=0.005, multiple=3)
    assert t.number % 3 == 0 and t.number >= 5


def test_time_device_falls_back_to_events_and_says_so():
    dev = FakeDevice(kernel=5e-6, launch=1e-6, capture_fails=True)
    t, method = cuda_timing.time_device(dev.fn, dev, "graph", repeats=2, warmup=1)
    assert method == "cuda-events" and t.median == pytest.approx(5e-6, rel=0.01)
    _, method = cuda_timing.time_device(FakeDevice(5e-6, 1e-6).fn, FakeDevice(5e-6, 1e-6), "graph", repeats=2)
    assert method == "cuda-graph"


@pytest.mark.parametrize("kwargs", [{"repeats": 0}, {"warmup": -1}, {"min_sample_s": 0}])
def test_bad_timing_arguments_are_bad_input(kwargs):
    dev = FakeDevice(1e-6, 1e-6)
    with pytest.raises(BadInput):
        cuda_timing.time_events(dev.fn, dev, **kwargs)
    with pytest.raises(BadInput):
        cuda_timing.time_device(dev.fn, dev, method="nope")


def test_a_gpus_ceilings_pool_their_rounds_and_each_roof_is_its_fastest_rounds_median(monkeypatch):
    """The GPU's ceilings keep the CPU's roof rule: the fastest round's median, not the best sample (which the
    GPU's Hardware was before) nor the median of all; a dtype this GPU lacks is left out."""
    from roofline.errors import BackendUnavailable
    from roofline.measure import cuda_ceilings

    def available(backend, dtype):
        if dtype == "fp8":
            raise BackendUnavailable("fp8 needs compute capability 8.9")

    copies = iter([[1.0, 2.0, 9.0], [4.0, 5.0, 6.0]])  # round 2's median (5) beats round 1's (2); 9 is one sample
    gemms = iter([[10.0, 30.0, 20.0], [1.0, 2.0, 3.0]])
    monkeypatch.setattr(cuda_ceilings, "available", available)
    monkeypatch.setattr(cuda_ceilings, "release_cuda", lambda: None)
    monkeypatch.setattr(cuda_ceilings, "gpu_facts", lambda: {"name": "Fake GPU", "gpu_l2_bytes": 50 << 20})
    monkeypatch.setattr(cuda_ceilings, "_copy_rates", lambda *a: (next(copies), 1 << 30, 132))
    monkeypatch.setattr(cuda_ceilings, "_gemm_rates", lambda *a: (next(gemms), "fake cuBLAS"))
    rounds = cuda_ceilings.CudaCeilingRounds(("bf16", "fp8"), gemm_n=256)
    with pytest.raises(BadInput, match="no round"):
        rounds.ceilings()
    rounds.time()
    rounds.time()
    c = rounds.ceilings()
    bw, peak = c.bandwidth[cuda_ceilings.GPU_CEILING_KERNEL], c.peaks["bf16"]
    assert (bw.best, bw.roof, bw.runs) == (9.0, 5.0, 6) and (peak.best, peak.roof) == (30.0, 20.0)
    assert (c.hardware.bandwidth, c.hardware.peak_flops) == (5.0, {"bf16": 20.0}) and c.llc_bytes == 50 << 20
