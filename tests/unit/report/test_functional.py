"""An environment of functional figures only (its facts say so, report/functional.py): every
format marks it with § and a legend line, or carries the fact as a field, and none of its
figures feeds a finding: no geometric mean, no colour, no say in which workloads the other
means cover."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from guestbench import store as gb_store
from guestbench.commands import reading
from guestbench.report import functional, select
from guestbench.report.formats import (bmf, csv as csv_report, github_action_benchmark,
                                       json as json_report, markdown, terminal, text)
from guestbench.report.formats.html import page as html
from guestbench.report.formats.request import Request
from guestbench.report.tables import summary
from guestbench.store.records import RunRecord
from tests.support.facts import FACTS, STARTED
from tests.support.html_report import ids, parse

WHY = ("nested in an L1 guest under TCG: its figures show that it runs and where its time "
       "goes, not its speed on hardware")
# the legend names what ran (its vmm_version): the summary has no other place for it
LEGEND = f"§ functional figures only, kept out of geometric means (nested: QEMU 7.2): {WHY}."
# environment -> its cost per workload against base; nested: 300x on cpuid, and no fork_exit
COSTS = {"base": {"getpid": 1.0, "cpuid": 1.0, "fork_exit": 1.0},
         "fast": {"getpid": 1.5, "cpuid": 2.0, "fork_exit": 1.2},
         "nested": {"getpid": 3.0, "cpuid": 300.0, "fork_exit": None}}


def campaign(store, functional_env: str | None = "nested") -> int:
    """base, fast and nested, three workloads each; nested's fork_exit fails every run.
    functional_env: the environment whose facts say its figures are functional only."""
    campaign_id = store.create_campaign("functional", {}, FACTS, "fp", "base", "/logs", "0.1.0")
    for position, (name, costs) in enumerate(COSTS.items()):
        facts = {functional.FUNCTIONAL: WHY, "vmm_version": "QEMU 7.2"} \
            if name == functional_env else None
        env_id = store.add_environment(campaign_id, name, "fake", {"name": name, "kind": "fake"},
                                       True, "fake", position, facts=facts)
        for workload, cost in costs.items():
            for repetition in range(3):
                value = 100.0 * (cost or 1) * (1 + 0.01 * repetition)
                store.add_run(campaign_id, RunRecord(
                    environment_id=env_id, workload=workload, label=workload, params={},
                    repetition=repetition, status="ok" if cost else "failed",
                    reason="" if cost else "it broke", started_at=STARTED, host_seconds=0.5,
                    log_path=None, samples=(("time_per_op", "ns", value),) if cost else ()))
    store.finish_campaign(campaign_id, "finished", None)
    return campaign_id


@pytest.fixture
def opened(sqlite_url: str):
    found = gb_store.open(sqlite_url)
    yield found
    found.engine.dispose()


def loaded(opened, functional_env: str | None = "nested", baseline: str | None = None):
    return reading.load(opened, str(campaign(opened, functional_env)), baseline=baseline)


def sections(document: str) -> list[str]:
    """A Markdown report's tables, each with its notes and footnotes."""
    return [part for part in re.split(r"^### ", document, flags=re.M) if part.strip()]


def test_the_summary_marks_it_and_leaves_it_out_of_the_mean(opened) -> None:
    report = loaded(opened)
    drawn = text.report(report, Request())
    lines = drawn.splitlines()
    assert max(len(line.encode()) for line in lines) <= terminal.MAX_WIDTH
    header = next(line for line in lines if line.startswith("| workload"))
    assert [cell.strip() for cell in header.split("|")[1:-1]] == [
        "workload", "base", "fast", "nested §"]
    rows = {line.split("|")[1].strip(): [cell.strip() for cell in line.split("|")[2:-1]]
            for line in lines if line.startswith("| ")}
    assert rows["cpuid (ns)"][2].startswith("300x") and rows["cpuid (ns)"][2].endswith("§")
    assert not rows["cpuid (ns)"][1].endswith("§")  # fast: a finding, unmarked
    assert rows["geometric mean"][2] == functional.LEFT_OUT
    assert re.match(r"[\d.]+x", rows["geometric mean"][1])
    assert " ".join(drawn.split()).count(LEGEND) == 1  # rich wraps it, within the width
    table = summary.summary_table(report)
    assert [tones[2] for tones in table.tones] == [None] * len(table.tones)  # never coloured
    assert table.tones[0][1] is not None


