"""analysis.stats: intervals, ratios, geometric means, permutation tests and the cell flags."""

from __future__ import annotations

import math

import numpy as np
import pytest

from guestbench.analysis import stats
from tests.support.samples import (HOGGED_GETPID, HOGGED_SCHED_YIELD, NATIVE_FORK_EXIT_US,
                                  NATIVE_GETPID, PIPE_SWITCH_FREE_US)


def one(values) -> "stats.CellStats":
    return stats.describe([values])[0]


def test_location_and_spread() -> None:
    described = one(NATIVE_GETPID)
    assert described.n == 6
    assert described.median == pytest.approx(np.median(NATIVE_GETPID))
    assert described.mean == pytest.approx(np.mean(NATIVE_GETPID))
    assert (described.minimum, described.maximum) == (139.52, 148.37)
    assert described.stdev == pytest.approx(np.std(NATIVE_GETPID, ddof=1))
    assert described.cv == pytest.approx(described.stdev / described.mean)


def test_bootstrap_interval_holds_the_median_and_stays_inside_the_values() -> None:
    described = one(NATIVE_GETPID)
    assert min(NATIVE_GETPID) <= described.ci_low <= described.median <= described.ci_high
    assert described.ci_high <= max(NATIVE_GETPID)
    assert described.half_width == pytest.approx(
        (described.ci_high - described.ci_low) / 2 / described.median)


def test_the_same_values_always_give_the_same_interval() -> None:
    assert stats.median_ci(HOGGED_GETPID) == stats.median_ci(list(HOGGED_GETPID))


def test_more_runs_give_a_narrower_interval() -> None:
    rng = np.random.default_rng(7)
    widths = [one(rng.normal(100, 2, n)).half_width for n in (5, 20, 200)]
    assert widths[0] > widths[1] > widths[2]


def test_interval_needs_three_values_and_a_constant_cell_has_a_point_interval() -> None:
    assert one([1.0, 2.0]).ci_low is None and one([1.0, 2.0]).half_width is None
    assert stats.median_ci([5.0, 5.0, 5.0]) == (5.0, 5.0)
    assert one([7.0]).stdev is None and one([7.0]).cv is None


def test_cells_of_any_sizes_in_one_call_keep_their_order() -> None:
    cells = [[1.0, 2.0, 3.0], [10.0], [5.0, 6.0, 7.0, 8.0], [2.0, 2.0, 2.0]]
    described = stats.describe(cells)
    assert [cell.n for cell in described] == [3, 1, 4, 3]
    assert [cell.median for cell in described] == [2.0, 10.0, 6.5, 2.0]


def test_fast_median_matches_numpy() -> None:
    rng = np.random.default_rng(1)
    for size in (1, 2, 3, 4, 7, 10):
        block = rng.random((5, size))
        assert np.allclose(stats.fast_median(block), np.median(block, axis=-1))
        assert np.allclose(stats.fast_median(block.T, axis=0), np.median(block, axis=-1))


# -- flags ------------------------------------------------------------------------

def test_unstable_from_recorded_samples() -> None:
    assert one(HOGGED_SCHED_YIELD).unstable
    assert "unstable" in one(HOGGED_SCHED_YIELD).flags
    assert not one(NATIVE_GETPID).unstable  # CV ~2%


def test_outliers_counted_beyond_tukeys_fences() -> None:
    described = one(NATIVE_FORK_EXIT_US)  # 128.3 among ~105s
    assert described.outliers == 1 and "outliers" in described.flags
    assert one([99.0, 99.3, 99.6, 99.9, 100.2, 100.5, 100.8, 101.1]).outliers == 0
    assert one(NATIVE_GETPID).outliers == 0  # 148.37 among ~140s, but 6 values: no fences


def test_multimodal_from_two_clusters() -> None:
    described = one(PIPE_SWITCH_FREE_US)
    assert described.multimodal and "multimodal" in described.flags


def test_not_multimodal_for_one_cluster_with_an_outlier_or_too_few_values() -> None:
    rng = np.random.default_rng(3)
    assert not one(rng.normal(100, 1, 40)).multimodal
    assert not one(np.r_[rng.normal(100, 1, 29), 200.0]).multimodal  # one value is no cluster
    assert not one(PIPE_SWITCH_FREE_US[:6]).multimodal  # under MULTIMODAL_MIN_N
    assert not one([3.0] * 12).multimodal


def test_a_stable_cell_has_no_flag() -> None:
    assert one([100.0, 100.4, 99.8, 100.1, 99.9, 100.2, 100.3, 99.7]).flags == []


# -- ratios and geometric means -----------------------------------------------------

def test_ratio_interval_brackets_the_ratio_of_medians() -> None:
    base, other = stats.describe([NATIVE_GETPID, HOGGED_GETPID])
    interval = stats.ratio_interval(base, other)
    assert interval.value == pytest.approx(np.median(HOGGED_GETPID) / np.median(NATIVE_GETPID))
    assert interval.low < interval.value < interval.high
    assert interval.low > 1  # clearly slower


def test_ratio_interval_is_mover_on_the_log_scale() -> None:
    base = stats.describe([[10.0, 9.0, 11.0, 10.5, 9.5]])[0]
    other = stats.describe([[20.0, 19.0, 22.0, 21.0, 18.0]])[0]
    interval = stats.ratio_interval(base, other)
    down = math.hypot(math.log(other.median / other.ci_low), math.log(base.ci_high / base.median))
    up = math.hypot(math.log(other.ci_high / other.median), math.log(base.median / base.ci_low))
    assert interval.low == pytest.approx(interval.value * math.exp(-down))
    assert interval.high == pytest.approx(interval.value * math.exp(up))


