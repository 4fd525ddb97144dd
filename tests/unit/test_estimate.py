"""The ETA: host seconds still to go, from what runs took so far."""

from dataclasses import dataclass

import pytest

from guestbench.estimate import UNKNOWN_RUN_S, seconds_left


@dataclass
class FakeCell:
    environment: str
    runs: int = 0
    most_runs: int = 10
    host_seconds: float = 0.0
    stopped: str | None = None
    min_runs: int | None = 5


def test_a_fixed_cell_costs_its_runs_left_at_its_own_rate():
    cell = FakeCell("native", runs=2, most_runs=5, host_seconds=4.0, min_runs=None)
    assert seconds_left([cell]) == pytest.approx(3 * 2.0)


def test_an_adaptive_cell_is_expected_to_stop_where_its_environment_s_cells_stopped():
    done = [FakeCell("uml", runs=runs, host_seconds=runs * 0.5, stopped="converged")
            for runs in (7, 7, 9)]
    open_cell = FakeCell("uml", runs=5, host_seconds=2.5)
    assert seconds_left([*done, open_cell]) == pytest.approx((7 - 5) * 0.5)


def test_an_open_adaptive_cell_has_at_least_one_run_to_go_and_never_more_than_its_most():
    beyond = FakeCell("native", runs=6, host_seconds=6.0)  # past min_runs, still open
    assert seconds_left([beyond]) == pytest.approx(1.0)
    capped = FakeCell("native", runs=9, most_runs=10, host_seconds=9.0, min_runs=5)
    done = FakeCell("native", runs=30, host_seconds=30.0, stopped="max-runs")
    assert seconds_left([capped, done]) == pytest.approx(1.0)


def test_a_cell_not_started_costs_what_its_environment_s_runs_cost_else_the_campaign_s():
    ran = FakeCell("runsc", runs=2, host_seconds=3.0, min_runs=None, most_runs=2)
    same_env = FakeCell("runsc", min_runs=None, most_runs=4)
    other_env = FakeCell("uml", min_runs=None, most_runs=2)
    assert seconds_left([ran, same_env]) == pytest.approx(4 * 1.5)
    assert seconds_left([ran, other_env]) == pytest.approx(2 * 1.5)
    assert seconds_left([FakeCell("uml", min_runs=None, most_runs=3)]) == 3 * UNKNOWN_RUN_S


def test_stopped_cells_cost_nothing():
    assert seconds_left([FakeCell("native", runs=3, host_seconds=3.0, stopped="fixed")]) == 0
