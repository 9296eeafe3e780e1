"""The shape every CLI error must have: one line, one prefix, no traceback."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from collections.abc import Callable

#: "roofline: error: ..." or, for a subcommand's usage error, "roofline decode: error: ...".
ONE_LINE_ERROR = re.compile(r"roofline(?: [a-z]+)?: error: (?P<message>[^\n]+)\n")


def one_line_error(err: str) -> str:
    """Assert ``err`` is one well-formed error line; return its message."""
    m = ONE_LINE_ERROR.fullmatch(err)
    assert m, f"not one error line with one prefix: {err!r}"
    assert "error: roofline" not in err, f"doubled prefix: {err!r}"
    return m.group("message")


#: The gallery machine (examples/results) recorded at the current suite: the one the report tests read
#: (a machine recorded at an older suite shows fewer figures; several machines need --machine).
EXAMPLE_MACHINE = "epyc-zen4-2core-32mib-l3"


def interrupt(argv: list[str], ready: Callable[[subprocess.Popen], object], **popen: object) -> tuple[int, float, str]:
    """Run ``argv`` as from a terminal (SIGINT at its default, however make started this), wait for
    ``ready(proc)`` to return, send SIGINT: (its exit status, seconds from the signal to its exit, its stderr)."""
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        **popen,
    )
    try:
        ready(proc)
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        return proc.returncode, time.monotonic() - sent, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
