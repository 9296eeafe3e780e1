"""The roofline of one decode step of a real LLM: step time, tokens/s, crossover batch, memory fit.

Per device, with tensor parallelism splitting weights, KV cache and FLOPs evenly over ``tp`` devices:

- bytes = the weights, read once per step, + every sequence's KV cache, read once;
- FLOPs = batch · (2 · weights one token multiplies by + attention over the kept context);
- a step runs four phases one after another (the data depend on each other): the q/k/v/o
  projections, attention (the KV read), the MLP and the output head. Each phase is bound by its
  own max(bytes / bandwidth, FLOPs / peak), so the step is bound by their sum (``step_s``), which is
  never shorter than the whole-step max(Σ bytes / bandwidth, Σ FLOPs / peak) (``whole_step_s``);
- with ``tp`` > 1, two all-reduces per layer add latency + bytes / interconnect (not overlapped).

A request (``prompt``, ``output``) is a prefill of the prompt (the first token) and output − 1
decode steps at growing context. A mixture of experts reads the experts its batch touches: under
uniform routing a batch of b tokens touches E·(1 − (1 − k/E)^b) of E experts per layer (k at
batch 1, all E at large batch). Activations, the embedding lookup and kernel launch latency are not
counted.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Literal

from ..errors import BadInput, positive, positive_int
from .arithmetic import ridge_point
from .hardware import Hardware
from .llm import INT4_GROUP_SIZE, ModelShape, bytes_per_kv_element, bytes_per_weight, natural_compute

Bound = Literal["bandwidth", "compute", "interconnect"]

#: The phases of one step, in the order they run within a layer (the head after the last layer).
PHASES = ("qkv_o", "attention", "mlp", "head")


@dataclass(frozen=True)
class Interconnect:
    """A named device-to-device link: all-reduce bandwidth per direction and the latency of one all-reduce."""

    name: str
    bandwidth: float
    latency: float
    source: str


#: Named interconnects. ``latency`` is the fastest published small all-reduce on that link (a lower
#: bound on every all-reduce, whatever its size); ``bandwidth`` the per-direction link rate.
INTERCONNECTS: dict[str, Interconnect] = {
    i.name: i
    for i in (
        Interconnect(
            "nvlink3",
            300e9,
            3.7e-6,
            "A100 NVLink 3: 600 GB/s total, 300 per direction (A100 datasheet). No A100 small all-reduce below "
            "the H100 NVLink 4 figure (3.7 µs) was found, and NVLink 3 is not faster, so that figure is used",
        ),
        Interconnect(
            "nvlink4",
            450e9,
            3.7e-6,
            "H100/H200 NVLink 4: 900 GB/s total, 450 per direction (H100 datasheet); latency: 3.7 µs, the fastest "
            "custom all-reduce measured on H100 at tp 2, 4, 8 (5.7 µs at tp 8), "
            "https://github.com/sgl-project/sglang/pull/2904",
        ),
        Interconnect(
            "nvlink5",
            900e9,
            3.7e-6,
            "B200 NVLink 5: 1.8 TB/s total, 900 GB/s per direction (HGX B200); latency: the NVLink 4 figure, "
            "no faster one published",
        ),
        Interconnect(
            "pcie4",
            32e9,
            4.0e-6,
            "PCIe 4.0 x16: 32 GB/s per direction (16 GT/s × 16 lanes, 128b/130b); latency: 4.0 µs, a one-shot "
            "all-reduce of 4 KB over PCIe peer-to-peer inside a CUDA graph, "
            "https://github.com/haohervchb/sglang-V100/pull/2",
        ),
        Interconnect(
            "pcie5",
            64e9,
            4.0e-6,
            "PCIe 5.0 x16: 64 GB/s per direction (32 GT/s × 16 lanes); latency: the PCIe figure above",
        ),
    )
}


def lookup_interconnect(name: str) -> Interconnect:
    """A named interconnect (case and separators ignored); BadInput listing the names."""
    key = "".join(ch for ch in name.lower() if ch.isalnum())
    if key in INTERCONNECTS:
        return INTERCONNECTS[key]
    raise BadInput(f"unknown interconnect {name!r} (use GB/s or one of {', '.join(INTERCONNECTS)})")


#: The compute roofs tried, in order, when the default one is missing from a Hardware.
COMPUTE_FALLBACK = ("bf16", "fp16", "fp32")


def compute_dtype_for(hw: Hardware, weight_dtype: str, requested: str | None = None) -> tuple[str, str | None]:
    """The dtype whose peak bounds the arithmetic, and a note when it is not the natural one.

    Rule: fp32 weights compute in fp32; fp8 weights in fp8 where the hardware has an fp8 peak;
    everything else (bf16, fp16, and weight-only int8/int4) in bf16. When that peak is missing
    the first of bf16, fp16, fp32 the hardware has is used, and the note says so. An explicit
    ``requested`` dtype (e.g. "int8" for int8 × int8 arithmetic) must exist on the hardware.
    """
    if requested is not None:
        hw.peak(requested)  # BadInput naming the known dtypes
        return requested, None
    natural = natural_compute(weight_dtype)
    if natural in hw.peak_flops:
        return natural, None
    for dtype in COMPUTE_FALLBACK:
        if dtype in hw.peak_flops:
            return dtype, f"{hw.name} has no {natural} peak: the {dtype} roof is used for the arithmetic"
    tried = ", ".join(dict.fromkeys((natural, *COMPUTE_FALLBACK)))
    known = ", ".join(sorted(hw.peak_flops))
    raise BadInput(f"{hw.name} has none of the peaks {tried} (known: {known}); give a compute dtype")


def check_inputs(
    model: ModelShape,
    dtype: str,
    kv_dtype: str,
    context: int,
    tp: int,
    interconnect: float | None = None,
    group_size: int = INT4_GROUP_SIZE,
    allreduce_latency: float | None = None,
    reserve: float | None = None,
) -> None:
    """BadInput on anything a DecodeSetup refuses that does not depend on the hardware."""
    positive_int("context", context)
    positive_int("tensor parallel degree", tp)
    if model.kv_heads % tp:
        raise BadInput(f"tensor parallel degree {tp} does not divide {model.name}'s {model.kv_heads} KV heads")
    bytes_per_weight(dtype, group_size)
    bytes_per_kv_element(kv_dtype)
    if interconnect is not None:
        positive("interconnect bandwidth", interconnect)
    for what, value in (("all-reduce latency", allreduce_latency), ("memory reserve", reserve)):
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value >= 0)
        ):
            raise BadInput(f"{what} must be finite and ≥ 0, got {value!r}")


@dataclass(frozen=True)
class DecodeSetup:
    """A model served on ``tp`` identical devices: dtypes, context length, interconnect.

    ``dtype`` is a plain dtype or a quantization format (:data:`roofline.model.llm.QUANT_FORMATS`).
    ``interconnect`` is each device's all-reduce bandwidth in bytes/s; None leaves the bytes out.
    ``allreduce_latency`` (s) is the fixed time of one all-reduce; None counts none. Both only
    matter when tp > 1, and the notes say what is left out. ``reserve`` (bytes) is what the
    runtime keeps on each device beyond the driver's reservation; None: the hardware's
    ``memory_reserved`` only.
    """

    model: ModelShape
    hardware: Hardware
    dtype: str = "bf16"
    kv_dtype: str = "bf16"
    context: int = 4096
    tp: int = 1
    compute_dtype: str | None = None
    interconnect: float | None = None
    group_size: int = INT4_GROUP_SIZE
    allreduce_latency: float | None = None
    reserve: float | None = None
    compute: str = field(init=False)
    notes: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        check_inputs(
            self.model,
            self.dtype,
            self.kv_dtype,
            self.context,
            self.tp,
            self.interconnect,
            self.group_size,
            self.allreduce_latency,
            self.reserve,
        )
        compute, note = compute_dtype_for(self.hardware, self.dtype, self.compute_dtype)
        notes = [note] if note else []
        if self.model.sliding_window is not None and self.context > self.model.sliding_window:
            notes.append(
                f"{self.model.name} keeps the last {self.model.sliding_window} tokens of KV (sliding window), "
                f"not {self.context}"
            )
        if self.tp > 1 and self.interconnect is None and self.allreduce_latency is None:
            notes.append("all-reduce time not counted (no interconnect given)")
        elif self.tp > 1 and self.interconnect is None:
            notes.append("all-reduce bytes not counted (no interconnect bandwidth given), only its latency")
        elif self.tp > 1 and self.allreduce_latency is None:
            notes.append("all-reduce latency not counted (give --allreduce-latency or a named interconnect)")
        elif self.tp == 1 and (self.interconnect is not None or self.allreduce_latency is not None):
            notes.append("one device: no all-reduce, the interconnect is not used")
        capacity = self.hardware.memory_bytes
        if capacity is not None and self.reserved_bytes >= capacity:
            raise BadInput(
                f"memory reserve {size_text(self.reserved_bytes)} leaves nothing of "
                f"{self.hardware.name}'s {size_text(capacity)}"
            )
        if self.model.experts > 1:
            notes.append(
                f"{self.model.experts} experts, {self.model.experts_per_token} per token: a batch reads the experts "
                "it touches under uniform routing"
            )
        object.__setattr__(self, "compute", compute)
        object.__setattr__(self, "notes", tuple(notes))

    # ---- sizes, per device -----------------------------------------------------------------

    @property
    def bytes_per_weight(self) -> float:
        return bytes_per_weight(self.dtype, self.group_size)

    @property
    def bytes_per_kv(self) -> float:
        return bytes_per_kv_element(self.kv_dtype)

    @property
    def peak(self) -> float:
        """The compute roof of one device, FLOP/s."""
        return self.hardware.peak(self.compute)

    @property
    def reserved_bytes(self) -> float:
        """Bytes of each device a program cannot use: the driver's reservation + the runtime's."""
        return self.hardware.memory_reserved + (self.reserve or 0.0)

    @property
    def memory_capacity(self) -> float | None:
        """Bytes of each device the weights and KV cache may fill (None: unknown)."""
        capacity = self.hardware.memory_bytes
        return None if capacity is None else capacity - self.reserved_bytes

    @property
    def kv_tokens(self) -> int:
        return self.model.kv_tokens(self.context)

    @property
    def kv_bytes_per_token(self) -> float:
        """KV-cache bytes one token adds, over all devices."""
        return self.model.kv_bytes_per_token(self.bytes_per_kv)

    @property
    def kv_bytes_per_sequence(self) -> float:
        """KV-cache bytes one sequence keeps (and reads each step) on one device."""
        return self.kv_bytes_per_token * self.kv_tokens / self.tp

    @property
    def weight_bytes_stored(self) -> float:
        """Every parameter, on one device."""
        return self.model.params_total * self.bytes_per_weight / self.tp

    @property
    def flops_per_sequence(self) -> float:
        """FLOPs of one token of one sequence, on one device."""
        m = self.model
        return (2 * m.matmul_params_per_token + m.attention_flops_per_token(self.context)) / self.tp

    def experts_touched(self, batch: float) -> float:
        """Expected distinct experts per layer a batch routes to (uniform routing); 1 for a dense model."""
        m = self.model
        if m.experts == 1:
            return 1.0
        return m.experts * (1 - (1 - m.experts_per_token / m.experts) ** batch)

    def weight_bytes_read(self, batch: float) -> float:
        """Weight bytes one step reads on one device."""
        return self.model.params_read(self.experts_touched(batch)) * self.bytes_per_weight / self.tp

    @property
    def allreduces(self) -> int:
        """All-reduces per step (or per prefill): 2 per layer (after attention, after the MLP) when tp > 1."""
        return 0 if self.tp == 1 else 2 * self.model.layers

    def comm_bytes(self, batch: float) -> float:
        """Ring all-reduce bytes one device sends per step: 2 per layer of batch · hidden activations."""
        if self.tp == 1:
            return 0.0
        activation = 4 if self.compute in ("fp32", "tf32") else 2
        size = batch * self.model.hidden * activation
        return self.allreduces * 2 * (self.tp - 1) / self.tp * size

    def comm_s(self, tokens: float) -> float:
        """All-reduce time for ``tokens`` tokens of activations: latencies + bytes / interconnect."""
        latency = self.allreduces * (self.allreduce_latency or 0.0)
        return latency + (self.comm_bytes(tokens) / self.interconnect if self.interconnect else 0.0)

    def memory_needed(self, batch: int) -> float:
        """Bytes one device holds: its share of the weights and of ``batch`` sequences' KV cache."""
        return self.weight_bytes_stored + batch * self.kv_bytes_per_sequence


