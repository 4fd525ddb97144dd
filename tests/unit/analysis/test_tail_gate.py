"""compare --gate p50,p95,p99: a tail judged by a bootstrap of its ratio, one quantile
definition everywhere, and the verdict of an ab campaign shown again (compare --ab)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from guestbench.analysis import tail_compare, tails
from guestbench.analysis.cells import Cell
from guestbench.analysis.compare import SAME, SLOWER
from tests.support.cli import invoke
from tests.unit.analysis.test_compare import compare, run_campaign  # noqa: F401 (a fixture)

TAIL_PLAN = """\
[campaign]
name = "{name}"
repeat = 400
timeout_s = 5

[[environment]]
name = "vm"
kind = "fake"
slow_every = {every}

[[workload]]
name = "getpid"
"""


@pytest.mark.parametrize("size", [1, 2, 3, 10, 31, 100, 257])
def test_one_quantile_definition_is_numpy_s_and_its_p50_the_median(size):
    values = sorted(random.Random(size).uniform(0, 100) for _ in range(size))
    for q in (0.0, 0.1, 0.5, 0.9, 0.95, 0.99, 1.0):
        assert tails.quantile(values, q) == pytest.approx(float(np.quantile(values, q)))
    assert tails.quantile(values, 0.5) == pytest.approx(float(np.median(values)))


def test_gate_names_are_parsed_and_anything_else_refused():
    assert tail_compare.parse_gate("p99, P50") == ("p50", "p99")
    for bad in ("p42", "", "median"):
        with pytest.raises(tail_compare.GateError, match="fix: a comma-separated list"):
            tail_compare.parse_gate(bad)


def _cell(values):
    return Cell("env", "label", "m", "ms", list(values), [1] * len(values))


def test_a_doubled_tail_is_told_apart_and_a_tail_alike_is_not():
    """400 values a side; in B 4% are twice as slow: the p99 nearly doubles (A's p99 is the
    top of its own spread), the p50 holds. (With 2%, 4 slow values of 200, a resample
    often holds too few of them to reach the p99, and the verdict is rightly same.)"""
    rng = random.Random(7)
    a = [rng.gauss(50, 2) for _ in range(400)]
    b = [value * (2 if index % 25 == 0 else 1) for index, value in
         enumerate(rng.gauss(50, 2) for _ in range(400))]
    doubled = tail_compare.compare_tail(_cell(a), _cell(b), 0.99)
    assert doubled.ratio.value > 1.6
    assert doubled.ratio.low > 1.4 and doubled.pvalue < 0.01
    held = tail_compare.compare_tail(_cell(a), _cell(b), 0.5)
    assert held.ratio.low < 1 < held.ratio.high and held.pvalue > 0.05
    alike = tail_compare.compare_tail(_cell(a), _cell(list(reversed(a))), 0.99)
    assert alike.ratio.value == 1 and alike.pvalue == 1


def test_runs_of_several_values_are_resampled_as_runs():
    """Eleven runs of 100 values, each run its own level: a resample's percentile moves as
    much as the runs differ, which 1100 values taken as independent would hide."""
    values = [float(run) for run in range(11) for _ in range(100)]
    as_runs = tail_compare.replicates(values, [100] * 11, 0.5, 500, np.random.default_rng(1))
    as_values = tail_compare.replicates(values, [1] * 1100, 0.5, 500, np.random.default_rng(1))
    assert np.std(as_runs) > 3 * np.std(as_values)


def test_compare_gate_p99_fails_on_a_doubled_tail_while_the_p50_held(sqlite_url, fake_agent,
                                                                      tmp_path):
    """The fake kind's every 25th run twice as slow, 400 runs a side: the median gate passes,
    the p99 gate exits 1, and the JSON has both sides' p99 with intervals, as numbers. (One
    store: the statistics are the same on both, and 800 runs take a while.)"""
    for name, every in (("steady", 0), ("tail", 25)):
        plan = tmp_path / f"{name}.toml"
        plan.write_text(TAIL_PLAN.format(name=name, every=every))
        ran = invoke(["run", str(plan), "--db", sqlite_url, "--quiet"], fake_agent)
        assert ran.exit_code == 0, ran.output

    def compared(*args: str):
        return invoke(["compare", "steady", "tail", "--db", sqlite_url, "--ignore-spec",
                       "slow_every", *args], fake_agent)

    held = compared("--fail-on-regression")
    assert held.exit_code == 0, held.output
    gated = compared("--fail-on-regression", "--gate", "p50,p95,p99")
    assert gated.exit_code == 1, gated.output
    assert "2 cell(s) slower in B (--fail-on-regression)" in gated.output  # two metrics
    assert "time_per_op p99 (ns)" in gated.stdout  # the row says what it judged
    document = json.loads(compared("--format", "json", "--gate", "p50,p95,p99").output)
    assert document["gate"] == ["p50", "p95", "p99"]
    verdicts = {(cell["metric"], cell["statistic"]): cell for cell in document["cells"]}
    assert verdicts[("time_per_op", "p50")]["verdict"] == SAME
    assert verdicts[("time_per_op", "p95")]["verdict"] == SAME  # 4% slow: above it
    p99 = verdicts[("time_per_op", "p99")]
    assert p99["verdict"] == SLOWER
    assert p99["ratio"] == pytest.approx(2, rel=0.1) and p99["ratio_ci"][0] > 1.5
    for side in ("a", "b"):
        value, (low, high) = p99[side]["value"], p99[side]["value_ci"]
        assert isinstance(value, float) and low <= value and (high is None or value <= high)
    assert p99["b"]["value"] > 1.8 * p99["a"]["value"]


def test_a_percentile_no_pair_has_the_values_for_refuses_to_gate(run_campaign):
    """--gate p99 over 5 runs a side judges no cell: with --fail-on-regression that is bad
    input (exit 2: it would pass anything), without it a line says so."""
    run_campaign("a1"), run_campaign("a2")
    refused = compare(run_campaign, "a1", "a2", "--gate", "p99", "--fail-on-regression")
    assert refused.exit_code == 2, refused.output
    assert "--gate p99 judged no cell: each needs that many values on both sides (p99 100)" \
        in refused.output
    told = compare(run_campaign, "a1", "a2", "--gate", "p50,p99")
    assert told.exit_code == 0, told.output
    assert "p99 of 4 cell(s)" in told.stdout and "judged no cell" in told.stderr
    assert compare(run_campaign, "a1", "a2", "--gate", "p42").exit_code == 2


def test_compare_ab_shows_an_ab_campaign_s_verdict_again(run_campaign, tmp_path):
    """ab's JSON document, and compare --ab on its campaign later: the same verdicts, and
    the options A and B differ in are paired, not drift. A campaign of run is refused."""
    plan = tmp_path / "ab.toml"
    plan.write_text('[campaign]\nname = "ab"\nrepeat = 6\ntimeout_s = 5\n[[environment]]\n'
                    'name = "vm"\nkind = "fake"\n[[workload]]\nname = "getpid"\n')
    ran = invoke(["ab", str(plan), "--b", "scale=1.5", "--db", run_campaign.url,
                  "--format", "json"], run_campaign.agent)
    assert ran.exit_code == 0, ran.output
    again = compare(run_campaign, "--ab", "ab", "--format", "json")
    assert again.exit_code == 0, again.output
    first, second = json.loads(ran.stdout), json.loads(again.stdout)
    assert first["broken"] == second["broken"] == []
    assert [(cell["metric"], cell["verdict"], cell["pvalue"]) for cell in first["cells"]] == \
        [(cell["metric"], cell["verdict"], cell["pvalue"]) for cell in second["cells"]]
    assert {cell["verdict"] for cell in second["cells"]} == {SLOWER}
    run_campaign("plain")
    refused = compare(run_campaign, "--ab", "plain")
    assert refused.exit_code == 2
    assert "was not run by 'guestbench ab'" in refused.output
    assert compare(run_campaign, "a-lone").exit_code == 2  # one campaign, no --ab
