"""Figures too fast to measure: shown as +++++ (bonnie++'s mark), never with a tight interval.

Two ways in: a tool says its runtime was under its clock's resolution (fio's metadata
phases of a few milliseconds: the run carries too-fast:<metric>), or every run gave the
same number, a quantised figure.
"""

from __future__ import annotations

import pytest

from guestbench.analysis.cells import flags_of_metric
from guestbench.report import select
from tests.support.campaigns import Campaign, row
from tests.support.samples import THREE
from guestbench.commands import reading

FILES = [("create", "files/s", 250_000.0), ("delete", "files/s", 10_000.0)]


def metadata(factor: float, jitter: float) -> list[tuple[str, str, float]]:
    return [(metric, unit, value / factor * jitter) for metric, unit, value in FILES]


@pytest.fixture
def fast(store) -> Campaign:
    campaign = Campaign(store, {"native": {}, "guest": {"kind": "qemu"}}, baseline="native")
    for env, factor in (("native", 1.0), ("guest", 2.0)):
        for jitter in THREE:
            campaign.run(env, "metadata", metadata(factor, jitter),
                         flags=("too-fast:create",) if env == "native" else ())
            campaign.run(env, "getpid", [("time_per_op", "ns", 100.0 * factor)])  # quantised
            campaign.run(env, "fork_exit", [("time_per_op", "ns", 9e4 * factor * jitter)])
    return campaign


def test_a_flag_scoped_to_a_metric_marks_that_metric_alone() -> None:
    flags = ["clock-drift", "too-fast:create", "too-fast:stat"]
    assert flags_of_metric(flags, "create") == ["clock-drift", "too-fast"]
    assert flags_of_metric(flags, "delete") == ["clock-drift"]


def test_too_fast_cells_show_plus_signs_and_no_interval(fast: Campaign) -> None:
    tables = fast.tables()
    measured = {(r[0], r[1]): r for r in tables["measured"].rows}
    create = measured[("file metadata", "create (files/s)")]
    assert create[2].startswith("+++++ (250k) [") and "±" not in create[2]
    assert create[3].startswith("125k ±")  # the guest's own runs were long enough
    assert "±" in measured[("file metadata", "delete (files/s)")][2]
    getpid = measured[("getpid", "time per op (ns)")]
    assert getpid[2].startswith("+++++ (100) [") and getpid[3].startswith("+++++ (200) [")
    footnotes = tables["host" if "host" in tables else list(tables)[-1]].footnotes
    assert any("too-fast" in line and "+++++" in line for line in footnotes)


def test_no_ratio_percent_or_geometric_mean_uses_them(fast: Campaign) -> None:
    report = reading.load(fast.store, str(fast.id))
    assert ("metadata", "create", "guest") not in report.ratios
    assert ("metadata", "delete", "guest") in report.ratios
    ratios = {(r[0], r[1].split(" (")[0]): r for r in select.tables(report, "published")[1].rows}
    assert ratios[("file metadata", "create")][3].startswith("+++++")
    assert ratios[("getpid", "time per op")][3].startswith("+++++")
    # metadata's primary is create, getpid is quantised: fork_exit alone is judged (metadata
    # is a disk workload: its group has no mean)
    assert list(report.geomeans) == ["in the guest"]
    geomean = report.geomeans["in the guest"]["guest"]
    assert (geomean.workloads, geomean.of, geomean.labels) == (1, 2, ("fork_exit",))
    assert geomean.interval.value == pytest.approx(2.0, rel=0.01)
    percent = {table.name: table for table in select.tables(report, "published")}["percent"]
    assert row(percent, "guest")[1:3] == ["+++++", "+++++"]


def test_one_rule_per_workload_the_same_in_every_cell(store) -> None:
    """fio's rule (a phase under 20 ms) decides metadata's cells, by their typical run: one run
    of three under it is not a too-fast cell, two are; and a metadata figure that every run
    gave identically (fio's whole milliseconds, at 21 ms) is measured by that rule, not marked
    as quantised, while getpid, whose agent has no such rule, still is (2026-11-27: a cell
    at 23.8k files/s showed +++++ beside one measured at 16.4k)."""
    campaign = Campaign(store, {"one": {}, "two": {}, "same": {}, "slow": {}})
    for env, flagged in (("one", 1), ("two", 2)):
        for index, jitter in enumerate(THREE):
            campaign.run(env, "metadata", metadata(1.0, jitter),
                         flags=("too-fast:create",) if index < flagged else ())
    for _ in range(2):
        campaign.run("same", "metadata", [("create", "files/s", 23_809.0),
                                          ("delete", "files/s", 9_000.0)])
        campaign.run("same", "getpid", [("time_per_op", "ns", 100.0)])
    for jitter in THREE:
        campaign.run("slow", "metadata", [("create", "files/s", 16_400.0 * jitter),
                                          ("delete", "files/s", 9_000.0 * jitter)])
    report = reading.load(campaign.store, str(campaign.id))
    cells = report.results.cells
    create = cells[("metadata", "create")]
    assert not create["one"].too_fast and "too-fast" not in create["one"].flag_names
    assert create["two"].too_fast and "too-fast" in create["two"].flag_names
    assert not create["same"].too_fast and not create["slow"].too_fast
    assert cells[("getpid", "time_per_op")]["same"].too_fast  # quantised, no tool rule
    measured = {(r[0], r[1]): r for r in campaign.tables()["measured"].rows}
    shown = measured[("file metadata", "create (files/s)")]
    assert shown[2].startswith("250k") and shown[3].startswith("+++++ (250k)")
    assert shown[4].startswith("23.81k") and shown[5].startswith("16.4k")
    assert shown[4] == "23.81k (every run)"  # no interval: a falsely tight one would mislead
    assert create["same"].stats.ci_low is None
    # the footnote says the workload's own rule
    footnotes = campaign.tables()["measured"].footnotes
    assert any("whole milliseconds: a phase of under 20 ms" in line for line in footnotes), \
        footnotes
