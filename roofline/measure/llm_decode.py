"""Decode a real model on this machine: prefill a context, then time decode steps with the KV cache.

Two paths decode the same random-weight model (:mod:`.llm_build`): ``transformers`` (its
``*ForCausalLM`` with its default dynamic cache, as people decode with it) and ``lean``
(:mod:`.lean_llm`, plain torch on the same tensors with a static cache). Both run under
``torch.inference_mode``; each step feeds back the greedy token of the step before.

At each batch one sequence of ``context`` random tokens is prefilled and its keys and values
copied to every sequence of the batch (the decode step reads them all the same; prefilling every
sequence would cost the batch times as long on a CPU). Then ``warmup`` steps, then ``steps``
steps each timed on its own: the median and the spread. Before any timing the two paths are
checked once against each other and against a float64 run of the same network.

The roofs the bound divides by are not measured here: the caller gives them (a run's, or
:func:`roofline.suite.run.model_roofs`, the one way this machine's roofs are measured).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..errors import BadInput, KernelMismatch, positive_int
from ..host import import_torch
from ..model.hardware import Hardware
from ..model.llm import ModelShape
from ..model.llm_estimate import DecodeSetup, Step, beats_bound, bound_fraction, step
from .llm_build import build_model, check_memory, import_transformers
from .timing import Timing

#: The two ways the model is decoded.
PATHS = ("transformers", "lean")
#: Largest relative error (logits, against float64) each dtype may show before the run is refused.
TOLERANCE = {"bf16": 5e-2, "fp16": 1e-2, "fp32": 1e-4}
#: Tokens the check runs over, and the vocabulary rows its float64 reference computes.
CHECK_TOKENS = 8
CHECK_ROWS = 512


@dataclass(frozen=True)
class PathTiming:
    """One path at one batch: seconds of each timed decode step."""

    path: str
    batch: int
    timing: Timing

    @property
    def step_s(self) -> float:
        return self.timing.median

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.step_s

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "batch": self.batch,
            "step_s": self.step_s,
            "spread": self.timing.spread,
            "tokens_per_s": self.tokens_per_s,
            "steps_s": list(self.timing.per_call),
        }


@dataclass(frozen=True)
class ModelDecodeRun:
    """What one measurement did and found: both paths at each batch, and the check's errors."""

    shape: ModelShape
    dtype: str
    context: int
    warmup: int
    steps: int
    rows: tuple[PathTiming, ...]
    check_errors: dict[str, float]
    threads: int
    versions: str

    @property
    def mean_kv_tokens(self) -> int:
        """KV entries a timed step reads on average: the context, the warm-up, half the timed steps."""
        return self.context + self.warmup + (self.steps + 1) // 2

    def as_dict(self) -> dict[str, object]:
        return {
            "model": self.shape.name,
            "layers": self.shape.layers,
            "dtype": self.dtype,
            "context": self.context,
            "warmup": self.warmup,
            "steps": self.steps,
            "mean_kv_tokens": self.mean_kv_tokens,
            "threads": self.threads,
            "versions": self.versions,
            "check_errors": dict(self.check_errors),
            "rows": [r.as_dict() for r in self.rows],
        }


def _relative(a, b) -> float:
    return float((a.double() - b.double()).norm() / b.double().norm())


def check_paths(model, lean, dtype: str, seed: int = 0) -> dict[str, float]:
    """Both paths' logits against a float64 run of the lean path (first :data:`CHECK_ROWS` rows).

    transformers is the independent implementation: its distance catches a lean path that computes
    another network; the lean path's own distance catches rounding beyond the dtype's. KernelMismatch
    when either is further than :data:`TOLERANCE` allows: a wrong path times nothing.
    """
    torch = import_torch()
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (1, CHECK_TOKENS), generator=gen)
    rows = torch.arange(min(CHECK_ROWS, model.config.vocab_size))
    with torch.inference_mode():
        hf = model(ids, use_cache=False, logits_to_keep=1).logits[:, -1, rows]
        mine = lean.forward(ids, 0, lean.new_cache(1, CHECK_TOKENS))[:, rows]
        ref = lean.forward(ids, 0, lean.new_cache(1, CHECK_TOKENS, torch.float64), upcast=torch.float64, head_rows=rows)
    errors = {"transformers": _relative(hf, ref), "lean": _relative(mine, ref)}
    for path, err in errors.items():
        if not err <= TOLERANCE[dtype]:
            raise KernelMismatch(
                f"the {path} path's logits are off by {err:.3g} (relative) from the float64 run: the two paths "
                "do not compute the same network; nothing is timed"
            )
    return errors


def _timed(step, warmup: int, steps: int) -> Timing:
    for _ in range(warmup):
        step()
    per = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        per.append(time.perf_counter() - t0)
    return Timing(per_call=tuple(per), number=1, single_call=per[0])


