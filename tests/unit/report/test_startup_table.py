"""The start-up table: absolute times per instance with p50, p90, p95 and p99 and their
intervals once a cell has 30 runs, the median alone below; one unit per metric."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from guestbench import store as gb_store
from guestbench.analysis.tails import tails
from guestbench.commands import reading
from guestbench.report import select
from guestbench.report.formats import markdown
from guestbench.store.records import RunRecord

STARTED = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.timezone.utc)


def _campaign(path: Path, runs: dict[str, int]) -> gb_store.Store:
    """runc and runsc starting `runs[env]` times: runc about 40 ms to the agent, runsc about
    1.8 s, each teardown a tenth of that."""
    opened = gb_store.open(f"sqlite:///{path}")
    campaign = opened.create_campaign("start", {"campaign": {"repeat": 30}}, {"cpu": "t"},
                                      "fp", "runc", "logs", "test")
    rng = random.Random(7)
    for position, (env, typical) in enumerate((("runc", 40.0), ("runsc", 1800.0))):
        env_id = opened.add_environment(campaign, env, "oci", {}, True, "yes", position)
        for repetition in range(runs[env]):
            ready = typical * rng.lognormvariate(0, 0.2)
            opened.add_run(campaign, RunRecord(
                env_id, "start", "start", {}, repetition, "ok", "", STARTED, 1.0, None,
                (("start_ready", "ms", ready), ("start_teardown", "ms", ready / 10))))
    opened.finish_campaign(campaign, "finished")
    return opened


def test_thirty_runs_give_the_tail_with_intervals(tmp_path: Path) -> None:
    opened = _campaign(tmp_path / "s.sqlite", {"runc": 30, "runsc": 30})
    report = reading.load(opened)
    (table,) = select.chosen_tables(report, [select.Choice("startup", plain=False)])
    assert table.header == ["metric", "environment", "runs", "p50", "p90", "p95", "p99"]
    assert table.title.startswith("Start-up: time per instance")
    rows = {(row[0], row[1]): row for row in table.rows}
    assert set(rows) == {("to the agent (ms)", "runc"), ("to the agent (ms)", "runsc"),
                         ("teardown (ms)", "runc"), ("teardown (ms)", "runsc")}
    runsc = rows[("to the agent (ms)", "runsc")]
    values = report.results.cells[("start", "start_ready")]["runsc"].values
    expected = tails(values)
    assert runsc[2] == "30"
    for text, tail in zip(runsc[3:6], expected):
        assert text.startswith(f"{float(f'{tail.value:.4g}'):.4g} [")  # in ms, as measured
    # 30 runs cannot give a p99 (their largest value is no 99th percentile): not told
    assert runsc[3].count("?") == 0 and runsc[6] == "needs 100"
    assert "'needs 100' where a cell has fewer" in table.note


def test_a_hundred_runs_give_the_p99_and_say_where_it_is_unbounded(tmp_path: Path) -> None:
    opened = _campaign(tmp_path / "s.sqlite", {"runc": 100, "runsc": 30})
    report = reading.load(opened)
    (table,) = select.chosen_tables(report, [select.Choice("startup", plain=False)])
    runc = next(row for row in table.rows if row[0:2] == ["to the agent (ms)", "runc"])
    tail = tails(report.results.cells[("start", "start_ready")]["runc"].values)[-1]
    assert runc[2] == "100" and runc[6].startswith(f"{float(f'{tail.value:.4g}'):.4g} [")
    assert runc[6].endswith("-?]")  # 100 runs bound no p99 from above (368 would)
    assert "'?': the runs do not bound that end" in table.note
    shown = markdown.render(report, asked=("startup",))
    assert "| p50 | p90 | p95 | p99 |" in shown.replace("  ", " ") or "p99" in shown


def test_fewer_than_thirty_runs_give_the_median_alone(tmp_path: Path) -> None:
    opened = _campaign(tmp_path / "s.sqlite", {"runc": 12, "runsc": 30})
    report = reading.load(opened)
    (table,) = select.chosen_tables(report, [select.Choice("startup", plain=False)])
    runc = next(row for row in table.rows if row[0:2] == ["to the agent (ms)", "runc"])
    assert runc[2] == "12" and runc[4:] == ["-", "-", "-"] and "[" in runc[3]


def test_the_dashboards_export_the_memory_an_instance_holds(tmp_path: Path) -> None:
    """bmf exported start-up, density and network series and no footprint or density PSS
    (2026-11-27); memory is now exported, smaller is better, RSS and counts still not."""
    from guestbench.report.formats import bmf, github_action_benchmark
    opened = gb_store.open(f"sqlite:///{tmp_path / 'm.sqlite'}")
    campaign = opened.create_campaign("mem", {"campaign": {"repeat": 3}}, {"cpu": "t"}, "fp",
                                      None, "logs", "test")
    env = opened.add_environment(campaign, "vm", "qemu", {"kind": "qemu"}, True, "yes", 0)
    for repetition in range(3):
        opened.add_run(campaign, RunRecord(
            env, "footprint", "footprint", {}, repetition, "ok", "", STARTED, 1.0, None,
            (("footprint_pss", "MiB", 305.0 + repetition), ("footprint_overhead", "MiB", 5.0),
             ("footprint_rss", "MiB", 610.0), ("footprint_processes", "count", 3.0))))
    opened.finish_campaign(campaign, "finished")
    report = reading.load(opened)
    exported = bmf.bmf(report)
    assert set(exported["vm/footprint"]) == {"footprint_pss (MiB)", "footprint_overhead (MiB)"}
    smaller = github_action_benchmark.github_action_benchmark(report)["customSmallerIsBetter"]
    assert {entry["name"] for entry in smaller} == {"vm/footprint footprint_pss",
                                                    "vm/footprint footprint_overhead"}


def test_the_dashboards_export_a_burst_s_success_rate_bigger_is_better(tmp_path: Path) -> None:
    """A burst's success fell from 100% to 94% and neither export carried the rate."""
    from guestbench.report.formats import bmf, github_action_benchmark
    opened = gb_store.open(f"sqlite:///{tmp_path / 'b.sqlite'}")
    campaign = opened.create_campaign("b", {"campaign": {"repeat": 3}}, {"cpu": "t"}, "fp",
                                      None, "logs", "test")
    env = opened.add_environment(campaign, "runc", "oci", {"kind": "oci"}, True, "yes", 0)
    for repetition, success in enumerate((100.0, 94.0, 98.0)):
        opened.add_run(campaign, RunRecord(
            env, "burst", "burst", {"instances": 50}, repetition, "ok", "", STARTED, 1.0, None,
            (("burst_p50", "ms", 40.0 + repetition), ("burst_success", "%", success))))
    opened.finish_campaign(campaign, "finished")
    report = reading.load(opened)
    assert bmf.bmf(report)["runc/burst"]["burst_success (%)"]["value"] == 98.0
    exported = github_action_benchmark.github_action_benchmark(report)
    assert [entry["name"] for entry in exported["customBiggerIsBetter"]] == [
        "runc/burst burst_success"]
    assert "runc/burst burst_p50" in {entry["name"] for entry in exported["customSmallerIsBetter"]}


