"""Statistics of cells and of ratios between cells: spread, bootstrap intervals, flags (numpy, scipy)."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from guestbench.analysis.cells import CONFIDENCE, RESAMPLES, CellStats, Interval

# A report never does more than this many sample-resamples in all (about 1 s
# here); beyond it, fewer resamples per cell (never under MIN_RESAMPLES), and
# the report says how many it used.
WORK_BUDGET = 1e8
MIN_RESAMPLES = 200
# Every interval is computed from a fixed seed: the same samples always give
# the same report, so two reports of one campaign never disagree.
SEED = 20261121

# Flags (docs/statistics.md): thresholds, each with why.
OUTLIER_IQR = 1.5  # Tukey's fences: beyond 1.5 interquartile ranges of the quartiles
# Quartiles of fewer values are too unsteady to fence with: at 5-6 runs the
# default campaign flagged one "outlier" in most cells.
OUTLIER_MIN_N = 8
MULTIMODAL_MIN_N = 8  # fewer values cannot show two clusters apart from noise
MODE_MIN_SHARE = 0.1  # a cluster must hold at least 10% of the values (and 2) to count
MODE_MIN_PROMINENCE = 0.05  # a density peak must stand 5% of the highest one above its valley


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def fast_median(data: np.ndarray, axis: int = -1) -> np.ndarray:
    """The median along an axis by partitioning (np.median is ~10x slower on many short rows)."""
    data = np.moveaxis(np.asarray(data), axis, -1)
    size = data.shape[-1]
    middle = size // 2
    parted = np.partition(data, middle, axis=-1)
    if size % 2:
        return parted[..., middle]
    # the lower middle is the largest value left of the partition point (one
    # partition and a max: numpy's two-point partition is several times slower)
    return (parted[..., :middle].max(axis=-1) + parted[..., middle]) / 2


def resamples_for(total_values: int, requested: int = RESAMPLES) -> int:
    """Resamples per bootstrap so that the whole report stays within WORK_BUDGET."""
    if total_values * requested <= WORK_BUDGET:
        return requested
    return max(MIN_RESAMPLES, int(WORK_BUDGET // max(total_values, 1)))


def describe(cells: Sequence[Sequence[float]], resamples: int | None = None,
             confidence: float = CONFIDENCE,
             sizes: Sequence[Sequence[int] | None] | None = None) -> list[CellStats]:
    """Statistics of many cells at once; cells of one shape share one vectorised bootstrap.

    sizes[i], where given, says how cell i's values split into runs (values per run, in
    order); without it every value is a run of its own. The median's interval comes from
    the two-level bootstrap (runs, then values within runs), which is the ordinary
    bootstrap of the values when each run gave one.
    """
    arrays = [np.asarray(values, dtype=float) for values in cells]
    if any(array.size == 0 for array in arrays):
        raise ValueError("describe() needs at least one value per cell")
    splits = [_split(array.size, (sizes or [None] * len(arrays))[index])
              for index, array in enumerate(arrays)]
    resamples = resamples or resamples_for(sum(array.size for array in arrays))
    described: list[CellStats | None] = [None] * len(arrays)
    shapes = [(array.size, 1) if split is None else (len(split), max(split))
              for array, split in zip(arrays, splits)]
    for shape, indices in _same_shapes(shapes).items():
        padded, lengths = _padded([arrays[index] for index in indices],
                                  [splits[index] for index in indices], shape)
        low, high = _median_interval(padded, lengths, resamples, confidence)
        if shape[1] == 1:  # one value per run
            for row, cell in enumerate(_block_stats(padded[:, :, 0], low, high)):
                described[indices[row]] = cell
            continue
        for row, index in enumerate(indices):
            described[index] = _runs_stats(arrays[index], splits[index], low[row], high[row])
    return described  # type: ignore[return-value]


def _split(count: int, sizes: Sequence[int] | None) -> list[int] | None:
    """The values per run, if the cell has several values in some run; else None."""
    if sizes is None or len(sizes) == 0 or max(sizes) == 1:
        return None
    if sum(sizes) != count or min(sizes) < 1:
        raise ValueError(f"sizes {list(sizes)} do not split {count} values into runs")
    return list(sizes)


def _same_shapes(shapes: Sequence[tuple[int, int]]) -> dict[tuple[int, int], list[int]]:
    groups: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, shape in enumerate(shapes):
        groups[shape].append(index)
    return groups


def _padded(arrays: list[np.ndarray], splits: list[list[int] | None], shape: tuple[int, int]
            ) -> tuple[np.ndarray, np.ndarray]:
    """Cells of one shape as (cells, runs, widest) values and (cells, runs) run lengths;
    the padding of a shorter run is never drawn."""
    runs, widest = shape
    if widest == 1:
        return np.stack(arrays)[:, :, None], np.ones((len(arrays), runs), dtype=np.int64)
    padded = np.zeros((len(arrays), runs, widest))
    lengths = np.empty((len(arrays), runs), dtype=np.int64)
    for row, (array, split) in enumerate(zip(arrays, splits)):
        assert split is not None
        lengths[row] = split
        for run, chunk in enumerate(np.split(array, np.cumsum(split)[:-1])):
            padded[row, run, :chunk.size] = chunk
    return padded, lengths


def _runs_stats(values: np.ndarray, sizes: list[int], low: float, high: float) -> CellStats:
    """A cell of several values per run: location (median, mean, min, max) over every value,
    the median's interval by the two-level bootstrap, and the spread and its flags (stdev,
    cv, outliers, modes) over the runs' own medians, the unit that is replicated: values of
    one run cluster, and pooled they would pose as modes and outliers."""
    nothing = np.array([np.nan])
    whole = _block_stats(values[None, :], nothing, nothing)[0]
    bounds = np.cumsum([0, *sizes])
    medians = np.array([np.median(values[start:end]) for start, end in zip(bounds, bounds[1:])])
    spread = _block_stats(medians[None, :], nothing, nothing)[0]
    return dataclasses.replace(whole, stdev=spread.stdev, cv=spread.cv,
                               ci_low=_number(low), ci_high=_number(high),
                               outliers=spread.outliers, multimodal=spread.multimodal,
                               runs=len(sizes))


# The bootstrap resamples the runs with replacement, then, within each chosen run, its
# values with replacement; the median of the pooled draw is one replicate, and the
# interval is the replicates' percentile interval. Through the first level the spread
# between runs enters, so more values per run never narrow the interval below what the
# runs allow; with one value per run it is the ordinary bootstrap of the values. Every
# chosen run gives as many draws as the largest run, so runs weigh equally. It is a few
# lines of numpy, vectorised over cells of one shape, in chunks of resamples that keep
# about CHUNK values in memory at a time.
CHUNK = 2_000_000


def _median_interval(padded: np.ndarray, lengths: np.ndarray, resamples: int,
                     confidence: float) -> tuple[np.ndarray, np.ndarray]:
    """The median's two-level percentile interval for each cell of a (cells, runs, widest)
    block; NaN for cells of fewer than 3 runs, [value, value] for constant cells."""
    cells, runs, widest = padded.shape
    low, high = np.full(cells, np.nan), np.full(cells, np.nan)
    if runs < 3:
        return low, high
    flat = padded.reshape(cells, runs * widest)
    first = flat[:, 0]
    varied = np.array([np.ptp(flat[row, :lengths[row].sum()]) > 0 if widest > 1
                       else np.ptp(flat[row]) > 0 for row in range(cells)], dtype=bool)
    low[~varied], high[~varied] = first[~varied], first[~varied]
    rows = np.flatnonzero(varied)
    if rows.size == 0:
        return low, high
    rng = _rng()
    # drawn in single precision: half the memory traffic of partitioning, and a rounding of
    # 6e-8 of the value, far below any spread a measurement has
    source = flat[rows].astype(np.float32)
    medians = np.empty((rows.size, resamples))
    step = max(1, CHUNK // (rows.size * runs * widest))
    starts = np.arange(runs) * widest
    # every draw is made before the chunks, the same for every cell of this shape: a
    # cell's interval depends on its own values alone, whichever other cells are described
    # with it (the summary view describes fewer cells than the detail view)
    every_chosen = rng.integers(0, runs, size=(resamples, runs))
    every_within = rng.random((resamples, runs, widest)) if widest > 1 else None
    for begin in range(0, resamples, step):
        count = min(step, resamples - begin)
        chosen = every_chosen[begin:begin + count]
        if widest == 1:
            drawn = source[:, chosen]  # (cells, count, runs)
        else:
            within = (every_within[None, begin:begin + count]
                      * lengths[rows][:, chosen][..., None]).astype(np.int64)
            where = starts[chosen][None, :, :, None] + within
            drawn = np.take_along_axis(source[:, None, :],
                                       where.reshape(rows.size, count, runs * widest), axis=2)
        medians[:, begin:begin + count] = fast_median(drawn)
    tail = (1 - confidence) / 2 * 100
    low[rows], high[rows] = np.percentile(medians, [tail, 100 - tail], axis=1)
    return low, high


def _block_stats(block: np.ndarray, ci_low: np.ndarray, ci_high: np.ndarray) -> list[CellStats]:
    rows, size = block.shape
    mean = block.mean(axis=1)
    stdev = block.std(axis=1, ddof=1) if size > 1 else np.full(rows, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(mean != 0, stdev / np.abs(mean), np.nan)
    median, low_quartile, high_quartile = np.percentile(block, [50, 25, 75], axis=1)
    fence = OUTLIER_IQR * (high_quartile - low_quartile)
    beyond = (block < (low_quartile - fence)[:, None]) | (block > (high_quartile + fence)[:, None])
    outliers = beyond.sum(axis=1) if size >= OUTLIER_MIN_N else np.zeros(rows, dtype=int)
    maybe_modes = _bimodality_coefficient(_logs(block)) > BIMODALITY_SCREEN
    return [CellStats(
        n=size, median=float(median[row]), mean=float(mean[row]),
        minimum=float(block[row].min()), maximum=float(block[row].max()),
        stdev=_number(stdev[row]), cv=_number(cv[row]),
        ci_low=_number(ci_low[row]), ci_high=_number(ci_high[row]),
        outliers=int(outliers[row]),
        multimodal=bool(maybe_modes[row]) and is_multimodal(block[row]))
        for row in range(rows)]


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


# Sarle's bimodality coefficient is 5/9 for a uniform distribution, 1/3 for a
# normal one and approaches 1 for two separate clusters: a cheap, vectorised
# screen before the kernel density estimate, which is the judge.
BIMODALITY_SCREEN = 5 / 9


def _bimodality_coefficient(block: np.ndarray) -> np.ndarray:
    rows, size = block.shape
    if size < MULTIMODAL_MIN_N:
        return np.zeros(rows)
    varied = np.ptp(block, axis=1) > 0
    coefficient = np.zeros(rows)
    if varied.any():
        skew, kurtosis = _skew_kurtosis(block[varied])
        correction = 3 * (size - 1) ** 2 / ((size - 2) * (size - 3))
        coefficient[varied] = (skew ** 2 + 1) / (kurtosis + correction)
    return coefficient


def _skew_kurtosis(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's sample skewness and excess kurtosis, bias-corrected (scipy's skew and
    kurtosis with bias=False): three moments in numpy cost less than importing scipy.stats
    for a report that needs nothing else from it."""
    size = block.shape[1]
    centred = block - block.mean(axis=1, keepdims=True)
    m2 = (centred ** 2).mean(axis=1)
    m3 = (centred ** 3).mean(axis=1)
    m4 = (centred ** 4).mean(axis=1)
    skew = m3 / m2 ** 1.5 * math.sqrt(size * (size - 1)) / (size - 2)
    kurtosis = ((size * size - 1) * m4 / m2 ** 2 - 3 * (size - 1) ** 2) / ((size - 2) * (size - 3))
    return skew, kurtosis


