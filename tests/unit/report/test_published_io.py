"""The published disk, dbench, upload and build tables, from runs written into a store."""

from __future__ import annotations

import re

import pytest

from tests.support.campaigns import Campaign
from tests.support.samples import THREE

# tables of what the store read: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True


def row(table, *first: str) -> list[str]:
    return next(r for r in table.rows if tuple(r[:len(first)]) == first)


@pytest.mark.both_stores
def test_disk_table_gives_each_figure_with_its_percent_of_native(store):
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}}, baseline="native")
    for env, factor in (("native", 1.0), ("tcg", 4.0)):
        for jitter in THREE:
            campaign.run(env, "fio_rand_read", [("iops", "IOPS", 20000 / factor * jitter),
                                                ("lat_p99", "us", 80 * factor * jitter),
                                                ("cpu_usr", "%", 3.0)])
    table = campaign.tables()["disk"]
    assert table.header == ["workload", "metric", "native", "tcg"]
    native, tcg = row(table, "fio random read", "I/O rate (IOPS)")[2:]
    assert re.fullmatch(r"20k ±0\.\d+% \(100%\)", native), native
    assert re.fullmatch(r"5000 ±0\.\d+% \(25%\)", tcg), tcg
    latency = row(table, "fio random read", "latency p99 (us)")[3]
    assert re.fullmatch(r"320 ±0\.\d+% \(25%\)", latency), latency  # latency: inverted
    assert not [r for r in table.rows if r[1].startswith("cpu_usr")]


def test_dbench_table_has_a_column_per_client_count_and_failures_marked(store):
    campaign = Campaign(store, {"native": {}, "runsc": {"kind": "oci"}}, baseline="native")
    for clients, mbps in ((1, 400.0), (4, 900.0)):
        label = f"dbench[clients={clients}]"
        for jitter in THREE:
            campaign.run("native", "dbench", [("throughput", "MB/s", mbps * jitter)], label=label,
                         params={"clients": clients, "seconds": 10})
            campaign.run("runsc", "dbench", [], label=label, status="failed",
                         reason="exec: dbench exited with status 1", params={"clients": clients})
    campaign.run("native", "dbench", [("throughput", "MB/s", 450.0)], label="dbench[clients=1]",
                 params={"clients": 1, "seconds": 10}, status="ok")
    table = campaign.tables()["dbench"]
    assert table.header == ["environment", "1 client: median", "best", "% of native",
                            "4 clients: median", "best", "% of native"]
    native = row(table, "native")
    assert [native[1].split(" ±")[0], native[4].split(" ±")[0]] == ["400.2", "900"]
    assert native[2:4] == ["450 (n=4)", "100"] and native[5] == "900.9 (n=3)"
    assert row(table, "runsc")[1].startswith("✗ failed x3 [")
    assert row(table, "runsc")[2:4] == ["-", "-"]


def test_upload_table_is_three_way_per_channel(store):
    campaign = Campaign(store, {"tcg": {"kind": "qemu"}, "uml": {"kind": "uml"}})
    speeds = {"write": 40.0, "no_write": 80.0, "no_upload": 120.0}
    for channel in ("virtio-serial", "9p"):
        for mode, mbps in speeds.items():
            label = f"upload[channel={channel}][mode={mode}]"
            params = {"channel": channel, "mode": mode, "size_mib": 256}
            campaign.run("tcg", "upload", [("bandwidth", "MB/s", mbps),
                                           ("elapsed", "s", 256 * 2**20 / 1e6 / mbps)],
                         label=label, params=params)
            campaign.run("uml", "upload", [], label=label, status="unsupported",
                         reason="uml has no 9p channel", params=params)
    table = campaign.tables()["upload-rates"]
    assert "(256 MiB)" in table.title
    assert table.rows[0] == ["tcg", "virtio-serial", "40", "80", "120"]
    assert row(table, "uml", "9p")[2].startswith("∅ unsupported")


def test_an_upload_s_rate_is_its_size_over_the_time_the_seconds_table_gives(store):
    """upload-no-write read 0.06889 s in one table and 526.2 MB/s in the other (the median
    of each run's rate), while 33.55 MB / 0.06889 s is 487 MB/s (2026-11-28)."""
    campaign = Campaign(store, {"uml": {"kind": "uml"}})
    for seconds in (0.06, 0.08):
        campaign.run("uml", "upload", [("elapsed", "s", seconds),
                                       ("bandwidth", "MB/s", 32 * 2**20 / 1e6 / seconds)],
                     label="upload[mode=no_write]",
                     params={"channel": "serial", "mode": "no_write", "size_mib": 32})
    tables = campaign.tables()
    assert row(tables["upload"], "upload-no-write")[1].startswith("0.07 ")  # and its flag
    rate = row(tables["upload-rates"], "uml", "serial")[3]
    assert rate.startswith("479.3"), rate  # 33.55 MB / 0.07 s, not (559 + 419) / 2 = 489
    assert "32 MiB = 33.55 MB" in tables["upload-rates"].note


