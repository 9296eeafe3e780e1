"""Warnings that say when a figure may not mean what it claims.

Each check returns the warnings it finds as one-line strings; the report prints them, and the
benchmarks print them to asv's stderr (see ``asv run --show-stderr``).
"""

from __future__ import annotations

from collections.abc import Sequence

#: A timed step whose samples spread more than this (interquartile range ÷ median) is flagged as noisy.
NOISY_SPREAD = 0.10

#: A ceiling timed in a handful of passes (slowest ÷ fastest) above this is flagged as noisy.
NOISY_PASSES = 1.15

#: A measured figure this far above the machine's own ceiling measured something else.
ABOVE_CEILING = 1.15

#: A decode's tokens/s above this share of its roofline bound passed a roof: one of the bound's roofs read low.
ABOVE_BOUND = 1.05

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


def noisy_points(spreads: Sequence[tuple[str, float]]) -> list[str]:
    """One line naming every step (label, spread) whose timed samples spread beyond :data:`NOISY_SPREAD`."""
    over = [f"{label} {spread:.0%}" for label, spread in spreads if spread > NOISY_SPREAD]
    if not over:
        return []
    return [
        f"timed samples spread beyond {NOISY_SPREAD:.0%} of their median (interquartile range; noisy machine?): "
        + ", ".join(over)
    ]


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


def twins_disagree(twins: Sequence[tuple[str, float, float, float]]) -> list[str]:
    """One line naming every point whose asv ``time_`` twin and the run's own time per step differ by more
    than both :data:`TWIN_AGREEMENT` and the spread measured for it; ``twins``: (label, twin seconds, run's
    seconds, spread), the spread the relative interquartile ranges of the two timings added.

    Both time the same step back to back, in separate processes minutes apart: this VM's DRAM moves
    26–57 GB/s between minutes, so a gap inside the spread the timings themselves show is the machine's
    weather, and one beyond it means the machine moved between them (or the twin timed something else).
    """
    apart = []
    for label, twin, track, spread in twins:
        ratio = twin / track if track > 0 else float("inf")
        bound = max(TWIN_AGREEMENT, spread)
        if abs(ratio - 1.0) > bound:
            apart.append(f"{label} {ratio:.2f}× (±{bound:.0%})")
    if not apart:
        return []
    return [
        f"asv's time_ twins read beyond the spread of this run's timing: {', '.join(apart)} "
        "(the same step and threads in another process minutes later: the run's figure is the one its roofs were "
        "timed beside; the gap is the machine moving between them, docs/measured/twins.md; compare twins with twins)"
    ]


def above_bound(passed: Sequence[tuple[str, float]]) -> list[str]:
    """One headline naming every decode (label, fraction of its bound) above :data:`ABOVE_BOUND` of its bound.

    The bound is min(compute roof, bandwidth roof) of this run's own roofs, so a decode above it is not
    a fast machine: a roof the bound divides by (the bandwidth, or the torch dtype's GEMM roof) read low.
    """
    over = [f"{label} at {fraction:.2f}×" for label, fraction in passed if fraction > ABOVE_BOUND]
    if not over:
        return []
    return [
        f"ABOVE ITS BOUND: {', '.join(over)} of the roofline bound (> {ABOVE_BOUND:.2f}×): a roof the bound "
        "divides by read too low in this run; these fractions are not this machine's"
    ]
