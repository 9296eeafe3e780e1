"""A real model decoded on this machine: a Llama-3-8B slice built by transformers with random weights.

Thin by design: the batch here, everything else in :mod:`roofline.suite.harness`. setup_cache builds the
model once and measures every batch; a batch whose bound alone would overrun make bench's budget here,
or a machine without torch and transformers, is recorded as skipped with the reason.

``roofline decode --measure`` decodes the same way on roofs measured the same way, but it is not the same
measurement, on purpose: it prefills a context of 256 (here 32) and times 7 steps after 2 warm-ups (here 3
after 1), and its roofs are measured then (:func:`roofline.suite.run.model_roofs`) where this class divides
by the asv run's own (docs/models.md, "--measure beside models.ModelDecode").
"""

from .common import Benchmark, measured, suite


class ModelDecode(Benchmark):
    """transformers and the lean path decoding the slice in bf16, against its bound (``roofline decode --measure``)."""

    params = ([1, 8, 64],)
    param_names = ("batch",)

    def setup_cache(self):
        return measured("model_decode_grid", self.params[0])

    setup_cache.timeout = 900

    def setup(self, grid, batch):
        self.entry = suite.model_entry(grid, batch)

    def track_tokens_per_s(self, grid, batch):
        return suite.grid_value(self.entry, "transformers_tokens_per_s")

    track_tokens_per_s.unit = "tokens/s"

    def track_lean_tokens_per_s(self, grid, batch):
        return suite.grid_value(self.entry, "lean_tokens_per_s")

    track_lean_tokens_per_s.unit = "tokens/s"

    def track_bound_tokens_per_s(self, grid, batch):
        return suite.grid_value(self.entry, "bound_tokens_per_s")

    track_bound_tokens_per_s.unit = "tokens/s"

    def track_roofline_fraction(self, grid, batch):
        return suite.grid_value(self.entry, "transformers_fraction")

    track_roofline_fraction.unit = "fraction of bound"
