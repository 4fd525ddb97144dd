"""The HTML report's overview (heatmap, geometric means, system card) and its page layout:
tables sortable in their own boxes, long sections folded."""

from __future__ import annotations

import dataclasses

import re
from pathlib import Path

import pytest

from guestbench.analysis import results as analysed, stats
from guestbench.commands import reading
from guestbench.report import columns, model
from guestbench.report.formats.html import overview, page as html
from guestbench.store.records import RunRecord
from tests.support.html_report import (CHECKS, EVIL, EVIL_ENV, EVIL_LABEL, FACTS, STARTED, ids,
                                       Node, parse, populate)

# reports what the store read: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True


@pytest.fixture
def overview_dom(markup_report, tmp_path: Path) -> Node:
    return parse(html.render(markup_report, tmp_path))


def heatmap_rows(overview_dom: Node) -> tuple[list[str], list[Node]]:
    """(the heatmap's column headers, its body rows)."""
    (figure,) = [node for node in overview_dom.all("figure") if node.attrs.get("id") == "overview-heatmap"]
    (table,) = figure.all("table", class_="heatmap")
    headers = [th.children[0] if isinstance(th.children[0], str) else th.children[0].text()
               for th in table.all("thead")[0].all("th")]
    return headers, table.all("tbody")[0].all("tr")


def cells_by_env(markup_report: analysed.CampaignResults, row: Node) -> dict[str, Node]:
    return dict(zip(markup_report.results.environments, row.all("td")))


def label_of(row: Node) -> str:
    return row.all("th")[0].children[0].text() if row.all("th")[0].all("a") else \
        row.all("th")[0].children[0]


def test_the_overview_comes_first_with_the_heatmap_and_the_system_card(overview_dom: Node) -> None:
    body = overview_dom.all("body")[0]
    sections = body.all("section")
    assert sections[0].attrs["id"] == "overview"
    targets = ids(overview_dom)
    for anchor in ("overview-heatmap", "system-card", "overview-geomeans", "host-warnings"):
        assert targets[anchor] in sections[0].all(), anchor
    (nav,) = overview_dom.all("nav")
    assert [a.attrs["href"] for a in nav.all("a")][:3] == ["#overview", "#plots",
                                                           "#tables-published"]


def test_a_row_per_workload_a_column_per_environment_and_no_blank_cell(markup_report, overview_dom) -> None:
    headers, rows = heatmap_rows(overview_dom)
    short = columns.short_names(markup_report.environments)  # as every table heads its columns
    assert headers == ["workload", *(short[env] for env in markup_report.results.environments)]
    performance = markup_report.performance_primary()
    assert [label_of(row) for row in rows] == ["getpid", f"getpid {EVIL_LABEL[6:]}", "boot",
                                               "geometric mean, in the guest",
                                               "geometric mean, start-up"]  # never across
    assert len(performance) == 3
    for row in rows:
        cells = row.all("td")
        assert len(cells) == len(markup_report.results.environments)
        for cell in cells:
            assert cell.text().strip(), row.text()  # never blank: a ratio, a value or a mark
    assert all("keep" in row.attrs["class"].split() for row in rows[-2:])  # sorting leaves them


def test_each_ratio_follows_the_one_rule_with_its_interval_and_a_link(markup_report, overview_dom) -> None:
    _headers, rows = heatmap_rows(overview_dom)
    getpid = cells_by_env(markup_report, rows[0])
    row = markup_report.results.cells[("getpid", "time_per_op")]
    expected = stats.ratio_interval(row["base"].stats, row["slow"].stats)  # a time: env/base
    slow = getpid["slow"]
    assert slow.attrs["data-sort"] == f"{expected.value:.6g}" and expected.value > 300
    assert slow.text() == model.format_ratio(expected.value) + overview.interval_text(expected)
    assert slow.all("span", class_="ci")[0].text().startswith("[")
    assert f"background:{overview.shade(expected.value).fill}" in slow.attrs["style"]
    (link,) = slow.all("a")
    target = ids(overview_dom)[link.attrs["href"][1:]]
    assert target.all("h3")[0].text() == "getpid in slow"
    base = getpid["base"]  # the baseline's own median, ±half its interval
    assert "base" in base.attrs["class"] and base.text().startswith("110 ns±")
    assert getpid["bad"].text() == "✗ failed x3" and getpid["gone"].text() == "⊘ unavailable x3"
    assert "style" not in getpid["bad"].attrs  # a mark is never coloured as a ratio
    # the row's title links to its workload's plot
    (plot_link,) = rows[0].all("th")[0].all("a")
    assert ids(overview_dom)[plot_link.attrs["href"][1:]].tag == "figure"


