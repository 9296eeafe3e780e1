"""An engine decoding a real GGUF here, held to the bound from its run's roofs and predicted from them.

In each of ``rounds`` rounds, one after another: this machine's roofs (a turn of the roof rounds the caller
gives, :class:`RoofTimer`: the run's entry point, :func:`roofline.suite.run.engine_roofs`, the ``read``
bandwidth kernel and the fp32 GEMM; none where the asv run this belongs to measured them already, in its own
rounds, and its roofs are given: the roofs the report prints), then every
(format, batch) on the engine (a
fresh session: load, prefill, ``warmup`` steps, ``steps`` timed steps; the formats' order turns
from round to round), then the suite's own batch-1 decode step (numpy's y = W·x over a pool ≥ 4×
the LLC, :func:`~.numpy_step.decode_step`) at the model's width. Every figure pools its rounds, so
a slow minute of a shared machine moves one round, not a ratio. The engine runs in a worker process
(:mod:`.engine_worker`): a crash is that row's failure, and a format whose default kernels crashed here
goes on with the engine's plain kernels (the row says so, and which kernels each row ran).

The bound and the prediction follow :mod:`roofline.model.engine_bound`: ``roofline decode`` counts a step's
bytes and FLOPs (same model, format, KV length); the DRAM roof, each format's engine roof (its prompt in one
call), the suite's batch-1 GEMV fraction and the engine's fixed cost per step, all of the same rounds, divide them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Protocol

from ..errors import BadInput, KernelMismatch, positive_int
from ..host import blas_threads, cpu_count, total_memory_bytes
from ..model.arithmetic import gemm_intensity, roofline_fraction
from ..model.engine_bound import KERNEL_PATH_CODES, EngineRoofs, prompt_flops
from ..model.gguf_layout import GGUF_FORMATS, gguf_format, step_bytes
from ..model.hardware import Hardware
from ..model.hierarchy import POOL_LLC_MULTIPLE
from ..model.knee import fit_knee
from ..model.llm import ModelShape, custom_model
from ..model.llm_estimate import DecodeSetup, Step, beats_bound, bound_fraction, size_text, step
from ..outcome import Failed, Skipped
from .engine_worker import Died, Done, Job, Worker, engine_path
from .engines import (
    CALL_BUDGET_S,
    MAX_CHUNK,
    Engine,
    EngineMeasured,
    EngineOutcome,
    pooled_counters,
)
from .gguf_files import CONTEXT_LENGTH, import_gguf, model_file
from .numpy_step import decode_step
from .pools import escape_bytes
from .step import DecodeMeasurement, StepRounds
from .timing import Timing, pooled, settle

#: llama.cpp's KV cache holds keys and values in F16 by default.
KV_DTYPE = "fp16"
#: Tokens of the one prompt-processing call per format and round that measures the format's arithmetic rate
#: (the engine roof): one ubatch of one sequence, wide enough that llama.cpp's matmuls are compute-bound.
PROMPT_TOKENS = 128
#: Its timed calls per round, after one warm-up call.
PROMPT_CALLS = 2
#: The model whose step is the engine's fixed cost (graph, threads, logits): 64 wide, one layer, 256 tokens.
OVERHEAD_MODEL = dict(layers=1, hidden=64, heads=4, kv_heads=2, head_dim=16, intermediate=128, vocab=256)
#: The batch of the row keys that hold a format's prompt processing (no decode batch is 0).
PROMPT = 0


class RoofTimer(Protocol):
    """This machine's roofs timed in an engine run's own rounds (:class:`roofline.suite.run.RoofRounds`): a turn
    per round, the Hardware of the rounds so far, every round pooled."""

    def turn(self) -> None: ...

    def hardware_now(self) -> Hardware: ...

    def result(self): ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class EngineRun:
    """What one measurement did and found: each (format, batch)'s outcome, the roofs and the GEMV of its rounds."""

    engine: str
    version: str
    shape: ModelShape
    context: int
    warmup: int
    steps: int
    rounds: int
    threads: int
    file_bytes: dict[str, int]
    outcomes: dict[tuple[str, int], EngineOutcome]
    gemv: DecodeMeasurement | None
    warnings: tuple[str, ...] = ()
    #: Formats whose step reads less than the DRAM rule (4× the LLC): partly cache-resident, no DRAM-bound case.
    resident: tuple[str, ...] = ()
    #: The bound's roofs: the run's this one belongs to, or those of its own rounds (None: nothing ran).
    roofs: Hardware | None = None
    #: Each format's prompt-processing call, a timing per round (the engine roof is the fastest round's median).
    prompts: dict[str, tuple[Timing, ...]] = field(default_factory=dict)
    prompt_tokens: int = 0
    #: A step of :data:`OVERHEAD_MODEL`, every round pooled: the engine's fixed cost per step.
    overhead: Timing | None = None

    def engine_peak(self, fmt: str) -> float | None:
        """The format's arithmetic rate (FLOP/s): its prompt's FLOPs ÷ the fastest round's median call."""
        rounds = self.prompts.get(fmt)
        if not rounds:
            return None
        m = self.shape
        layers = m.phase_matmul_params["qkv_o"] + m.phase_matmul_params["mlp"]
        attention = sum(m.attention_flops_per_token(t) for t in range(self.prompt_tokens))
        flops = prompt_flops(layers, m.phase_matmul_params["head"], attention, self.prompt_tokens)
        return max(flops / t.median for t in rounds)

    def engine_roofs(self, fmt: str, hardware: Hardware) -> EngineRoofs:
        """The terms of the rule (:mod:`roofline.model.engine_bound`) for ``fmt`` on ``hardware``'s DRAM roof."""
        overhead = None if self.overhead is None else self.overhead.median
        return EngineRoofs(hardware.bandwidth, self.engine_peak(fmt), self.gemv_fraction, overhead)

    @property
    def mean_kv_tokens(self) -> int:
        """KV entries a timed step reads on average: the prompt, the warm-up, half the timed steps."""
        return self.context + self.warmup + (self.steps + 1) // 2

    @property
    def hardware(self) -> Hardware | None:
        """The roofs as the bound sees them (the run's, else the pooled ones of these rounds), with this
        machine's RAM as memory."""
        if self.roofs is None:
            return None
        return replace(self.roofs, memory_bytes=total_memory_bytes())

    @property
    def gemv_fraction(self) -> float | None:
        """The suite's batch-1 GEMV (fp32) as a fraction of its roof at its exact intensity."""
        hw, m = self.hardware, self.gemv
        if hw is None or m is None:
            return None
        return roofline_fraction(m.gflops * 1e9, hw, gemm_intensity(m.n, 1, 4), "fp32")


