"""Short column headers: environments a sweep named at length get headers of at most 24
characters and a legend; short names stay as they are."""

from __future__ import annotations

from guestbench.report import columns, select
from tests.support.campaigns import Campaign
from tests.support.samples import THREE
from guestbench.store.records import Environment
from guestbench.commands import reading

SWEPT = {f"tcg-machine{machine}-vcpus{vcpus}-placement{placement}": {
    "kind": "qemu", "machine": machine, "vcpus": vcpus, "placement": placement}
    for machine in ("microvm", "pc") for vcpus in (1, 2) for placement in ("same", "disjoint")}


def environments(named: dict[str, dict]) -> list[Environment]:
    return [Environment(id=index, name=name, kind=spec.get("kind", "native"),
                        spec={"name": name, **spec})
            for index, (name, spec) in enumerate(named.items(), start=1)]


def test_swept_names_become_headers_of_at_most_24_characters() -> None:
    headers = columns.short_names(environments({"native": {}, **SWEPT}))
    assert headers["native"] == "native"
    assert headers["tcg-machinepc-vcpus2-placementsame"] == "tcg pc 2 vCPU (s)"  # as its group
    assert headers["tcg-machinemicrovm-vcpus1-placementdisjoint"] == "tcg microvm 1 vCPU (d)"
    assert all(len(header) <= columns.MAX_HEADER for header in headers.values())
    assert len(set(headers.values())) == len(headers)


def test_names_that_fit_are_kept() -> None:
    named = {"tcg-vcpus1": {"vcpus": 1}, "tcg-vcpus2": {"vcpus": 2}}
    assert columns.short_names(environments(named)) == {name: name for name in named}


def test_headers_that_come_out_alike_are_numbered() -> None:
    named = {f"a-very-long-environment-name-number-{index}": {"kind": "native"}
             for index in range(2)}
    headers = columns.short_names(environments(named))
    assert len(set(headers.values())) == 2
    assert all(len(header) <= columns.MAX_HEADER for header in headers.values())


def test_every_table_uses_the_short_headers_and_a_legend_explains_them(store) -> None:
    campaign = Campaign(store, {"native": {"kind": "native"}, **SWEPT}, baseline="native")
    for jitter in THREE:
        for name in ["native", *SWEPT]:
            campaign.run(name, "getpid", [("time_per_op", "ns", 100 * jitter)])
    report = reading.load(store, str(campaign.id))
    for view in ("summary", "published"):
        tables = select.tables(report, view)
        widest = max(len(cell) for table in tables for cell in table.header)
        assert widest <= columns.MAX_HEADER, view
        assert not [cell for table in tables for cell in table.header if "placement" in cell]
        legend = next(table for table in tables if table.name == "columns")
        assert ["tcg pc 2 vCPU (s)", "tcg-machinepc-vcpus2-placementsame", "qemu",
                "machine=pc, vcpus=2, placement=same"] in legend.rows
    percent = next(table for table in select.tables(report, "published") if table.name == "percent")
    assert [row[0] for row in percent.rows][:2] == ["native", "tcg microvm 1 vCPU (s)"]
    assert percent.sources[1][0] == ("tcg-machinemicrovm-vcpus1-placementsame", "getpid")


def test_no_header_of_any_published_table_is_longer_than_24_characters(store) -> None:
    from tests.support.samples import build, fsync, upload
    from tests.support.samples import stream

    campaign = Campaign(store, {"native": {"kind": "native"}, **SWEPT}, baseline="native")
    for jitter in THREE:
        for name in ["native", *SWEPT]:
            campaign.run(name, "getpid", [("time_per_op", "ns", 100 * jitter),
                                          ("tsc_per_op", "cycles", 260 * jitter)])
            campaign.run(name, "stream", stream(20000.0, jitter))
            campaign.run(name, "build", build(10 * jitter, 100), params={"jobs": 2})
            campaign.run(name, "upload", upload(400 * jitter),
                         params={"channel": "virtio-serial", "mode": "write", "size_mib": 64})
            campaign.run(name, "fsync_honoured", fsync(True))
            campaign.run(name, "dbench", [("throughput", "MB/s", 500 * jitter)],
                         params={"clients": 10, "seconds": 5})
            campaign.run(name, "bonnie", [("out_char", "KiB/s", 1300 * jitter),
                                          ("out_char_cpu", "%", 97.0)],
                         params={"size_mib": 128, "files": 1}, flags=("too-fast:out_block",))
    report = reading.load(store, str(campaign.id))
    tables = select.tables(report, "published")
    assert {"basic", "stream-stream", "percent", "build", "build-runs", "upload-rates", "dbench",
            "durability", "bonnie-output", "bonnie-percent", "columns"} <= {t.name for t in tables}
    long = [(table.name, cell) for table in tables for cell in table.header
            if len(cell) > columns.MAX_HEADER and table.name != "columns"]
    assert not long


def test_a_sweep_is_shortened_whole_even_where_a_name_would_fit() -> None:
    named = {f"tcg-vcpus{vcpus}-placement{placement}": {"kind": "qemu", "vcpus": vcpus,
                                                       "placement": placement}
             for vcpus in (1, 2) for placement in ("same", "disjoint")}
    headers = columns.short_names(environments({"native": {}, **named}))
    # tcg-vcpus1-placementsame has 24 characters and tcg-vcpus1-placementdisjoint 28
    assert headers["tcg-vcpus1-placementsame"] == "tcg 1 vCPU same"
    assert headers["tcg-vcpus1-placementdisjoint"] == "tcg 1 vCPU disjoint"
    assert headers["native"] == "native"