def test_ratio_of_a_cell_to_itself_is_one_with_an_honest_interval() -> None:
    (cell,) = stats.describe([NATIVE_GETPID])
    interval = stats.ratio_interval(cell, cell)
    assert interval.value == 1.0
    assert interval.low < 1 < interval.high  # two independent runs of it would differ


def test_ratio_interval_needs_intervals_on_both_sides() -> None:
    few, three = stats.describe([[1.0, 1.1], [2.0, 2.1, 2.2]])
    interval = stats.ratio_interval(few, three)
    assert interval.low is None and interval.value == pytest.approx(2.1 / 1.05)
    (zero,) = stats.describe([[0.0, 0.0, 0.0]])
    assert stats.ratio_interval(zero, three) is None


def test_geometric_mean_interval() -> None:
    cells = stats.describe([NATIVE_GETPID, HOGGED_GETPID, [10.0, 10.1, 9.9], [20.0, 20.2, 19.8]])
    pairs = [(cells[0], cells[1]), (cells[2], cells[3])]
    interval = stats.geometric_mean_interval(pairs)
    expected = math.sqrt(np.median(HOGGED_GETPID) / np.median(NATIVE_GETPID) * 2.0)
    assert interval.value == pytest.approx(expected)
    assert interval.low < interval.value < interval.high
    # one pair: the geometric mean is that pair's ratio, with the same interval
    single = stats.geometric_mean_interval(pairs[:1])
    assert single == stats.ratio_interval(*pairs[0])
    few = stats.describe([[1.0], [2.0]])
    assert stats.geometric_mean_interval([tuple(few)]).low is None
    touching_zero, zero = stats.describe([[0.0, 1.0, 2.0], [0.0, 0.0, 1.0]])
    assert stats.geometric_mean_interval([(touching_zero, touching_zero)]).low is None
    assert stats.geometric_mean_interval([(zero, touching_zero)]) is None


# -- permutation tests ----------------------------------------------------------------

def test_permutation_test_separates_a_real_change_from_noise() -> None:
    slowed, same = stats.permutation_pvalues([(NATIVE_GETPID, HOGGED_GETPID),
                                              (NATIVE_GETPID[:3], NATIVE_GETPID[3:])])
    # no overlap at all: the observed split is the most extreme of the 924 (exact test)
    assert slowed == pytest.approx(stats.smallest_pvalue(6, 6))
    assert slowed < 0.01
    assert same > 0.1


def test_permutation_test_needs_two_values_a_side_and_ties_give_one() -> None:
    assert stats.permutation_pvalues([([1.0], [2.0, 3.0])]) == [None]
    assert stats.permutation_pvalues([([4.0, 4.0], [4.0, 4.0, 4.0])]) == [1.0]


def test_smallest_pvalue() -> None:
    assert stats.smallest_pvalue(5, 5) == pytest.approx(2 / 252)
    assert stats.smallest_pvalue(3, 3) == pytest.approx(0.1)


def test_resamples_shrink_only_past_the_work_budget() -> None:
    assert stats.resamples_for(1000) == stats.RESAMPLES
    many = stats.resamples_for(10_000_000)
    assert stats.MIN_RESAMPLES <= many < stats.RESAMPLES


def _scipy_pvalue(before, after, resamples: int) -> float:
    from scipy import stats as reference

    logs = np.log(np.concatenate([before, after]))
    result = reference.permutation_test(
        (logs[:len(before)], logs[len(before):]),
        lambda x, y, axis=-1: np.mean(y, axis=axis) - np.mean(x, axis=axis),
        vectorized=True, n_resamples=resamples, permutation_type="independent",
        alternative="two-sided", rng=np.random.default_rng(7))
    return float(result.pvalue)


def test_permutation_pvalues_agree_with_scipys_permutation_test() -> None:
    rng = np.random.default_rng(3)
    pairs = [(rng.lognormal(0, 0.1, size), rng.lognormal(shift, 0.1, other))
             for size, other, shift in ((5, 5, 0.0), (5, 5, 0.08), (6, 4, 0.05), (4, 7, 0.3),
                                        (12, 12, 0.0), (12, 12, 0.04), (10, 14, 0.1))]
    ours = stats.permutation_pvalues(pairs, 2000)
    for (before, after), pvalue in zip(pairs, ours):
        expected = _scipy_pvalue(before, after, 2000)
        if math.comb(len(before) + len(after), len(before)) <= 2000:
            assert pvalue == pytest.approx(expected, rel=1e-9)  # both enumerate every split
        else:  # both draw 2,000 of the splits: Monte Carlo error of a p-value near p
            assert abs(pvalue - expected) < 4 * math.sqrt(expected * (1 - expected) / 2000) + 2e-3


def test_permutation_pvalues_are_the_same_in_a_block_of_many_cells_as_alone(monkeypatch) -> None:
    rng = np.random.default_rng(5)
    pairs = [(rng.lognormal(0, 0.1, 8), rng.lognormal(0.1 * (index % 3), 0.1, 8))
             for index in range(30)]
    alone = [stats.permutation_pvalues([pair], 5000)[0] for pair in pairs]
    monkeypatch.setattr(stats, "PERMUTATION_BLOCK", 1000)  # many chunks of splits
    together = stats.permutation_pvalues(pairs, 5000)
    assert together == pytest.approx(alone, rel=1e-12)
    assert min(together) < 0.01 < max(together)