def test_a_functional_environment_does_not_narrow_the_others_means(opened) -> None:
    """nested measured 2 of the 3 workloads: the means the others share cover all 3."""
    document = markdown.render(loaded(opened))
    (ratios,) = [part for part in sections(document) if part.startswith("Relative to base")]
    assert ("The geometric mean takes each workload's primary metric, over the 3 workloads, "
            "the same rows in every environment.") in " ".join(ratios.split())
    mean = next(line for line in ratios.splitlines() if line.startswith("| geometric mean"))
    assert mean.split(" | ")[-1] == f"{functional.LEFT_OUT} |"
    assert "of 3" not in mean  # fast's mean covers every workload


def test_every_markdown_table_that_names_it_marks_it_with_its_legend(opened) -> None:
    document = markdown.render(loaded(opened))
    named = {}
    for part in sections(document):
        table = "\n".join(line for line in part.splitlines() if line.startswith("|"))
        if "nested" in table:
            named[part.splitlines()[0]] = part
            assert not re.search(r"\bnested\b(?! §)", table), part
            assert LEGEND in " ".join(part.split()), part
    assert len(named) >= 5, list(named)  # measured, ratios, platform, percent, statistics...
    named = list(named.values())
    (percent,) = [part for part in named if part.startswith("% of base")]
    row = next(line for line in percent.splitlines() if line.startswith("| nested §"))
    assert row.split(" | ")[2].startswith("0.333 §")  # a ratio, marked (cpuid: 100/300)


def test_the_terminal_s_detail_says_the_legend_once(opened) -> None:
    drawn = text.report(loaded(opened), Request(detail=True))
    assert " ".join(drawn.split()).count(LEGEND) == 1
    assert max(len(line.encode()) for line in drawn.splitlines()) <= terminal.MAX_WIDTH


def test_a_chosen_table_marks_the_label_a_plan_gives_it(opened) -> None:
    report = loaded(opened)
    (table,) = select.chosen_tables(report, [select.Choice("percent", labels={
        "nested": "KVM in TCG"})])
    assert [row[0] for row in table.rows] == ["base", "fast", "KVM in TCG §"]
    assert table.rows[2][-1] == functional.LEFT_OUT
    # the legend names it as the table does (it said "nested", a name the table never shows),
    # in one short line with the VMM's short version: a published table's
    assert table.footnotes[0] == ("§ functional figures only: run under emulation, not a "
                                  "speed on hardware, and kept out of geometric means: KVM in "
                                  "TCG (QEMU 7.2).")


def test_a_published_legend_is_one_short_line_with_the_vmm_s_short_version() -> None:
    """Every table repeated two § notes with the full Debian version strings (2026-11-28)."""
    assert functional.short_version(
        "QEMU emulator version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)") == "QEMU 7.2.22"
    assert functional.short_version("Xen 4.17.7 (Debian 4.17.7+7-1~deb12u1)") == "Xen 4.17.7"


def test_the_heatmap_shows_it_uncoloured_and_out_of_the_mean(opened, tmp_path: Path) -> None:
    report = loaded(opened)
    dom = parse(html.render(report, tmp_path))
    figure = ids(dom)["overview-heatmap"]
    (table,) = figure.all("table", class_="heatmap")
    heads = [th.children[0] for th in table.all("thead")[0].all("th")]
    assert heads[:2] == ["workload", "base"] and heads[2:] == ["fast", "nested §"]
    rows = {row.all("th")[0].text().split(" ")[0].split("time")[0]: row.all("td")
            for row in table.all("tbody")[0].all("tr")}
    cpuid = rows["cpuid"]
    assert cpuid[2].attrs["class"] == "functional" and "style" not in cpuid[2].attrs
    assert cpuid[2].text().startswith("300x §")
    assert cpuid[1].attrs["class"] == "heat" and "background" in cpuid[1].attrs["style"]
    mean = rows["geometric"]
    assert mean[2].text() == functional.LEFT_OUT and "style" not in mean[2].attrs
    assert "background" in mean[1].attrs["style"]
    notes = [p.text() for p in figure.all("p", class_="note")]
    assert LEGEND in notes
    chart = ids(dom)["overview-geomeans"]
    assert f"{functional.LEFT_OUT}: functional figures only" in [
        node.text() for node in chart.all("text", class_="missing")]
    card = ids(dom)["system-card"]
    assert "nested §" in [row.all("th")[0].text() for row in card.all("tbody")[0].all("tr")]


