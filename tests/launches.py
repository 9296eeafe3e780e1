"""Which of the e2e tier's programs a command line launches: asv, `roofline bench`, Chromium or ReFrame.

conftest.py fails a test that launches one of them without ``@pytest.mark.e2e``, so that the fast tier
(``make test-fast``: ``-m "not e2e and not slow"``) stays fast. A command is read as it is given to
``subprocess.Popen`` (every ``subprocess.run`` and asyncio subprocess goes through it), in this process:
a program launched by a child process is that child's business (``roofline bench`` launches asv).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Sequence

#: Executable names that are the programs themselves.
EXECUTABLES = {
    "asv": "asv",
    "reframe": "ReFrame",
    "chromium": "Chromium",
    "chromium-browser": "Chromium",
    "chrome": "Chromium",
    "headless_shell": "Chromium",
}


def _words(args: object) -> list[str]:
    if isinstance(args, str | bytes | os.PathLike):
        text = os.fsdecode(args)
        return shlex.split(text) if " " in text else [text]
    return [os.fsdecode(a) for a in args]  # type: ignore[union-attr]


def _after_interpreter(words: Sequence[str]) -> tuple[str, list[str]] | None:
    """(how, rest) for a Python command line: ("-m", [module, args...]), ("-c", [code, ...]) or ("", [script, ...])."""
    if not os.path.basename(words[0]).startswith("python"):
        return None
    rest = list(words[1:])
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        del rest[: 2 if rest[0] in ("-X", "-W") else 1]  # interpreter options (-u, -I, -X importtime, ...)
    if not rest:
        return None
    if rest[0] in ("-m", "-c"):
        return rest[0], rest[1:]
    return "", rest


def program(args: object) -> str | None:
    """The e2e program ``args`` (a Popen command) launches, or None."""
    words = _words(args)
    if not words:
        return None
    name = os.path.basename(words[0])
    if name in EXECUTABLES:
        return EXECUTABLES[name]
    if name == "roofline" and "bench" in words[1:2]:
        return "roofline bench"
    if "run-driver" in words[1:] and any("playwright" in w for w in words):
        return "Chromium"  # playwright's driver, which launches the browser
    python = _after_interpreter(words)
    if python is None:
        return None
    how, rest = python
    if how == "-m" and rest:
        module, tail = rest[0], [w for w in rest[1:] if not w.startswith("-")]
        if module == "asv" or module.startswith("asv."):
            return "asv"
        if module == "reframe":
            return "ReFrame"
        if module == "roofline" and tail[:1] == ["bench"]:
            return "roofline bench"
    if how == "-c" and rest and "asv.commands" in rest[0]:
        return "asv"  # asv's own commands in code (roofline bench builds asv's virtualenv so)
    if how == "" and rest and rest[0].replace(os.sep, "/").endswith("fleet/run.py"):
        return "ReFrame"  # make fleet: ReFrame over this machine's partitions
    return None
