"""The output formats of report, compare and history, in one registry, and the one protocol
every format follows.

A format is one module of this folder with a function for each command it renders, each
taking what it renders and the Request and giving the whole text (the command writes it):

    def report(results: CampaignResults, request: Request) -> str
    def compare(comparison: Comparison, request: Request) -> str
    def history(history: History, request: Request) -> str

and one line in FORMATS: its module and what it renders. None of them computes anything:
the results, comparisons and histories come from analysis/, the tables from report/.

Each format's module is imported when that format is asked for (the functions above the
registry, each import with its cost after the command line's own): importing all seven up
front would cost --help, envs and a summary drawn from a digest half a second (rich, scipy,
numpy, every table, the HTML page). A new format is its module, one such function and one
line in FORMATS.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType

from guestbench.report.formats.request import Request

__all__ = ["COMMANDS", "DEFAULT", "FORMATS", "Format", "Request", "names", "render"]

COMMANDS = ("report", "compare", "history")
DEFAULT = "table"


@dataclass(frozen=True)
class Format:
    module: Callable[[], ModuleType]  # the format's module, imported on first use
    renders: tuple[str, ...]  # the commands it renders: a function of that name each
    summary_first: bool = False  # report shows the summary alone unless --detail
    tables: bool = False  # report's --table and --plain choose among its tables
    links: bool = False  # report --links: values link to their cells' log folders


def _table() -> ModuleType:
    from guestbench.report.formats import text  # deferred: rich, 36 ms
    return text


def _markdown() -> ModuleType:
    from guestbench.report.formats import markdown  # deferred: every table, scipy: 490 ms
    return markdown


def _csv() -> ModuleType:
    from guestbench.report.formats import csv  # deferred: 4 ms
    return csv


def _json() -> ModuleType:
    from guestbench.report.formats import json  # deferred: scipy, 100 ms
    return json


def _html() -> ModuleType:
    from guestbench.report.formats import html  # deferred: numpy and the page, 290 ms
    return html


def _bmf() -> ModuleType:
    from guestbench.report.formats import bmf  # deferred: as its peers
    return bmf


def _github_action_benchmark() -> ModuleType:
    from guestbench.report.formats import github_action_benchmark  # deferred: as its peers
    return github_action_benchmark


FORMATS: dict[str, Format] = {
    "table": Format(_table, COMMANDS, summary_first=True, tables=True),
    "markdown": Format(_markdown, ("report", "compare"), tables=True, links=True),
    "csv": Format(_csv, ("report",)),
    "json": Format(_json, COMMANDS),
    "html": Format(_html, ("report", "history")),
    "bmf": Format(_bmf, ("report",)),
    "github-action-benchmark": Format(_github_action_benchmark, ("report",)),
}


def names(command: str) -> list[str]:
    """The formats a command offers, in the registry's order (the table first)."""
    return [name for name, format_ in FORMATS.items() if command in format_.renders]


def render(command: str, name: str, subject, request: Request = Request()) -> str:
    """The text of what command shows (a report, a comparison, a history) in format name."""
    format_ = FORMATS[name]
    if command not in format_.renders:
        raise ValueError(f"{command} has no {name} format (it has {', '.join(names(command))})")
    return getattr(format_.module(), command)(subject, request)
