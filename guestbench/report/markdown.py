"""Markdown tables, ready to paste into a write-up: the published view (report/views.py)."""

from __future__ import annotations

from guestbench.report import views
from guestbench.report.model import Report, Table


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(report: Report) -> str:
    return render_tables(views.tables(report, "published"))


def render_tables(tables: list[Table]) -> str:
    out: list[str] = []
    for table in tables:
        out.append(f"### {_escape(table.title)}\n")
        out.append("| " + " | ".join(map(_escape, table.header)) + " |")
        values = len(table.header) - table.label_columns
        out.append("|" + "|".join(["---"] * table.label_columns + ["---:"] * values) + "|")
        out += ["| " + " | ".join(map(_escape, row)) + " |" for row in table.rows]
        if table.note:
            out.append(f"\n{_escape(table.note)}")
        if table.footnotes:
            out.append("")
            out += [f"{_escape(line)}  " for line in table.footnotes]
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
