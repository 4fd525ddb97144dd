"""The tail of a cell's values: its 50th, 90th, 95th and 99th percentiles, each with a 95%
interval, once the cell has TAIL_RUNS values or more.

Start-up is published this way (p50/p95/p99 of create-to-first-exec over 30 or more
iterations) because the tail is what a user feels. Every percentile guestbench gives, the
median of every table included, is quantile(): one definition, so that one cell never has
two p50s. Its interval is the distribution-free one from order statistics: the ranks l < u
for which the binomial law of "how many values fall below the true percentile" puts at
least 95% between them. With few values a high percentile's interval has no upper end in the
sample (30 values cannot bound a p99 from above): `high` is then None, and tables say so,
never a made-up bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

TAIL_RUNS = 30  # values a cell needs before its tail is told
QUANTILES = (0.50, 0.90, 0.95, 0.99)
CONFIDENCE = 0.95


@dataclass(frozen=True)
class Tail:
    quantile: float  # 0.95 for p95
    value: float
    low: float | None  # None: below the smallest value, the sample does not bound it
    high: float | None  # None: above the largest value, the sample does not bound it

    @property
    def name(self) -> str:
        return f"p{self.quantile * 100:g}"


def least_values(quantile: float) -> int:
    """The fewest values whose order statistic can be that quantile at all: 1/(1 - q), so
    that one value lies above it (p90: 10, p95: 20, p99: 100; the median of one value is
    that value). With fewer, the "p99" would be the largest value, and tables say so
    instead of calling it a p99."""
    return 1 if quantile <= 0.5 else math.ceil(round(1 / (1 - quantile), 9))


def quantile(ordered: Sequence[float], q: float) -> float:
    """The quantile q of values sorted: linear interpolation between the order statistics
    around position (n - 1) q, counted from 0 (Hyndman and Fan's type 7, numpy's and R's
    default). Its p50 is the median as every table gives it (the mean of the two middle
    values of an even count), and it is what numpy computes for the cells' medians, so the
    summary, the start-up table and the exports agree."""
    if not ordered:
        raise ValueError("quantile() needs at least one value")
    position = (len(ordered) - 1) * q
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (position - below) * (ordered[above] - ordered[below])


def tails(values: Sequence[float], quantiles: Sequence[float] = QUANTILES) -> list[Tail] | None:
    """Each quantile's value and interval; None with fewer than TAIL_RUNS values."""
    if len(values) < TAIL_RUNS:
        return None
    ordered = sorted(values)
    return [tail(ordered, q) for q in quantiles]


def tail(ordered: Sequence[float], q: float) -> Tail:
    """One quantile of values sorted, with its interval from order statistics (any count:
    an end the values do not bound is None)."""
    from scipy.stats import binom  # deferred: scipy's import (0.3 s), only where a tail is told
    n = len(ordered)
    value = quantile(ordered, q)
    below = (1 - CONFIDENCE) / 2
    # P(x(l) <= true quantile <= x(u)) = B(u - 1) - B(l - 1), B the binomial(n, q) CDF
    cdf = binom.cdf(range(n + 1), n, q)
    lows = [rank for rank in range(1, n + 1) if cdf[rank - 1] <= below]
    highs = [rank for rank in range(1, n + 1) if cdf[rank - 1] >= 1 - below]
    low = ordered[lows[-1] - 1] if lows else None
    high = ordered[highs[0] - 1] if highs else None
    return Tail(q, value, low, high)