def _checked(
    engine: Engine, formats: list[str], batches: list[int], context: int, warmup: int, steps: int, rounds: int
):
    formats = [gguf_format(f) for f in formats]
    off = [f for f in formats if f not in engine.formats]
    if off or not formats:
        raise BadInput(f"{engine.name} runs {', '.join(engine.formats)} here; got {', '.join(off) or 'none'}")
    for what, value in (("context", context), ("steps", steps), ("rounds", rounds)):
        positive_int(what, value)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 1:
        raise BadInput(f"warm-up steps must be ≥ 1 (the engine's counters are read from the first), got {warmup!r}")
    if context + warmup + steps > CONTEXT_LENGTH:
        raise BadInput(
            f"context {context} + {warmup} warm-up + {steps} timed steps is over the {CONTEXT_LENGTH} tokens the "
            "GGUF files written here hold"
        )
    return list(dict.fromkeys(formats)), list(dict.fromkeys(positive_int("batch", b) for b in batches))


def _chunk(shape: ModelShape, hw: Hardware) -> int:
    """Prefill tokens per call: about CALL_BUDGET_S of arithmetic at the fp32 roof, at most MAX_CHUNK."""
    flops_per_token = 2 * shape.matmul_params_per_token
    return max(1, min(MAX_CHUNK, int(CALL_BUDGET_S * hw.peak("fp32") / flops_per_token)))


@dataclass
class _Rows:
    """What the rounds gathered: each (format, batch)'s rounds, its failure, its kernel path, each format's fallback."""

    done: dict[tuple[str, int], list[Done]]
    failed: dict[tuple[str, int], str] = field(default_factory=dict)
    #: format → why its default path was left (a death there); its later jobs run the plain kernels
    fallback: dict[str, str] = field(default_factory=dict)
    #: format → its prompt-processing timing of each round; the overhead model's step of each round
    prompts: dict[str, list[Timing]] = field(default_factory=dict)
    overhead: list[Done] = field(default_factory=list)

    def outcomes(self, kv_tokens: float) -> dict[tuple[str, int], EngineOutcome]:
        """Each combination's rounds pooled, or why it failed."""
        outcomes: dict[tuple[str, int], EngineOutcome] = {}
        for (fmt, batch), got in self.done.items():
            if (fmt, batch) in self.failed or not got:
                outcomes[(fmt, batch)] = Failed(self.failed.get((fmt, batch), "nothing was timed"))
                continue
            notes = "; ".join(sorted({d.note for d in got if d.note}))
            counters = pooled_counters([d.counters for d in got])
            path = " then ".join(dict.fromkeys(d.kernel_path for d in got))
            timing = pooled([d.wall for d in got])
            fallback = self.fallback.get(fmt, "")
            outcomes[(fmt, batch)] = EngineMeasured(fmt, batch, timing, counters, kv_tokens, notes, path, fallback)
        return outcomes


