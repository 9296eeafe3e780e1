"""Decode-step benchmarks: y = W·X over n × batch, in DRAM and cache-resident regimes.

Thin by design: parameters here, everything else in :mod:`roofline`. Each track measures
in its own process (warm-up, then the median of timed samples); the ``time_`` twin lets
asv's own regression view, which reads lower as better, watch the same kernel.
"""

from roofline import params
from roofline.kernels import decode_step
from roofline.measure import measure_step


class DecodeDRAM:
    """Weights rotated through a pool of ≥ 4× the last-level cache: every call reads DRAM."""

    params = (list(params.sizes()), list(params.batches()))
    param_names = ("n", "batch")
    regime = "dram"
    timeout = 600
    # time_ settings: one process, asv calibrates calls per sample.
    rounds = 1
    repeat = (3, 10, 10.0)
    warmup_time = 0.05

    def setup(self, n, batch):
        self.step = decode_step(n, batch, regime=self.regime)

    def track_gflops(self, n, batch):
        return float(measure_step(self.step).gflops)

    track_gflops.unit = "GFLOP/s"

    def track_bandwidth(self, n, batch):
        return float(measure_step(self.step).gbps)

    track_bandwidth.unit = "GB/s"

    def time_decode_step(self, n, batch):
        self.step()


class DecodeCacheResident(DecodeDRAM):
    """One weight matrix, as in the lab: it stays in the cache, so this is NOT a DRAM figure."""

    params = (list(params.cache_sizes()), list(params.batches()))
    regime = "cache"
