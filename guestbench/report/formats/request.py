"""What a format's renderer is told besides what it renders (report/formats/__init__.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Request:
    """What a renderer may be told besides what it renders."""

    output: Path | None = None  # the file the text goes to; None: standard output
    detail: bool = False  # every table, not only the summary
    every: bool = False  # compare: every cell, not only those slower or faster
    asked: tuple[str, ...] = ()  # report --table: the tables asked for by name
    plain: bool = False  # report --plain: values only, one footnote mark per cell
    links: bool = False  # report --links: each value links to its cell's log folder

    @property
    def link_base(self) -> Path | None:
        """The folder that links to log folders are relative to: the output file's."""
        return self.output.resolve().parent if self.output else None
