"""Decode-step benchmarks: y = W·X over n × batch, in DRAM and cache-resident regimes.

Thin by design: parameters here, everything else in :mod:`roofline.suite.harness`. Each track measures
in its own process (warm-up, then the median of timed samples); the ``time_`` twin lets asv's
own regression view, which reads lower as better, watch the same kernel.
"""

from roofline.suite import harness as suite
from roofline.suite import params

from .common import Benchmark


class DecodeDRAM(Benchmark):
    """Weights rotated through a pool of ≥ 4× the last-level cache: every call reads DRAM."""

    params = (list(params.sizes()), list(params.batches()))
    param_names = ("n", "batch")
    regime = "dram"

    def setup(self, n, batch):
        self.step = suite.decode_setup(n, batch, self.regime)

    def track_gflops(self, n, batch):
        return suite.decode_gflops(self.step)

    track_gflops.unit = "GFLOP/s"

    def track_bandwidth(self, n, batch):
        return suite.decode_gbps(self.step)

    track_bandwidth.unit = "GB/s"

    def time_decode_step(self, n, batch):
        self.step()


class DecodeCacheResident(DecodeDRAM):
    """CACHE-RESIDENT: one weight matrix, as in the lab. Not a DRAM figure; skipped when it won't fit."""

    params = (list(params.cache_sizes()), list(params.batches()))
    regime = "cache"


class DecodeRooflineFraction(Benchmark):
    """Fraction of the attainable roofline reached in the DRAM regime, against ceilings measured this run."""

    params = DecodeDRAM.params
    param_names = DecodeDRAM.param_names

    def setup_cache(self):
        return suite.suite_ceilings()

    def setup(self, ceilings, n, batch):
        self.step = suite.decode_setup(n, batch, "dram")

    def track_roofline_fraction(self, ceilings, n, batch):
        return suite.decode_roofline_fraction(self.step, ceilings)

    track_roofline_fraction.unit = "fraction of roof"