def test_one_cell_has_one_p50_in_every_table_and_export(tmp_path: Path) -> None:
    """The summary and BMF said 50.82 where the startup table said 50.03 for one cell (the
    tails took the nearest rank, the summary numpy's median): now one definition. An even
    count of runs, so that the two definitions differ."""
    from guestbench.report.formats import bmf, json as json_format
    opened = _campaign(tmp_path / "s.sqlite", {"runc": 40, "runsc": 30})
    report = reading.load(opened)
    cell = report.results.cells[("start", "start_ready")]["runc"]
    ordered = sorted(cell.values)
    assert ordered[19] != ordered[20]  # the nearest rank and the median differ here
    (table,) = select.chosen_tables(report, [select.Choice("startup", plain=False)])
    row = table.rows.index(next(row for row in table.rows
                                if row[0:2] == ["to the agent (ms)", "runc"]))
    p50 = table.numbers[row][1]
    assert p50["statistic"] == "p50" and p50["value"] == cell.stats.median
    assert table.rows[row][3].startswith(f"{float(f'{cell.stats.median:.4g}'):.4g}")
    assert bmf.bmf(report)["runc/start"]["start_ready (ms)"]["value"] == cell.stats.median
    assert tails(cell.values)[0].value == pytest.approx(cell.stats.median)
    # the JSON document's tables: the text, and beside it the figures as numbers
    document = json_format.document(report)
    startup = next(table for table in document["tables"] if table["name"] == "startup")
    assert startup["label_columns"] == 2
    figures = startup["figures"][row]
    assert figures[0] is None  # the runs column is a count, no figure
    assert figures[1]["value"] == cell.stats.median
    p95 = figures[3]
    assert p95["statistic"] == "p95" and p95["unit"] == "ms"
    assert p95["low"] <= p95["value"] and p95["high"] is None  # 72 runs would bound it above
    assert figures[4] is None  # 40 runs give no p99: 'needs 100', no number


def test_the_dashboards_export_p95_and_p99_where_a_cell_has_the_values(tmp_path: Path) -> None:
    from guestbench.report.formats import bmf, github_action_benchmark
    opened = _campaign(tmp_path / "s.sqlite", {"runc": 100, "runsc": 30})
    report = reading.load(opened)
    runc = bmf.bmf(report)["runc/start"]
    cell = report.results.cells[("start", "start_ready")]["runc"]
    expected = tails(cell.values)
    assert runc["start_ready p95 (ms)"]["value"] == expected[2].value
    assert runc["start_ready p99 (ms)"]["value"] == expected[3].value
    assert "upper_value" not in runc["start_ready p99 (ms)"]  # 100 runs bound no p99 above
    runsc = bmf.bmf(report)["runsc/start"]
    assert "start_ready p95 (ms)" in runsc and "start_ready p99 (ms)" not in runsc  # 30 runs
    names = {entry["name"] for entry in
             github_action_benchmark.github_action_benchmark(report)["customSmallerIsBetter"]}
    assert {"runc/start start_ready p99", "runsc/start start_ready p95"} <= names
    assert "runsc/start start_ready p99" not in names
