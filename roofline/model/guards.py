"""Warnings that say when a figure may not mean what it claims.

Each check returns the warnings it finds as one-line strings; the report prints them, and the
benchmarks print them to asv's stderr (see ``asv run --show-stderr``).
"""

from __future__ import annotations

#: A timed step whose samples spread more than this (interquartile range ÷ median) is flagged as noisy.
NOISY_SPREAD = 0.10

#: A ceiling timed in a handful of passes (slowest ÷ fastest) above this is flagged as noisy.
NOISY_PASSES = 1.15

#: A measured figure this far above the machine's own ceiling measured something else.
ABOVE_CEILING = 1.15

#: asv's ``time_`` twin of a decode step and the run's own per-call time agree within this share.
TWIN_AGREEMENT = 0.10


def working_set_fits_llc(working_bytes: float, llc: float, label: str) -> list[str]:
    """Warn when a figure presented as DRAM-bound has a working set that fits in the LLC."""
    if working_bytes <= llc:
        return [
            f"{label}: working set {working_bytes / 2**20:.0f} MiB fits in the {llc / 2**20:.0f} MiB LLC, "
            "so this measures the cache, not DRAM"
        ]
    return []


def llc_overridden(llc: float, source: object) -> list[str]:
    """Warn when the LLC size the pools are sized from was set by hand, not read from the OS."""
    if source == "ROOFLINE_LLC_BYTES":
        return [
            f"the LLC size ({llc / 2**20:g} MiB) comes from ROOFLINE_LLC_BYTES, not the OS: the DRAM pools are "
            "sized from it and escape the cache only if the real LLC is no larger"
        ]
    return []


def blas_threads_below_cores(threads: int | None, cores: int) -> list[str]:
    """Warn when the BLAS runs on fewer threads than this process may use."""
    if threads is not None and threads < cores:
        return [f"BLAS runs {threads} thread(s) on {cores} cores: the ceilings understate this machine"]
    return []


def noisy(spread: float, label: str) -> list[str]:
    """Warn when a step's timed samples spread (interquartile range ÷ median) beyond the noise threshold."""
    if spread > NOISY_SPREAD:
        return [
            f"{label}: timed samples spread {spread:.0%} of their median (interquartile range) "
            f"> {NOISY_SPREAD:.0%} (noisy machine?)"
        ]
    return []


def noisy_passes(spread: float, label: str) -> list[str]:
    """Warn when a ceiling's slowest ÷ fastest timed pass exceeds :data:`NOISY_PASSES`."""
    if spread > NOISY_PASSES:
        return [f"{label}: slowest ÷ fastest pass {spread:.2f} > {NOISY_PASSES} (noisy machine?)"]
    return []


def above_ceiling(value: float, ceiling: float, label: str, unit: str) -> list[str]:
    """Warn when a figure beats the machine's own measured ceiling by more than 15 %."""
    if ceiling > 0 and value > ABOVE_CEILING * ceiling:
        return [
            f"{label}: {value:.1f} {unit} is {value / ceiling:.2f}× the measured ceiling of {ceiling:.1f} {unit}: "
            "it measured a cache, or the timing is wrong"
        ]
    return []


def twin_disagrees(twin_seconds: float, track_seconds: float, label: str) -> list[str]:
    """Warn when asv's ``time_`` twin of a step and the run's measurement of it differ by over 10 %.

    Both time the same step back to back, in separate processes minutes apart: a gap means the
    machine moved between them (or the twin timed something else), so read twins against twins.
    """
    ratio = twin_seconds / track_seconds if track_seconds > 0 else float("inf")
    if abs(ratio - 1.0) > TWIN_AGREEMENT:
        return [
            f"{label}: asv's time_ twin read {1e6 * twin_seconds:.1f} µs per step, {ratio:.2f}× this run's "
            f"{1e6 * track_seconds:.1f} µs (beyond ±{TWIN_AGREEMENT:.0%}; separate processes at different moments: "
            "compare twins with twins)"
        ]
    return []
