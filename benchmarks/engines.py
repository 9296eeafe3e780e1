"""Engines people decode with on CPUs, decoding a real model file here, held to this machine's bound.

Thin by design: the parameters here, everything else in :mod:`roofline.suite.harness` (``roofline decode
--measure --engine llama.cpp`` is the same measurement as a command; docs/engines.md says what it
measures). setup_cache writes the GGUF files once (cached with the weight pools) and times every
combination in rounds beside the roofs; without the ``engines`` extra every combination is skipped with
the reason.
"""

from .common import Absent, Benchmark, measured, suite


class LlamaCppDecode(Benchmark):
    """llama.cpp decoding a random-weight Llama GGUF per format and batch, against its bound and prediction."""

    params = (["F16", "Q8_0", "Q4_0"], [1, 2, 4, 8, 16, 32, 64])
    param_names = ("format", "batch")

    def setup_cache(self):
        return measured("engine_decode_grid", "llama.cpp", *self.params)

    setup_cache.timeout = 1800

    def setup(self, grid, fmt, batch):
        self.entry = suite.engine_entry(grid, fmt, batch)

    def optional(self, field):
        """A figure this combination may lack (the prediction of a compute-bound step): asv skips it then."""
        try:
            return suite.entry_value(self.entry, field)
        except NotImplementedError as exc:
            raise Absent(str(exc)) from None

    def track_tokens_per_s(self, grid, fmt, batch):
        return suite.grid_value(self.entry, "tokens_per_s")

    track_tokens_per_s.unit = "tokens/s"

    def per_format(self, field, batch):
        """A figure of the format, not the batch (kept at batch 1): asv skips it at the other batches."""
        try:
            return suite.format_value(self.entry, field, batch)
        except NotImplementedError as exc:
            raise Absent(str(exc)) from None

    def track_counter_tokens_per_s(self, grid, fmt, batch):
        return self.optional("counter_tokens_per_s")

    track_counter_tokens_per_s.unit = "tokens/s"

    def track_bound_tokens_per_s(self, grid, fmt, batch):
        return suite.grid_value(self.entry, "bound_tokens_per_s")

    track_bound_tokens_per_s.unit = "tokens/s"

    def track_predicted_tokens_per_s(self, grid, fmt, batch):
        return self.optional("predicted_tokens_per_s")

    track_predicted_tokens_per_s.unit = "tokens/s"

    def track_roofline_fraction(self, grid, fmt, batch):
        return suite.grid_value(self.entry, "fraction")

    track_roofline_fraction.unit = "fraction of bound"

    def track_kernel_path(self, grid, fmt, batch):
        """The kernels the weights ran on, as a number (asv keeps numbers): 0 plain, 1 CPU repack, 2 AMX."""
        return suite.grid_value(self.entry, "kernel_path_code")

    track_kernel_path.unit = "kernel path (0 plain, 1 CPU repack, 2 AMX)"

    def track_step_bytes(self, grid, fmt, batch):
        """The bytes a step reads (weights and KV), so a report from results knows a cache-sized file."""
        return suite.grid_value(self.entry, "bound_bytes")

    track_step_bytes.unit = "bytes"

    def track_effective_bandwidth(self, grid, fmt, batch):
        """The bytes a step reads ÷ its time (llama-bench's missing column)."""
        return suite.grid_value(self.entry, "effective_gbps")

    track_effective_bandwidth.unit = "GB/s"

    def track_engine_roof(self, grid, fmt, batch):
        """The format's own arithmetic rate, its prompt processed in one call: a format's figure, kept at batch 1."""
        return self.per_format("engine_roof_gflops", batch)

    track_engine_roof.unit = "GFLOP/s"

    def track_predicted_crossover_batch(self, grid, fmt, batch):
        """Where the format's decode turns compute-bound by its two roofs: a format's figure, kept at batch 1."""
        return self.per_format("predicted_crossover", batch)

    track_predicted_crossover_batch.unit = "batch"

    def track_observed_crossover_batch(self, grid, fmt, batch):
        """The knee of the format's measured batches: a format's figure, kept at batch 1."""
        return self.per_format("observed_crossover", batch)

    track_observed_crossover_batch.unit = "batch"