def _run_job(worker: Worker, job: Job, rows: _Rows, fmt: str, key: tuple[str, int]) -> Done | None:
    """One round of a job in the worker; a death on the default path retries it on the plain kernels, which
    the format keeps from then on; a death there, or an engine's error, fails ``key`` (None returned)."""
    try:
        got = worker.run(replace(job, extra_buffers=fmt not in rows.fallback))
        if isinstance(got, Died) and fmt not in rows.fallback:
            rows.fallback[fmt] = f"its default kernels died here ({got.reason}): plain kernels from then on"
            got = worker.run(replace(job, extra_buffers=False))
    except (BadInput, KernelMismatch) as exc:
        rows.failed[key] = str(exc)
        return None
    if isinstance(got, Died):
        rows.failed[key] = got.reason
        return None
    return got


def steps_at(batch: int, steps: int, warmup: int) -> tuple[int, int]:
    """Warm-up and timed steps of a batch: ``warmup`` and ``steps`` up to batch 8, fewer above (one warm-up,
    ≥ 2 timed): a batch-64 step does 64× the arithmetic of batch 1's (0.37 s of F16 here), and its spread
    is the smaller (the steps of every round are pooled)."""
    if batch <= 8:
        return warmup, steps
    return 1, max(2, min(steps, round(steps * 8 / batch)))


def _format_round(worker: Worker, job: Job, rows: _Rows, fmt: str, batches: list[int], prompt_tokens: int) -> None:
    """One round of a format: each batch's decode steps, then its prompt processing (``prompt_tokens`` > 0)."""
    for batch in batches:
        if (fmt, batch) not in rows.failed:
            warm, timed = steps_at(batch, job.steps, job.warmup)
            one = replace(job, label=f"{fmt} batch {batch}", batch=batch, warmup=warm, steps=timed)
            if (got := _run_job(worker, one, rows, fmt, (fmt, batch))) is not None:
                rows.done[(fmt, batch)].append(got)
    if prompt_tokens and (fmt, PROMPT) not in rows.failed:
        pp = replace(job, label=f"{fmt} prompt of {prompt_tokens}", batch=1, warmup=1, steps=PROMPT_CALLS,
                     prompt_tokens=prompt_tokens)  # fmt: skip
        if (got := _run_job(worker, pp, rows, fmt, (fmt, PROMPT))) is not None:
            rows.prompts.setdefault(fmt, []).append(got.wall)


def _resident_warnings(shape: ModelShape, resident: tuple[str, ...]) -> list[str]:
    """A line for each format whose step reads less than the DRAM rule (4× the LLC)."""
    return [
        f"{f}: a step reads {size_text(step_bytes(shape, f))}, under {POOL_LLC_MULTIPLE}× the last-level cache "
        f"({size_text(escape_bytes())}): partly cache-resident, not the DRAM-bound case"
        for f in resident
    ]


def _engine_round(
    worker: Worker,
    job: Job,
    rows: _Rows,
    r: int,
    files: dict,
    batches: list[int],
    prompt_tokens: int,
    roofs: Hardware | RoofTimer,
    shape: ModelShape,
) -> None:
    """Round ``r``: a turn of the roofs (where timed here), every format (their order turning each round), the
    overhead model's step; then the machine settles for the GEMV."""
    if not isinstance(roofs, Hardware):
        roofs.turn()
    chunk = _chunk(shape, roofs if isinstance(roofs, Hardware) else roofs.hardware_now())
    settle()
    formats = list(files)
    for fmt in formats[r % len(formats) :] + formats[: r % len(formats)]:
        _format_round(worker, replace(job, path=str(files[fmt].path), vocab=shape.vocab, chunk=chunk),
                      rows, fmt, batches, prompt_tokens)  # fmt: skip
    if (got := _run_job(worker, job, rows, "F16", ("overhead", 1))) is not None:
        rows.overhead.append(got)
    settle()


