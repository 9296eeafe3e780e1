"""Inference engines decoding a real model file here, timed by their own counters and by the wall clock.

**The contract** (threadpoolctl's ``LibController`` style): an engine is one subclass of
:class:`Engine`, whose docstring lists what every engine provides. It answers whether it can run
here (:meth:`Engine.unavailable`, never raising) and opens a :class:`EngineSession` on a file: a
context that prefills prompts, decodes one token for every sequence of a batch, rewinds to the
prompt and reads the engine's own time counters. What an engine measured comes back as a typed
outcome: :class:`EngineMeasured` with its figures, :class:`~roofline.outcome.Skipped` or
:class:`~roofline.outcome.Failed` with the reason, never a dict or a field that is "a figure or a reason".

**llama.cpp** (:class:`LlamaCpp`) through llama-cpp-python's low-level API: ``llama_decode`` on a
batch of one token per sequence (sequences in KV streams of their own, so each reads only its own
cache), greedy tokens fed back, ``llama_perf_context`` for llama.cpp's eval time and count. Every
call into llama.cpp is short (one step, or a prefill chunk sized from the compute roof to about
:data:`CALL_BUDGET_S`) and runs with SIGINT and SIGTERM held (:func:`_held`): the signal lands when the
call returns, so Ctrl-C stops a run between two calls, never inside llama.cpp's log callback (where
Python would lose the exception).
"""

from __future__ import annotations

import ctypes
import importlib
import re
import signal
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import BadInput, KernelMismatch, positive_int
from ..outcome import Failed, Skipped
from .timing import Timing, pooled

#: A prefill chunk takes about this long at the compute roof (Ctrl-C waits for at most one call).
CALL_BUDGET_S = 0.5
#: Tokens per prefill chunk, at most (llama.cpp's n_batch: its compute buffer holds this many logits).
MAX_CHUNK = 64
#: Each sequence's KV stream holds a multiple of this many tokens (llama.cpp pads its cache to 256).
KV_PAD = 256
#: ggml's log level of errors (``enum ggml_log_level`` in ggml.h: none, debug, info, warn, error, cont).
GGML_LOG_LEVEL_ERROR = 4


# ---- what an engine measured --------------------------------------------------------------------


@dataclass(frozen=True)
class EngineMeasured:
    """One (format, batch) decoded: each timed step's wall-clock seconds, the engine's own counters, its kernels.

    ``counters``: each step's growth of the engine's eval time (None where its counters did not count
    each step's tokens; ``counter_note`` says why). ``kv_tokens``: KV entries a timed step reads on
    average per sequence (the prompt, the warm-up and half the timed steps).
    """

    format: str
    batch: int
    timing: Timing
    counters: Timing | None
    kv_tokens: float
    counter_note: str = ""
    #: the kernels its weights ran on ("AMX", "CPU repack", "plain"; :func:`kernel_path`)
    kernel_path: str = ""
    #: why the engine's default path was left for its plain kernels here ("" where it was not)
    fallback: str = ""

    #: a measured outcome (:mod:`roofline.outcome`): its figures are itself
    ok = True
    reason = ""

    def get(self) -> EngineMeasured:
        return self

    @property
    def counter_s(self) -> float | None:
        """The median step by the engine's counters."""
        return None if self.counters is None else self.counters.median

    @property
    def step_s(self) -> float:
        return self.timing.median

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.step_s

    @property
    def counter_tokens_per_s(self) -> float | None:
        return None if self.counter_s is None else self.batch / self.counter_s


#: One (format, batch): measured with its figures, or skipped or failed with the reason (:mod:`roofline.outcome`).
EngineOutcome = EngineMeasured | Skipped | Failed


# ---- the contract ------------------------------------------------------------------------------