def median_ci(values: Sequence[float], confidence: float = CONFIDENCE,
              resamples: int = RESAMPLES) -> tuple[float, float] | None:
    """Percentile-bootstrap interval of the median; None with fewer than 3 values."""
    if len(values) < 3:
        return None
    described = describe([values], resamples, confidence)[0]
    if described.ci_low is None or described.ci_high is None:
        return None
    return described.ci_low, described.ci_high


def relative_half_width(values: Sequence[float], confidence: float = CONFIDENCE,
                        sizes: Sequence[int] | None = None) -> float | None:
    """Half the width of the median's interval over the median (0.02 = +/-2%); None if unknown.
    sizes: values per run, for values that come several to a run (describe)."""
    if len(values) < 3:
        return None
    return describe([values], RESAMPLES, confidence, [sizes])[0].half_width


def is_multimodal(values: np.ndarray) -> bool:
    """Do the values form separate clusters? Peaks of a Gaussian KDE, each holding a real share.

    Silverman's bandwidth oversmooths two close clusters rather than splitting
    one: it errs towards calling a cell unimodal. Positive values are judged
    on a log scale.
    """
    if values.size < MULTIMODAL_MIN_N or np.ptp(values) == 0:
        return False
    if np.all(values > 0):
        # timings spread multiplicatively: on a log scale a tight cluster at
        # 2.5 us and a loose one at 20-34 us get comparable widths
        values = np.log(values)
    from scipy import stats  # imported only for cells the screen lets through

    try:
        kde = stats.gaussian_kde(values, bw_method="silverman")
    except (np.linalg.LinAlgError, ValueError):  # all but one value equal
        return False
    from scipy import signal  # 0.5-1.5 s to import: only for cells the screen lets through

    margin = 3 * float(np.sqrt(kde.covariance[0, 0]))
    grid = np.linspace(values.min() - margin, values.max() + margin, 512)
    density = kde(grid)
    peaks, _ = signal.find_peaks(density, prominence=MODE_MIN_PROMINENCE * density.max())
    if len(peaks) < 2:
        return False
    # cut between neighbouring peaks at the lowest density, and count the values per cluster
    cuts = [grid[left + int(np.argmin(density[left:right]))]
            for left, right in zip(peaks[:-1], peaks[1:])]
    shares = np.bincount(np.searchsorted(cuts, values), minlength=len(peaks))
    needed = max(2, MODE_MIN_SHARE * values.size)
    return int(np.count_nonzero(shares >= needed)) >= 2


