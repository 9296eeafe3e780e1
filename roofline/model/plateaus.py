"""Plateaus of a working-set sweep: one bandwidth roof per memory level, found from the data.

A bandwidth sweep over working sets from a fraction of L1 to beyond the last-level cache is a
staircase: flat while the set fits a level, falling where it spills into the next. The plateaus are
the best piecewise-constant fit of log(bandwidth) with one step per level (least squares, by dynamic
programming over where the steps fall). The OS's cache sizes only bound where each step may fall
(within ``window``× of the level's aggregate size), so a plateau's extent and height come from the
measurements; where the fit puts a step is reported beside what the OS says.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from ..errors import BadInput

#: A level's plateau must end within this factor of the level's aggregate size from the OS.
WINDOW = 4.0


@dataclass(frozen=True)
class Plateau:
    """One level's plateau: its bandwidth (median of its points; low and high, their extremes) and the
    working sets it spans. The outer level's bandwidth may come from its farthest points only
    (:func:`find_plateaus`' ``outer_from``).

    ``ends_bytes`` is the first working set past the plateau (where bandwidth has left it), None for
    the outermost level; ``capacity_bytes`` is the level's aggregate size from the OS (None for DRAM).
    """

    level: str
    kernel: str
    gbps: float
    low_gbps: float
    high_gbps: float
    first_bytes: int
    last_bytes: int
    ends_bytes: int | None
    points: int
    capacity_bytes: int | None

    def as_dict(self) -> dict[str, object]:
        return asdict(self)


def _segment_costs(ys: Sequence[float]):
    s1, s2 = [0.0], [0.0]
    for y in ys:
        s1.append(s1[-1] + y)
        s2.append(s2[-1] + y * y)

    def cost(i: int, j: int) -> float:  # squared deviation of ys[i:j] from their mean
        n = j - i
        return s2[j] - s2[i] - (s1[j] - s1[i]) ** 2 / n

    return cost


def _fit(ys: Sequence[float], segments: int, min_len: int, allowed) -> list[int] | None:
    """Start indices of ``segments`` contiguous segments minimising the total cost; None if none is allowed."""
    n, cost = len(ys), _segment_costs(ys)
    inf = math.inf
    # best[k][j]: cost of ys[:j] in k segments; back[k][j]: where the k-th segment starts
    best = [[inf] * (n + 1) for _ in range(segments + 1)]
    back = [[-1] * (n + 1) for _ in range(segments + 1)]
    best[0][0] = 0.0
    for k in range(1, segments + 1):
        for j in range(k * min_len, n + 1):
            if k < segments and not allowed(k - 1, j):
                continue
            if k == segments and j != n:
                continue
            for i in range((k - 1) * min_len, j - min_len + 1):
                if best[k - 1][i] < inf and best[k - 1][i] + cost(i, j) < best[k][j]:
                    best[k][j], back[k][j] = best[k - 1][i] + cost(i, j), i
    if best[segments][n] == inf:
        return None
    starts, j = [], n
    for k in range(segments, 0, -1):
        j = back[k][j]
        starts.append(j)
    return starts[::-1]


def find_plateaus(
    sizes: Sequence[int],
    gbps: Sequence[float],
    capacities: Sequence[tuple[str, int]],
    kernel: str,
    outer: str = "DRAM",
    window: float = WINDOW,
    outer_from: int | None = None,
) -> tuple[Plateau, ...]:
    """One plateau per level in ``capacities`` (name, aggregate bytes; innermost first), then ``outer``.

    ``sizes`` (working sets, bytes, ascending) and ``gbps`` (their median bandwidths) are the sweep.
    The step after level i falls at a working set within ``window``× of its capacity when the sweep
    allows it, anywhere otherwise. ``outer_from``: the ``outer`` plateau's bandwidth comes from its
    working sets of at least this many bytes, where it has any: those between the last step and there
    are still partly served by the last cache (on a Zen 3 VM with a 32 MiB L3, 32-90 MiB read 35-67
    GB/s, 128-256 MiB 30-33), so its median would be theirs; its extent is still the fit's.
    BadInput when the sweep has fewer points than levels.
    """
    pts = sorted(zip(sizes, gbps, strict=True))
    if any(g <= 0 or not math.isfinite(g) for _, g in pts):
        raise BadInput("a sweep's bandwidths must be positive and finite")
    levels = [*capacities, (outer, None)]
    if len(pts) < len(levels):
        raise BadInput(f"a sweep of {len(pts)} working sets cannot show {len(levels)} levels")
    ys = [math.log(g) for _, g in pts]
    xs = [s for s, _ in pts]
    min_len = 2 if len(pts) >= 2 * len(levels) else 1

    def within(k: int, j: int) -> bool:  # the first point past level k is xs[j]
        cap = capacities[k][1]
        return j < len(xs) and cap / window < xs[j] <= cap * window

    starts = _fit(ys, len(levels), min_len, within) or _fit(ys, len(levels), min_len, lambda k, j: True)
    assert starts is not None  # unconstrained with enough points always fits
    bounds = [*starts, len(pts)]
    plateaus = []
    for k, (name, cap) in enumerate(levels):
        seg = pts[bounds[k] : bounds[k + 1]]
        rates = [g for _, g in seg]
        if name == outer and outer_from is not None:
            rates = [g for s, g in seg if s >= outer_from] or rates
        plateaus.append(
            Plateau(
                level=name,
                kernel=kernel,
                gbps=statistics.median(rates),
                low_gbps=min(rates),
                high_gbps=max(rates),
                first_bytes=int(seg[0][0]),
                last_bytes=int(seg[-1][0]),
                ends_bytes=int(pts[bounds[k + 1]][0]) if bounds[k + 1] < len(pts) else None,
                points=len(seg),
                capacity_bytes=cap,
            )
        )
    return tuple(plateaus)


def level_of(working_bytes: float, capacities: Sequence[tuple[str, int | None]], outer: str = "DRAM") -> str:
    """The innermost level whose capacity holds ``working_bytes`` (levels innermost first), else ``outer``."""
    for name, cap in capacities:
        if cap is not None and working_bytes <= cap:
            return name
    return outer