class EngineSession(ABC):
    """An engine's context on one model file, for ``batch`` sequences of up to ``length`` tokens each.

    ``prefill(prompt)``: the prompt into every sequence's cache (prefilled once, its keys and values
    copied: each sequence then reads a cache of its own); returns the greedy next token after checking
    the logits are finite (KernelMismatch otherwise). ``step(tokens, position)``: one
    decode step, a token per sequence at ``position``; returns the next tokens. ``process(prompt)``:
    sequence 0's whole prompt from position 0 in one call, logits of its last token only: prompt
    processing, the engine's arithmetic rate (the session's ``chunk`` must hold it). ``rewind(position)``:
    forget every sequence's cache from ``position`` on. ``counters()``: the engine's (eval seconds,
    tokens evaluated) so far. ``close()``: free the context and the model. ``kernel_path``: the kernels
    its weights run on ("AMX", "CPU repack", "plain"), as the engine said when it loaded them.
    """

    batch: int
    kernel_path: str = "plain"

    @abstractmethod
    def prefill(self, prompt: np.ndarray) -> int: ...

    @abstractmethod
    def step(self, tokens: np.ndarray, position: int) -> np.ndarray: ...

    @abstractmethod
    def process(self, prompt: np.ndarray) -> None: ...

    @abstractmethod
    def rewind(self, position: int) -> None: ...

    @abstractmethod
    def counters(self) -> tuple[float, int]: ...

    @abstractmethod
    def close(self) -> None: ...


class Engine(ABC):
    """An inference engine the suite decodes a model file with and holds to the bound.

    Class attributes every engine sets:

    - ``name``: what ``--engine`` names it ("llama.cpp");
    - ``package``: the distribution that brings it (roofline's ``engines`` extra installs it);
    - ``formats``: the weight formats it decodes here (GGUF type names).

    Methods every engine provides:

    - ``unavailable()``: why it cannot run here, or None; never raises;
    - ``version()``: its version, for the record;
    - ``open(path, batch, length, threads, chunk, extra_buffers)``: an :class:`EngineSession` on a model
      file (BadInput in one line for a file it cannot load); ``extra_buffers`` False keeps to the engine's
      plain kernels, the fallback once its default path has crashed here.

    Every engine runs in a worker process (:mod:`.engine_worker`): a crash inside it is one failed row.
    """

    name: str
    package: str
    formats: tuple[str, ...]

    @abstractmethod
    def unavailable(self) -> str | None: ...

    @abstractmethod
    def version(self) -> str: ...

    @abstractmethod
    def open(
        self, path: Path, batch: int, length: int, threads: int, chunk: int, extra_buffers: bool = True
    ) -> EngineSession: ...


# ---- llama.cpp -----------------------------------------------------------------------------------

_LIB: list = []  # llama_cpp, once imported and initialised
_LOG: list[str] = []  # llama.cpp's first error lines of a call (its log is kept off the terminal)
_BUFFERS: list[str] = []  # the buffer types llama.cpp put a model's weights in, as its load logs them
#: llama.cpp's log line naming each weight buffer ("load_tensors:   CPU_REPACK model buffer size = 8.25 MiB").
BUFFER_LINE = re.compile(r"(\S+) model buffer size")
#: The kernel path a weight buffer type means: AMX tiles, the CPU's repacked layouts, else ggml's plain kernels.
KERNEL_PATHS = (("AMX", "AMX"), ("REPACK", "CPU repack"))
_LOG_CALLBACK: list = []  # the ctypes callback, kept alive while llama.cpp may call it


def _llama_cpp():
    """llama_cpp, imported once, its backend initialised and its log kept here (errors only)."""
    if _LIB:
        return _LIB[0]
    llama_cpp = _held(importlib.import_module, "llama_cpp")  # its import logs through a Python callback

    def log(level: int, text: bytes, _data) -> None:
        line = text.decode("utf-8", "replace").strip() if text else ""
        if level == GGML_LOG_LEVEL_ERROR and line:
            _LOG.append(line)
            del _LOG[5:]
        found = BUFFER_LINE.search(line)
        if found:
            _BUFFERS.append(found.group(1))

    callback = llama_cpp.llama_log_callback(log)
    _LOG_CALLBACK.append(callback)
    _held(llama_cpp.llama_log_set, callback, ctypes.c_void_p(0))
    _held(llama_cpp.llama_backend_init)
    _LIB.append(llama_cpp)
    return llama_cpp


#: The signals that stop a run (roofline.interrupt): held while llama.cpp runs.
_STOPPING = {signal.SIGINT, signal.SIGTERM}