def test_the_baseline_and_the_statuses_in_the_geometric_mean_row(markup_report, overview_dom) -> None:
    _headers, rows = heatmap_rows(overview_dom)
    geomean = cells_by_env(markup_report, rows[-2])
    assert geomean["base"].text() == "1 (reference)"
    slow = markup_report.geomeans["in the guest"]["slow"]
    assert geomean["slow"].text().startswith(model.format_ratio(slow.interval.value))
    assert geomean["gone"].text() == "⊘ unavailable"  # its environment could not run
    assert geomean["bad"].text() == "no ratio"  # it ran, and every run failed


def rate_campaign(store, logs: Path) -> int:
    """base, and half: half of base's bandwidth (a rate) and twice its time per op."""
    campaign_id = store.create_campaign("rates", {}, FACTS, "fp", "base", str(logs), "0.1.0",
                                        host_checks=CHECKS)
    for position, (name, slower) in enumerate((("base", 1.0), ("half", 2.0))):
        env_id = store.add_environment(campaign_id, name, "fake", {"name": name, "kind": "fake"},
                                       True, "fake", position)
        for repetition in range(3):
            jitter = 1 + 0.01 * repetition
            for workload, samples in (
                    ("stream", [("triad_bandwidth", "MB/s", 20000.0 * jitter / slower)]),
                    ("getpid", [("time_per_op", "ns", 100.0 * jitter * slower)])):
                store.add_run(campaign_id, RunRecord(
                    environment_id=env_id, workload=workload, label=workload, params={},
                    repetition=repetition, status="ok", reason="", started_at=STARTED,
                    host_seconds=0.5, log_path=None, samples=tuple(samples)))
    store.finish_campaign(campaign_id, "finished", CHECKS)
    return campaign_id


def test_rates_are_inverted_so_that_above_1_is_worse_everywhere(store, tmp_path) -> None:
    rate_campaign(store, tmp_path / "logs")
    report = reading.load(store)
    dom = parse(html.render(report, tmp_path))
    _headers, rows = heatmap_rows(dom)
    by_label = {label_of(row): row for row in rows}
    stream, getpid = by_label["STREAM"], by_label["getpid"]
    assert "triad bandwidth (MB/s, inverted)" in stream.all("th")[0].text()
    assert "inverted" not in getpid.all("th")[0].text()
    for row in (stream, getpid):  # half the bandwidth and twice the time: both 2x worse
        half = cells_by_env(report, row)["half"]
        assert half.text().startswith("2.00x"), half.text()
        assert 1.9 < float(half.attrs["data-sort"]) < 2.1
    caption = dom.all("figure")[0].all("figcaption")[0].text()
    assert "x base, above 1 is worse" in caption and "inverted: base's over" in caption
    geomeans = ids(dom)["overview-geomeans"]
    assert "above 1 is worse" in geomeans.all("figcaption")[0].text()
    (value,) = geomeans.all("text", class_="value")
    assert value.text().startswith("2.00x")


def test_colours_grow_with_the_ratio_on_a_log_scale_with_a_legend(overview_dom: Node) -> None:
    edges = [shade.below for shade in overview.SHADES]
    assert edges == sorted(edges) and edges[-1] == float("inf")
    assert overview.shade(1.0).label == "0.91-1.1"  # within 10%: neutral
    assert overview.shade(0.5) is overview.SHADES[0] and overview.shade(350) is overview.SHADES[-1]
    assert overview.shade(1.2) is not overview.shade(2.0) is not overview.shade(5.0)
    legend = overview_dom.all("div", class_="legend")[0]
    assert [item.text() for item in legend.all("li")] == [s.label for s in overview.SHADES]
    assert "✗ failed" in legend.text() and "⊘ unavailable" in legend.text()
    assert "x base" in legend.text()


