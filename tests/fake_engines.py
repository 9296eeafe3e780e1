"""An engine that crashes on purpose, for the worker's tests on any machine (no llama.cpp needed).

:class:`CrashingEngine` reads :data:`CRASH_VARIABLE` in the worker process (it inherits the test's
environment): ``FORMAT:STAGE:SIGNAL:PATH`` rules, comma-separated; ``STAGE`` is ``loading`` or
``decoding``, ``PATH`` is ``default`` (it crashes only on its default kernels, as llama.cpp's AMX path
did on a Xeon) or ``any``. A session that does not crash decodes in microseconds and counts its tokens.
Its default path calls itself "AMX" and its fallback "plain", as llama.cpp's would there.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import numpy as np

from roofline.errors import BadInput
from roofline.measure.engines import Engine, EngineSession

CRASH_VARIABLE = "ROOFLINE_TEST_CRASH"


def _crash(fmt: str, stage: str, extra_buffers: bool) -> None:
    for rule in filter(None, os.environ.get(CRASH_VARIABLE, "").split(",")):
        rule_fmt, rule_stage, sig, path = rule.split(":")
        if (rule_fmt, rule_stage) == (fmt, stage) and (path == "any" or extra_buffers):
            os.kill(os.getpid(), signal.Signals[sig])
            time.sleep(5)  # the signal lands first


class CrashingSession(EngineSession):
    def __init__(self, fmt: str, batch: int, extra_buffers: bool):
        self.fmt, self.batch, self.extra = fmt, batch, extra_buffers
        self.kernel_path = "AMX" if extra_buffers else "plain"
        self.seconds, self.tokens = 0.0, 0
        _crash(fmt, "loading", extra_buffers)

    def prefill(self, prompt: np.ndarray) -> int:
        _crash(self.fmt, "decoding", self.extra)
        return 1

    def step(self, tokens: np.ndarray, position: int) -> np.ndarray:
        t0 = time.perf_counter()
        time.sleep(1e-4)
        self.seconds += time.perf_counter() - t0
        self.tokens += len(tokens)
        return np.ones(len(tokens), dtype=int)

    def process(self, prompt: np.ndarray) -> None:
        _crash(self.fmt, "decoding", self.extra)
        time.sleep(1e-4 * len(prompt) / 64)

    def rewind(self, position: int) -> None:
        pass

    def counters(self) -> tuple[float, int]:
        return self.seconds, self.tokens

    def close(self) -> None:
        pass


class CrashingEngine(Engine):
    name = "crashing"
    package = "none"
    formats = ("F16", "Q8_0", "Q4_0")

    def unavailable(self) -> str | None:
        return None

    def version(self) -> str:
        return "crashing 0"

    def open(
        self, path: Path, batch: int, length: int, threads: int, chunk: int, extra_buffers: bool = True
    ) -> EngineSession:
        if "bad" in Path(path).name:
            raise BadInput(f"crashing cannot load {path}")
        fmt = next(f for f in self.formats if f.lower() in Path(path).name.split("-"))  # gguf_files.cached_path
        return CrashingSession(fmt, batch, extra_buffers)
