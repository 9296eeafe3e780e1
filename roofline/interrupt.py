"""Stopping promptly on SIGINT and SIGTERM, children included.

Inside :func:`signals_raise`, SIGTERM, and SIGINT unless this process was started with SIGINT
ignored, raise :class:`~roofline.errors.Interrupted` in the main thread: ``finally`` blocks run
and the command exits 130 or 143 without a traceback. A process started with SIGINT ignored
(``nohup``, a background job of a non-interactive shell) keeps ignoring it, as its caller asked;
SIGTERM still stops it. Once interrupted, further signals no longer interrupt the clean-up.

:func:`run_child` runs a command (asv) in a session of its own and stops it on a signal: every
process of that session gets SIGTERM, those left after :data:`GRACE_S` get SIGKILL. asv starts
each benchmark in a process group of its own, so signalling one group is not enough; the session
holds them all. SIGTERM rather than the signal received: asv answers SIGINT with a
KeyboardInterrupt traceback in most of its stages. A second signal during the grace period kills
at once. On Linux the child gets SIGINT if this process dies, even by SIGKILL; asv then stops its
benchmarks itself, so nothing outlives ``roofline bench``.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from .errors import Interrupted

#: Seconds the processes of a child's session get after SIGTERM, before SIGKILL.
GRACE_S = 2.0

_STOPPING: list[subprocess.Popen] = []  # the child being stopped, during its grace period
_INTERRUPTED: list[int] = []  # the signal that interrupted this process, once one has


def _raise(signum: int, frame: object) -> None:
    if _STOPPING:  # a second signal: no more grace
        kill_session(_STOPPING[-1], signal.SIGKILL)
    if _STOPPING or _INTERRUPTED:
        return
    _INTERRUPTED.append(signum)
    raise Interrupted(signum)


@contextmanager
def signals_raise(final: bool = False) -> Iterator[None]:
    """SIGTERM and SIGINT raise :class:`Interrupted` inside the block (main thread only).

    ``final``: the block is the process's last work (the CLI); after an interruption the two
    signals stay ignored, so a second Ctrl-C cannot turn exit 130 into a death by SIGINT.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    outermost = signal.getsignal(signal.SIGTERM) is not _raise
    if outermost:
        _INTERRUPTED.clear()
    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) == signal.SIG_IGN:
            continue
        previous[sig] = signal.signal(sig, _raise)
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, signal.SIG_IGN if final and _INTERRUPTED else handler)


def _libc_prctl():
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None


_PRCTL = _libc_prctl()
_PR_SET_PDEATHSIG = 1


def _child_preexec(parent: int) -> None:
    """In the child before exec: both signals at their defaults; SIGINT when the parent dies."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(signal.SIGINT))
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), signal.SIGINT)


def die_with_parent(parent: int, sig: int = signal.SIGKILL) -> None:
    """This process gets ``sig`` when its parent ``parent`` dies (Linux; elsewhere nothing): a worker never
    outlives the run."""
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # the parent died before prctl took effect
            os.kill(os.getpid(), sig)


def session_members(sid: int, proc_root: Path = Path("/proc")) -> list[int]:
    """Processes whose session id is ``sid`` (Linux ``/proc``; empty elsewhere)."""
    members = []
    try:
        entries = list(proc_root.iterdir())
    except OSError:
        return members
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...; comm may hold spaces and parentheses
        fields = stat.rpartition(")")[2].split()
        if len(fields) > 3 and fields[3] == str(sid):
            members.append(int(entry.name))
    return members


def _send(pid: int, sig: int, group: bool = False) -> None:
    try:
        (os.killpg if group else os.kill)(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def kill_session(proc: subprocess.Popen, sig: int) -> None:
    """Send ``sig`` to the child's process group while it is unreaped, and to every process of its session."""
    if proc.returncode is None:  # not reaped, so its pid (and group id) cannot have been reused
        _send(proc.pid, sig, group=True)
    for pid in session_members(proc.pid):
        if pid != os.getpid():
            _send(pid, sig)


def stop_child(proc: subprocess.Popen) -> None:
    """SIGTERM to the child's whole session, up to GRACE_S to exit, then SIGKILL to what is left."""
    _STOPPING.append(proc)
    try:
        kill_session(proc, signal.SIGTERM)
        try:
            proc.wait(timeout=GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        kill_session(proc, signal.SIGKILL)
        proc.wait()
    finally:
        _STOPPING.remove(proc)


def run_child(cmd: Sequence[str], **popen: object) -> int:
    """Run ``cmd`` in a new session and return its exit status; on any exception, stop it and re-raise."""
    parent = os.getpid()
    proc = subprocess.Popen(list(cmd), start_new_session=True, preexec_fn=lambda: _child_preexec(parent), **popen)
    try:
        status = proc.wait()
    except BaseException:
        stop_child(proc)
        raise
    kill_session(proc, signal.SIGKILL)  # anything the child left running in its session after it exited
    return status