def test_geometric_means_are_dots_with_whiskers_around_the_baselines_1(markup_report, overview_dom) -> None:
    figure = ids(overview_dom)["overview-geomeans"]
    (drawing,) = figure.all("svg")
    short = columns.short_names(markup_report.environments)
    names = [text.text() for text in drawing.all("text", class_="env")]
    envs = [env for env in markup_report.results.environments if env != "base"]
    groups = list(markup_report.geomeans)
    assert groups == ["in the guest", "start-up"]  # a mean per kind of measure
    assert names == [f"{short[env]}, {group}" for group in groups for env in envs]
    values = [text.text() for text in drawing.all("text", class_="value")]
    means = [markup_report.geomeans[group][env] for group in groups for env in envs
             if env in markup_report.geomeans[group]]
    assert values == [model.format_interval(mean.interval) for mean in means]
    # both getpid rows in the guest, boot apart: every environment's means over the same rows
    assert {(mean.workloads, mean.of) for mean in markup_report.geomeans["in the guest"].values()
            } == {(2, 2)}
    assert len(drawing.all("circle", class_="dot")) == len(means) == 4
    assert len(drawing.all("g", class_="whisker")) == 4
    missing = [text.text() for text in drawing.all("text", class_="missing")]
    assert set(missing) == {"no ratio", "⊘ unavailable"}  # bad: every run failed; gone: unavailable
    assert len(missing) + len(means) == len(names)  # every environment of every group said
    (reference,) = drawing.all("g", class_="reference")
    assert reference.text() == "= base"
    assert drawing.all("text", class_="axis-label")[0].text() == "x base (log scale)"


def card_campaign(store, logs: Path) -> int:
    """What each kind records about what it ran, and a campaign older than those facts."""
    campaign_id = store.create_campaign("card", {}, FACTS, "fp", "native", str(logs), "0.1.0",
                                        host_checks=CHECKS)
    environments = [
        ("native", "native", True, None),
        ("runsc", "oci", True, {"runtime_version": "runsc version 0.0~test", "platform": "ptrace"}),
        ("qemu-kvm", "qemu", False, {"vmm_version": "QEMU emulator version 7.2.22",
                                     "guest_kernel": "6.1.0-41-amd64", "image": "abc"}),
        ("uml", "uml", True, {"vmm_version": "6.1.176", "guest_kernel": "6.1.176"}),
        ("fc", "command", True, {"vmm_version": "Firecracker v1.7.0"}),
        ("runc", "oci", True, None),  # stored before versions were recorded
        ("crun", "oci", False, None),  # unavailable: never asked for its version
    ]
    for position, (name, kind, available, facts) in enumerate(environments):
        env_id = store.add_environment(
            campaign_id, name, kind, {"name": name, "kind": kind}, available,
            "fake" if available else f"no KVM here {EVIL}", position, facts=facts)
        store.add_run(campaign_id, RunRecord(
            environment_id=env_id, workload="getpid", label="getpid", params={}, repetition=0,
            status="ok" if available else "unavailable", reason="" if available else "no KVM",
            started_at=STARTED, host_seconds=0.5, log_path=None,
            samples=(("time_per_op", "ns", 100.0),) if available else ()))
    store.finish_campaign(campaign_id, "finished", CHECKS)
    return campaign_id


@pytest.mark.both_stores
def test_the_system_card_says_what_each_environment_ran(store, tmp_path) -> None:
    card_campaign(store, tmp_path / "logs")
    dom = parse(html.render(reading.load(store), tmp_path))
    card = ids(dom)["system-card"]
    host = dict(zip((dt.text() for dt in card.all("dt")), (dd.text() for dd in card.all("dd"))))
    assert host["host"] == EVIL and host["CPU"] == "Test CPU, 4 logical CPUs"
    assert host["kernel"] == "6.1.0-test" and host["guestbench"] == "0.1.0"
    rows = {row.all("th")[0].text(): row.all("td")[0] for row in card.all("tbody")[0].all("tr")}
    assert list(rows) == ["native", "runsc (ptrace)", "qemu-kvm", "uml", "fc", "runc", "crun"]
    assert rows["native"].text() == "host kernel 6.1.0-test"  # its accelerator goes unsaid
    assert rows["runsc (ptrace)"].text().startswith("runsc version 0.0~test")
    (detail,) = rows["runsc (ptrace)"].all("span", class_="detail")  # under what ran
    assert detail.text() == "gVisor's ptrace platform (its own kernel in user space)"
    assert rows["qemu-kvm"].text().startswith(
        "QEMU 7.2.22; guest kernel 6.1.0-41-amd64 ⊘ unavailable")
    (why,) = rows["qemu-kvm"].all("span", class_="status-bad")
    assert why.attrs["title"] == f"no KVM here {EVIL}"
    assert rows["uml"].text().startswith("6.1.176 (guest kernel)")
    assert "the guest kernel is a host process (UML)" in rows["uml"].text()
    assert rows["fc"].text().startswith("Firecracker v1.7.0")  # a command VMM's --version
    assert rows["runc"].text() == "not recorded"
    assert rows["crun"].text() == "⊘ unavailable"
    (warnings,) = card.all("p", class_="card-warning")
    assert warnings.all("a")[0].attrs["href"] == "#host-warnings"
    assert ids(dom)["host-warnings"].attrs["class"] == "warnings"


