"""Rich tables for the terminal, wrapped to a width a person reads (120 columns)."""

from __future__ import annotations

import dataclasses

from rich import box
from rich.console import Console
from rich.table import Table as RichTable
from rich.text import Text

from guestbench.report.model import Table, column_bytes, column_widths


# At most this many bytes a line, counted as `awk '{ print length }'` counts them (mawk counts
# bytes: a ± is two). Tables use ASCII rules for the same reason.
MAX_WIDTH = 120
TEXT_WIDTH = MAX_WIDTH - 4  # notes and footnotes, whose few marks may be multi-byte


def width_for(drawn: list[Table]) -> int:
    """Columns wide enough that no cell wraps."""
    widest = 0
    for table in drawn:
        widths = column_widths(table)
        widest = max(widest, sum(widths) + 3 * len(widths) + 1)
    return widest


def fit(drawn: list[Table], width: int = MAX_WIDTH) -> list[Table]:
    """Each table as it is if it fits the width; else its value columns (environments)
    wrapped into further tables that repeat its label columns, the note and footnotes
    after the last."""
    fitted: list[Table] = []
    for table in drawn:
        groups = _column_groups(table, width)
        for number, group in enumerate(groups):
            last = number == len(groups) - 1
            keep = [*range(table.label_columns), *group]
            part = f" ({number + 1} of {len(groups)})" if len(groups) > 1 else ""
            fitted.append(dataclasses.replace(
                table, title=table.title + part,
                header=[table.header[i] for i in keep],
                rows=[[row[i] for i in keep] for row in table.rows],
                sources=[[sources[i - table.label_columns] for i in group]
                         for sources in table.sources] if table.sources else [],
                tones=[[tones[i - table.label_columns] for i in group] if tones else tones
                       for tones in table.tones],
                lead=table.lead if number == 0 else "",
                note=table.note if last else "", footnotes=table.footnotes if last else []))
    return fitted


def _column_groups(table: Table, width: int) -> list[list[int]]:
    """The value columns in groups whose table fits the width (at least one column each)."""
    widths = column_bytes(table)
    labels = sum(widths[:table.label_columns]) + 3 * table.label_columns + 1
    groups: list[list[int]] = [[]]
    used = labels
    for index in range(table.label_columns, len(widths)):
        needed = widths[index] + 3
        if groups[-1] and used + needed > width:
            groups.append([])
            used = labels
        groups[-1].append(index)
        used += needed
    return groups if groups[0] else [[]]


# Colours of ratio cells by size, where the terminal shows colour (rich leaves them out for
# a file, a pipe or NO_COLOR): blue for better, plain for the same, warmer for worse.
TONE_STYLES = {"better": "blue", "same": "", "worse": "yellow", "much-worse": "dark_orange",
               "far-worse": "red"}


def render_tables(drawn: list[Table], console: Console) -> None:
    for table in drawn:
        text_width = min(console.width - (MAX_WIDTH - TEXT_WIDTH), TEXT_WIDTH)
        if table.lead:
            console.print(table.lead, markup=False, highlight=False, width=text_width)
        rich_table = RichTable(title=Text(table.title), title_justify="left", show_lines=False,
                               box=box.ASCII2)
        for index, column in enumerate(table.header):
            rich_table.add_column(Text(column), justify="left" if index < table.label_columns else "right",
                                  overflow="fold")
        for number, row in enumerate(table.rows):
            tones = table.tones[number] if number < len(table.tones) else []
            rich_table.add_row(*(Text(cell, style=_style(tones, index - table.label_columns))
                                 for index, cell in enumerate(row)))
        console.print(rich_table)
        if table.note:
            console.print(table.note, style="dim", markup=False, highlight=False,
                          width=text_width)
        for line in table.footnotes:
            console.print(line, highlight=False, markup=False, width=text_width)
        console.print()


def _style(tones: list[str | None], column: int) -> str:
    if column < 0 or column >= len(tones) or tones[column] is None:
        return ""
    return TONE_STYLES.get(tones[column] or "", "")
