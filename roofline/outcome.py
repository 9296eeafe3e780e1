"""What one part of a run came to: measured with its figures, skipped with the reason, or failed with the reason.

The one way a part says it, from the part that measured to asv: :meth:`Measured.get` returns the
figures; :meth:`Skipped.get` raises :class:`~roofline.errors.BackendUnavailable` (asv records NaN:
not chosen, a backend absent here) and :meth:`Failed.get` raises
:class:`~roofline.errors.KernelMismatch` (asv records a failure: a kernel that computed wrong values,
sizes that cannot run). Plain frozen data, so asv can pickle an outcome from ``setup_cache`` into
every benchmark's process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from .errors import BackendUnavailable, BadInput, KernelMismatch

T = TypeVar("T")


@dataclass(frozen=True)
class Measured(Generic[T]):
    """Measured: ``value`` holds its figures."""

    value: T

    reason = ""
    ok = True

    def get(self) -> T:
        return self.value

    def about(self, what: str) -> Measured[T]:
        return self


@dataclass(frozen=True)
class Skipped:
    """Not measured, for a reason that is no fault (not chosen, switched off, a backend absent here)."""

    reason: str

    ok = False

    def get(self):
        raise BackendUnavailable(self.reason)

    def about(self, what: str) -> Skipped:
        """The same outcome, its reason naming ``what`` first."""
        return Skipped(f"{what}: {self.reason}")


@dataclass(frozen=True)
class Failed:
    """Measured wrong or not at all, for a reason that is a fault (wrong values, a size that cannot run)."""

    reason: str

    ok = False

    def get(self):
        raise KernelMismatch(self.reason)

    def about(self, what: str) -> Failed:
        """The same outcome, its reason naming ``what`` first."""
        return Failed(f"{what}: {self.reason}")


Outcome = Measured | Skipped | Failed


def attempt(make: Callable[[], T]) -> Measured[T] | Skipped | Failed:
    """``make()``'s value as :class:`Measured`; BackendUnavailable as :class:`Skipped`; KernelMismatch or
    BadInput (sizes that cannot run here) as :class:`Failed`."""
    try:
        return Measured(make())
    except BackendUnavailable as exc:
        return Skipped(str(exc))
    except (KernelMismatch, BadInput) as exc:
        return Failed(str(exc))


def of_cache(value: object) -> object:
    """What a ``setup_cache`` returned: an outcome's figures, or a bare reason (a string: skipped) raised."""
    if isinstance(value, str):
        raise BackendUnavailable(value)
    if isinstance(value, (Measured, Skipped, Failed)):
        return value.get()
    return value
