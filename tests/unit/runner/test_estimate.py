"""The ETA: host seconds still to go, from typical costs before any run, then from what runs
took so far."""

from dataclasses import dataclass

import pytest

from guestbench.runner import estimate
from guestbench.runner.estimate import UNKNOWN_RUN_S, seconds_left


@pytest.fixture(autouse=True)
def no_overhead(monkeypatch):
    """The rules below count runs' own seconds; the runner's between runs is tested apart."""
    monkeypatch.setattr(estimate, "RUN_OVERHEAD_S", 0.0)


def test_each_run_left_carries_the_runner_s_own_seconds(monkeypatch):
    monkeypatch.setattr(estimate, "RUN_OVERHEAD_S", 0.03)
    cell = FakeCell("native", runs=2, most_runs=5, host_seconds=4.0, min_runs=None)
    assert seconds_left([cell]) == pytest.approx(3 * (2.0 + 0.03))


@dataclass
class FakeCell:
    environment: str
    runs: int = 0
    most_runs: int = 10
    host_seconds: float = 0.0
    stopped: str | None = None
    min_runs: int | None = 5
    max_seconds: float | None = None
    prior_s: float = 0.0  # unknown
    stops_out_of_reach: bool = False


def test_a_fixed_cell_costs_its_runs_left_at_its_own_rate():
    cell = FakeCell("native", runs=2, most_runs=5, host_seconds=4.0, min_runs=None)
    assert seconds_left([cell]) == pytest.approx(3 * 2.0)


def test_an_adaptive_cell_open_past_its_minimum_is_expected_to_go_to_its_most():
    open_cell = FakeCell("uml", runs=6, host_seconds=3.0)
    converged = [FakeCell("uml", runs=5, host_seconds=2.5, stopped="converged")] * 3
    assert seconds_left([*converged, open_cell]) == pytest.approx((10 - 6) * 0.5)


def test_below_its_minimum_a_cell_stops_there_with_the_share_of_cells_that_did():
    # of four uml cells that reached 5 runs, one stopped there: expect 0.25 x 5 + 0.75 x 10
    reached = [FakeCell("uml", runs=5, host_seconds=5.0, stopped="converged"),
               *(FakeCell("uml", runs=5, host_seconds=5.0) for _ in range(3))]
    young = FakeCell("uml", runs=2, host_seconds=2.0)
    alone = seconds_left([young])  # no cell reached its minimum: a half
    together = seconds_left([*reached, young]) - 3 * (10 - 5) * 1.0
    assert alone == pytest.approx((7.5 - 2) * 1.0)
    assert together == pytest.approx((8.75 - 2) * 1.0)


def test_other_environments_stand_in_until_its_own_cells_reach_their_minimum():
    elsewhere = FakeCell("runsc", runs=5, host_seconds=5.0, stopped="converged")
    young = FakeCell("uml", runs=1, host_seconds=1.0)
    assert seconds_left([elsewhere, young]) == pytest.approx((5 - 1) * 1.0)


def test_the_time_limit_caps_the_runs_left_and_one_run_is_always_left():
    slow = FakeCell("qemu-user", runs=6, host_seconds=24.0, max_seconds=30.0)  # 4 s a run
    assert seconds_left([slow]) == pytest.approx(2 * 4.0)
    spent = FakeCell("qemu-user", runs=8, host_seconds=32.0, max_seconds=30.0)
    assert seconds_left([spent]) == pytest.approx(1 * 4.0)


def test_a_cell_not_started_costs_its_prior_as_its_environment_s_runs_met_theirs():
    # runsc's micro runs took 1.5x their prior: its STREAM cell is priced at 1.5x its own
    ran = FakeCell("runsc", runs=2, host_seconds=0.3, min_runs=None, most_runs=2, prior_s=0.1)
    stream = FakeCell("runsc", min_runs=None, most_runs=4, prior_s=2.0)
    assert seconds_left([ran, stream]) == pytest.approx(4 * 2.0 * 1.5)
    # an environment with no run yet: the campaign's ratio
    other_env = FakeCell("uml", min_runs=None, most_runs=2, prior_s=1.0)
    assert seconds_left([ran, other_env]) == pytest.approx(2 * 1.0 * 1.5)
    # before any run: the priors themselves; a cell without one costs UNKNOWN_RUN_S
    assert seconds_left([stream]) == pytest.approx(4 * 2.0)
    assert seconds_left([FakeCell("uml", min_runs=None, most_runs=3)]) == 3 * UNKNOWN_RUN_S


def test_a_stream_cell_is_not_priced_like_the_micro_cells_before_it():
    # the first ETA of the default campaign was 34 s for 124 when every cell not started
    # cost what its environment's runs (micro, 0.08 s) had cost
    micro = FakeCell("native", runs=5, host_seconds=0.4, stopped="converged", prior_s=0.08)
    stream = FakeCell("native", min_runs=None, most_runs=4, prior_s=1.0)
    assert seconds_left([micro, stream]) == pytest.approx(4 * 1.0)


def test_a_cell_that_stops_out_of_reach_is_expected_at_its_minimum():
    young = FakeCell("native", prior_s=0.1, stops_out_of_reach=True)
    assert seconds_left([young]) == pytest.approx(5 * 0.1)
    past = FakeCell("native", runs=6, host_seconds=0.6, stops_out_of_reach=True)
    assert seconds_left([past]) == pytest.approx(1 * 0.1)


def test_a_host_far_off_the_priors_is_taken_as_at_most_4x():
    ran = FakeCell("native", runs=1, host_seconds=100.0, min_runs=None, most_runs=1,
                   prior_s=1.0, stopped="fixed")
    waiting = FakeCell("native", min_runs=None, most_runs=1, prior_s=1.0)
    assert seconds_left([ran, waiting]) == pytest.approx(4.0)


def test_stopped_cells_cost_nothing():
    assert seconds_left([FakeCell("native", runs=3, host_seconds=3.0, stopped="fixed")]) == 0