# ---- one step ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """One phase of a step on one device: its bytes and FLOPs, each bound on its own."""

    name: str
    bytes: float
    flops: float
    memory_s: float
    compute_s: float

    @property
    def time_s(self) -> float:
        return max(self.memory_s, self.compute_s)

    @property
    def bound(self) -> Literal["bandwidth", "compute"]:
        return "compute" if self.compute_s >= self.memory_s else "bandwidth"

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "bytes": self.bytes,
            "flops": self.flops,
            "memory_s": self.memory_s,
            "compute_s": self.compute_s,
            "time_s": self.time_s,
            "bound": self.bound,
        }


def phases(
    setup: DecodeSetup, tokens: float, heads: float, kv_bytes: float, attention_flops: float
) -> tuple[Phase, ...]:
    """The four phases on one device when ``tokens`` tokens pass the layers and ``heads`` tokens the output head.

    The weights a phase reads follow the experts ``tokens`` touch; ``kv_bytes`` and
    ``attention_flops`` are the attention phase's (already per device).
    """
    m, hw = setup.model, setup.hardware
    per_device = setup.bytes_per_weight / setup.tp
    read = m.phase_params(setup.experts_touched(tokens))
    matmul = m.phase_matmul_params
    nbytes = {"qkv_o": read["qkv_o"] * per_device, "attention": kv_bytes, "mlp": read["mlp"] * per_device}
    nbytes["head"] = read["head"] * per_device
    flops = {
        "qkv_o": tokens * 2 * matmul["qkv_o"] / setup.tp,
        "attention": attention_flops,
        "mlp": tokens * 2 * matmul["mlp"] / setup.tp,
        "head": heads * 2 * matmul["head"] / setup.tp,
    }
    return tuple(Phase(p, nbytes[p], flops[p], nbytes[p] / hw.bandwidth, flops[p] / setup.peak) for p in PHASES)


