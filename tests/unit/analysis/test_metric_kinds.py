"""Metric kinds: performance figures are judged, context figures are shown, verdicts stand apart.

A campaign of an upload (bandwidth, elapsed, bytes), a build (times, CPU %, sleeps, max RSS),
an fsync check (acknowledged and durable counts, the honoured verdict) and an exec program
that declares a context count and a verdict: the ratio, % and geometric-mean figures must
come from the performance metrics alone, whatever the other numbers do.
"""

from __future__ import annotations

import pytest

from guestbench.analysis import compare as comparing
from guestbench.analysis.cells import CONTEXT, PERFORMANCE, VERDICT, metric_kind
from guestbench.report import select
from guestbench.report.formats import github_action_benchmark
from tests.support.campaigns import Campaign, row
from guestbench.commands import reading
from tests.support.samples import build, fsync, upload

EXEC_PARAMS = {"argv": ["prog"], "metrics": [
    {"name": "events", "regex": "e=(?P<value>.*)", "unit": "events/s", "better": "higher",
     "kind": "performance"},
    {"name": "retries", "regex": "r=(?P<value>.*)", "unit": "events/s", "better": "lower",
     "kind": "context"},
    {"name": "ok", "regex": "ok=(?P<value>.*)", "unit": "events/s", "better": "higher",
     "kind": "verdict"}]}


def program(events: float, retries: float, ok: bool) -> list[tuple[str, str, float]]:
    return [("events", "events/s", events), ("retries", "events/s", retries),
            ("ok", "events/s", 1.0 if ok else 0.0)]


@pytest.fixture
def mixed(store) -> Campaign:
    campaign = Campaign(store, {"native": {"kind": "native"}, "guest": {"kind": "qemu"}},
                        baseline="native")
    for index in range(5):
        jitter = 1 + index * 0.01
        campaign.run("native", "upload", upload(800 * jitter))
        campaign.run("guest", "upload", upload(400 * jitter))  # half the bandwidth: 2x slower
        campaign.run("native", "build", build(10 * jitter, 100))
        campaign.run("guest", "build", build(20 * jitter, 10_000))  # 2x slower, 100x the sleeps
        campaign.run("native", "fsync_honoured", fsync(True))
        campaign.run("guest", "fsync_honoured", fsync(False))
        campaign.run("native", "exec", program(1000 * jitter, 1, True), params=EXEC_PARAMS)
        campaign.run("guest", "exec", program(500 * jitter, 5000, index != 0), params=EXEC_PARAMS)
    return campaign


def test_kind_follows_the_unit_unless_declared() -> None:
    assert metric_kind("ns") == PERFORMANCE and metric_kind("MB/s") == PERFORMANCE
    assert metric_kind("bytes") == CONTEXT and metric_kind("KiB") == CONTEXT
    assert metric_kind("count") == CONTEXT and metric_kind("%") == CONTEXT
    assert metric_kind("bool") == VERDICT
    assert metric_kind("count", "performance") == PERFORMANCE
    assert metric_kind("s", "verdict") == VERDICT
    assert metric_kind("s", "nonsense") == PERFORMANCE  # an unknown declaration: by unit


def test_ratios_hold_performance_metrics_only(mixed: Campaign) -> None:
    ratios = mixed.tables()["ratios"]
    shown = {(r[0], r[1].split(" (")[0]) for r in ratios.rows}
    assert ("upload", "bandwidth") in shown and ("build", "elapsed") in shown
    assert ("build", "user") in shown and ("exec", "events") in shown
    for hidden in (("upload", "bytes"), ("build", "sleeps"), ("build", "max_rss"),
                   ("build", "cpu_percent"), ("build", "context_switches"),
                   ("fsync_honoured", "honoured"), ("fsync_honoured", "records_durable"),
                   ("exec", "retries"), ("exec", "ok")):
        assert hidden not in shown, hidden


