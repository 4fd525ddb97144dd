"""Tables you can publish: each table by its name, in the plain form a write-up pastes (values
only, one footnote mark per cell, its own footnotes numbered from 1 under it), narrowed and
named as a plan's [[table]] entry asks, and chosen on the command line with --table."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from guestbench import cli, store as gb_store
from guestbench.plan import catalogue
from guestbench.report import select
from guestbench.report.formats import markdown
from tests.support import default_like
from guestbench.commands import reading

INTERVAL = re.compile(r"±|\[\d[\d.]*-|\]\(")  # "±2%", "[1.0-1.2x]", a link "](...)"
MARK = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def default_like_store(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('published') / 'p.sqlite'}"
    opened = gb_store.open(url)
    default_like.write(opened)
    yield url, reading.load(opened)
    opened.engine.dispose()


def test_every_catalogued_table_has_a_builder_and_every_builder_a_name() -> None:
    assert list(select.BUILDERS) == list(catalogue.NAMES)


@pytest.mark.parametrize("name", catalogue.NAMES)
def test_every_table_in_plain_form_has_values_only_and_its_own_footnotes(default_like_store, name) -> None:
    _url, report = default_like_store
    for table in select.chosen_tables(report, select.from_names((name,), plain=True, links=False)):
        values = [text for row in table.rows for text in row[table.label_columns:]]
        if table.name in ("statistics", "clock", "host", "platform"):
            continue  # tables of the spread itself, or of facts: no value to strip
        assert not [text for text in values if INTERVAL.search(text)], (name, values)
        marks = [int(number) for text in values for number in MARK.findall(text)]
        # one mark per cell, numbered from 1 in this table, each explained under it
        assert all(len(MARK.findall(text)) <= 1 for text in values), values
        if marks:
            assert sorted(set(marks)) == list(range(1, max(marks) + 1)), marks
            said = [int(MARK.match(line).group(1)) for line in table.footnotes
                    if MARK.match(line)]
            assert said == list(range(1, max(marks) + 1)), (table.footnotes, marks)
        for line in table.footnotes:  # published: no instruction, no path of this host
            assert "fix:" not in line and "/root/" not in line, line
            # a device keeps its name (/dev/kvm), not a word cut from it
            assert not re.search(r"(?<![/\w])kvm exists", line), line


def test_the_basic_table_as_the_seed_gives_it(default_like_store) -> None:
    _url, report = default_like_store
    choice = select.Choice("basic", environments=("uml", "qemu-kvm", "native"),
                           labels={"uml": "UML", "qemu-kvm": "KVM"}, decimals=0)
    (table,) = select.chosen_tables(report, [choice])
    assert table.header == ["activity", "UML", "KVM", "native"]
    getpid = next(row for row in table.rows if row[0] == "getpid")
    assert getpid[3] == f"{182.9 * 2.6:.0f}"  # cycles, whole, nothing beside them
    # UML's clock check was inconclusive: one line under the table, no mark on its values
    # (each getpid cell of UML carried "[1] console-latency" on 2026-11-27)
    assert re.fullmatch(r"\d+", getpid[1]), getpid
    assert getpid[2] == "n/a [1]"
    assert table.footnotes[0].startswith("[1] KVM: not run here: /dev/kvm ")  # as labelled
    # a device is named whole: the reader form once made /dev/kvm "kvm"
    assert table.footnotes[-1].startswith("Clock check inconclusive for UML: ")


def row_of(table, name: str) -> list[str]:
    return next(row for row in table.rows if row[0] == name)


def test_a_table_of_a_subset_compares_geometric_means_over_the_same_workloads(default_like_store) -> None:
    _url, report = default_like_store
    (table,) = select.chosen_tables(report, [select.Choice("percent", plain=False)])
    # UML measured no STREAM (unsupported): every mean covers the 8 workloads all have
    said = "over the 8 of 9 workloads that every environment with a mean measured"
    assert said in table.note
    (narrow,) = select.chosen_tables(report, [select.Choice(
        "percent", environments=("native", "runc"), plain=False)])
    # the campaign's means, as every view shows them: the same number in a narrower table
    assert said in narrow.note
    assert [row[0] for row in narrow.rows] == ["native", "runc"]
    assert row_of(narrow, "runc")[-1] == row_of(table, "runc")[-1]


def test_markdown_of_chosen_tables_keeps_its_lines_short_and_has_no_links(default_like_store) -> None:
    _url, report = default_like_store
    text = markdown.render(report, asked=("basic", "percent"), plain=True)
    assert "](" not in text
    # eight environments, long footnotes: the notes and footnotes are wrapped
    assert max(map(len, text.splitlines())) <= 160
    assert [line for line in text.splitlines() if line.startswith("### ")] == [
        "### Basic costs: CPU cycles per operation (median)",
        "### % of native: performance relative to native (higher is better)"]


def test_report_table_names_tables_and_refuses_unknown_ones(default_like_store) -> None:
    url, _report = default_like_store
    runner = CliRunner()
    shown = runner.invoke(cli.main, ["report", "--db", url, "--table", "basic", "--plain"])
    assert shown.exit_code == 0, shown.output
    assert "Basic costs" in shown.output and "Relative to" not in shown.output
    bad = runner.invoke(cli.main, ["report", "--db", url, "--table", "basik"])
    assert bad.exit_code == 2
    assert "--table: no table 'basik'; did you mean 'basic'?" in bad.output
    empty = runner.invoke(cli.main, ["report", "--db", url, "--table", ","])
    assert empty.exit_code == 2 and "e.g. --table basic,boot-totals" in empty.output
    alone = runner.invoke(cli.main, ["report", "--db", url, "--table", "all,basic"])
    assert alone.exit_code == 2 and "--table: all and plan stand alone" in alone.output
    csv = runner.invoke(cli.main, ["report", "--db", url, "--format", "csv", "--plain"])
    assert csv.exit_code == 2 and "--plain: the csv format has no tables" in csv.output


def test_a_plan_s_table_entries_are_its_markdown(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'plan.sqlite'}"
    opened = gb_store.open(url)
    default_like.write(opened, plan={"tables": [
        {"table": "percent", "title": "% of native", "environments": ["runc", "uml", "gone"]},
        {"table": "basic", "environments": ["qemu-*", "native"], "decimals": 0,
         "labels": {"qemu-user": "QEMU user"}},
    ]})
    report = reading.load(opened)
    opened.engine.dispose()
    text = markdown.render(report)
    headings = [line for line in text.splitlines() if line.startswith("### ")]
    # the setup the write-ups state, once, first; then the entries in the plan's order
    assert headings[0].startswith("### Setup: host ") and "logical CPUs" in headings[0]
    assert headings[1:] == [
        "### % of native", "### Basic costs: CPU cycles per operation (median)"]
    # an environment the entry names but the campaign has not ("gone") is left out
    assert "| environment | getpid |" in text and "| gone |" not in text
    assert "| activity | QEMU user | qemu-kvm | native |" in text
    runner = CliRunner()
    terminal = runner.invoke(cli.main, ["report", "--db", url, "--table", "plan"])
    assert terminal.exit_code == 0, terminal.output
    assert "% of native" in terminal.output and "Measured" not in terminal.output
    every = markdown.render(report, asked=("all",))
    assert "### Measured: median" in every.split("\n", 1)[0] + every


def test_footnotes_that_read_the_same_are_one() -> None:
    """The KVM row of one table had four identical footnotes [4]-[7] (2026-11-27): reasons
    that differ only in what a reader is not shown (the date of a test, a path) are one."""
    from guestbench.analysis.cells import Cell
    from guestbench.report.model import Footnotes, Style, styled
    footnotes = Footnotes()
    cells = [Cell("kvm", f"w{index}", "m", "ns", problems=[(
        "unavailable", f"a test guest did not boot under KVM within 8 s (tested by "
                       f"{user}; to test again: rm /root/{user}/kvm.json)")])
             for index, user in enumerate(("ann", "bob", "cy", "dee"))]
    with styled(Style(plain=True, spread=False)):
        marks = {footnotes.mark(cell) for cell in cells}
    assert marks == {"[1]"}
    assert footnotes.lines() == [
        "[1] kvm: not run here: a test guest did not boot under KVM within 8 s"]
