"""Markdown tables, ready to paste into a write-up: the published view (report/views.py),
each value linked to its cell's log folder (seed 002 links a log per cell)."""

from __future__ import annotations

from pathlib import Path

from guestbench.report import links, views
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import Table


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: CampaignResults, base_dir: Path | None = None) -> str:
    """The published tables; each value links to its cell's log folder, relative to base_dir
    (the output file's folder; the current one when printed)."""
    folders = links.cell_folders(report)
    base = base_dir if base_dir is not None else Path.cwd()
    hrefs = {key: links.log_href(folder, base, folder=True) for key, folder in folders.items()}
    return render_tables(views.tables(report, "published"), hrefs)


def render_tables(tables: list[Table], hrefs: dict[tuple[str, str], str] | None = None) -> str:
    out: list[str] = []
    for table in tables:
        if table.lead:  # what holds for the whole campaign, said once before its tables
            out.append(f"{_escape(table.lead)}\n")
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
            out.append(f"\n{_escape(table.note)}")
        if table.footnotes:
            out.append("")
            out += [f"{_escape(line)}  " for line in table.footnotes]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
