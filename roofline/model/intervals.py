"""The median of repeated passes and a distribution-free confidence interval around it.

Timings on a shared machine are not normal (a pass is slowed, never sped up, by a neighbour), so
the interval comes from order statistics: with n samples, the k-th smallest and k-th largest bound
the median with probability 1 − 2·P(Binomial(n, ½) < k), whatever the distribution.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from math import comb

from ..errors import BadInput

#: The confidence asked of a median's interval.
CONFIDENCE = 0.95


@dataclass(frozen=True)
class MedianCI:
    """A median and the interval [low, high] that holds it with probability ``confidence`` (≥ the asked)."""

    median: float
    low: float
    high: float
    confidence: float
    samples: int

    @property
    def relative_half_width(self) -> float:
        """(high − low) / (2 · median): 0.05 means the median is known to about ±5 %."""
        return (self.high - self.low) / (2 * self.median) if self.median else float("inf")


def order_statistic_rank(n: int, confidence: float = CONFIDENCE) -> tuple[int, float]:
    """The largest k with P(k-th smallest ≤ median ≤ k-th largest) ≥ ``confidence``, and that probability.

    k = 1 (the extremes) when even they fall short; their coverage 1 − 2⁻ⁿ⁺¹ is returned then.
    """
    if n < 1:
        raise BadInput(f"a median needs at least one sample, got {n}")
    best = (1, 1 - 2 * 0.5**n) if n > 1 else (1, 0.0)
    tail = 0.0
    for k in range(1, (n + 1) // 2 + 1):
        tail += comb(n, k - 1) / (1 << n)  # P(Binomial(n, ½) ≤ k − 1); exact ints: no overflow past n ≈ 1030
        coverage = 1 - 2 * tail
        if coverage >= confidence:
            best = (k, coverage)
        else:
            break
    return best


def median_ci(samples: Sequence[float], confidence: float = CONFIDENCE) -> MedianCI:
    """The median of ``samples`` with its order-statistic confidence interval."""
    xs = sorted(float(x) for x in samples)
    k, coverage = order_statistic_rank(len(xs), confidence)
    return MedianCI(statistics.median(xs), xs[k - 1], xs[len(xs) - k], coverage, len(xs))


def fastest_round_median(rates: Sequence[float], starts: Sequence[int]) -> float:
    """The median of the fastest round of ``rates`` (in the order taken; round k starts at ``starts[k]``),
    the median of all where no round was marked: a roof is its fastest round, as a slow minute of a shared
    machine moves a round, not what the machine can do."""
    bounds = [*starts, None]
    rounds = [rates[a:b] for a, b in zip(bounds, bounds[1:], strict=False) if rates[a:b]]
    return max(statistics.median(r) for r in rounds) if rounds else statistics.median(rates)