# Ratios and geometric means take their intervals from the cells' own
# bootstrap intervals by MOVER (Zou & Donner 2008, "method of variance
# estimates recovery") on the log scale: log(B/A) = log B - log A, and the
# distances from each estimate to its own interval's ends combine in
# quadrature, keeping each side's asymmetry. The cells are independent runs,
# which is what MOVER assumes. It costs nothing once the cells are described,
# where a second bootstrap of every pair cost twice the cells' own (about 4 s
# on a 500,000-sample campaign), and it gives the same answer for one pair
# wherever it appears.


def _log_sides(cell: CellStats) -> tuple[float, float] | None:
    """Distances, on the log scale, from the median down and up to its interval's ends."""
    if cell.ci_low is None or cell.ci_high is None or min(cell.ci_low, cell.median) <= 0:
        return None
    return math.log(cell.median) - math.log(cell.ci_low), math.log(cell.ci_high) - math.log(cell.median)


def ratio_interval(base: CellStats, other: CellStats) -> Interval | None:
    """median(other) / median(base), with its interval when both cells have one."""
    if base.median == 0:
        return None
    value = other.median / base.median
    return _combine([(base, other)], value)


def geometric_mean_interval(pairs: Sequence[tuple[CellStats, CellStats]]) -> Interval | None:
    """The geometric mean of median(other)/median(base) over several pairs, with its interval."""
    if not pairs or any(base.median <= 0 or other.median <= 0 for base, other in pairs):
        return None
    value = math.exp(sum(math.log(other.median / base.median) for base, other in pairs) / len(pairs))
    return _combine(pairs, value)


