"""A percentile of two cells compared (compare --gate p95,p99): B's p99 against A's, with a
bootstrap interval of their ratio and a bootstrap p-value, for the verdict the median's
comparison gives by a permutation test.

The p50 is judged as every cell is (analysis/compare.py). A higher percentile needs its own
test: a tail that doubled while the median held leaves the mean of the logs, which the
permutation test exchanges, almost where it was. Each replicate resamples each side as the
median's interval does (runs with replacement, then values within each run drawn), takes the
percentile of each draw (analysis/tails.quantile's definition, numpy's default) and their
ratio B/A; the interval is the replicates' 2.5th and 97.5th percentiles, and the two-sided
p-value twice the share of replicates on the far side of 1 (counting the observed one, so
never 0). A percentile is compared only where both sides have the values it needs
(tails.least_values: p95 20, p99 100); with fewer, the "p99" is a side's largest value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from guestbench.analysis import stats
from guestbench.analysis.cells import CONFIDENCE, Cell, Interval
from guestbench.analysis.tails import Tail, least_values, tail

GATES = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}
DEFAULT_GATE = ("p50",)
RESAMPLES = 2000  # per comparison: p-values near 0.01 are resolved to about +/-0.002
CHUNK = 4_000_000  # values drawn at once, at most (32 MiB of float64)


class GateError(ValueError):
    """A --gate the user wrote that names no percentile guestbench judges."""


def parse_gate(text: str) -> tuple[str, ...]:
    """"p50,p95,p99" -> ("p50", "p95", "p99"), in the order of GATES; GateError if a name
    is not one of them."""
    names = [name.strip().lower() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in GATES]
    if unknown or not names:
        raise GateError(f"--gate {text!r}: {', '.join(unknown) or 'nothing'} is not a "
                        f"percentile guestbench judges (fix: a comma-separated list of "
                        f"{', '.join(GATES)}, e.g. --gate p50,p99)")
    return tuple(name for name in GATES if name in names)


@dataclass(frozen=True)
class TailComparison:
    a: Tail  # A's percentile, with its interval from order statistics
    b: Tail
    ratio: Interval  # percentile(B) / percentile(A), its bootstrap interval
    pvalue: float


def comparable(x: Cell, y: Cell, q: float) -> bool:
    """Whether both sides have the values percentile q needs."""
    return min(len(x.values), len(y.values)) >= least_values(q)


def compare_tail(x: Cell, y: Cell, q: float, resamples: int = RESAMPLES,
                 confidence: float = CONFIDENCE) -> TailComparison:
    """Percentile q of B's cell (y) against A's (x)."""
    ordered_a, ordered_b = sorted(x.values), sorted(y.values)
    a, b = tail(ordered_a, q), tail(ordered_b, q)
    if a.value <= 0 or b.value < 0:
        return TailComparison(a, b, Interval(math.nan), 1.0)
    rng = stats._rng()  # the same samples always give the same verdict
    replicates_a = replicates(x.values, x.sizes, q, resamples, rng)
    replicates_b = replicates(y.values, y.sizes, q, resamples, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = replicates_b / replicates_a
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size == 0:
        return TailComparison(a, b, Interval(b.value / a.value), 1.0)
    tail_share = (1 - confidence) / 2 * 100
    low, high = np.percentile(ratios, [tail_share, 100 - tail_share])
    below = int(np.count_nonzero(ratios <= 1))
    above = int(np.count_nonzero(ratios >= 1))
    pvalue = min(1.0, 2 * (min(below, above) + 1) / (ratios.size + 1))
    return TailComparison(a, b, Interval(b.value / a.value, float(low), float(high)), pvalue)


def replicates(values: Sequence[float], sizes: Sequence[int], q: float, resamples: int,
               rng: np.random.Generator) -> np.ndarray:
    """resamples bootstrap replicates of percentile q: the runs drawn with replacement, then
    as many values within each run drawn as the largest run has (runs weigh equally); with
    one value per run, the ordinary bootstrap of the values."""
    array = np.asarray(values, dtype=float)
    if not sizes or max(sizes) == 1 or sum(sizes) != array.size:
        step = max(1, CHUNK // array.size)
        return np.concatenate([
            np.quantile(array[rng.integers(0, array.size, (min(step, resamples - start),
                                                             array.size))], q, axis=1)
            for start in range(0, resamples, step)])
    runs, widest = len(sizes), max(sizes)
    lengths = np.asarray(sizes)
    padded = np.zeros((runs, widest))
    for row, chunk in enumerate(np.split(array, np.cumsum(sizes)[:-1])):
        padded[row, :chunk.size] = chunk
    step = max(1, CHUNK // (runs * widest))
    out = []
    for start in range(0, resamples, step):
        count = min(step, resamples - start)
        chosen = rng.integers(0, runs, (count, runs))
        within = (rng.random((count, runs, widest)) * lengths[chosen][..., None]).astype(np.int64)
        drawn = padded[chosen[..., None], within].reshape(count, runs * widest)
        out.append(np.quantile(drawn, q, axis=1))
    return np.concatenate(out)
