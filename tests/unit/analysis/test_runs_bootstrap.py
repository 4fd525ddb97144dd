"""Several values per run: the two-level bootstrap (runs, then values), spread over runs, and
run-level permutation tests."""

import numpy as np
import pytest

from guestbench.analysis import stats
from guestbench.analysis.compare import run_units
from guestbench.analysis.cells import Cell
from guestbench.analysis.summary import summarise
from guestbench.store.records import Run, StoredSample


def nested(runs: int, per_run: int, between: float, within: float, seed: int = 1):
    """Values of `runs` runs, each with its own level (spread `between`) and `per_run` values
    around it (spread `within`); returns (flat values, sizes)."""
    rng = np.random.default_rng(seed)
    levels = 100 + rng.normal(0, between, runs)
    values = np.concatenate([level + rng.normal(0, within, per_run) for level in levels])
    return values, [per_run] * runs


def width(cell: "stats.CellStats") -> float:
    return cell.ci_high - cell.ci_low


def test_more_values_per_run_never_narrow_the_interval_below_what_the_runs_allow():
    few, few_sizes = nested(6, 3, between=5, within=0.2)
    many, many_sizes = nested(6, 60, between=5, within=0.2)
    run_level = stats.describe([[np.median(v) for v in np.split(many, 6)]])[0]
    two_level = stats.describe([few, many], sizes=[few_sizes, many_sizes])
    pooled = stats.describe([many])[0]  # as if the 360 values were independent
    # pooled, the values' count narrows the interval far below the runs' spread
    assert width(pooled) < width(run_level) / 4
    for cell in two_level:
        assert width(cell) > width(run_level) / 2
    assert width(two_level[1]) > width(two_level[0]) / 2  # 20x the values, not a narrower interval


def test_within_run_noise_still_counts_when_runs_agree():
    values, sizes = nested(6, 3, between=0.0, within=5)
    cell = stats.describe([values], sizes=[sizes])[0]
    assert cell.runs == 6 and cell.n == 18
    assert width(cell) > 2  # the runs agree, their values do not: the interval shows it


def test_one_value_per_run_is_the_one_level_bootstrap():
    values = [10.0, 11.0, 9.5, 10.2, 10.8, 9.9]
    assert stats.describe([values], sizes=[[1] * 6]) == stats.describe([values])


def test_spread_and_flags_are_over_the_runs_medians():
    # three values per run cluster tightly; pooled, such clusters pose as modes and outliers
    values, sizes = nested(10, 3, between=3, within=0.01, seed=4)
    cell = stats.describe([values], sizes=[sizes])[0]
    medians = [np.median(v) for v in np.split(values, 10)]
    assert cell.stdev == pytest.approx(np.std(medians, ddof=1))
    assert cell.median == pytest.approx(np.median(values)) and cell.n == 30
    of_medians = stats.describe([medians])[0]
    assert (cell.outliers, cell.multimodal, cell.cv) == (
        of_medians.outliers, of_medians.multimodal, pytest.approx(of_medians.cv))


def test_fewer_than_three_runs_give_no_interval():
    cell = stats.describe([[1.0, 1.1, 2.0, 2.1]], sizes=[[2, 2]])[0]
    assert cell.ci_low is None and cell.half_width is None and cell.runs == 2


def test_sizes_must_add_up():
    with pytest.raises(ValueError, match="do not split"):
        stats.describe([[1.0, 2.0, 3.0]], sizes=[[2, 2]])


def test_summarise_groups_values_by_run_even_when_samples_interleave():
    runs = [Run(id=run, environment="e", label="w", status="ok", reason="")
            for run in (1, 2)]
    samples = [StoredSample(run_id=run, metric="t", unit="ns", value=value)
               for run, value in ((1, 1.0), (2, 5.0), (1, 2.0), (2, 6.0), (2, 7.0))]
    cell = summarise(["e"], runs, samples).cell("w", "t", "e")
    assert cell.run_values() == [[1.0, 2.0], [5.0, 6.0, 7.0]]
    assert (cell.sizes, cell.n, cell.n_runs) == ([2, 3], 5, 2)


def test_the_permutation_test_exchanges_runs_not_values():
    # 40 A/A pairs: A and B the same process, five runs each with a level of its own and
    # 20 values per run. Exchanging values, as if they were 100 independent ones, finds a
    # "difference" in most pairs; exchanging runs, in about 5% at p < 0.05.
    pairs = []
    for seed in range(40):
        a_values, sizes = nested(5, 20, between=3, within=0.1, seed=2 * seed)
        b_values, _ = nested(5, 20, between=3, within=0.1, seed=2 * seed + 1)
        a = Cell("e", "w", "t", "ns", list(a_values), sizes)
        b = Cell("e", "w", "t", "ns", list(b_values), sizes)
        assert len(run_units(a)) == 5
        pairs += [(a.values, b.values), (run_units(a), run_units(b))]
    pvalues = stats.permutation_pvalues(pairs)
    by_value, by_run = pvalues[0::2], pvalues[1::2]
    assert sum(p < 0.05 for p in by_value) > 20
    assert sum(p < 0.05 for p in by_run) <= 6


def test_how_many_says_runs_and_values_per_run():
    values, sizes = nested(6, 3, between=1, within=1)
    assert stats.describe([values], sizes=[sizes])[0].count_text == "6x3"
    assert stats.describe([[1.0, 2.0, 3.0, 4.0, 5.0]], sizes=[[2, 3]])[0].count_text == "2r/5"
    assert stats.describe([[1.0, 2.0, 3.0]])[0].count_text == "3"


@pytest.mark.parametrize("per_run", [1, 3])
def test_a_cell_gets_the_same_interval_whatever_cells_are_described_with_it(per_run):
    cells = [nested(8, per_run, between=2, within=1, seed=seed) for seed in range(5)]
    together = stats.describe([values for values, _ in cells], 500,
                              sizes=[sizes for _, sizes in cells])
    alone = stats.describe([cells[2][0]], 500, sizes=[cells[2][1]])
    assert together[2] == alone[0]
