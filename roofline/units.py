"""Numbers and tables for people: SI prefixes, significant figures ('3.35 TB/s', 'n/a'), aligned columns,
and which way a unit reads (time down is better, throughput up).

A figure printed by more than one command (the report, compare, its page) goes through one function
here, so it reads the same everywhere: :func:`batch` for a crossover batch (10.8 → '11', 9.14 → '9.1').
"""

from __future__ import annotations

import math

NA = "n/a"
#: Units read as lower-is-better by their first word (asv's "seconds", "µs per call", ...).
#: Units of a cost. A track in bytes is a size (a cache level, the LLC): a fact with no better way
#: (asv's mem_ and peakmemory benchmarks are lower-is-better by their type).
LOWER_UNITS = ("seconds", "s", "ms", "µs", "us", "ns")

_PREFIXES = (
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-3, "m"),
    (1e-6, "µ"),
    (1e-9, "n"),
)


def sig(value: float | None, digits: int = 3, trim: bool = False) -> str:
    """``value`` to ``digits`` significant figures without an exponent below 1e6 (295.5 → '296'); n/a for None.

    ``trim`` drops trailing zeros after the point (67.00 → '67').
    """
    if value is None or not math.isfinite(value):
        return NA
    if value == 0:
        return "0"
    exponent = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - exponent)
    if exponent >= 6:
        return f"{value:.{digits - 1}e}"
    text = f"{value:.{decimals}f}"
    return text.rstrip("0").rstrip(".") if trim and "." in text else text


def batch(value: float | None) -> str:
    """A batch size that is an estimate (a crossover): whole batches from 10 up, one decimal below ('9.1');
    n/a for None. Two significant figures, never fewer whole digits (296 stays '296'): the observed
    crossover read 1.21× max/min over eight run-like sweeps, so a third figure would be noise."""
    return sig(value, 2)


def interval(value: float | None, low: float | None, high: float | None) -> str:
    """A median's interval as the larger of its two sides in percent of the value: '±4%' ('' without one)."""
    if value is None or low is None or high is None or not value or not all(map(math.isfinite, (low, high))):
        return ""
    side = max(high - value, value - low, 0.0) / abs(value)
    return f"±{sig(100 * side, 1, trim=True) if side < 0.01 else f'{100 * side:.0f}'}%"


def ratio(value: float | None) -> str:
    """A ratio to a baseline: '1.21×', '0.052×'; '' for None."""
    return "" if value is None or not math.isfinite(value) else f"{sig(value, 3)}×"


def si(value: float | None, unit: str, digits: int = 3, trim: bool = False) -> str:
    """``value`` in ``unit`` with an SI prefix: si(3.35e12, 'B/s') → '3.35 TB/s'; n/a for None."""
    if value is None or not math.isfinite(value):
        return NA
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{sig(value / scale, digits, trim)} {prefix}{unit}"
    return f"{sig(value, digits, trim)} {unit}"  # zero, or below a nano


def size(n: float | None, missing: str = "?") -> str:
    """Bytes in binary units: 3 * 2**20 → '3 MiB'; ``missing`` for None."""
    if n is None:
        return missing
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def table(rows: list[list[str]], right: set[int] = frozenset()) -> list[str]:
    """Rows of cells as aligned lines; columns in ``right`` are right-aligned."""
    if not rows:
        return []
    widths = [max(len(r[i]) if i < len(r) else 0 for r in rows) for i in range(max(map(len, rows)))]
    return [
        "  ".join(c.rjust(widths[i]) if i in right else c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()
        for r in rows
    ]


def better(unit: str) -> str | None:
    """'lower' (a time), 'higher' (a rate ``…/s``, a fraction) or None (a count, a batch, a size) is better."""
    unit = unit.strip()
    words = unit.split()
    if words and words[0] in LOWER_UNITS:
        return "lower"
    if unit.endswith("/s") or unit.startswith("fraction"):
        return "higher"
    return None
