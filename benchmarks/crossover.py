"""The crossover batch: observed (knee of a batch sweep) and predicted (measured ceilings)."""

from roofline.suite import harness as suite

from .common import Benchmark


class Crossover(Benchmark):
    """Where decode turns compute-bound on this machine, float32 weights."""

    def track_observed_crossover_batch(self):
        return suite.observed_crossover()

    track_observed_crossover_batch.unit = "batch"

    def track_predicted_crossover_batch(self):
        return suite.predicted_crossover()

    track_predicted_crossover_batch.unit = "batch"
