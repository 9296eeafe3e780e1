"""The decode step across backends and dtypes: numpy beside torch on CPU, and torch on CUDA.

scipy's ``XPBenchmark`` pattern: backend and dtype are parameters beside n and batch; a
combination whose backend or dtype is absent here raises ``NotImplementedError`` in setup and
asv records it as skipped. Thin by design: parameters here, everything else in
:mod:`roofline.suite.harness`. On a GPU machine run ``asv run --python=same`` against the
machine's own torch (see the README's "Backends and GPUs").
"""

from roofline.measure.backends import BACKENDS, available
from roofline.suite import harness as suite_backends
from roofline.suite import params

from .common import Benchmark


class BackendDecode(Benchmark):
    """numpy and torch on this CPU, weights in a pool of ≥ 4× the LLC; each combination its own process."""

    params = (["numpy", "torch-cpu"], ["fp32", "bf16"], list(params.backend_sizes()), list(params.backend_batches()))
    param_names = ("backend", "dtype", "n", "batch")

    def setup(self, backend, dtype, n, batch):
        self.step = suite_backends.backend_setup(backend, dtype, n, batch)

    def track_gflops(self, backend, dtype, n, batch):
        return float(suite_backends.backend_measure(self.step).gflops)

    track_gflops.unit = "GFLOP/s"

    def track_bandwidth(self, backend, dtype, n, batch):
        return float(suite_backends.backend_measure(self.step).gbps)

    track_bandwidth.unit = "GB/s"

    def time_decode_step(self, backend, dtype, n, batch):
        self.step()


class CudaDecode(Benchmark):
    """torch on CUDA, weights in a pool of ≥ 4× the L2, timed by CUDA-graph replay; measured in setup_cache."""

    params = (["torch-cuda"], list(params.gpu_dtypes()), list(params.gpu_sizes()), list(params.gpu_batches()))
    param_names = ("backend", "dtype", "n", "batch")

    def setup_cache(self):
        return suite_backends.gpu_grid(params.gpu_dtypes(), params.gpu_sizes(), params.gpu_batches())

    setup_cache.timeout = 900

    def setup(self, grid, backend, dtype, n, batch):
        self.entry = suite_backends.grid_entry(grid, backend, dtype, n, batch)

    def track_gflops(self, grid, backend, dtype, n, batch):
        return suite_backends.grid_value(self.entry, "gflops")

    track_gflops.unit = "GFLOP/s"

    def track_bandwidth(self, grid, backend, dtype, n, batch):
        return suite_backends.grid_value(self.entry, "gbps")

    track_bandwidth.unit = "GB/s"

    def track_seconds(self, grid, backend, dtype, n, batch):
        return suite_backends.grid_value(self.entry, "seconds", 1e6)

    track_seconds.unit = "µs per call"


class CallOverhead(Benchmark):
    """The overhead roof: a tiny one-matrix step (n=64, fp32) timed alone and amortized, in µs."""

    params = (list(BACKENDS),)
    param_names = ("backend",)
    timeout = 300

    def setup(self, backend):
        available(backend, "fp32")

    def track_single_call(self, backend):
        return suite_backends.overhead_us(backend, "fp32", "single")

    track_single_call.unit = "µs"

    def track_amortized_call(self, backend):
        return suite_backends.overhead_us(backend, "fp32", "amortized")

    track_amortized_call.unit = "µs"