def decode_phases(setup: DecodeSetup, batch: float, kv_tokens: float) -> tuple[Phase, ...]:
    """The phases of one decode step of ``batch`` sequences that each read ``kv_tokens`` KV entries."""
    m = setup.model
    kv = batch * setup.kv_bytes_per_token * kv_tokens / setup.tp
    attention = batch * 4 * m.layers * m.heads * m.head_dim * kv_tokens / setup.tp
    return phases(setup, batch, batch, kv, attention)


@dataclass(frozen=True)
class Step:
    """One decode step at ``batch`` on one device of the group (all devices alike).

    ``step_s`` is the per-phase bound (Σ of each phase's own max, + all-reduce time);
    ``whole_step_s`` the whole-step max(bytes / bandwidth, FLOPs / peak) + all-reduce time,
    which is never longer. ``bound`` classifies the whole step; ``binding_phase`` is the phase
    that takes longest.
    """

    batch: int
    bound: Bound
    step_s: float
    memory_s: float
    compute_s: float
    comm_s: float
    weight_bytes: float
    kv_bytes: float
    flops: float
    memory_needed: float
    fits: bool | None
    phases: tuple[Phase, ...] = ()

    @property
    def whole_step_s(self) -> float:
        return max(self.memory_s, self.compute_s) + self.comm_s

    @property
    def binding_phase(self) -> Phase:
        return max(self.phases, key=lambda p: p.time_s)

    @property
    def tokens_per_s_per_sequence(self) -> float:
        return 1 / self.step_s

    @property
    def tokens_per_s(self) -> float:
        """Tokens per second from the whole tensor-parallel group (batch per step)."""
        return self.batch / self.step_s

    @property
    def weight_share(self) -> float:
        """Fraction of the bytes moved that are weights (the rest is KV cache)."""
        return self.weight_bytes / (self.weight_bytes + self.kv_bytes)

    @property
    def kv_share(self) -> float:
        return self.kv_bytes / (self.weight_bytes + self.kv_bytes)

    def as_dict(self) -> dict[str, object]:
        return {
            "batch": self.batch,
            "bound": self.bound,
            "step_s": self.step_s,
            "memory_s": self.memory_s,
            "compute_s": self.compute_s,
            "comm_s": self.comm_s,
            "tokens_per_s_per_sequence": self.tokens_per_s_per_sequence,
            "tokens_per_s": self.tokens_per_s,
            "weight_bytes": self.weight_bytes,
            "kv_bytes": self.kv_bytes,
            "weight_share": self.weight_share,
            "kv_share": self.kv_share,
            "flops": self.flops,
            "memory_needed_bytes": self.memory_needed,
            "fits": self.fits,
            "whole_step_s": self.whole_step_s,
            "binding_phase": self.binding_phase.name,
            "phases": [p.as_dict() for p in self.phases],
        }


