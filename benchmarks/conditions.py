"""How the machine was while the run measured, and the sizes it used: recorded with the results.

A run measured under contention says so here (and in the report's first line): the share of CPU
time that was the suite's, and the reference kernel's drift from start to end.
"""

from .common import Measured, suite


class RunConditions(Measured):
    """The run's conditions (roofline.measure.contention) and the sizes that are no asv parameter."""

    directional = False  # facts about the run, neither better higher nor lower

    def setup(self, run):
        suite.require(run)

    def track_quietness(self, run):
        return suite.quietness(run)

    track_quietness.unit = "fraction of CPU time"

    def track_reference_drift(self, run):
        return suite.reference_drift(run)

    track_reference_drift.unit = "ratio"

    def track_blas_threads(self, run):
        return suite.blas_threads(run)

    track_blas_threads.unit = "threads"

    def track_sweep_n(self, run):
        return suite.sweep_n(run)

    track_sweep_n.unit = "n"

    def track_gemm_n(self, run):
        return suite.gemm_n(run)

    track_gemm_n.unit = "n"

    def track_llc_bytes(self, run):
        return suite.llc_bytes(run)

    track_llc_bytes.unit = "bytes"