def measure_engine_decode(
    engine: Engine,
    shape: ModelShape,
    formats: list[str],
    batches: list[int],
    context: int = 32,
    warmup: int = 2,
    steps: int = 16,
    rounds: int = 3,
    threads: int | None = None,
    seed: int = 0,
    roofs: Hardware | Callable[[], RoofTimer] | None = None,
    prompt_tokens: int = PROMPT_TOKENS,
) -> EngineRun:
    """Write (or reuse) the model's GGUF in each format, then time the engine at every batch in ``rounds`` rounds.

    An engine that cannot run here makes every outcome :class:`Skipped` (nothing is measured);
    a file that cannot be written (disk, memory, shape), or no ``roofs``, is BadInput before anything runs.
    ``roofs``: the bound's roofs (a DRAM roof and an fp32 peak) measured already, by the run this one belongs
    to (the rounds then time none of their own), or what makes the roof rounds to turn in each round (a
    :class:`RoofTimer`, made once the engine is found to run here). Each round also times each format's prompt
    processing (``prompt_tokens``, 0: none; the engine roof) and a step of :data:`OVERHEAD_MODEL` (its fixed cost).
    """
    formats, batches = _checked(engine, formats, batches, context, warmup, steps, rounds)
    threads = threads or blas_threads() or cpu_count()
    why = engine.unavailable()
    if why is None:
        try:
            import_gguf()
        except NotImplementedError as exc:
            why = str(exc)
    if why is not None:
        skipped = {(f, b): Skipped(why) for f in formats for b in batches}
        return EngineRun(engine.name, "", shape, context, warmup, steps, rounds, threads, {}, skipped, None)
    if roofs is None:
        raise BadInput("the engine's bound needs roofs: the run's, or rounds of them (roofline.suite.run.engine_roofs)")
    files = {f: model_file(shape, f, seed) for f in formats}
    resident = tuple(f for f in formats if step_bytes(shape, f) < escape_bytes())
    warnings = _resident_warnings(shape, resident)
    gemv = StepRounds([decode_step(shape.hidden, 1, "float32", "dram", seed)])
    rows = _Rows({(f, b): [] for f in formats for b in batches})
    tiny = model_file(custom_model(shape, name="overhead", **OVERHEAD_MODEL), "F16", seed).path
    job = Job(engine_path(type(engine)), str(tiny), "the overhead model", OVERHEAD_MODEL["vocab"], 1, MAX_CHUNK,
              threads, context, warmup, steps, seed)  # fmt: skip
    timer = None if isinstance(roofs, Hardware) else roofs()
    try:
        with Worker(engine.name) as worker:
            for r in range(rounds):
                _engine_round(worker, job, rows, r, files, batches, prompt_tokens, timer or roofs, shape)
                gemv.time()
        hardware = roofs if timer is None else timer.result().require()
    finally:
        if timer is not None:
            timer.close()
    outcomes = rows.outcomes(float(context + warmup + (steps + 1) / 2))
    warnings += [f"{engine.name} {fmt}: {why}" for fmt, why in rows.fallback.items()]
    return EngineRun(engine.name, engine.version(), shape, context, warmup, steps, rounds, threads,
                     {f: files[f].nbytes for f in formats}, outcomes, gemv.measurements()[0], tuple(warnings), resident,
                     hardware, {f: tuple(t) for f, t in rows.prompts.items()}, prompt_tokens,
                     pooled([d.wall for d in rows.overhead]) if rows.overhead else None)  # fmt: skip


# ---- held to the bound, and predicted -----------------------------------------------------------


