"""An engine's load and decode of one (format, batch) in a worker process, so that a crash is one failed row.

llama.cpp built for this CPU can die inside its own code: on a Xeon with AMX (family 6, model 207) its AMX
repack of a Q4_0 file ended the process with SIGILL, and with it asv's ``setup_cache`` and every row of
the run. So no engine code runs in the measuring process: :class:`Worker` starts
``python -m roofline.measure.engine_worker`` once and hands it one :class:`Job` at a time over its stdin;
the worker answers over a pipe of its own (never stdout, where an engine may print) with the stage it is
in (``loading``, ``decoding``) and then the round it timed, or the one-line error an engine raised
(BadInput, KernelMismatch: raised again here). A worker that dies mid-job becomes :class:`Died`, naming
the signal and the stage ("llama.cpp died of SIGILL (illegal instruction) while loading Q4_0 batch 1");
the next job starts a fresh worker. One worker serves every job that does not crash: its start (Python,
numpy, llama.cpp's import) is paid once a run, not once a row.

The worker ignores SIGINT (a terminal's Ctrl-C reaches the whole process group); the measuring process
stops it when it is itself stopped (:meth:`Worker.close`, SIGKILL: it holds nothing worth saving), and
the kernel ends it if the measuring process dies first (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import BadInput, KernelMismatch
from .timing import Timing

#: The stages a worker reports, as a failure names them ("while loading", "while decoding").
STAGES = ("loading", "decoding")


@dataclass(frozen=True)
class Job:
    """One (format, batch): a fresh session on ``path``, a prefill of ``context`` tokens, one round of steps.

    ``engine``: the engine's class as ``module:QualName`` (the worker imports it). ``extra_buffers``: the
    engine's default kernel paths (False: its plain kernels only, the fallback after a crash).
    """

    engine: str
    path: str
    label: str
    vocab: int
    batch: int
    chunk: int
    threads: int
    context: int
    warmup: int
    steps: int
    seed: int
    extra_buffers: bool = True
    #: > 0: time prompt processing instead, this many tokens of one sequence in one call (``steps`` calls)
    prompt_tokens: int = 0


@dataclass(frozen=True)
class Done:
    """A job's round: the wall clock's timing, the counters' (None where off), a note, and the kernel path."""

    wall: Timing
    counters: Timing | None
    note: str
    kernel_path: str


@dataclass(frozen=True)
class Died:
    """A worker that ended mid-job: the row's failure, in one line."""

    reason: str


def engine_path(cls: type) -> str:
    """How a :class:`Job` names an engine class: ``module:QualName``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def death(engine: str, status: int, stage: str, label: str, stderr: str = "") -> str:
    """One line for a worker that ended with ``status`` (negative: killed by that signal) in ``stage``."""
    if status < 0:
        sig = signal.Signals(-status)
        what = (signal.strsignal(sig) or sig.name).lower()
        return f"{engine} died of {sig.name} ({what}) while {stage} {label}"
    last = stderr.strip().splitlines()[-1:] or [""]
    tail = f": {last[0][:200]}" if last[0] else ""
    return f"{engine}'s worker exited with status {status} while {stage} {label}{tail}"


class Worker:
    """The worker process, started on first use and again after a death; a context manager that stops it."""

    def __init__(self, engine_name: str) -> None:
        self.engine_name = engine_name
        self.proc: subprocess.Popen | None = None
        self.replies = None
        self.stderr = None

    def _start(self) -> None:
        read, write = os.pipe()
        self.stderr = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(write), str(os.getpid())],
                stdin=subprocess.PIPE,
                stderr=self.stderr,
                pass_fds=(write,),
                text=True,
            )
        finally:
            os.close(write)
        self.replies = os.fdopen(read, "r", encoding="utf-8")

    def run(self, job: Job) -> Done | Died:
        """``job`` in the worker; BadInput or KernelMismatch as the engine raised them; Died if the worker ended."""
        if self.proc is None:
            self._start()
        stage = "starting"
        jobs = self.proc.stdin  # the worker's stdin: jobs go in there, one JSON line each
        try:
            jobs.write(json.dumps(asdict(job)) + "\n")
            jobs.flush()
        except BrokenPipeError:
            return self._died(stage, job.label)
        for line in self.replies:
            reply = json.loads(line)
            if "stage" in reply:
                stage = reply["stage"]
            elif "error" in reply:
                cls = BadInput if reply["error"] == "BadInput" else KernelMismatch
                raise cls(reply["message"])
            else:
                return _done(reply["done"])
        return self._died(stage, job.label)

    def _died(self, stage: str, label: str) -> Died:
        status = self.proc.wait()
        self.stderr.seek(0)
        text = self.stderr.read().decode("utf-8", "replace")
        self.close()
        return Died(death(self.engine_name, status, stage, label, text))

    def close(self) -> None:
        """Stop the worker (SIGKILL: it holds nothing worth saving) and free what it held."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.replies.close()
            self.stderr.close()
        self.proc = self.replies = self.stderr = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _timing(data: dict | None) -> Timing | None:
    return None if data is None else Timing(tuple(data["per_call"]), data["number"], data["single_call"])


def _done(data: dict) -> Done:
    return Done(_timing(data["wall"]), _timing(data["counters"]), data["note"], data["kernel_path"])


# ---- the worker's side ---------------------------------------------------------------------------


def _engine(name: str):
    module, _, qualname = name.partition(":")
    return getattr(importlib.import_module(module), qualname)()


def serve(job: Job, say) -> dict:
    """Run ``job`` here, saying each stage; the reply's ``done`` part."""
    from .engines import prompt, time_prompt, time_steps

    say({"stage": "loading"})
    pp = job.prompt_tokens
    length, chunk = (pp, pp) if pp else (job.context + job.warmup + job.steps, job.chunk)
    session = _engine(job.engine).open(Path(job.path), job.batch, length, job.threads, chunk, job.extra_buffers)
    try:
        say({"stage": "decoding"})
        if pp:
            wall = time_prompt(session, prompt(pp, job.vocab, job.seed), job.warmup, job.steps)
            counters, note = None, ""
        else:
            first = session.prefill(prompt(job.context, job.vocab, job.seed))
            wall, counters, note = time_steps(session, first, job.context, job.warmup, job.steps)
    finally:
        session.close()
    return {
        "wall": asdict(wall),
        "counters": None if counters is None else asdict(counters),
        "note": note,
        "kernel_path": session.kernel_path,
    }


def main(fd: int, parent: int) -> None:
    """Serve jobs from stdin until it closes; replies go to ``fd``; ends with ``parent``."""
    from ..interrupt import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent)
    out = os.fdopen(fd, "w", encoding="utf-8")

    def say(reply: dict) -> None:
        out.write(json.dumps(reply) + "\n")
        out.flush()

    for line in sys.stdin:
        job = Job(**json.loads(line))
        try:
            say({"done": serve(job, say)})
        except (BadInput, KernelMismatch) as exc:
            say({"error": type(exc).__name__, "message": str(exc)})


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