def step(setup: DecodeSetup, batch: int) -> Step:
    """The roofline bound of one decode step of ``batch`` sequences at the setup's context."""
    positive_int("batch", batch)
    return _step_at(setup, batch, setup.kv_tokens)


def _step_at(setup: DecodeSetup, batch: int, kv_tokens: float) -> Step:
    """A decode step whose sequences each read ``kv_tokens`` KV entries (a mean over steps may be fractional)."""
    hw = setup.hardware
    parts = decode_phases(setup, batch, kv_tokens)
    weights = setup.weight_bytes_read(batch)
    kv = parts[PHASES.index("attention")].bytes
    flops = sum(p.flops for p in parts)
    memory_s = (weights + kv) / hw.bandwidth
    compute_s = flops / setup.peak
    comm_s = setup.comm_s(batch)
    if comm_s > max(memory_s, compute_s):
        bound: Bound = "interconnect"
    else:
        bound = "compute" if compute_s >= memory_s else "bandwidth"
    needed = setup.memory_needed(batch)
    capacity = setup.memory_capacity
    return Step(
        batch=batch,
        bound=bound,
        step_s=sum(p.time_s for p in parts) + comm_s,
        memory_s=memory_s,
        compute_s=compute_s,
        comm_s=comm_s,
        weight_bytes=weights,
        kv_bytes=kv,
        flops=flops,
        memory_needed=needed,
        fits=None if capacity is None else needed <= capacity,
        phases=parts,
    )


