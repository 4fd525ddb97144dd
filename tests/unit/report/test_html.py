"""report/html.py: one self-contained page, every value linked to its runs' logs, data escaped."""

from __future__ import annotations

import dataclasses

import json
import re
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from guestbench.report import links, select
from guestbench.report.formats.html import page as html
from guestbench.commands import reading
from tests.support.html_report import (EVIL, EVIL_ENV, EVIL_LABEL, Node, ids, parse, populate)

# reports what the store read: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    return tmp_path / "logs"


@pytest.fixture
def out_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder


@pytest.fixture
def page(markup_report, out_dir) -> str:
    return html.render(markup_report, out_dir)


@pytest.fixture
def dom(page) -> Node:
    return parse(page)


def test_one_document_without_external_resources(page: str, dom: Node) -> None:
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    (document,) = dom.all("html")
    assert len(dom.all("head")) == 1 and len(dom.all("body")) == 1
    assert dom.all("meta", charset="utf-8")
    assert not dom.all("link") and not dom.all("img")
    (script,) = dom.all("script")  # inline: sorting by a header, opening a folded section
    assert "src" not in script.attrs
    for reaching_out in ("http", "//", "fetch(", "XMLHttpRequest", "import", "eval("):
        assert reaching_out not in script.text(), reaching_out
    assert not dom.all("iframe") and not dom.all("object")
    assert not [node for node in dom.all() if "src" in node.attrs]
    for node in dom.all():
        for name in ("href", "xlink:href"):
            target = node.attrs.get(name, "")
            assert not re.match(r"(https?:)?//", target), target
    style = "".join(node.text() for node in dom.all("style"))
    assert "@import" not in style and "url(" not in style
    assert len(ids(dom)) == len([node for node in dom.all() if "id" in node.attrs])  # unique


def test_every_published_table_with_the_markdown_text(markup_report, dom: Node) -> None:
    nodes = dom.all("div", class_="table")
    published = select.tables(markup_report, "published")
    assert [node.all("h3")[0].text() for node in nodes] == [table.title for table in published]
    drawn = {node.all("h3")[0].text(): node for node in nodes}
    for table in published:
        assert table.title in drawn, table.title
        node = drawn[table.title]
        assert [th.text() for th in node.all("thead")[0].all("th")] == table.header
        rows = [[cell.text() for cell in row.children if isinstance(cell, Node)]
                for row in node.all("tbody")[0].all("tr")]
        assert rows == table.rows
        if table.note:
            assert table.note in [p.text() for p in node.all("p", class_="note")]
        assert [li.text() for li in node.all("li")] == table.footnotes


def test_every_sourced_value_links_to_its_runs(markup_report, dom: Node) -> None:
    targets = ids(dom)
    drawn = {node.all("h3")[0].text(): node for node in dom.all("div", class_="table")}
    ran = {(run.environment, run.label) for run in markup_report.runs}
    linked = 0
    for table in select.tables(markup_report, "published"):
        rows = drawn[table.title].all("tbody")[0].all("tr")
        for row, sources in zip(rows, table.sources):
            values = row.all("td", class_="value")
            assert len(values) == len(sources)
            for cell, source in zip(values, sources):
                if source is None:
                    continue
                if source not in ran:  # e.g. a label no run of that environment had
                    assert not cell.all("a") and cell.text() in ("no samples", "not run", "-")
                    continue
                env, label = source
                (link,) = [a for a in cell.all("a") if "mark" not in a.attrs.get("class", "")]
                target = targets[link.attrs["href"].removeprefix("#")]
                assert target.tag == "section" and "cell" in target.attrs["class"]
                assert target.all("h3")[0].text() == f"{label} in {env}"
                linked += 1
    assert linked > 30


def test_footnote_marks_link_to_their_footnotes(markup_report, dom: Node) -> None:
    targets = ids(dom)
    marks = dom.all("a", class_="mark")
    assert marks
    for mark in marks:
        footnote = targets[mark.attrs["href"].removeprefix("#")]
        assert footnote.tag == "li" and footnote.text().startswith(mark.text() + " ")


