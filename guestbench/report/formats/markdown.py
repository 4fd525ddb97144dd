"""Markdown tables, ready to paste into a write-up: the plan's [[table]] entries, or every
table of the published view (report/select.py); with --links each value links to its
cell's log folder (seed 002 links a log per cell)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from guestbench.analysis.compare import Comparison
from guestbench.analysis.results import CampaignResults
from guestbench.report import links as links_of, restyle, select
from guestbench.report.formats.request import Request
from guestbench.report.tables import comparison as compared
from guestbench.report.model import Style, Table, for_readers, styled


def _escape(text: str) -> str:
    """Text as Markdown shows it literally: a table's pipe escaped, and `<` as an entity, so
    that a reason quoting a program's output (`<script>` in a VMM's stderr) is shown, never
    run, where the Markdown becomes HTML. (No tag opens without `<`; `->` stays readable.)"""
    return text.replace("<", "&lt;").replace("|", "\\|").replace("\n", " ")


def render(report: CampaignResults, base_dir: Path | None = None, asked: tuple[str, ...] = (),
           plain: bool = False, links: bool = False) -> str:
    """The published tables: the plan's [[table]] entries where it has some, else every
    table; asked: --table's names. With links, each value links to its cell's log folder,
    relative to base_dir (the output file's folder; the current one when printed)."""
    with for_readers():  # a write-up's footnotes: in its readers' words
        return _render(report, base_dir, asked, plain, links)


def _render(report: CampaignResults, base_dir: Path | None, asked: tuple[str, ...],
            plain: bool, links: bool) -> str:
    picked = select.choices(report, asked, plain, links, plan_default=True)
    if picked and not asked and not any(choice.table == "platform" for choice in picked):
        # the write-up's tables: the setup they state, once, before them (--table X: X alone),
        # plain as they are, its environments named as they name them
        named: dict[str, str] = {}
        for choice in picked:
            for env, shown in choice.labels.items():
                if env not in named:  # two entries' labels for one name: "UML" bare and inside
                    named[env] = shown if shown not in named.values() else f"{shown} ({env})"
        picked = [select.Choice("platform", labels=named), *picked]
    if picked:
        tables = select.tables(report, "published", choices=picked)
        links = links or any(choice.links for choice in picked)
    else:
        with styled(Style(plain=True, spread=False, decimals=restyle.decimals()) if plain
                    else Style()):
            tables = select.tables(report, "published")
    if not links:
        return render_tables(tables)
    folders = links_of.cell_folders(report)
    base = base_dir if base_dir is not None else Path.cwd()
    hrefs = {key: links_of.log_href(folder, base, folder=True) for key, folder in folders.items()}
    return render_tables(tables, hrefs)


WRAP = 100  # a paragraph's lines in the Markdown file; a pasted table's own lines are its rows


def _paragraph(text: str, hard_break: bool = False) -> str:
    """A note or footnote wrapped at WRAP columns (one paragraph in Markdown all the same);
    a hard break after it keeps footnotes one per line."""
    wrapped = "\n".join(textwrap.wrap(_escape(text), WRAP, break_long_words=False,
                                       break_on_hyphens=False)) or _escape(text)
    return wrapped + ("  " if hard_break else "")


def render_tables(tables: list[Table], hrefs: dict[tuple[str, str], str] | None = None) -> str:
    out: list[str] = []
    for table in tables:
        if table.lead:  # what holds for the whole campaign, said once before its tables
            out.append(f"{_paragraph(table.lead)}\n")
        out.append(f"### {_escape(table.title)}\n")
        out.append("| " + " | ".join(map(_escape, table.header)) + " |")
        values = len(table.header) - table.label_columns
        out.append("|" + "|".join(["---"] * table.label_columns + ["---:"] * values) + "|")
        for index, row in enumerate(table.rows):
            sources = table.sources[index] if index < len(table.sources) else []
            cells = [_escape(text) for text in row[:table.label_columns]]
            for column, text in enumerate(row[table.label_columns:]):
                source = sources[column] if column < len(sources) else None
                href = (hrefs or {}).get(source) if source is not None else None
                cells.append(f"[{_escape(text)}]({href})" if href and text not in ("", "-")
                             else _escape(text))
            out.append("| " + " | ".join(cells) + " |")
        if table.note:
            out.append(f"\n{_paragraph(table.note)}")
        if table.footnotes:
            out.append("")
            out += [_paragraph(line, hard_break=True) for line in table.footnotes]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def report(results: CampaignResults, request: Request) -> str:
    return render(results, request.link_base, request.asked, request.plain, request.links)


def compare(comparison: Comparison, request: Request) -> str:
    """Every compared cell as a markdown table, ready to paste."""
    return render_tables(compared.tables(comparison))