# ---- a request: prefill, then decode steps ------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """``batch`` requests of ``prompt`` tokens in and ``output`` tokens out, on one device of the group.

    The prefill (compute-bound at any real prompt) gives the first token: ``ttft_s``. The other
    output − 1 tokens are decode steps at context prompt + 1 … prompt + output − 1, whose mean
    is ``step_mean_s`` (exact: every phase is linear in the KV entries read). ``tokens_per_s``
    counts output tokens over the end-to-end time, as throughput benchmarks do;
    ``decode_tokens_per_s`` is one sequence's rate over the decode steps only (1 / mean step).
    """

    batch: int
    prompt: int
    output: int
    ttft_s: float
    prefill: tuple[Phase, ...]
    prefill_comm_s: float
    step_mean_s: float | None
    fits: bool | None

    @property
    def decode_steps(self) -> int:
        return self.output - 1

    @property
    def e2e_s(self) -> float:
        return self.ttft_s + self.decode_steps * (self.step_mean_s or 0.0)

    @property
    def tokens_per_s(self) -> float:
        """Output tokens per second of the whole group over the end-to-end time."""
        return self.batch * self.output / self.e2e_s

    @property
    def decode_tokens_per_s(self) -> float | None:
        """One sequence's tokens per second over the decode steps (None with a single output token)."""
        return None if self.step_mean_s is None else 1 / self.step_mean_s

    def as_dict(self) -> dict[str, object]:
        return {
            "batch": self.batch,
            "prompt": self.prompt,
            "output": self.output,
            "ttft_s": self.ttft_s,
            "prefill_binding_phase": max(self.prefill, key=lambda p: p.time_s).name,
            "prefill_phases": [p.as_dict() for p in self.prefill],
            "prefill_comm_s": self.prefill_comm_s,
            "decode_steps": self.decode_steps,
            "step_mean_s": self.step_mean_s,
            "e2e_s": self.e2e_s,
            "tokens_per_s": self.tokens_per_s,
            "decode_tokens_per_s": self.decode_tokens_per_s,
            "fits": self.fits,
        }


