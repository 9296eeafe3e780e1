"""This machine's ceilings, measured once per run: every derived figure of the run divides by these."""

from .common import Measured, suite


class MemoryBandwidth(Measured):
    """STREAM-style bandwidth on all cores over arrays ≥ 4× the LLC; ``add`` is the roof."""

    params = (["copy", "add", "triad"],)
    param_names = ("kind",)

    def setup(self, run, kind):
        suite.require(run)

    def track_bandwidth_ceiling(self, run, kind):
        return suite.bandwidth_gbps(run, kind)

    track_bandwidth_ceiling.unit = "GB/s"


class GemmPeak(Measured):
    """Square-GEMM rate through numpy's BLAS, the kernels' own BLAS."""

    params = (["float32", "float64"],)
    param_names = ("dtype",)

    def setup(self, run, dtype):
        suite.require(run)

    def track_gemm_ceiling(self, run, dtype):
        return suite.gemm_gflops(run, dtype)

    track_gemm_ceiling.unit = "GFLOP/s"
