"""report.published: the table shapes people publish, from recorded-shape samples in a store."""

from __future__ import annotations

import re

import pytest

from guestbench.commands import reading
from guestbench.report import model, select
from tests.support.samples import (HOGGED_SCHED_YIELD, NATIVE_FORK_EXIT_US, NATIVE_GETPID,
                                   PIPE_SWITCH_FREE_US)
from tests.support.campaigns import Campaign, row
from tests.support.samples import JITTER, THREE, micro, stream

# tables of what the store read: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True


@pytest.fixture
def basic(store) -> Campaign:
    campaign = Campaign(store, {"native": {"kind": "native"}, "sandbox": {"kind": "oci"}},
                        baseline="native")
    assert len(NATIVE_GETPID) == len(JITTER)
    for value, jitter in zip(NATIVE_GETPID, JITTER):
        campaign.run("native", "getpid", micro(value))
        campaign.run("sandbox", "getpid", micro(value * 300))
        campaign.run("native", "stream", stream(24000.0, jitter))
        campaign.run("sandbox", "stream", stream(12000.0, jitter))
    for value in HOGGED_SCHED_YIELD:
        campaign.run("native", "sched_yield", micro(value))
    campaign.run("sandbox", "sched_yield", (), status="timeout", reason="killed after 5 s")
    return campaign


@pytest.mark.both_stores
def test_basic_costs_in_cycles_and_ns(basic) -> None:
    table = basic.tables()["basic"]
    assert table.header == ["activity", "native", "sandbox"]
    native, sandbox = row(table, "getpid")[1:]
    assert native.startswith("365.8 cyc (140.7 ns)")
    assert sandbox.startswith("109.7k cyc (42.21 us)")
    assert row(table, "sched_yield")[2].startswith("◷ timeout [")
    assert "!unstable" in row(table, "sched_yield")[1]


def test_stream_per_kernel_with_bandwidth_and_times(basic) -> None:
    table = basic.tables()["stream-stream"]
    assert table.header[2:] == ["bandwidth MB/s", "avg time s", "min time s", "max time s"]
    assert [r[:2] for r in table.rows[:2]] == [["Copy", "native"], ["Copy", "sandbox"]]
    # the median bandwidth and average time; the smallest minimum and largest maximum of the runs
    assert table.rows[0][2:] == ["24000.0", "0.011000", f"{0.010 / 1.002:.6f}", f"{0.013 / 0.998:.6f}"]
    assert {r[0] for r in table.rows} == {"Copy", "Scale", "Add", "Triad"}


def test_percent_of_baseline_with_geometric_mean(basic) -> None:
    table = basic.tables()["percent"]
    assert table.header == ["environment", "getpid", "STREAM", "sched_yield",
                            "geometric mean [95% CI]"]
    native = row(table, "native")
    assert native[1] == "100" and native[2] == "100"
    assert native[3].startswith("100 !unstable [") and native[4] == "100"
    sandbox = row(table, "sandbox")
    assert sandbox[1] == "0.333"  # 300x slower
    assert sandbox[3].startswith("◷ timeout")
    assert sandbox[2] == "50"  # half the bandwidth
    # every mean covers the workloads all environments measured: getpid and STREAM, not
    # sched_yield, which timed out in the sandbox
    geomean, interval = re.fullmatch(r"(\S+) \[(\S+)\]", sandbox[4]).groups()
    assert float(geomean) == pytest.approx(100 / (300 * 2) ** 0.5, rel=0.01)
    assert "over the 2 of 3 workloads that every environment with a mean measured" in table.note
    assert "stream: triad_bandwidth" in table.note


def test_statistics_per_cell(basic) -> None:
    table = basic.tables()["statistics"]
    assert table.header[3:] == ["n", "median", "mean", "min", "max", "stdev", "CV",
                                "95% CI of median", "outliers", "flags", "repetitions stopped"]
    getpid = next(r for r in table.rows if r[:3] == ["getpid", "time per op (ns)", "native"])
    assert getpid[3] == "6" and getpid[4] == "140.7"
    assert re.fullmatch(r"\d+(\.\d+)?-\d+(\.\d+)?", getpid[10])
    assert getpid[11] == "-" and getpid[12] == "-"  # 6 values: no outlier, no flag


QUIET = [100.0, 101.0, 99.5, 100.5, 99.0, 100.2, 100.8, 99.7]


@pytest.mark.parametrize("values, flag", [
    (HOGGED_SCHED_YIELD, "unstable"), (PIPE_SWITCH_FREE_US, "multimodal")])