def test_build_table_has_kernbench_columns(store):
    campaign = Campaign(store, {"native": {}})
    for jitter in THREE:  # times vary a little; the counts (context) are the same each run
        samples = [("elapsed", "s", 10.0 * jitter), ("user", "s", 17.0 * jitter),
                   ("sys", "s", 2.0 * jitter), ("cpu_percent", "%", 190.0),
                   ("context_switches", "count", 900.0), ("sleeps", "count", 3000.0)]
        campaign.run("native", "build", samples, label="build[cache=warm]",
                     params={"cache": "warm", "units": 48, "jobs": 2})
    table = campaign.tables()["build"]
    assert table.header[2:] == ["elapsed (s)", "user (s)", "sys (s)", "CPU %",
                                "context switches", "sleeps"]
    assert [cell.split(" ±")[0] for cell in table.rows[0][2:5]] == ["10", "17", "2"]
    assert table.rows[0][5:] == ["190", "900", "3000"]  # context that never changed: no spread


def test_no_io_tables_without_their_workloads(store):
    campaign = Campaign(store, {"native": {}})
    campaign.run("native", "getpid", [("time_per_op", "ns", 140.0)])
    assert not {"disk", "dbench", "upload-rates", "build", "durability"} & set(campaign.tables())


def test_durability_table_gives_the_verdict_per_environment(store):
    campaign = Campaign(store, {"unsafe": {"kind": "qemu"}, "none": {"kind": "qemu"},
                                "native": {}})
    for env, durable in (("unsafe", 0.0), ("none", 20.0)):
        for _ in range(2):
            campaign.run(env, "fsync_honoured", [
                ("records_acknowledged", "count", 20.0), ("records_durable", "count", durable),
                ("honoured", "bool", 1.0 if durable == 20 else 0.0)])
    campaign.run("native", "fsync_honoured", [], status="unsupported",
                 reason="native lacks block_device")
    table = campaign.tables()["durability"]
    assert row(table, "unsafe")[2:] == ["20", "0", "NOT honoured (2 runs)"]  # counts that never changed
    assert row(table, "none")[4] == "honoured (2 runs)"
    assert row(table, "none")[1] == "fsync honoured"  # the check by its title, not its id
    assert row(table, "native")[4].startswith("∅ unsupported")


def test_build_runs_table_gives_each_run_then_mean_and_stdev(store):
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}})
    for env, seconds in (("native", (10.0, 11.0, 12.0)), ("tcg", (60.0, 66.0))):
        for value in seconds:
            campaign.run(env, "build", [("elapsed", "s", value), ("user", "s", value * 1.8),
                                        ("sys", "s", 1.0 + value / 100)],
                         label="build", params={"cache": "warm", "units": 48, "jobs": 2})
    table = campaign.tables()["build-runs"]
    assert table.header == ["environment", "build", "time", "run 1", "run 2", "run 3",
                            "mean (stdev)"]
    assert row(table, "native", "build", "elapsed (s)")[3:] == ["10", "11", "12", "11 (1)"]
    assert row(table, "tcg", "build", "elapsed (s)")[3:] == ["60", "66", "-", "63 (4.243)"]
    assert row(table, "tcg", "build", "user (s)")[3] == "108"


def test_best_of_n_publishes_each_cell_s_best_run_and_its_share(store):
    """best_of = 2 (the KVM-against-Xen page's "best of 2 runs for dbench 10"): the plain
    tables show the best run and the % of native of the best runs; the terminal's stay
    medians."""
    from guestbench.commands import reading
    from guestbench.report import select
    from guestbench.report.model import Style, styled
    campaign = Campaign(store, {"native": {}, "tcg": {"kind": "qemu"}}, baseline="native")
    for env, rates in (("native", (530.0, 540.0)), ("tcg", (340.0, 350.0))):
        for rate in rates:
            campaign.run(env, "dbench", [("throughput", "MB/s", rate),
                                         ("max_latency", "ms", 20.0)], label="dbench",
                         params={"clients": 10, "seconds": 5, "best_of": 2})
    report = reading.load(campaign.store, str(campaign.id))
    with styled(Style(plain=True, spread=False)):
        tables = {table.name: table for table in select.tables(report, "published")}
    measured = next(r for r in tables["measured"].rows if r[:2] == ["dbench", "throughput (MB/s)"])
    assert measured[2:] == ["540", "350"]
    assert "The best of N runs, as the plan's best_of asks" in tables["measured"].note
    assert "dbench (2)" in tables["measured"].note
    assert "best_of asks" in tables["dbench"].note and tables["dbench"].title.startswith(
        "dbench: throughput, the best")
    percent = {r[0]: r for r in tables["percent"].rows}
    assert percent["tcg"][1] == "64.8"  # 350 / 540, not the medians' 345 / 535 (64.5)
    # one meaning per number: the disk table's % is of the figure beside it, the best here,
    # and the dbench table's the same 64.8 (it was 7 in one table, 10.5 in another)
    disk = next(r for r in tables["disk"].rows if r[:2] == ["dbench", "throughput (MB/s)"])
    assert disk[3] == "350 (64.8%)", disk
    assert next(r for r in tables["dbench"].rows if r[0] == "tcg")[2] == "64.8"
    assert "best_of asks" in tables["disk"].note
    ratios = next(r for r in tables["ratios"].rows if r[0] == "dbench")
    assert ratios[3].startswith("1.54")  # 540 / 350, not the medians' 1.55
    # not plain: the median, as every statistic
    detail = {table.name: table for table in select.tables(report, "published")}
    shown = next(r for r in detail["measured"].rows if r[:2] == ["dbench", "throughput (MB/s)"])
    assert shown[2].startswith("535")
