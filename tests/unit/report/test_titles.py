"""Display titles: tables show "malloc 1 MiB" and "time per op"; stored names stay ids."""

from __future__ import annotations

import json

from guestbench.report import model, select
from guestbench.report.formats import json as json_report
from tests.support.campaigns import Campaign, row
from tests.support.samples import JITTER, micro, stream
from guestbench.commands import reading


def test_tables_show_titles_and_exports_keep_the_names(store) -> None:
    campaign = Campaign(store, {"native": {"kind": "native"}})
    for jitter in JITTER:
        campaign.run("native", "malloc_1mib", micro(5000 * jitter))
        campaign.run("native", "first_write", micro(3000 * jitter))
        campaign.run("native", "stream", stream(20000.0, jitter))
        campaign.run("native", "getpid", micro(100 * jitter), label="mine")  # the plan's label
        campaign.run("native", "stream", stream(20000.0, jitter), label="stream[array_mib=32]")
    report = reading.load(store, str(campaign.id))
    tables = {table.name: table for table in select.tables(report, "published")}
    basic = tables["basic"]
    assert [r[0] for r in basic.rows] == ["malloc 1 MiB", "first write access", "mine"]
    measured = tables["measured"]
    assert row(measured, "malloc 1 MiB")[1] == "time per op (ns)"  # 5000 ns: not yet 10 us
    assert ["malloc 1 MiB", "TSC per op (cycles)"] == [r[:2] for r in measured.rows
                                                        if r[0] == "malloc 1 MiB"][1]
    assert "STREAM [array_mib=32]" in [r[0] for r in measured.rows]
    assert tables["stream-stream"].title.startswith("STREAM: bandwidth and time per kernel")
    assert basic.sources[0][0] == ("native", "malloc_1mib")  # links keep the stored label
    exported = json.loads(json_report.render(report))
    assert {run["label"] for run in exported["runs"]} >= {"malloc_1mib", "first_write", "mine"}


def test_plain_units_write_whole_numbers_and_keep_stored_units(store) -> None:
    campaign = Campaign(store, {"native": {"kind": "native"}})
    for jitter in JITTER:
        campaign.run("native", "fork_exit", micro(450_800 * jitter))
    report = reading.load(store, str(campaign.id))
    basic = {table.name: table for table in select.tables(report, "published")}["basic"]
    assert row(basic, "fork + exit")[1].startswith("1.172M cyc (450.8 us)")
    with model.units("plain"):
        tables = {table.name: table for table in select.tables(report, "published")}
    assert row(tables["basic"], "fork + exit")[1].startswith("1172080 cyc (450800 ns)")
    assert row(tables["measured"], "fork + exit")[1] == "time per op (ns)"
    assert row(tables["measured"], "fork + exit")[2].startswith("450800 ±")
