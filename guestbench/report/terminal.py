"""Rich tables for the terminal."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from guestbench.report.model import Report, Table, tables


def width_needed(report: Report) -> int:
    return width_for(tables(report))


def width_for(drawn: list[Table]) -> int:
    """Columns wide enough that no cell wraps."""
    widest = 0
    for table in drawn:
        widths = [max(len(row[i]) for row in [table.header, *table.rows])
                  for i in range(len(table.header))]
        widest = max(widest, sum(widths) + 3 * len(widths) + 1)
    return widest


def render(report: Report, console: Console) -> None:
    render_tables(tables(report), console)


def render_tables(drawn: list[Table], console: Console) -> None:
    for table in drawn:
        rich_table = RichTable(title=Text(table.title), title_justify="left", show_lines=False)
        for index, column in enumerate(table.header):
            rich_table.add_column(Text(column), justify="left" if index < table.label_columns else "right",
                                  overflow="fold")
        for row in table.rows:
            rich_table.add_row(*(Text(cell) for cell in row))
        console.print(rich_table)
        if table.note:
            console.print(table.note, style="dim", markup=False, highlight=False)
        for line in table.footnotes:
            console.print(line, highlight=False, markup=False)
        console.print()