def test_every_anchor_resolves(dom: Node) -> None:
    targets = ids(dom)
    anchors = [a.attrs["href"] for a in dom.all("a") if a.attrs.get("href", "").startswith("#")]
    assert anchors
    for href in anchors:
        assert href[1:] in targets, href


def file_links(dom: Node) -> list[str]:
    return [a.attrs["href"] for a in dom.all("a") if not a.attrs["href"].startswith("#")]


def test_run_links_are_relative_and_resolve(markup_report, dom: Node, out_dir: Path, logs: Path) -> None:
    links = file_links(dom)
    assert links and all(link.startswith("../logs/") for link in links)
    for link in links:
        assert (out_dir / unquote(link)).resolve().exists(), link
    assert "%23" in links[0] and "%20" in links[0]  # '#' and ' ' in folder names are encoded
    folders = [link for link in links if link.endswith("/")]
    assert len(folders) == sum(1 for run in markup_report.runs if run.environment not in
                               ("gone", "lost"))
    assert any(link.endswith("console%20%5Braw%5D.log") for link in links)


def test_absolute_file_uris_without_a_base(markup_report) -> None:
    links = file_links(parse(html.render(markup_report, None)))
    assert links and all(link.startswith("file:///") for link in links)
    for link in links:
        assert Path(unquote(urlparse(link).path)).exists(), link


def test_log_href_relative_only_below_a_shared_folder(tmp_path: Path) -> None:
    log = tmp_path / "a b" / "rep#1" / "stdout.log"
    assert links.log_href(log, tmp_path / "out") == "../a%20b/rep%231/stdout.log"
    assert links.log_href(log, tmp_path) == "a%20b/rep%231/stdout.log"
    elsewhere = Path("/nonexistent-top-folder/reports")
    assert links.log_href(log, elsewhere) == log.as_uri()
    assert links.log_href(log.parent, None, folder=True) == log.parent.as_uri() + "/"


@pytest.mark.both_stores
def test_runs_section_lists_every_run(markup_report, dom: Node) -> None:
    section = ids(dom)["runs"]
    rows = [row for table in section.all("tbody") for row in table.all("tr")]
    assert len(rows) == len(markup_report.runs)
    text = section.text()
    assert "(no log: the run never started)" in text  # unavailable: no log_path
    assert text.count("(missing)") == 6  # lost: its folders were never made
    bad = next(cell for cell in section.all("section", class_="cell")
               if cell.all("h3")[0].text() == "getpid in bad")
    assert bad.text().count(EVIL) == 3 and bad.text().count("failed") == 3


@pytest.mark.both_stores
def test_data_is_escaped(page: str, dom: Node) -> None:
    assert page.lower().count("<script") == 1  # the page's own, last in the body
    assert page.rstrip().endswith("</script>\n</body>\n</html>")
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") > 10
    assert "&quot;" in page and "&amp; more" in page
    text = dom.text()
    for raw in (EVIL, EVIL_ENV, EVIL_LABEL, "html <b>&"):
        assert raw in text, raw  # shown as the text it is
    hostname = next(row for row in ids(dom)["host"].all("tr")
                    if row.all("th")[0].text() == "hostname")
    assert hostname.all("td")[0].text() == EVIL
    assert not dom.all("b")  # the campaign name's <b> stayed text


def figures(dom: Node) -> dict[str, Node]:
    return {figure.all("figcaption")[0].text(): figure for figure in dom.all("figure")}