def test_every_table_is_sortable_in_a_box_of_its_own(markup_report, overview_dom: Node) -> None:
    drawn = overview_dom.all("div", class_="table")
    assert drawn
    for node in drawn:
        (box,) = node.all("div", class_="scroll")
        (table,) = box.all("table")
        assert "sortable" in table.attrs["class"].split() and table.all("thead")
    ratios = ids(overview_dom)["table-published-ratios"]
    kept = [row.all("th")[0].text() for row in ratios.all("tr", class_="keep")]
    assert kept == ["geometric mean, in the guest", "geometric mean, start-up"]  # they stay
    measured = ids(overview_dom)["table-published-measured"]
    assert [row.all("th")[0].text() for row in measured.all("tr", class_="keep")] == ["runs"]


def test_tall_tables_are_folded_under_their_title(markup_report, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(html, "TALL_ROWS", 4)
    dom = parse(html.render(markup_report, tmp_path))
    for node in dom.all("div", class_="table"):
        rows = node.all("tbody")[0].all("tr")
        folded = node.all("details")
        assert bool(folded) == (len(rows) > 4), node.all("h3")[0].text()
        if folded:
            (summary,) = folded[0].all("summary")
            assert summary.all("h3") and f"{len(rows)} rows" in summary.text()
            assert "open" not in folded[0].attrs


def test_the_runs_and_the_host_facts_are_folded(markup_report, overview_dom: Node) -> None:
    targets = ids(overview_dom)
    runs = targets["runs-list"]
    assert runs.tag == "details" and "open" not in runs.attrs
    assert len(runs.all("section", class_="cell")) == len(
        {(run.environment, run.label) for run in markup_report.runs})
    summary = runs.all("summary")[0].text()
    assert re.fullmatch(rf"{len(markup_report.runs)} runs of \d+ cells \(\d+ not ok\), with their logs",
                        summary)
    (facts,) = targets["host"].all("details")
    assert "open" not in facts.attrs and "meltdown" in facts.text()


def test_without_a_baseline_the_overview_says_why_and_keeps_the_card(store, tmp_path) -> None:
    populate(store, tmp_path / "logs")
    report = dataclasses.replace(reading.load(store), baseline=None, ratios={}, geomeans={})
    dom = parse(html.render(report, tmp_path))
    heatmap = ids(dom)["overview-heatmap"]
    assert not heatmap.all("table") and "No ratios: no baseline was chosen" in heatmap.text()
    assert "overview-geomeans" not in ids(dom) and "system-card" in ids(dom)


@pytest.mark.both_stores
def test_a_stored_ratio_of_the_environment_named_with_markup_is_escaped(markup_report, overview_dom) -> None:
    headers, rows = heatmap_rows(overview_dom)
    assert columns.short_names(markup_report.environments)[EVIL_ENV] in headers
    assert cells_by_env(markup_report, rows[0])[EVIL_ENV].all("a")[0].attrs["title"] == \
        f"the runs of getpid in {EVIL_ENV}"


@pytest.mark.parametrize(("step_ns", "said"), [
    (1.0, "no base value"),
    (0.0, "+++++ too fast to time"),  # every run gave one number: a quantised figure
])
def test_a_row_the_baseline_could_not_measure_says_so(store, tmp_path, step_ns, said) -> None:
    campaign_id = rate_campaign(store, tmp_path / "logs")
    half = next(env.id for env in store.environments(campaign_id) if env.name == "half")
    for repetition in range(3):  # getppid ran in half only
        store.add_run(campaign_id, RunRecord(
            environment_id=half, workload="getppid", label="getppid", params={},
            repetition=repetition, status="ok", reason="", started_at=STARTED,
            host_seconds=0.5, log_path=None,
            samples=(("time_per_op", "ns", 120.0 + step_ns * repetition),)))
    report = reading.load(store)
    _headers, rows = heatmap_rows(parse(html.render(report, tmp_path)))
    getppid = cells_by_env(report, next(row for row in rows if label_of(row) == "getppid"))
    assert getppid["base"].text() == "not run" and getppid["half"].text() == said
