"""The tables VMM and sandbox teams publish: footprint (absolute MiB, and by process), density
(per instance against N) and network (round-trip percentiles, stream each way), by name in
the terminal and Markdown, and in the HTML page's overview."""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import pytest

from guestbench import store as gb_store
from guestbench.commands import reading
from guestbench.report import select
from guestbench.report.formats import markdown
from guestbench.report.formats.html import page
from guestbench.store.records import RunRecord

COUNTS = "the L1 machine's QEMU process, which holds the instance"
STARTED = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.timezone.utc)
# (environment, PSS of each command name in MiB): runsc's sandbox, gofer and the runtime
PROCESSES = {"runc": {"getpid": 1.5}, "runsc": {"runsc-sandbox": 30.0, "runsc-gofer": 8.0,
                                                 "runsc": 12.0}}


@pytest.fixture
def report(tmp_path: Path):
    opened = gb_store.open(f"sqlite:///{tmp_path / 'v.sqlite'}")
    campaign = opened.create_campaign("vmm", {"campaign": {"repeat": 5}}, {"cpu": "t"}, "fp",
                                      "runc", "logs", "test")
    rng = random.Random(3)
    for position, (env, processes) in enumerate(PROCESSES.items()):
        # runsc stands for an instance inside a VM here: its facts say what footprint counts
        facts = {"footprint_counts": COUNTS} if env == "runsc" else None
        env_id = opened.add_environment(campaign, env, "oci", {}, True, "yes", position, facts)
        for repetition in range(5):
            def add(workload: str, label: str, params: dict, samples: list) -> None:
                opened.add_run(campaign, RunRecord(env_id, workload, label, params, repetition,
                                                   "ok", "", STARTED, 1.0, None, tuple(samples)))
            noise = rng.uniform(0.98, 1.02)
            pss = sum(processes.values()) * noise
            add("footprint", "footprint", {}, [
                ("footprint_pss", "MiB", pss), ("footprint_uss", "MiB", pss * 0.8),
                ("footprint_rss", "MiB", pss * 2), ("footprint_processes", "count",
                                                    float(len(processes))),
                *((f"footprint_process_pss:{name}", "MiB", mib * noise)
                  for name, mib in processes.items())])
            for count in (1, 4):
                add("density", f"density[instances={count}]", {"instances": count}, [
                    ("density_pss", "MiB", pss * (1.1 if count == 1 else 0.9)),
                    *(("density_start", "ms", 40.0 * count * rng.uniform(0.9, 1.1))
                      for _ in range(count)),
                    ("density_started", "count", float(count))])
            add("net_rr", "net_rr", {}, [("rr_p50", "ns", 30_000 * noise),
                                         ("rr_p99", "ns", 90_000 * noise)])
            add("net_stream", "net_stream", {}, [("to_guest", "Gbit/s", 9.5 * noise),
                                                 ("to_host", "Gbit/s", 8.0 * noise)])
    opened.finish_campaign(campaign, "finished")
    return reading.load(opened)


def _table(report, name: str, number: int = 0):
    return [table for table in select.chosen_tables(report, [select.Choice(name, plain=False)])
            if table.name == name or number][number]


def test_footprint_is_absolute_mib_and_its_processes_by_name(report) -> None:
    footprint = _table(report, "footprint")
    assert footprint.header == ["environment", "runs", "PSS (MiB)", "USS (MiB)", "RSS (MiB)",
                                "processes (count)"]
    runsc = next(row for row in footprint.rows if row[0] == "runsc")
    assert runsc[1] == "5" and runsc[2].startswith("5") and "[" in runsc[2]  # 50 MiB [..]
    assert runsc[5] == "3"
    by_process = next(table for table in select.chosen_tables(
        report, [select.Choice("footprint", plain=False)]) if table.name == "footprint-processes")
    rows = [(row[0], row[1], row[3]) for row in by_process.rows]
    assert rows == [("runc", "getpid", "100%"), ("runsc", "runsc-sandbox", "60%"),
                    ("runsc", "runsc", "24%"), ("runsc", "runsc-gofer", "16%")]


def test_what_footprint_counts_is_said_under_its_table_where_an_environment_says_it(
        report) -> None:
    """Inside a VM the host reads the machine that holds the instance: its facts say so,
    and the table says it under its figures, for that environment alone."""
    note = _table(report, "footprint").note
    assert f"runsc: footprint counts {COUNTS}." in note and "runc:" not in note


def test_density_is_memory_per_instance_against_n(report) -> None:
    density = _table(report, "density")
    assert density.header == ["figure", "environment", "N=1", "N=4"]
    rows = {(row[0], row[1]): row[2:] for row in density.rows}
    assert set(rows) == {(figure, env) for env in PROCESSES for figure in (
        "memory per instance (MiB)", "start p50 (ms)", "start, slowest (ms)", "started")}
    assert rows[("started", "runsc")] == ["1", "4"]
    one, four = (float(text.split()[0]) for text in rows[("memory per instance (MiB)",
                                                          "runsc")])
    assert one > four  # the shared pages spread over more instances


def test_network_gives_the_percentiles_and_each_way_in_units_of_their_own(report) -> None:
    network = _table(report, "network")
    assert network.header[0] == "environment" and len(network.header) == 5
    assert "(us)" in network.header[1] and "Gbit/s" in network.header[3]
    runc = network.rows[0]
    p50, p99 = (float(text.split()[0]) for text in runc[1:3])
    assert 28 < p50 < 32 and 85 < p99 < 95  # us, not 30000 ns


def test_each_is_named_in_markdown_and_in_the_html_overview(report) -> None:
    shown = markdown.render(report, asked=("footprint", "density", "network"))
    for title in ("Footprint: the host memory", "Footprint by process", "Density: N instances",
                  "Network: TCP"):
        assert title in shown
    html = page.render(report, None)
    overview = html.split('<section id="overview">')[1].split("</section>")[0]
    for anchor in ("footprint", "footprint-processes", "density", "network"):
        assert f'id="overview-{anchor}"' in overview


def test_json_carries_each_table_the_campaign_has_data_for(report) -> None:
    from guestbench.report.formats import json as json_format
    document = json_format.document(report)
    names = [table["name"] for table in document["tables"]]
    # start-up: density's start of each instance, one table per N
    assert names == ["startup", "startup-2", "footprint", "footprint-processes", "density",
                     "network"]
    by_process = document["tables"][3]
    assert by_process["header"] == ["environment", "process", "PSS (MiB)", "share of PSS"]
    cells = {cell["metric"] for cell in document["cells"]}
    assert "footprint_process_pss:runsc-gofer" in cells


def test_the_measured_table_leaves_the_processes_to_their_own_table(report) -> None:
    measured = _table(report, "measured")
    assert not any("footprint_process_pss" in row[1] for row in measured.rows)
    assert any(row[1].startswith("PSS") for row in measured.rows)
