"""The output formats of report, compare and history, in one registry.

A format is one line here: for each command it renders, the function that renders it
("module:function", imported only when that format is asked for, so that --help and the
commands that need none of them stay fast) and what that function takes besides what it
renders. Every renderer returns the whole text; the command writes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

COMMANDS = ("report", "compare", "history")
DEFAULT = "table"


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


@dataclass(frozen=True)
class Renderer:
    """function(what it renders, *the Request's fields named in takes) -> text."""

    function: str  # "module:function"
    takes: tuple[str, ...] = ()

    def __call__(self, subject, request: Request) -> str:
        module, name = self.function.split(":")
        render = getattr(import_module(module), name)
        return render(subject, *(getattr(request, field) for field in self.takes))


@dataclass(frozen=True)
class Format:
    report: Renderer | None = None
    compare: Renderer | None = None
    history: Renderer | None = None
    summary_first: bool = False  # report shows the summary alone unless --detail
    tables: bool = False  # report's --table and --plain choose among its tables
    links: bool = False  # report --links: values link to their cells' log folders


FORMATS: dict[str, Format] = {
    "table": Format(report=Renderer("guestbench.report.formats.text:report",
                                    ("detail", "output", "asked", "plain")),
                    compare=Renderer("guestbench.report.formats.text:compare", ("every", "output")),
                    history=Renderer("guestbench.report.formats.text:history", ("detail", "output")),
                    summary_first=True, tables=True),
    "markdown": Format(report=Renderer("guestbench.report.formats.markdown:render",
                                       ("link_base", "asked", "plain", "links")),
                       compare=Renderer("guestbench.report.tables.comparison:render_markdown"),
                       tables=True, links=True),
    "csv": Format(report=Renderer("guestbench.report.formats.csv:render")),
    "json": Format(report=Renderer("guestbench.report.formats.json:render"),
                   compare=Renderer("guestbench.report.tables.comparison:render_json"),
                   history=Renderer("guestbench.report.tables.history:render_json")),
    "html": Format(report=Renderer("guestbench.report.formats.html.page:render", ("link_base",)),
                   history=Renderer("guestbench.report.formats.html.history:render")),
    "bmf": Format(report=Renderer("guestbench.report.formats.dashboards:render_bmf")),
    "github-action-benchmark": Format(
        report=Renderer("guestbench.report.formats.dashboards:render_github_action_benchmark")),
}


def names(command: str) -> list[str]:
    """The formats a command offers, in the registry's order (the table first)."""
    return [name for name, format_ in FORMATS.items() if getattr(format_, command)]


def render(command: str, name: str, subject, request: Request = Request()) -> str:
    """The text of what command shows (a report, a comparison, a history) in format name."""
    renderer = getattr(FORMATS[name], command)
    if renderer is None:
        raise ValueError(f"{command} has no {name} format (it has {', '.join(names(command))})")
    return renderer(subject, request)
