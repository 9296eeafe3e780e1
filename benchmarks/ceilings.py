"""This machine's ceilings, measured once per run: every derived figure of the run divides by these."""

from .common import Measured, suite


class MemoryBandwidth(Measured):
    """STREAM-style bandwidth on all cores over arrays ≥ 4× the LLC; ``read`` is the roof (``add`` before it)."""

    params = (["copy", "add", "triad", "read"],)
    param_names = ("kind",)

    def setup(self, run, kind):
        suite.require(run)

    def track_bandwidth_ceiling(self, run, kind):
        return suite.bandwidth_gbps(run, kind)

    track_bandwidth_ceiling.unit = "GB/s"


class BandwidthReferee(Measured):
    """The level roofs' and the DRAM roof's independent referee: likwid-bench's load kernel at a working
    set inside each level, run after each round of that level's roof (skipped where likwid-bench cannot run)."""

    params = (["L1", "L2", "L3", "DRAM"],)
    param_names = ("level",)

    def setup(self, run, level):
        suite.referee(run, level)

    def track_referee_bandwidth(self, run, level):
        return suite.referee(run, level)

    track_referee_bandwidth.unit = "GB/s"


class PeakReferee(Measured):
    """GemmPeak's independent referee: likwid-bench's FMA peak (register-resident, so a GEMM reaches a
    share of it), run after each round of the ceilings (skipped where likwid-bench cannot run)."""

    params = (["float32", "float64"],)
    param_names = ("dtype",)

    def setup(self, run, dtype):
        suite.peak_referee(run, dtype)

    def track_referee_peak(self, run, dtype):
        return suite.peak_referee(run, dtype)

    track_referee_peak.unit = "GFLOP/s"


class GemmPeak(Measured):
    """Square-GEMM rate through numpy's BLAS, the kernels' own BLAS."""

    params = (["float32", "float64"],)
    param_names = ("dtype",)

    def setup(self, run, dtype):
        suite.require(run)

    def track_gemm_ceiling(self, run, dtype):
        return suite.gemm_gflops(run, dtype)

    track_gemm_ceiling.unit = "GFLOP/s"


class CacheBandwidth(Measured):
    """Read-only bandwidth per memory level: the plateaus of a working-set sweep on all cores (numba
    kernel), its rounds spread over the run as the other ceilings' are."""

    params = (["L1", "L2", "L3", "DRAM"],)
    param_names = ("level",)

    def setup(self, run, level):
        suite.level_entry(run, level)

    def track_bandwidth(self, run, level):
        return suite.level_entry(run, level)[0]

    track_bandwidth.unit = "GB/s"

    def track_capacity(self, run, level):
        return float(suite.level_entry(run, level)[1])

    track_capacity.unit = "bytes"


class ComputePeak(Measured):
    """The compute roofs beyond numpy's (GemmPeak's fp32 and fp64): a square torch GEMM per dtype where
    the CPU has instructions for it (AMX, AVX-512-BF16/FP16, VNNI), else skipped; in the run's rounds."""

    params = (["bf16", "fp16", "int8"],)
    param_names = ("dtype",)

    def setup(self, run, dtype):
        suite.compute_peak(run, dtype)

    def track_peak(self, run, dtype):
        return suite.compute_peak(run, dtype)

    track_peak.unit = "GFLOP/s"