def test_dots_per_environment_with_whiskers_and_a_log_axis(markup_report, dom: Node) -> None:
    plots = figures(dom)
    getpid = plots["getpid, time per op: median (dot) and 95% CI (whisker)"]
    (drawing,) = getpid.all("svg")
    assert drawing.all("title")[0].text().startswith("getpid, time per op")
    names = [text.text() for text in drawing.all("text", class_="env")]
    assert names == markup_report.results.environments
    assert not drawing.all("rect")  # no bars: a bar's length from an axis floor misleads
    assert len(drawing.all("circle", class_="dot")) == 4  # base, slow, evil, lost
    assert len(drawing.all("g", class_="whisker")) == 4
    missing = [text.text() for text in drawing.all("text", class_="missing")]
    assert missing == ["no data: ✗ failed x3", "no data: ⊘ unavailable x3"]
    (axis,) = drawing.all("text", class_="axis-label")
    assert axis.text() == "ns (log scale)"
    x = {dot.all("title")[0].text().split(":")[0]: float(dot.attrs["cx"])
         for dot in drawing.all("circle", class_="dot")}
    assert x["base"] < x[EVIL_ENV] < x["lost"] < x["slow"]  # medians 110, 121, 132, 38.5k
    values = [text.text() for text in drawing.all("text", class_="value")]
    assert values[0] == "110 [100-120]"  # median [95% CI], the unit on the axis
    evil = plots[f"getpid {EVIL_LABEL.removeprefix('getpid')}, time per op: median (dot) and "
                 "95% CI (whisker)"]
    (axis,) = evil.all("text", class_="axis-label")
    assert axis.text() == "ns (linear scale)"  # every median within 20x


def test_a_log_axis_ticks_round_values_around_the_data() -> None:
    from guestbench.report.formats.html import svg
    narrow = svg.Axis([0.93, 1.12], log=True)
    assert (narrow.low, narrow.high) == (0.5, 2) and narrow.ticks() == [0.5, 1, 2]
    wide = svg.Axis([0.9, 1581], log=True)
    assert (wide.low, wide.high) == (0.5, 2000)
    assert wide.ticks() == [0.5, 1, 10, 100, 1000, 2000]  # past two decades: powers of ten
    assert wide.x(0.5) == 0 and wide.x(2000) == wide.width_px and wide.x(1e6) == wide.width_px


def test_boot_phases_stacked_with_a_legend(dom: Node) -> None:
    boot = figures(dom)["Boot phases per environment"]
    (drawing,) = boot.all("svg")
    assert "Boot phases" in drawing.all("title")[0].text()
    phases = drawing.all("rect", class_="phase")
    assert len(phases) == 2 * 4  # base and slow, four phases each
    tooltips = [phase.all("title")[0].text() for phase in phases]
    assert tooltips[0].startswith("base: VMM start -> guest clock zero") and "150" in tooltips[0]
    legend = [group.text() for group in drawing.all("g", class_="legend")]
    assert legend == html.STACKED_PHASES and len(legend) == 4
    assert [text.text() for text in drawing.all("text", class_="env")] == ["base", "slow"]


def test_host_facts_checks_and_environments(markup_report, dom: Node) -> None:
    targets = ids(dom)
    warnings = dom.all("div", class_="warnings")[0].text()
    assert f"load was high {EVIL}" in warnings
    facts = targets["host"].text()
    assert "meltdown" in facts and "Not affected" in facts and "0.50, 0.25, 0.12" in facts
    environments = targets["environments"]
    rows = [row for row in environments.all("tr") if row.all("th", scope="row")]
    assert [row.all("th")[0].text() for row in rows] == [env.name for env in markup_report.environments]
    gone = next(row for row in rows if row.all("th")[0].text() == "gone")
    assert f"unavailable: {EVIL}" in gone.text() and '"note": ' in gone.all("pre")[0].text()
    assert json.dumps(EVIL) in targets["plan"].text()


def test_renders_without_host_checks_or_baseline(store, logs, out_dir) -> None:
    populate(store, logs)
    loaded = reading.load(store)
    report = dataclasses.replace(loaded, baseline=None,
                                 campaign=dataclasses.replace(loaded.campaign, host_checks=None))
    dom = parse(html.render(report, out_dir))
    assert "No host checks were recorded" in dom.text()