def request(setup: DecodeSetup, batch: int, prompt: int, output: int) -> Request:
    """The bound of ``batch`` requests of ``prompt`` tokens in, ``output`` out (the KV cache grows from prompt).

    Prefill: every prompt token passes the layers (the experts they touch are read), only the last
    one per sequence the output head; attention is causal (token t attends to min(t, window)
    entries) and writes the prompt's KV once. Memory fit is checked at the setup's context.
    """
    for what, value in (("batch", batch), ("prompt", prompt), ("output", output)):
        positive_int(what, value)
    m = setup.model
    tokens = batch * prompt
    kv_written = tokens * setup.kv_bytes_per_token / setup.tp
    pairs = batch * m.kv_tokens_sum(1, prompt)
    prefill = phases(setup, tokens, batch, kv_written, pairs * 4 * m.layers * m.heads * m.head_dim / setup.tp)
    prefill_comm = setup.comm_s(tokens)
    steps = output - 1
    mean = None
    if steps:
        mean_kv = m.kv_tokens_sum(prompt + 1, prompt + steps) / steps
        mean = _step_at(setup, batch, mean_kv).step_s
    capacity = setup.memory_capacity
    return Request(
        batch=batch,
        prompt=prompt,
        output=output,
        ttft_s=sum(p.time_s for p in prefill) + prefill_comm,
        prefill=prefill,
        prefill_comm_s=prefill_comm,
        step_mean_s=mean,
        fits=None if capacity is None else setup.memory_needed(batch) <= capacity,
    )


# ---- where batching stops paying ----------------------------------------------------------------


@dataclass(frozen=True)
class Batching:
    """The batches that mark where batching a decode step stops paying, one name each.

    ``crossover``: the crossover batch as everywhere in roofline, weights only (no KV cache, no
    attention): peak / bandwidth × bytes per weight / 2, 296 for an H100 in bf16.
    ``saturation``: where weight amortization meets the throughput ceiling min(peak / FLOPs,
    bandwidth / KV bytes) tokens/s with the KV cache included; the crossover when there is no KV cache,
    smaller as context grows (28 for Llama-3-8B on an H100 at context 4096).
    ``compute_bound_from``: where the step itself turns compute-bound (None: never at this context,
    because each sequence's KV read outweighs its arithmetic); it grows with context wherever
    attention alone, at 2·heads / (kv_heads · KV bytes) FLOP/byte, is below the ridge (any GPU or TPU).
    ``kv_equals_weights``: the KV-versus-weights balance, where the KV bytes read equal the weight bytes.
    """

    crossover: float
    saturation: float
    limited_by: Literal["compute", "kv"]
    ceiling_tokens_per_s: float
    compute_bound_from: float | None
    kv_equals_weights: float

    def as_dict(self) -> dict[str, object]:
        return {
            "crossover": self.crossover,
            "saturation": self.saturation,
            "limited_by": self.limited_by,
            "ceiling_tokens_per_s": self.ceiling_tokens_per_s,
            "compute_bound_from": self.compute_bound_from,
            "kv_equals_weights": self.kv_equals_weights,
        }