def _time_transformers(model, prompt, batch: int, warmup: int, steps: int) -> Timing:
    torch = import_torch()
    from transformers import DynamicCache

    cache = DynamicCache(config=model.config)
    out = model(prompt, cache=cache, use_cache=True, logits_to_keep=1)
    cache.batch_repeat_interleave(batch)
    token = [out.logits[:, -1].argmax(-1, keepdim=True).expand(batch, 1).contiguous()]

    def step() -> None:
        logits = model(token[0], cache=cache, use_cache=True, logits_to_keep=1).logits
        token[0] = logits[:, -1].argmax(-1, keepdim=True)

    with torch.inference_mode():
        return _timed(step, warmup, steps)


def _time_lean(lean, prefilled, first, batch: int, context: int, warmup: int, steps: int) -> Timing:
    cache = lean.new_cache(batch, context + warmup + steps)
    for (k, v), (k1, v1) in zip(cache, prefilled, strict=True):
        k[:, :, :context] = k1[:, :, :context]
        v[:, :, :context] = v1[:, :, :context]
    state = {"token": first.expand(batch, 1).contiguous(), "pos": context}

    def step() -> None:
        logits = lean.forward(state["token"], state["pos"], cache)
        state["token"] = logits.argmax(-1, keepdim=True)
        state["pos"] += 1

    return _timed(step, warmup, steps)


def measure_model_decode(
    shape: ModelShape,
    batches: list[int],
    dtype: str = "bf16",
    context: int = 256,
    warmup: int = 2,
    steps: int = 7,
    seed: int = 0,
    paths: tuple[str, ...] = PATHS,
) -> ModelDecodeRun:
    """Build ``shape`` with random weights, check both paths, then time ``steps`` decode steps at each batch."""
    import_transformers()
    torch = import_torch()
    from .lean_llm import LeanModel

    for what, value in (("context", context), ("steps", steps)):
        positive_int(what, value)
    if warmup < 0:
        raise BadInput(f"warm-up steps must be ≥ 0, got {warmup}")
    unknown = set(paths) - set(PATHS)
    if unknown or not paths:
        raise BadInput(f"paths are {', '.join(PATHS)}; got {', '.join(paths) or 'none'}")
    batches = [positive_int("batch", b) for b in batches]
    length = context + warmup + steps
    check_memory(shape, dtype, max(batches), length)
    model = build_model(shape, dtype, length, seed)
    lean = LeanModel(model)
    errors = check_paths(model, lean, dtype, seed)
    gen = torch.Generator().manual_seed(seed + 1)
    prompt = torch.randint(0, shape.vocab, (1, context), generator=gen)
    rows = []
    with torch.inference_mode():
        prefilled = lean.new_cache(1, context)
        first = lean.forward(prompt, 0, prefilled).argmax(-1, keepdim=True)
        for batch in batches:
            for path in paths:
                if path == "transformers":
                    timing = _time_transformers(model, prompt, batch, warmup, steps)
                else:
                    timing = _time_lean(lean, prefilled, first, batch, context, warmup, steps)
                rows.append(PathTiming(path, batch, timing))
    import transformers

    return ModelDecodeRun(
        shape=shape,
        dtype=dtype,
        context=context,
        warmup=warmup,
        steps=steps,
        rows=tuple(rows),
        check_errors=errors,
        threads=torch.get_num_threads(),
        versions=f"torch {torch.__version__}, transformers {transformers.__version__}",
    )


@dataclass(frozen=True)
class MeasuredRow:
    """One path at one batch: the measured step, the bound of the same slice, bound ÷ measured."""

    path: str
    batch: int
    step_s: float
    spread: float
    bound: Step
    fraction: float

    @property
    def flagged(self) -> bool:
        return beats_bound(self.fraction)

    def as_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "batch": self.batch,
            "step_s": self.step_s,
            "spread": self.spread,
            "tokens_per_s": self.batch / self.step_s,
            "bound_step_s": self.bound.step_s,
            "bound_tokens_per_s": self.bound.tokens_per_s,
            "bound": self.bound.bound,
            "fraction": self.fraction,
            "beats_bound": self.flagged,
        }


def measured_setup(run: ModelDecodeRun, hardware: Hardware) -> DecodeSetup:
    """The bound's setup for what ``run`` timed: its slice, dtype (weights and KV) and mean KV length."""
    return DecodeSetup(run.shape, hardware, dtype=run.dtype, kv_dtype=run.dtype, context=run.mean_kv_tokens)


def hold_against_bound(run: ModelDecodeRun, hardware: Hardware) -> tuple[MeasuredRow, ...]:
    """Each measured row with the bound of the same slice on ``hardware`` (this machine's ceilings)."""
    setup = measured_setup(run, hardware)
    bounds = {b: step(setup, b) for b in {r.batch for r in run.rows}}
    return tuple(
        MeasuredRow(
            r.path,
            r.batch,
            r.step_s,
            r.timing.spread,
            bounds[r.batch],
            bound_fraction(bounds[r.batch].step_s, r.step_s),
        )
        for r in run.rows
    )
