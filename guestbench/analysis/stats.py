"""Statistics of cells and of ratios between cells: medians, spread and bootstrap intervals (scipy)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
# Resamples per bootstrap. Percentile intervals need about 1,000 or more to be
# stable at 95%; 2,000 keeps the Monte Carlo wobble of an endpoint well under
# the width of the interval itself.
RESAMPLES = 2000
# Every interval is computed from a fixed seed: the same samples always give
# the same report, so two reports of one campaign never disagree.
SEED = 20261121


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def median_ci(values: Sequence[float], confidence: float = CONFIDENCE,
              resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the median; None with fewer than 3 values."""
    data = np.asarray(values, dtype=float)
    if data.size < 3:
        return None
    if np.all(data == data[0]):
        return float(data[0]), float(data[0])
    result = stats.bootstrap((data,), np.median, vectorized=True, axis=-1,
                             n_resamples=resamples, confidence_level=confidence,
                             method="percentile", rng=_rng())
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def relative_half_width(values: Sequence[float], confidence: float = CONFIDENCE) -> float | None:
    """Half the width of the median's interval over the median (0.02 = +/-2%); None if unknown."""
    interval = median_ci(values, confidence)
    if interval is None:
        return None
    centre = float(np.median(values))
    if centre == 0:
        return math.inf if interval[1] > interval[0] else 0.0
    return (interval[1] - interval[0]) / 2 / abs(centre)