def _batch_where_weights_equal(setup: DecodeSetup, per_sequence: float) -> float:
    """The real batch b > 0 at which weight_bytes_read(b) = b · per_sequence (per_sequence > 0).

    weight_bytes_read(b) / b falls as b grows, so there is one root: closed form for a dense
    model, bisection for a mixture of experts.
    """
    lo = setup.weight_bytes_read(0) / per_sequence
    if setup.model.experts == 1:
        return lo
    hi = setup.weight_bytes_read(math.inf) / per_sequence
    for _ in range(200):
        mid = (lo + hi) / 2
        if setup.weight_bytes_read(mid) > mid * per_sequence:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2


def batching(setup: DecodeSetup) -> Batching:
    """The crossover, the saturation batch with the KV cache, and the other turns (all-reduce time left out)."""
    ridge = ridge_point(setup.hardware, setup.compute)  # FLOP per byte
    hw = setup.hardware
    flops_bytes = setup.flops_per_sequence / ridge  # a sequence's FLOPs, in bytes at the ridge
    kv = setup.kv_bytes_per_sequence
    limited_by: Literal["compute", "kv"] = "compute" if flops_bytes >= kv else "kv"
    excess = flops_bytes - kv
    no_attention = 2 * setup.model.matmul_params_per_token / setup.tp / ridge
    return Batching(
        crossover=_batch_where_weights_equal(setup, no_attention),
        saturation=_batch_where_weights_equal(setup, max(flops_bytes, kv)),
        limited_by=limited_by,
        ceiling_tokens_per_s=hw.bandwidth / max(flops_bytes, kv),
        compute_bound_from=_batch_where_weights_equal(setup, excess) if excess > 0 else None,
        kv_equals_weights=_batch_where_weights_equal(setup, kv),
    )


# ---- memory -------------------------------------------------------------------------------------


def max_batch_that_fits(setup: DecodeSetup) -> int | None:
    """The largest batch whose weights and KV cache fit each device (0: not even the weights); None if
    the hardware's memory is unknown."""
    capacity = setup.memory_capacity
    if capacity is None:
        return None
    room = capacity - setup.weight_bytes_stored
    if room < setup.kv_bytes_per_sequence:
        return 0
    n = math.floor(room / setup.kv_bytes_per_sequence)
    while setup.memory_needed(n + 1) <= capacity:
        n += 1
    while n > 0 and setup.memory_needed(n) > capacity:
        n -= 1
    return n


