"""Tables of things that are not results (envs, images, the pool's hosts) in the report
tables' style (report/terminal.py): ASCII rules, the title on the left, at most 120
bytes a line as `awk '{print length}'` counts them."""

from __future__ import annotations

import io
from dataclasses import dataclass

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

MAX_WIDTH = 120  # report/terminal.py's MAX_WIDTH (which imports the results model)
BOX = box.ASCII2  # report/terminal.py's box


@dataclass(frozen=True)
class Column:
    name: str
    whole: bool = False  # never broken across lines: a time, an id, a number
    min_width: int | None = None  # room for the longest word of a sentence (a path)
    max_width: int | None = None  # folded beyond it (rich shrinks only the widest columns)


def draw(title: str, columns: list[Column], rows: list[list[str]],
         width: int | None = None) -> str:
    """The table as text: at most 120 bytes a line (or width; fewer on a narrower
    terminal), long cells folded within their column, whole columns never broken."""
    if width is None:
        shown = Console()  # what standard output is
        width = min(shown.width, MAX_WIDTH) if shown.is_terminal else MAX_WIDTH
    table = Table(title=Text(title), title_justify="left", box=BOX)
    for column in columns:
        table.add_column(Text(column.name), no_wrap=column.whole, overflow="fold",
                         min_width=column.min_width, max_width=column.max_width)
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    # rich pads each cell to its column's width in characters; a cell's multi-byte
    # characters (a ± in a probe's answer) add bytes on top
    extra = sum(max((len(row[i].encode()) - len(row[i]) for row in rows), default=0)
                for i in range(len(columns)))
    buffer = io.StringIO()
    Console(file=buffer, width=width - extra, color_system=None).print(table)
    return buffer.getvalue()