def _combine(pairs: Sequence[tuple[CellStats, CellStats]], value: float) -> Interval:
    """MOVER: the mean of k log-ratios; its interval from every cell's log-scale distances."""
    if value <= 0:
        return Interval(value)
    sides = [(_log_sides(base), _log_sides(other)) for base, other in pairs]
    if any(base is None or other is None for base, other in sides):
        return Interval(value)
    down = math.sqrt(sum(other[0] ** 2 + base[1] ** 2 for base, other in sides)) / len(pairs)
    up = math.sqrt(sum(other[1] ** 2 + base[0] ** 2 for base, other in sides)) / len(pairs)
    centre = math.log(value)
    return Interval(value, math.exp(centre - down), math.exp(centre + up))


# Permutations per test: p-values near the 0.01 threshold are resolved to about
# +/-0.002; every split is tried, exactly, when there are fewer.
PERMUTATIONS = 2000
# Permutation statistics computed at once, at most (cells x splits): 4 Mi float64, 32 MiB.
PERMUTATION_BLOCK = 1 << 22


def permutation_pvalues(pairs: Sequence[tuple[Sequence[float], Sequence[float]]],
                        resamples: int | None = None) -> list[float | None]:
    """Two-sided permutation tests, one per (before, after) pair, of the mean of log values.

    The statistic is the difference of the mean logarithms (the log of the
    ratio of geometric means): scale-free, so a 10% change weighs the same at
    140 ns as at 50 us, and, unlike a difference of medians, it ranks the
    split that was observed as the most extreme one when the two sets do not
    overlap at all (a median difference ties with many other splits and
    gives p-values several times larger for small n). Values <= 0 fall back to
    the plain difference of means.

    Every split of a pair's values into groups of the two sizes is tried when
    there are no more than `resamples` of them (exact); else `resamples`
    random splits, and p counts the observed split among them ((k + 1) /
    (resamples + 1), never 0). Two-sided: twice the smaller tail, at most 1.
    These are the conventions of scipy.stats.permutation_test, which the
    tests check this against; it is done here in numpy because pairs of equal
    sizes then share one matrix product of their values with the splits, and
    compare of two 500,000-sample campaigns spent 1.1 s of its 2 s budget in
    scipy's import and call (docs/statistics.md).
    """
    arrays = [(np.asarray(a, dtype=float), np.asarray(b, dtype=float)) for a, b in pairs]
    total = sum(a.size + b.size for a, b in arrays)
    resamples = resamples or resamples_for(total, PERMUTATIONS)
    out: list[float | None] = [None] * len(arrays)
    by_sizes: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, (a, b) in enumerate(arrays):
        if a.size >= 2 and b.size >= 2:
            by_sizes[(a.size, b.size)].append(index)
    for (before_size, _after_size), indices in by_sizes.items():
        values = _logs(np.stack([np.concatenate(arrays[index]) for index in indices]))
        tied = np.ptp(values, axis=1) == 0
        pvalues = np.ones(len(indices))
        if (~tied).any():
            pvalues[~tied] = _split_pvalues(values[~tied], before_size, resamples)
        for index, pvalue in zip(indices, pvalues):
            out[index] = float(pvalue)
    return out


