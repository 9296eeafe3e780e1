"""The exceptions the package raises, what each means to a user, and the checks that raise BadInput."""

from __future__ import annotations

import math
import numbers

#: The exit status of a run stopped, or measured, on a busy machine (unless the user accepts it).
EXIT_BUSY = 3


def busy_exit(status: int, contended: bool, allow_busy: bool) -> int:
    """The one rule of every command that measures: figures measured under contention (``contended``) make the
    exit status at least :data:`EXIT_BUSY`, unless ``allow_busy`` accepts them; otherwise ``status`` stands."""
    return max(status, EXIT_BUSY) if contended and not allow_busy else status


class RooflineError(Exception):
    """Base class of every error roofline raises on purpose."""

    exit_code = 1


class BadInput(RooflineError, ValueError):
    """The user gave something unusable (a flag, an environment variable, a file): exit 2."""

    exit_code = 2


class KernelMismatch(RooflineError, AssertionError):
    """A kernel's output disagreed with the float64 reference: no figure may be reported."""

    exit_code = 1


class BackendUnavailable(RooflineError, NotImplementedError):
    """An optional backend (torch, CUDA, a dtype) is missing here; benchmarks skip on it."""

    exit_code = 2


class Interrupted(RooflineError):
    """SIGINT or SIGTERM arrived: stop now, exit 128 + the signal's number (130, 143)."""

    def __init__(self, signum: int) -> None:
        import signal

        self.signum = int(signum)
        self.exit_code = 128 + self.signum
        super().__init__(f"stopped by {signal.Signals(self.signum).name}")


def positive(what: str, value: object) -> float:
    """``value`` if it is a finite real number above zero (a bool is not); BadInput naming ``what`` if not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise BadInput(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise BadInput(f"{what} must be positive and finite, got {value!r}")
    return value


def positive_int(what: str, value: object) -> int:
    """``value`` if it is an integer above zero (a bool is not); BadInput naming ``what`` if not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value <= 0:
        raise BadInput(f"{what} must be a positive integer, got {value!r}")
    return value