def test_geometric_mean_covers_the_performance_workloads_alone(mixed: Campaign) -> None:
    report = reading.load(mixed.store, str(mixed.id))
    # upload, build and exec: each 2x slower; fsync_honoured's verdict is no workload here.
    # An upload's bandwidth is a transfer, a kind of measure of its own: a mean of its own
    assert list(report.geomeans) == ["in the guest", "network"]
    in_guest, network = report.geomeans["in the guest"]["guest"], report.geomeans["network"]["guest"]
    assert (in_guest.labels, in_guest.of, network.labels) == (("build", "exec"), 2, ("upload",))
    assert in_guest.interval.value == pytest.approx(2.0, rel=0.02)
    assert network.interval.value == pytest.approx(2.0, rel=0.02)
    percent = mixed.tables()["percent"]
    assert percent.header == ["environment", "upload", "build", "exec",
                              "in the guest [95% CI]", "network [95% CI]"]
    assert row(percent, "guest")[4].startswith("50") and row(percent, "guest")[5].startswith("50")


def test_context_metrics_are_shown_as_measured(mixed: Campaign) -> None:
    measured = mixed.tables()["measured"]
    metrics = {(r[0], r[1].split(" (")[0]): r for r in measured.rows}
    assert metrics[("build", "sleeps")][3].startswith("10k")
    assert metrics[("upload", "bytes")][2].startswith("64M")
    assert ("exec", "retries") in metrics
    assert ("fsync_honoured", "honoured") not in metrics and ("exec", "ok") not in metrics


def test_verdicts_have_their_own_tables(mixed: Campaign) -> None:
    tables = mixed.tables()
    assert row(tables["durability"], "native")[4] == "honoured (5 runs)"
    assert row(tables["durability"], "guest")[4] == "NOT honoured (5 runs)"
    verdicts = tables["verdicts"]
    assert verdicts.header == ["workload", "verdict", "native", "guest"]
    assert verdicts.rows == [["exec", "ok", "yes (5 runs)", "mixed: yes in 4 of 5"]]
    statistics = {(r[0], r[1].split(" (")[0]) for r in tables["statistics"].rows}
    assert ("exec", "ok") not in statistics and ("fsync_honoured", "honoured") not in statistics


def test_the_summary_says_a_verdict_and_divides_no_context(mixed: Campaign) -> None:
    report = reading.load(mixed.store, str(mixed.id))
    summary = {r[0].split(" (")[0]: r for r in select.tables(report, "summary")[0].rows}
    assert summary["fsync honoured"][0] == "fsync honoured (verdict)"
    assert summary["fsync honoured"][2] == "no"  # a verdict says yes or no, never a ratio
    assert summary["build elapsed"][2].startswith("2.00x")


def test_compare_and_dashboards_judge_performance_only(mixed: Campaign) -> None:
    store = mixed.store
    campaign = store.campaign(str(mixed.id))
    one = comparing.side(campaign, store.environments(mixed.id), store.runs(mixed.id),
                         store.samples(mixed.id))
    pairs, _unpaired = comparing.pair_cells(one, one)
    paired = {(x.label, x.metric) for x, _ in pairs}
    assert {("build", "elapsed"), ("upload", "bandwidth"), ("exec", "events")} <= paired
    assert not paired & {("build", "sleeps"), ("upload", "bytes"), ("fsync_honoured", "honoured"),
                         ("exec", "retries"), ("exec", "ok")}
    report = reading.load(store, str(mixed.id))
    document = github_action_benchmark.github_action_benchmark(report)
    names = {entry["name"] for entries in document.values() for entry in entries}
    assert "guest/build elapsed" in names and "native/upload bandwidth" in names
    assert not [name for name in names
                if name.rsplit(" ", 1)[1] in ("sleeps", "bytes", "honoured", "retries", "ok")]


def test_a_varying_context_count_earns_no_stability_flag(store) -> None:
    campaign = Campaign(store, {"native": {"kind": "native"}})
    for index, jitter in enumerate((0.999, 1.0, 1.001, 1.0, 0.999)):
        campaign.run("native", "build", build(10 * jitter, 100 * (1 + 2 * index)))  # sleeps: CV ~60%
    report = reading.load(store, str(campaign.id))
    sleeps = report.results.cells[("build", "sleeps")]["native"]
    assert sleeps.stats is not None and sleeps.stats.flags == ["unstable"]  # the values say so
    assert sleeps.flag_names == []  # ... but a context figure is not judged
    assert "!" not in mixed_row(select.tables(report, "published"), "build", "sleeps")


def mixed_row(tables, label: str, metric: str) -> str:
    measured = next(table for table in tables if table.name == "measured")
    return " ".join(next(r for r in measured.rows if r[0] == label and r[1].startswith(metric)))