@dataclass(frozen=True)
class EngineRow:
    """One measured (format, batch): wall clock and counters, the bound of the same model, the prediction.

    ``bound``: the step of ``roofline decode`` for the same model and format (its bytes and FLOPs);
    ``roofs``: the terms of the rule (:mod:`roofline.model.engine_bound`): the DRAM roof, the format's
    engine roof, the GEMV fraction and the overhead of the same rounds. ``bound_s``: the larger of the
    bytes' time and the FLOPs' time at those roofs; ``fraction``: ``bound_s`` ÷ the wall clock's step
    (``counter_fraction`` the same against the engine's counters); ``predicted_s``: the rule's prediction.
    """

    measured: EngineMeasured
    bound: Step
    roofs: EngineRoofs

    @property
    def format(self) -> str:
        return self.measured.format

    @property
    def batch(self) -> int:
        return self.measured.batch

    @property
    def nbytes(self) -> float:
        return self.bound.weight_bytes + self.bound.kv_bytes

    @property
    def bound_s(self) -> float:
        return self.roofs.bound_s(self.nbytes, self.bound.flops)

    @property
    def bound_kind(self) -> str:
        return self.roofs.bound_kind(self.nbytes, self.bound.flops)

    @property
    def fraction(self) -> float:
        return bound_fraction(self.bound_s, self.measured.step_s)

    @property
    def counter_fraction(self) -> float | None:
        counted = self.measured.counter_s
        return None if counted is None else bound_fraction(self.bound_s, counted)

    @property
    def bound_tokens_per_s(self) -> float:
        return self.batch / self.bound_s

    @property
    def predicted_tokens_per_s(self) -> float | None:
        predicted = self.roofs.predicted_s(self.nbytes, self.bound.flops)
        return None if predicted is None else self.batch / predicted

    @property
    def effective_gbps(self) -> float:
        """The bytes a step reads ÷ the step's time (llama-bench's missing column)."""
        return self.nbytes / self.measured.step_s / 1e9

    @property
    def flagged(self) -> bool:
        return beats_bound(self.fraction) or (self.counter_fraction is not None and beats_bound(self.counter_fraction))

    @property
    def prediction_error(self) -> float | None:
        if self.predicted_tokens_per_s is None:
            return None
        return self.predicted_tokens_per_s / self.measured.tokens_per_s - 1

    def as_dict(self) -> dict[str, object]:
        m = self.measured
        return {
            "format": m.format,
            "weights": GGUF_FORMATS[m.format],
            "batch": m.batch,
            "step_s": m.step_s,
            "spread": m.timing.spread,
            "steps_s": list(m.timing.per_call),
            "tokens_per_s": m.tokens_per_s,
            "counter_step_s": m.counter_s,
            "counter_tokens_per_s": m.counter_tokens_per_s,
            "counter_spread": None if m.counters is None else m.counters.spread,
            "counter_note": m.counter_note,
            "bound_step_s": self.bound_s,
            "bound_tokens_per_s": self.bound_tokens_per_s,
            "bound": self.bound_kind,
            "bound_bytes": self.nbytes,
            "bound_flops": self.bound.flops,
            "effective_gbps": self.effective_gbps,
            "engine_roof_gflops": None if self.roofs.engine_peak is None else self.roofs.engine_peak / 1e9,
            "fraction": self.fraction,
            "counter_fraction": self.counter_fraction,
            "predicted_tokens_per_s": self.predicted_tokens_per_s,
            "prediction_error": self.prediction_error,
            "beats_bound": self.flagged,
            "kernel_path": m.kernel_path,
            "kernel_path_code": KERNEL_PATH_CODES.get(m.kernel_path),
            "fallback": m.fallback,
        }


def engine_setup(run: EngineRun, fmt: str, hardware: Hardware) -> DecodeSetup:
    """The bound's setup for one format of ``run``: its model, weights (``--quant``), F16 KV, mean KV length."""
    return DecodeSetup(run.shape, hardware, dtype=GGUF_FORMATS[fmt], kv_dtype=KV_DTYPE, context=run.mean_kv_tokens)


def hold_engine(run: EngineRun, hardware: Hardware | None = None) -> tuple[EngineRow, ...]:
    """Every measured outcome of ``run`` with its bound and prediction on ``hardware`` (default: the run's roofs)."""
    hw = hardware or run.hardware
    if hw is None:
        return ()
    return tuple(
        EngineRow(outcome, step(engine_setup(run, fmt, hw), batch), run.engine_roofs(fmt, hw))
        for (fmt, batch), outcome in run.outcomes.items()
        if isinstance(outcome, EngineMeasured)
    )


@dataclass(frozen=True)
class EngineCrossover:
    """Where one format's decode turns compute-bound: predicted from its two roofs, observed as the knee of its
    measured batches (:func:`~roofline.model.knee.fit_knee`, the suite's own fit; None under three batches)."""

    format: str
    predicted: float | None
    observed: float | None
    observed_within_sweep: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"format": self.format, "predicted": self.predicted, "observed": self.observed,
                "observed_within_sweep": self.observed_within_sweep}  # fmt: skip


def crossovers(rows: tuple[EngineRow, ...]) -> tuple[EngineCrossover, ...]:
    """Each format's crossover batch, predicted (weights ÷ bandwidth = batch × FLOPs a sequence ÷ engine roof)
    and observed (the knee of its step times over the batches measured)."""
    out = []
    for fmt in dict.fromkeys(r.format for r in rows):
        mine = sorted((r for r in rows if r.format == fmt), key=lambda r: r.batch)
        first = mine[0]
        predicted = first.roofs.crossover(first.bound.weight_bytes, first.bound.flops / first.batch)
        knee = fit_knee([r.batch for r in mine], [r.measured.step_s for r in mine]) if len(mine) >= 3 else None
        out.append(EngineCrossover(fmt, predicted, knee and knee.batch, bool(knee and knee.within_sweep)))
    return tuple(out)
