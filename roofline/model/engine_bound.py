"""An engine's decode step, bounded and predicted from roofs measured in the same rounds: the rule, once.

Terms, each measured by the run (``roofline.measure.engine_decode``):

- ``bandwidth``: the DRAM roof (B/s), the suite's fastest honest read of a pool ≥ 4× the LLC;
- ``engine_peak``: the format's own arithmetic rate (FLOP/s), llama.cpp processing one prompt of
  :data:`~roofline.measure.engine_decode.PROMPT_TOKENS` tokens in one call: the same matmul path a
  decode step of that format runs, at a width where it is compute-bound. numpy's fp32 GEMM is no roof
  for Q8_0's and Q4_0's int8 dot products, nor for F16's widen-then-FMA;
- ``gemv_fraction``: the share of the DRAM roof the suite's own batch-1 GEMV reaches in the same
  rounds, what this machine's memory gives a plain bandwidth-bound kernel;
- ``overhead_s``: the engine's fixed cost per step (graph, threads, logits), a step of a model too
  small to read or compute anything (64 wide, one layer).

A step that reads ``nbytes`` and does ``flops``:

- bound = max(nbytes ÷ bandwidth, flops ÷ engine_peak): no step is faster (a fraction above 1.05
  means the bytes or a roof are wrong);
- predicted = nbytes ÷ (bandwidth × gemv_fraction) + flops ÷ engine_peak + overhead_s: the memory side
  at the efficiency a plain GEMV reaches, the compute side at the prompt's rate, the fixed cost on top.
  The three add, where the bound takes the larger: the same two cores issue a block's loads and its dot
  products in turn, with nothing to overlap them with, and llama.cpp builds and syncs each step's graph
  serially. On the EPYC Zen 4 the sum predicted F16 batch 8 within 6 % where the larger term was 88 % high
  (docs/engines.md has the table);
- the crossover is the batch where the two terms of the bound meet, weights ÷ bandwidth =
  batch × flops per sequence ÷ engine_peak (the KV read, a few percent here, left out).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The kernel path as asv records it (a number: asv keeps floats only); a row whose path changed reads between.
KERNEL_PATH_CODES = {"plain": 0.0, "CPU repack": 1.0, "AMX": 2.0}


@dataclass(frozen=True)
class EngineRoofs:
    """The roofs of one format's steps: B/s, FLOP/s, a fraction of the DRAM roof, seconds (None: unmeasured)."""

    bandwidth: float
    engine_peak: float | None
    gemv_fraction: float | None = None
    overhead_s: float | None = None

    def memory_s(self, nbytes: float) -> float:
        return nbytes / self.bandwidth

    def compute_s(self, flops: float) -> float | None:
        return None if not self.engine_peak else flops / self.engine_peak

    def bound_s(self, nbytes: float, flops: float) -> float:
        """No step reading ``nbytes`` and doing ``flops`` is faster (bytes alone where no engine roof was measured)."""
        return max(self.memory_s(nbytes), self.compute_s(flops) or 0.0)

    def bound_kind(self, nbytes: float, flops: float) -> str:
        compute = self.compute_s(flops)
        if compute is None:
            return "bandwidth (no engine roof)"
        return "compute" if compute > self.memory_s(nbytes) else "bandwidth"

    def predicted_s(self, nbytes: float, flops: float) -> float | None:
        """The step's time from the run's efficiencies; None where a term was not measured."""
        compute = self.compute_s(flops)
        if compute is None or not self.gemv_fraction or self.overhead_s is None:
            return None
        return self.memory_s(nbytes) / self.gemv_fraction + compute + self.overhead_s

    def crossover(self, weight_bytes: float, flops_per_sequence: float) -> float | None:
        """The batch where reading the weights takes as long as the batch's arithmetic."""
        if not self.engine_peak or flops_per_sequence <= 0:
            return None
        return self.memory_s(weight_bytes) * self.engine_peak / flops_per_sequence


def prompt_flops(layer_matmul_params: float, head_params: float, attention_flops: float, tokens: int) -> float:
    """A prompt of ``tokens`` in one call, logits of its last token only: every layer's matrices for each
    token, the output head once (llama.cpp computes only the rows it returns), and the attention."""
    return 2.0 * (layer_matmul_params * tokens + head_params) + attention_flops