def _split_pvalues(values: np.ndarray, before_size: int, resamples: int) -> np.ndarray:
    """p-values of rows whose first before_size values are one group and the rest the other."""
    rows, size = values.shape
    after_size = size - before_size
    exact = math.comb(size, after_size) <= resamples
    observed = values[:, before_size:].mean(axis=1) - values[:, :before_size].mean(axis=1)
    totals = values.sum(axis=1)
    # sums in another order than the observed means': a split equal to the observed one
    # must count as at least as extreme
    tolerance = 1e-9 * (1 + np.abs(values).max(axis=1))
    greater = np.zeros(rows)
    less = np.zeros(rows)
    splits = _exact_splits(size, after_size) if exact else _random_splits(size, after_size, resamples)
    step = max(1, PERMUTATION_BLOCK // rows)
    for start in range(0, len(splits), step):
        chosen = splits[start:start + step].T.astype(float)  # (size, k): 1 = in the after group
        after_sums = values @ chosen
        null = after_sums / after_size - (totals[:, None] - after_sums) / before_size
        greater += (null >= (observed - tolerance)[:, None]).sum(axis=1)
        less += (null <= (observed + tolerance)[:, None]).sum(axis=1)
    if exact:
        one_sided = np.minimum(greater, less) / len(splits)
    else:
        one_sided = (np.minimum(greater, less) + 1) / (len(splits) + 1)
    return np.minimum(1.0, 2 * one_sided)


def _exact_splits(size: int, chosen: int) -> np.ndarray:
    """Every way to choose `chosen` of `size` positions, as rows of booleans."""
    picks = np.array(list(itertools.combinations(range(size), chosen)), dtype=np.intp)
    splits = np.zeros((len(picks), size), dtype=bool)
    np.put_along_axis(splits, picks, True, axis=1)
    return splits


def _random_splits(size: int, chosen: int, count: int) -> np.ndarray:
    """`count` random ways (seeded) to choose `chosen` of `size` positions, as rows of booleans:
    the positions of each row's `chosen` smallest random numbers (equal draws, which would
    choose more, have a chance of about size^2 / 2^53)."""
    draws = _rng().random((count, size))
    return draws <= np.partition(draws, chosen - 1, axis=1)[:, chosen - 1:chosen]

def _logs(block: np.ndarray) -> np.ndarray:
    """Natural logarithms where every value is positive, else the values themselves (per row)."""
    positive = np.all(block > 0, axis=1)
    out = block.copy()
    out[positive] = np.log(block[positive])
    return out


def smallest_pvalue(n_before: int, n_after: int) -> float:
    """The smallest two-sided p-value a permutation test can give with these sizes."""
    return min(1.0, 2 / math.comb(n_before + n_after, n_before))