def size_text(nbytes: float) -> str:
    """Bytes with an SI prefix, three significant figures: '141 GB', '671 MB'."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if nbytes >= scale:
            return f"{nbytes / scale:.3g} {prefix}B"
    return f"{nbytes:.3g} B"


def require_fits(setup: DecodeSetup, batches: list[int]) -> None:
    """BadInput, naming the largest batch that fits, when any of ``batches`` does not fit in memory."""
    capacity = setup.memory_capacity
    if capacity is None:
        return
    too_big = [b for b in batches if setup.memory_needed(b) > capacity]
    if not too_big:
        return
    m, hw = setup.model, setup.hardware
    where = (
        f"{setup.tp} × {hw.name} ({size_text(capacity)} each)" if setup.tp > 1 else f"{hw.name} ({size_text(capacity)})"
    )
    fit = max_batch_that_fits(setup)
    if fit == 0:
        raise BadInput(
            f"{m.name} does not fit on {where} at context {setup.context}: {setup.dtype} weights need "
            f"{size_text(setup.weight_bytes_stored)} per device plus {size_text(setup.kv_bytes_per_sequence)} "
            "of KV per sequence, so no batch fits (raise --tp or use a smaller --dtype)"
        )
    b = too_big[0]
    names = ("batch " if len(too_big) == 1 else "batches ") + ", ".join(str(x) for x in too_big)
    verb = "does" if len(too_big) == 1 else "do"
    raise BadInput(
        f"{names} {verb} not fit on {where} at context {setup.context}: batch {b} needs "
        f"{size_text(setup.memory_needed(b))} per device (weights {size_text(setup.weight_bytes_stored)} + KV "
        f"{size_text(b * setup.kv_bytes_per_sequence)}); the largest batch that fits is {fit}"
    )


# ---- everything at once -------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodeEstimate:
    """Steps for several batches, where batching stops paying, the largest batch that fits, requests if asked."""

    setup: DecodeSetup
    steps: tuple[Step, ...]
    batching: Batching
    max_batch: int | None
    requests: tuple[Request, ...] = ()

    def as_dict(self) -> dict[str, object]:
        s, hw = self.setup, self.setup.hardware
        return {
            "model": s.model.as_dict(),
            "hardware": {
                "name": hw.name,
                "bandwidth": hw.bandwidth,
                "peak_flops": hw.peak(s.compute),
                "memory_bytes": hw.memory_bytes,
                "memory_reserved_bytes": hw.memory_reserved,
                "source": hw.source,
            },
            "devices": s.tp,
            "dtype": s.dtype,
            "kv_dtype": s.kv_dtype,
            "compute_dtype": s.compute,
            "bytes_per_weight": s.bytes_per_weight,
            "context": s.context,
            "kv_tokens": s.kv_tokens,
            "kv_bytes_per_token": s.kv_bytes_per_token,
            "kv_bytes_per_sequence_per_device": s.kv_bytes_per_sequence,
            "weight_bytes_per_device": s.weight_bytes_stored,
            "interconnect_bandwidth": s.interconnect,
            "allreduce_latency_s": s.allreduce_latency,
            "allreduces_per_step": s.allreduces,
            "memory_capacity_bytes": s.memory_capacity,
            "batching": self.batching.as_dict(),
            "max_batch_that_fits": self.max_batch,
            "steps": [st.as_dict() for st in self.steps],
            "requests": [r.as_dict() for r in self.requests],
            "notes": list(s.notes),
        }


def estimate(
    setup: DecodeSetup, batches: list[int], prompt: int | None = None, output: int | None = None
) -> DecodeEstimate:
    """The decode roofline of ``setup`` at each batch (memory fit reported, not enforced).

    With ``prompt`` and ``output`` (both or neither) each batch is also a :class:`Request`.
    """
    if not batches:
        raise BadInput("no batch sizes given")
    if (prompt is None) != (output is None):
        raise BadInput("prompt and output go together: give both or neither")
    return DecodeEstimate(
        setup=setup,
        steps=tuple(step(setup, b) for b in batches),
        batching=batching(setup),
        max_batch=max_batch_that_fits(setup),
        requests=() if prompt is None else tuple(request(setup, b, prompt, output) for b in batches),
    )


# ---- a measured step held against its bound ----------------------------------------------------

#: bound ÷ measured is ≤ 1 by nature (a bound is never beaten); above this a measurement beat its bound,
#: which is a bug in the model or in the ceilings, not a fast machine.
BOUND_SLACK = 1.05


def bound_fraction(bound_s: float, measured_s: float) -> float:
    """Bound time ÷ measured time of one step: the fraction of the roofline a measured step reaches."""
    return positive("bound time", bound_s) / positive("measured time", measured_s)


def beats_bound(fraction: float) -> bool:
    """A measured step faster than its bound by more than :data:`BOUND_SLACK` (flag it, never report it as speed)."""
    return fraction > BOUND_SLACK


__all__ = [
    "BOUND_SLACK",
    "beats_bound",
    "bound_fraction",
    "Batching",
    "DecodeEstimate",
    "DecodeSetup",
    "INTERCONNECTS",
    "Interconnect",
    "PHASES",
    "Phase",
    "Request",
    "Step",
    "decode_phases",
    "lookup_interconnect",
    "phases",
    "request",
    "compute_dtype_for",
    "batching",
    "estimate",
    "max_batch_that_fits",
    "require_fits",
    "check_inputs",
    "size_text",
    "step",
]
