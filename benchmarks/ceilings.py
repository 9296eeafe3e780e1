"""This machine's ceilings, measured in each benchmark's own process."""

from roofline.suite import harness as suite

from .common import Benchmark


class MemoryBandwidth(Benchmark):
    """STREAM-style bandwidth on all cores over arrays ≥ 4× the LLC; ``add`` is the roof."""

    params = (["copy", "add", "triad"],)
    param_names = ("kind",)
    timeout = 300

    def track_bandwidth_ceiling(self, kind):
        return suite.bandwidth_gbps(kind)

    track_bandwidth_ceiling.unit = "GB/s"


class GemmPeak(Benchmark):
    """Square-GEMM rate through numpy's BLAS, the kernels' own BLAS."""

    params = (["float32", "float64"],)
    param_names = ("dtype",)
    timeout = 300

    def track_gemm_ceiling(self, dtype):
        return suite.gemm_gflops(dtype)

    track_gemm_ceiling.unit = "GFLOP/s"
