"""Decode-step benchmarks: y = W·X over n × batch, in DRAM and cache-resident regimes.

Thin by design: parameters here, everything else in :mod:`roofline.suite.harness`. Every point is
measured once per run (roofline.suite.run, asv's setup_cache): its GFLOP/s, GB/s and roofline
fraction come from that one timing. The ``time_`` twin lets asv's own regression view, which reads
lower as better, time the same step back to back in its own process, with asv's own samples.
"""

from .common import GRID, Measured, suite


class DecodeDRAM(Measured):
    """Weights rotated through a pool of ≥ 4× the last-level cache: every call reads DRAM."""

    params = (list(GRID["ROOFLINE_N"]), list(GRID["ROOFLINE_BATCH"]))
    param_names = ("n", "batch")
    regime = "dram"

    def setup(self, run, n, batch):
        self.point = suite.decode_point(run, self.regime, n, batch)
        self.step = suite.decode_twin(self.point)
        self.steps_back_to_back(self.step, self.point.calls_per_sample)

    def track_gflops(self, run, n, batch):
        return self.point.gflops

    track_gflops.unit = "GFLOP/s"

    def track_bandwidth(self, run, n, batch):
        return self.point.gbps

    track_bandwidth.unit = "GB/s"

    def time_decode_step(self, run, n, batch):
        self.step()


class DecodeCacheResident(DecodeDRAM):
    """CACHE-RESIDENT: one weight matrix, as in the lab. Not a DRAM figure; skipped when it won't fit."""

    params = (list(GRID["ROOFLINE_CACHE_N"]), list(GRID["ROOFLINE_BATCH"]))
    regime = "cache"


class DecodeRooflineFraction(Measured):
    """Fraction of the attainable roofline reached in the DRAM regime, against the ceilings of this run."""

    params = DecodeDRAM.params
    param_names = DecodeDRAM.param_names

    def setup(self, run, n, batch):
        self.point = suite.decode_point(run, "dram", n, batch)

    def track_roofline_fraction(self, run, n, batch):
        return suite.roofline_fraction(self.point)

    track_roofline_fraction.unit = "fraction of roof"