def _held(fn, *args):
    """``fn(*args)`` with SIGINT and SIGTERM held (main thread): they arrive once it returns."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPPING)
    try:
        return fn(*args)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def kernel_path(buffers: list[str] | tuple[str, ...]) -> str:
    """The kernel path of a model whose weights sit in ``buffers`` (llama.cpp's buffer type names): "AMX",
    "CPU repack", else "plain" (ggml's CPU kernels on the file's own layout)."""
    for marker, path in KERNEL_PATHS:
        if any(marker in name.upper() for name in buffers):
            return path
    return "plain"


def _last_error() -> str:
    """llama.cpp's first error line since the log was cleared (the most specific: the later ones repeat it)."""
    return f": {_LOG[0]}" if _LOG else ""


class LlamaCppSession(EngineSession):
    """llama.cpp's context: one KV stream per sequence, F16 KV cache, llama.cpp's default attention."""

    def __init__(self, path: Path, batch: int, length: int, threads: int, chunk: int, extra_buffers: bool = True):
        lib = self._lib = _llama_cpp()
        self.batch, self.chunk = positive_int("batch", batch), max(positive_int("chunk", chunk), batch)
        self.model = self.ctx = self._batch = None
        _LOG.clear()
        _BUFFERS.clear()
        mparams = lib.llama_model_default_params()
        mparams.n_gpu_layers = 0
        mparams.use_extra_bufts = bool(extra_buffers)  # False: no AMX, no repacked layouts (llama.cpp's --no-repack)
        self.model = _held(lib.llama_model_load_from_file, str(path).encode(), mparams)
        if not self.model:
            raise BadInput(f"llama.cpp cannot load {path}{_last_error()}")
        self.kernel_path = kernel_path(_BUFFERS)
        cparams = lib.llama_context_default_params()
        per_sequence = -(-positive_int("length", length) // KV_PAD) * KV_PAD
        cparams.n_ctx = per_sequence * batch
        cparams.n_batch = cparams.n_ubatch = self.chunk
        cparams.n_seq_max = batch
        cparams.n_threads = cparams.n_threads_batch = positive_int("threads", threads)
        cparams.no_perf = False
        self.ctx = _held(lib.llama_init_from_model, self.model, cparams)
        if not self.ctx:
            self.close()
            raise BadInput(f"llama.cpp cannot make a context for {path}{_last_error()}")
        self.memory = lib.llama_get_memory(self.ctx)
        self.vocab = lib.llama_vocab_n_tokens(lib.llama_model_get_vocab(self.model))
        self._batch = lib.llama_batch_init(self.chunk, 0, 1)

    def _decode(self, tokens, positions, seqs, outputs) -> None:
        b = self._batch
        for i, (tok, pos, seq, out) in enumerate(zip(tokens, positions, seqs, outputs, strict=True)):
            b.token[i], b.pos[i], b.n_seq_id[i], b.logits[i] = int(tok), int(pos), 1, bool(out)
            b.seq_id[i][0] = int(seq)
        b.n_tokens = len(tokens)
        status = _held(self._lib.llama_decode, self.ctx, b)
        if status != 0:
            raise KernelMismatch(f"llama_decode returned {status}{_last_error()}")

    def _logits(self, rows: int) -> np.ndarray:
        ptr = self._lib.llama_get_logits(self.ctx)
        return np.ctypeslib.as_array(ptr, shape=(rows, self.vocab))

    def prefill(self, prompt: np.ndarray) -> int:
        """Sequence 0's prompt, a chunk per call; its cache then copied whole to every other sequence's stream."""
        for start in range(0, len(prompt), self.chunk):
            part = prompt[start : start + self.chunk]
            last = start + len(part) == len(prompt)
            outputs = [last and i == len(part) - 1 for i in range(len(part))]
            self._decode(part, range(start, start + len(part)), [0] * len(part), outputs)
        logits = self._logits(1)
        if not np.all(np.isfinite(logits)):
            raise KernelMismatch("llama.cpp's logits after the prompt are not finite: nothing is timed")
        for seq in range(1, self.batch):
            _held(self._lib.llama_memory_seq_cp, self.memory, 0, seq, -1, -1)
        return int(logits[0].argmax())

    def step(self, tokens: np.ndarray, position: int) -> np.ndarray:
        n = len(tokens)
        self._decode(tokens, [position] * n, range(n), [True] * n)
        return self._logits(n).argmax(axis=1)

    def process(self, prompt: np.ndarray) -> None:
        n = len(prompt)
        if n > self.chunk:
            raise BadInput(f"a prompt of {n} tokens in one call needs a chunk of as many (this one's: {self.chunk})")
        self._decode(prompt, range(n), [0] * n, [i == n - 1 for i in range(n)])

    def rewind(self, position: int) -> None:
        for seq in range(self.batch):
            self._lib.llama_memory_seq_rm(self.memory, seq, position, -1)

    def counters(self) -> tuple[float, int]:
        """llama.cpp counts a one-token decode as an eval and a larger one as prompt tokens (a count of 0 as 1)."""
        data = self._lib.llama_perf_context(self.ctx)
        if self.batch == 1:
            return data.t_eval_ms / 1e3, data.n_eval
        return data.t_p_eval_ms / 1e3, data.n_p_eval

    def close(self) -> None:
        lib = self._lib
        if self._batch is not None:
            _held(lib.llama_batch_free, self._batch)
            self._batch = None
        if self.ctx:
            _held(lib.llama_free, self.ctx)
            self.ctx = None
        if self.model:
            _held(lib.llama_model_free, self.model)
            self.model = None


class LlamaCpp(Engine):
    """llama.cpp through llama-cpp-python (built here from its source: GGML_NATIVE, this CPU's instructions)."""

    name = "llama.cpp"
    package = "llama-cpp-python"
    formats = ("F16", "Q8_0", "Q4_0")

    def unavailable(self) -> str | None:
        try:
            _llama_cpp()
        except ImportError as exc:
            return f"llama.cpp is not installed (pip install 'roofline[engines]' builds it, minutes): {exc}"
        except (OSError, RuntimeError, AttributeError) as exc:
            return f"llama-cpp-python is installed but its library does not load: {exc}"
        return None

    def version(self) -> str:
        import llama_cpp

        return f"llama-cpp-python {llama_cpp.__version__}"

    def open(
        self, path: Path, batch: int, length: int, threads: int, chunk: int, extra_buffers: bool = True
    ) -> EngineSession:
        return LlamaCppSession(path, batch, length, threads, chunk, extra_buffers)


#: The engines by the name ``--engine`` takes.
ENGINES: dict[str, type[Engine]] = {LlamaCpp.name: LlamaCpp}


def lookup_engine(name: str) -> Engine:
    """An engine by name (case ignored); BadInput listing the names."""
    for key, cls in ENGINES.items():
        if name.strip().lower() == key.lower():
            return cls()
    raise BadInput(f"unknown engine {name!r} (use {', '.join(ENGINES)})")


# ---- timing one session --------------------------------------------------------------------------


def prompt(context: int, vocab: int, seed: int = 0) -> np.ndarray:
    """A seeded random prompt of ``context`` token ids below ``vocab``."""
    return np.random.default_rng(seed).integers(0, vocab, size=context)


def time_steps(
    session: EngineSession, first: int, context: int, warmup: int, steps: int
) -> tuple[Timing, Timing | None, str]:
    """One round: rewind to the prompt, ``warmup`` (≥ 1) steps, then ``steps`` steps each timed twice: by the
    wall clock around the step, and by the engine's counters read after it (their growth over the step;
    llama.cpp reports a count of 0 as 1, so the counters are first read after a warm-up step).

    Returns both timings and a note: the counters' timing is None, with why, where they did not count
    exactly the tokens of each step.
    """
    session.rewind(context)
    tokens, position = np.full(session.batch, first), context
    for _ in range(warmup):
        tokens = session.step(tokens, position)
        position += 1
    wall, counted, note = [], [], ""
    before = session.counters()
    for _ in range(steps):
        t0 = time.perf_counter()
        tokens = session.step(tokens, position)
        wall.append(time.perf_counter() - t0)
        position += 1
        after = session.counters()
        tokens_counted = after[1] - before[1]
        if tokens_counted != session.batch and not note:
            note = f"the engine counted {tokens_counted} tokens in a step of {session.batch}"
        counted.append(after[0] - before[0])
        before = after
    counters = None if note or min(counted) <= 0 else Timing(tuple(counted), 1, counted[0])
    return Timing(tuple(wall), 1, wall[0]), counters, note


def time_prompt(session: EngineSession, tokens: np.ndarray, warmup: int, calls: int) -> Timing:
    """``warmup`` then ``calls`` timed prompt-processing calls of ``tokens``, each from an empty cache."""
    times = []
    for i in range(warmup + calls):
        session.rewind(0)
        t0 = time.perf_counter()
        session.process(tokens)
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return Timing(tuple(times), 1, times[0])


def pooled_counters(per_round: list[Timing | None]) -> Timing | None:
    """The counters' timings of every round as one (None if any round's counters were off)."""
    return None if any(c is None for c in per_round) else pooled(per_round)


__all__ = [
    "ENGINES",
    "Engine",
    "EngineMeasured",
    "EngineOutcome",
    "EngineSession",
    "LlamaCpp",
    "lookup_engine",
    "pooled",
    "prompt",
    "time_prompt",
    "time_steps",
]
