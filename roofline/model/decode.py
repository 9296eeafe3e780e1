"""The roofline of one decode step of a real LLM: step time, tokens/s, crossover batch, memory fit.

Per device, with tensor parallelism splitting weights, KV cache and FLOPs evenly over ``tp`` devices:

- bytes = the weights, read once per step, + every sequence's KV cache, read once;
- FLOPs = batch · (2 · weights one token multiplies by + attention over the kept context);
- step  = max(bytes / bandwidth, FLOPs / peak) + all-reduce bytes / interconnect (not overlapped).

A mixture of experts reads the experts its batch touches: under uniform routing a batch of b
tokens touches E·(1 − (1 − k/E)^b) of E experts per layer (k at batch 1, all E at large batch).
Activations, the embedding lookup and kernel launch latency are not counted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from ..errors import BadInput, positive, positive_int
from .arithmetic import ridge_point
from .hardware import Hardware
from .llm import INT4_GROUP_SIZE, ModelShape, bytes_per_kv_element, bytes_per_weight

Bound = Literal["bandwidth", "compute", "interconnect"]

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
    natural = {"fp32": "fp32", "fp8": "fp8"}.get(weight_dtype, "bf16")
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


@dataclass(frozen=True)
class DecodeSetup:
    """A model served on ``tp`` identical devices: dtypes, context length, interconnect.

    ``interconnect`` is each device's all-reduce bandwidth in bytes/s; None leaves
    communication out (and the notes say so when tp > 1).
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
    compute: str = field(init=False)
    notes: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        check_inputs(self.model, self.dtype, self.kv_dtype, self.context, self.tp, self.interconnect, self.group_size)
        compute, note = compute_dtype_for(self.hardware, self.dtype, self.compute_dtype)
        notes = [note] if note else []
        if self.model.sliding_window is not None and self.context > self.model.sliding_window:
            notes.append(
                f"{self.model.name} keeps the last {self.model.sliding_window} tokens of KV (sliding window), "
                f"not {self.context}"
            )
        if self.tp > 1 and self.interconnect is None:
            notes.append("all-reduce time not counted (no interconnect bandwidth given)")
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

    def comm_bytes(self, batch: float) -> float:
        """Ring all-reduce bytes one device sends per step: 2 per layer of batch · hidden activations."""
        if self.tp == 1:
            return 0.0
        activation = 4 if self.compute in ("fp32", "tf32") else 2
        size = batch * self.model.hidden * activation
        return 2 * self.model.layers * 2 * (self.tp - 1) / self.tp * size

    def memory_needed(self, batch: int) -> float:
        """Bytes one device holds: its share of the weights and of ``batch`` sequences' KV cache."""
        return self.weight_bytes_stored + batch * self.kv_bytes_per_sequence


# ---- one step ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One decode step at ``batch`` on one device of the group (all devices alike)."""

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
        }


def step(setup: DecodeSetup, batch: int) -> Step:
    """The roofline bound of one decode step of ``batch`` sequences at the setup's context."""
    positive_int("batch", batch)
    hw = setup.hardware
    weights = setup.weight_bytes_read(batch)
    kv = batch * setup.kv_bytes_per_sequence
    flops = batch * setup.flops_per_sequence
    memory_s = (weights + kv) / hw.bandwidth
    compute_s = flops / setup.peak
    comm_s = setup.comm_bytes(batch) / setup.interconnect if setup.interconnect else 0.0
    if comm_s > max(memory_s, compute_s):
        bound: Bound = "interconnect"
    else:
        bound = "compute" if compute_s >= memory_s else "bandwidth"
    needed = setup.memory_needed(batch)
    capacity = hw.memory_bytes
    return Step(
        batch=batch,
        bound=bound,
        step_s=max(memory_s, compute_s) + comm_s,
        memory_s=memory_s,
        compute_s=compute_s,
        comm_s=comm_s,
        weight_bytes=weights,
        kv_bytes=kv,
        flops=flops,
        memory_needed=needed,
        fits=None if capacity is None else needed <= capacity,
    )


# ---- where batching stops paying ----------------------------------------------------------------