def test_each_flag_marks_its_cell_in_every_table_with_a_footnote(store, values, flag) -> None:
    campaign = Campaign(store, {"e": {}, "q1": {}, "q2": {}})
    for value in values:
        campaign.run("e", "pipe_switch", micro(value))
    for quiet in ("q1", "q2"):  # the campaign's other cells vary by under 1%
        for value in QUIET:
            campaign.run(quiet, "pipe_switch", micro(value))
    report = reading.load(store, str(campaign.id))
    tables = select.tables(report, "published")
    text = tables[0].rows[1][2]  # the first row after the runs row
    assert re.search(rf"[!,]{flag}\b", text), text
    numbers = re.findall(r"\[(\d+)\]", text)
    assert any(line.startswith(f"[{number}] {flag} (e): ") for line in tables[-1].footnotes
               for number in numbers)
    assert flag in model.FLAG_MEANINGS


def test_a_spread_every_cell_shares_is_said_once_and_marks_none(store) -> None:
    """On a host where every cell varies alike, no cell differs: no cell is marked unstable,
    and the campaign's typical spread is said once (spread_line)."""
    campaign = Campaign(store, {"a": {}, "b": {}, "c": {}})
    for env, scale in (("a", 1.0), ("b", 2.0), ("c", 3.0)):
        for value in HOGGED_SCHED_YIELD:
            campaign.run(env, "pipe_switch", micro(value * scale))
    report = reading.load(store, str(campaign.id))
    measured = select.tables(report, "published")[0]
    assert not any("unstable" in cell for row in measured.rows for cell in row)
    spread = report.results.spread
    assert spread is not None and spread.noisy and spread.cells == 3
    line = model.spread_line(report)
    assert line.startswith("The host was noisy") and model.format_percent(spread.typical_cv) in line
    from guestbench.report.formats import markdown
    text = markdown.render(report)
    assert text.count("The host was noisy") == 1  # said once, before the first table
    assert text.index("The host was noisy") < text.index("### Measured")


def test_outliers_are_counted_not_flagged(store) -> None:
    campaign = Campaign(store, {"e": {}})
    for value in NATIVE_FORK_EXIT_US:
        campaign.run("e", "pipe_switch", micro(value))
    tables = {table.name: table for table in select.tables(reading.load(store, str(campaign.id)),
                                                           "published")}
    assert not any("outliers" in cell for row in tables["measured"].rows for cell in row)
    stats_row = tables["statistics"].rows[0]
    assert int(stats_row[tables["statistics"].header.index("outliers")]) >= 1


def test_scaling_vcpus_by_placement_against_a_chosen_cell(store) -> None:
    names = {}
    for kernel in ("nova", "foc"):
        for vcpus in (1, 2):
            for placement in ("same", "disjoint"):
                name = f"{kernel}-vcpus{vcpus}-placement{placement}"
                names[name] = {"kind": "qemu", "vcpus": vcpus, "placement": placement,
                               "kernel": f"/boot/{kernel}"}
    campaign = Campaign(store, names, baseline="nova-vcpus1-placementdisjoint")
    seconds = {"nova": 719.0, "foc": 964.0}
    for name, spec in names.items():
        kernel = name.split("-")[0]
        value = seconds[kernel] / spec["vcpus"] * (1.05 if spec["placement"] == "same" else 1.0)
        for jitter in THREE:
            campaign.run(name, "build", [("elapsed", "s", value * jitter)])
    table = campaign.tables()["scaling-build"]
    assert table.header == ["environment", "1 (same)", "1 (disjoint)", "2 (same)", "2 (disjoint)"]
    assert "against nova 1 vCPU disjoint" in table.title  # its short header
    assert row(table, "nova")[1:] == ["755 s (+5%)", "719 s (+0%)", "377.5 s (-48%)",
                                      "359.5 s (-50%)"]
    assert row(table, "foc")[2] == "964 s (+34%)"
    assert table.sources[0][0] == ("nova-vcpus1-placementsame", "build")


def test_scaling_is_against_the_one_vcpu_disjoint_cell_when_the_baseline_is_not_scaled(store):
    names = {"native": {"kind": "native"}}
    for vcpus in (1, 2):
        for placement in ("same", "disjoint"):
            names[f"tcg-vcpus{vcpus}-placement{placement}"] = {
                "kind": "qemu", "vcpus": vcpus, "placement": placement}
    campaign = Campaign(store, names, baseline="native")
    for name, spec in names.items():
        for jitter in THREE:
            campaign.run(name, "build", [("elapsed", "s", 10.0 / spec.get("vcpus", 1) * jitter)])
    table = campaign.tables()["scaling-build"]
    assert "against tcg 1 vCPU disjoint" in table.title
    assert row(table, "tcg")[1:] == ["10 s (+0%)", "10 s (+0%)", "5 s (-50%)", "5 s (-50%)"]


def test_no_scaling_table_without_a_vcpu_or_placement_sweep(basic) -> None:
    assert not [name for name in basic.tables() if name.startswith("scaling")]
