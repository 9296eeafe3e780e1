"""The decode step across backends and dtypes: numpy beside torch on CPU, and torch on CUDA.

scipy's ``XPBenchmark`` pattern: backend and dtype are parameters beside n and batch; a
combination whose backend or dtype is absent here is skipped. Thin by design: parameters here,
everything else in :mod:`roofline.suite.harness`. Each class measures its grid once per run in
setup_cache; on a GPU machine run ``asv run --python=same`` against the machine's own torch (see
the README's "Backends and GPUs").
"""

from .common import GRID, Benchmark, measured, suite


class BackendDecode(Benchmark):
    """numpy and torch on this CPU, weights in a pool of ≥ 4× the LLC; measured once per run."""

    params = (
        ["numpy", "torch-cpu"],
        ["fp32", "bf16"],
        list(GRID["ROOFLINE_BACKEND_N"]),
        list(GRID["ROOFLINE_BACKEND_BATCH"]),
    )
    param_names = ("backend", "dtype", "n", "batch")

    def setup_cache(self):
        return measured("backend_grid", GRID)

    setup_cache.timeout = 1800

    def setup(self, grid, backend, dtype, n, batch):
        self.point = suite.backend_point(grid, backend, dtype, n, batch)
        self.step = suite.backend_twin(self.point)
        self.steps_back_to_back(self.step, self.point.calls_per_sample)

    def track_gflops(self, grid, backend, dtype, n, batch):
        return self.point.gflops

    track_gflops.unit = "GFLOP/s"

    def track_bandwidth(self, grid, backend, dtype, n, batch):
        return self.point.gbps

    track_bandwidth.unit = "GB/s"

    def time_decode_step(self, grid, backend, dtype, n, batch):
        self.step()


class CudaDecode(Benchmark):
    """torch on CUDA, weights in a pool of ≥ 4× the L2, timed by CUDA-graph replay; measured in setup_cache."""

    params = (
        ["torch-cuda"],
        list(GRID["ROOFLINE_GPU_DTYPES"]),
        list(GRID["ROOFLINE_GPU_N"]),
        list(GRID["ROOFLINE_GPU_BATCH"]),
    )
    param_names = ("backend", "dtype", "n", "batch")

    def setup_cache(self):
        return measured("cuda_grid", GRID)

    setup_cache.timeout = 900

    def setup(self, grid, backend, dtype, n, batch):
        self.entry = suite.cuda_point(grid, backend, dtype, n, batch)

    def track_gflops(self, grid, backend, dtype, n, batch):
        return suite.grid_value(self.entry, "gflops")

    track_gflops.unit = "GFLOP/s"

    def track_bandwidth(self, grid, backend, dtype, n, batch):
        return suite.grid_value(self.entry, "gbps")

    track_bandwidth.unit = "GB/s"

    def track_seconds(self, grid, backend, dtype, n, batch):
        return suite.grid_value(self.entry, "seconds", 1e6)

    track_seconds.unit = "µs per call"


class CallOverhead(Benchmark):
    """The overhead roof: a tiny one-matrix step (n=64, fp32) timed alone and amortized, in µs."""

    params = (["numpy", "torch-cpu", "torch-cuda"],)
    param_names = ("backend",)
    timeout = 300

    def setup(self, backend):
        suite.overhead_available(backend)

    def track_single_call(self, backend):
        return suite.overhead_us(backend, "fp32", "single")

    track_single_call.unit = "µs"

    def track_amortized_call(self, backend):
        return suite.overhead_us(backend, "fp32", "amortized")

    track_amortized_call.unit = "µs"