def test_csv_and_json_carry_the_fact_as_a_field(opened) -> None:
    report = loaded(opened)
    rows = list(csv.DictReader(io.StringIO(csv_report.render(report))))
    assert list(rows[0]) == [*csv_report.COLUMNS, "functional"]
    assert {row["environment"]: row["functional"] for row in rows} == {
        "base": "", "fast": "", "nested": WHY}
    document = json.loads(json_report.render(report))
    assert [env.get("functional") for env in document["environments"]] == [None, None, WHY]
    assert {env for group in document["geometric_means"] for env in group["environments"]} \
        == {"fast"}
    ratios = {(cell["environment"], cell["label"]): cell["ratio_to_baseline"]
              for cell in document["cells"]}
    assert ratios[("nested", "cpuid")]["functional"] is True
    assert "functional" not in ratios[("fast", "cpuid")]


def test_the_dashboards_mark_its_benchmarks(opened) -> None:
    report = loaded(opened)
    assert "nested §/cpuid" in bmf.bmf(report) and "fast/cpuid" in bmf.bmf(report)
    entries = github_action_benchmark.github_action_benchmark(report)["customSmallerIsBetter"]
    nested = next(entry for entry in entries if entry["name"] == "nested §/cpuid time_per_op")
    assert nested["extra"].endswith(f"§ functional figures only (QEMU 7.2): {WHY}")


def test_a_functional_baseline_is_said_and_no_mean_is_taken(opened) -> None:
    report = loaded(opened, baseline="nested")
    table = summary.summary_table(report)
    assert table.header == ["workload", "base", "fast", "nested §"]
    assert "geometric mean" not in [row[0] for row in table.rows]  # no mean is taken
    assert any(line.startswith("§ the baseline nested gives functional figures only")
               for line in table.footnotes)
    assert all(cell.endswith("§") for cell in table.rows[0][2:3])  # fast's ratio, to it
    assert json.loads(json_report.render(report))["geometric_means"] == []


def test_without_a_functional_environment_nothing_is_marked(opened, tmp_path: Path) -> None:
    report = loaded(opened, functional_env=None)
    outputs = [text.report(report, Request()), text.report(report, Request(detail=True)),
               markdown.render(report), html.render(report, tmp_path),
               csv_report.render(report), json_report.render(report),
               json.dumps(bmf.bmf(report), ensure_ascii=False)]
    assert not [output for output in outputs if functional.MARK in output]
    assert csv_report.render(report).splitlines()[0] == ",".join(csv_report.COLUMNS)
    assert {env for group in json.loads(json_report.render(report))["geometric_means"]
            for env in group["environments"]} == {"fast", "nested"}


def test_an_absolute_row_of_the_summary_marks_functional_figures(opened) -> None:
    """The terminal's boot row (no baseline figure: absolute) showed a nested guest's boot
    with no § (2026-11-28), where its ratios carry one."""
    campaign_id = opened.create_campaign("boot", {}, FACTS, "fp", "base", "/logs", "0.1.0")
    for position, name in enumerate(("base", "nested")):
        facts = {functional.FUNCTIONAL: WHY, "vmm_version": "QEMU 7.2"} \
            if name == "nested" else None
        env_id = opened.add_environment(campaign_id, name, "fake", {"name": name, "kind": "fake"},
                                        True, "fake", position, facts=facts)
        for repetition in range(3):
            samples = (("boot_powered_off", "ms", 9000.0 + repetition),) if name == "nested" \
                else ()
            opened.add_run(campaign_id, RunRecord(
                environment_id=env_id, workload="boot", label="boot", params={},
                repetition=repetition, status="ok" if samples else "unsupported",
                reason="" if samples else "no guest kernel", started_at=STARTED,
                host_seconds=0.5, log_path=None, samples=samples))
    opened.finish_campaign(campaign_id, "finished", None)
    report = reading.load(opened, str(campaign_id))
    table = summary.summary_table(report)
    boot = next(row for row in table.rows if row[0].startswith("boot"))
    assert boot[-1].endswith(" §"), boot  # nested; base, which never booted, has no column
