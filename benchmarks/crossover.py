"""The crossover batch: observed (knee of a batch sweep) and predicted (this run's ceilings)."""

from .common import Measured, suite


class Crossover(Measured):
    """Where decode turns compute-bound on this machine, float32 weights."""

    def setup(self, run):
        suite.require(run)

    def track_observed_crossover_batch(self, run):
        return suite.observed_crossover(run)

    track_observed_crossover_batch.unit = "batch"

    def track_predicted_crossover_batch(self, run):
        return suite.predicted_crossover(run)

    track_predicted_crossover_batch.unit = "batch"
