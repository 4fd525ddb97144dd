"""The table format: report, compare and history as text tables, the same whether they go
to the terminal, a pipe or a file (-o; history's to the terminal only); only a
terminal's width and colours differ."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from guestbench.report.formats import terminal
from guestbench.report.formats.request import Request
from guestbench.errors import InputError
from guestbench.report import restyle
from guestbench.report.model import Style, styled
from guestbench.report.tables import summary

if TYPE_CHECKING:
    from guestbench.analysis.compare import Comparison
    from guestbench.analysis.history import History
    from guestbench.analysis.results import CampaignResults

# analysis/history.py's find_changes gives no change point below 4 campaigns of a cell:
# Apache Otava's t-test needs two on each side of a change to have a spread
MIN_HISTORY_CAMPAIGNS = 4


def report(loaded: CampaignResults, request: Request) -> str:
    """The summary, one table of every environment sized for where it goes; with --detail
    every table; --table: those tables alone; --plain: as published."""
    detail, output, asked, plain = request.detail, request.output, request.asked, request.plain
    if not (detail or asked or plain):
        return draw(summary.view(restyle.reordered(loaded), width(output)), output)
    # every table's builder (bonnie++'s and the workloads' fields, the statistics of
    # comparisons) loads only where more than the summary is drawn
    from guestbench.report import select  # deferred: 0.24 s, reason above
    picked = select.choices(loaded, asked, plain, False, plan_default=False)
    if asked == (select.PLAN,) and not picked:
        return ("The campaign's plan has no [[table]] entries (docs/plan-format.md); "
                "--table all gives every table.\n")
    if picked:
        return draw(select.tables(loaded, "published", choices=picked), output)
    if plain or asked:  # every table, as a write-up shows them
        with styled(Style(plain=True, spread=False, decimals=restyle.decimals()) if plain
                    else Style()):
            return draw(select.tables(loaded, "published"), output)
    return draw(select.tables(loaded, "detail"), output)


def width(output: Path | None) -> int:
    """The columns a table may take: the terminal's, else (a pipe, a file) 120."""
    shown = Console()
    return shown.width if output is None and shown.is_terminal else terminal.MAX_WIDTH


def compare(result: Comparison, request: Request) -> str:
    # as history's below: the statistics of comparisons load numpy, which the summary of
    # a report, drawn from a digest through this module, never needs
    from guestbench.report.tables import comparison  # deferred: 0.09 s, reason above
    return draw(comparison.tables(result, request.every), request.output)


def history(found: History, request: Request) -> str:
    """The history's summary (with detail, each cell's campaigns too); while no cell has
    the campaigns a change point needs, how many it needs instead of a row per cell. To the
    terminal only: a file gets the history as json or html."""
    from guestbench.report.tables import history as trend  # deferred: see compare
    detail, output = request.detail, request.output
    if output is not None:
        raise InputError("--output: the table goes to the terminal (fix: --format json or html)")
    series = [trend.noise_table(found), *trend.series_tables(found)] if detail else []
    too_few = too_few_campaigns(found)
    if too_few:
        crossed = trend.crossings_line(found)  # before any table, as the summary's lead
        legend = trend.functional_legend(found)  # the summary's, which is not shown
        if series:
            series[0].lead = crossed
            series[0].footnotes += legend
        else:
            told = [line for line in (crossed, *legend) if line]
            too_few = "".join(textwrap.fill(line, width=terminal.TEXT_WIDTH,
                                            break_on_hyphens=False) + "\n"
                              for line in told) + too_few
        return (draw(series, output) if series else "") + too_few + "\n"
    return draw([trend.summary_table(found), *series], output)


def too_few_campaigns(found) -> str:
    """What history says while no cell has the campaigns a change point needs; else ""."""
    most = max(len(one.points) for one in found.series)
    if most >= MIN_HISTORY_CAMPAIGNS:
        return ""
    count = len(found.campaigns)
    have = (f"{count} finished campaign{'s' if count != 1 else ''}" if most == count else
            f"{count} finished campaigns, but no cell is in more than {most} of them")
    return textwrap.fill(
        f"History: {have}; a change point needs {MIN_HISTORY_CAMPAIGNS} campaigns of a cell "
        f"(Apache Otava's t-test needs two on each side of it): run "
        f"{MIN_HISTORY_CAMPAIGNS - most} more of the same plan (each cell's campaigns so far: "
        "history --detail)", width=terminal.TEXT_WIDTH, break_on_hyphens=False)


def draw(tables: list, output: Path | None = None) -> str:
    """Tables as text. To a terminal: at its width, in its colours; tables wider than 120
    columns, or than a wider terminal, are wrapped into parts (terminal.fit), and a table
    under 120 columns on a narrower terminal folds its cells to fit rather than splitting.
    To a pipe or a file: plain, as wide as the tables and at most terminal.TEXT_WIDTH, so
    that -o FILE holds what `> FILE` holds."""
    shown = Console()  # what standard output is
    buffer = io.StringIO()
    if output is None and shown.is_terminal:
        fitted = terminal.fit(tables, max(shown.width, terminal.MAX_WIDTH))
        console = Console(file=buffer, width=shown.width, force_terminal=True,
                          color_system=shown.color_system, no_color=shown.no_color)
    else:
        fitted = terminal.fit(tables)
        console = Console(file=buffer, color_system=None, width=min(
            terminal.TEXT_WIDTH, max(shown.width, terminal.width_for(fitted))))
    terminal.render_tables(fitted, console)
    return buffer.getvalue()