@dataclass(frozen=True)
class Crossover:
    """Batches that mark the turn from memory-bound to compute- (or KV-) limited decoding.

    ``batch``: where weight amortization meets the throughput ceiling, min(peak/FLOPs, bandwidth/KV)
    tokens/s: the classic crossover when there is no KV cache, and smaller as context grows.
    ``compute_bound_from``: where the step itself turns compute-bound (None: never at this context,
    because each sequence's KV read outweighs its arithmetic); it grows with context wherever
    attention alone, at 2·heads / (kv_heads · KV bytes) FLOP/byte, is below the ridge (any GPU or TPU).
    ``kv_equals_weights``: where the KV bytes read equal the weight bytes.
    ``without_kv``: ``batch`` with no KV cache and no attention, the weights-only figure.
    """

    batch: float
    limited_by: Literal["compute", "kv"]
    ceiling_tokens_per_s: float
    compute_bound_from: float | None
    kv_equals_weights: float
    without_kv: float

    def as_dict(self) -> dict[str, object]:
        return {
            "batch": self.batch,
            "limited_by": self.limited_by,
            "ceiling_tokens_per_s": self.ceiling_tokens_per_s,
            "compute_bound_from": self.compute_bound_from,
            "kv_equals_weights": self.kv_equals_weights,
            "without_kv": self.without_kv,
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


def crossover(setup: DecodeSetup) -> Crossover:
    """The crossover batch with the KV cache included (all-reduce time left out)."""
    ridge = ridge_point(setup.hardware, setup.compute)  # FLOP per byte
    hw = setup.hardware
    flops_bytes = setup.flops_per_sequence / ridge  # a sequence's FLOPs, in bytes at the ridge
    kv = setup.kv_bytes_per_sequence
    limited_by: Literal["compute", "kv"] = "compute" if flops_bytes >= kv else "kv"
    excess = flops_bytes - kv
    no_attention = 2 * setup.model.matmul_params_per_token / setup.tp / ridge
    return Crossover(
        batch=_batch_where_weights_equal(setup, max(flops_bytes, kv)),
        limited_by=limited_by,
        ceiling_tokens_per_s=hw.bandwidth / max(flops_bytes, kv),
        compute_bound_from=_batch_where_weights_equal(setup, excess) if excess > 0 else None,
        kv_equals_weights=_batch_where_weights_equal(setup, kv),
        without_kv=_batch_where_weights_equal(setup, no_attention),
    )


# ---- memory -------------------------------------------------------------------------------------


def max_batch_that_fits(setup: DecodeSetup) -> int | None:
    """The largest batch whose weights and KV cache fit each device (0: not even the weights); None if
    the hardware's memory is unknown."""
    capacity = setup.hardware.memory_bytes
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
    capacity = setup.hardware.memory_bytes
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
    """Steps for several batches, the crossover, and the largest batch that fits."""

    setup: DecodeSetup
    steps: tuple[Step, ...]
    crossover: Crossover
    max_batch: int | None

    def as_dict(self) -> dict[str, object]:
        s, hw = self.setup, self.setup.hardware
        return {
            "model": s.model.as_dict(),
            "hardware": {
                "name": hw.name,
                "bandwidth": hw.bandwidth,
                "peak_flops": hw.peak(s.compute),
                "memory_bytes": hw.memory_bytes,
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
            "crossover": self.crossover.as_dict(),
            "max_batch_that_fits": self.max_batch,
            "steps": [st.as_dict() for st in self.steps],
            "notes": list(s.notes),
        }


def estimate(setup: DecodeSetup, batches: list[int]) -> DecodeEstimate:
    """The decode roofline of ``setup`` at each batch (memory fit reported, not enforced)."""
    if not batches:
        raise BadInput("no batch sizes given")
    return DecodeEstimate(
        setup=setup,
        steps=tuple(step(setup, b) for b in batches),
        crossover=crossover(setup),
        max_batch=max_batch_that_fits(setup),
    )


__all__ = [
    "Crossover",
    "DecodeEstimate",
    "DecodeSetup",
    "Step",
    "compute_dtype_for",
    "crossover",
    "estimate",
    "max_batch_that_fits",
    "require_fits",
    "check_inputs",
    "size_text",
    "step",
]
