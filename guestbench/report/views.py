"""Which tables each view of a report shows: the one place every renderer asks for its set.

The tables themselves are named in report/catalogue.py, which says where each is built;
the terminal's summary is report/summary.py's. This module only chooses and orders them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from guestbench.analysis.results import CampaignResults
from guestbench.report import catalogue, columns, titles
from guestbench.report.tables import summary
from guestbench.report.model import Footnotes, Table, spread_line

View = Literal["summary", "detail", "published"]


def tables(report: CampaignResults, view: View, width: int | None = None,
           choices: list | None = None) -> list[Table]:
    """The tables `view` shows, in order, with one set of footnotes under the last of them.

    "summary" is the terminal's first answer (report, run): one row per workload. "detail"
    (report --detail, and the table format written to a file) and "published" (markdown,
    HTML) are the same list, every table that has data, so the terminal shows what a
    write-up shows; the terminal wraps tables wider than it into parts (terminal.fit)."""
    if choices:  # tables chosen by name or by the plan (report/chosen.py)
        from guestbench.report import chosen
        return chosen.tables(report, choices)
    build = VIEWS.get(view)
    if build is None:
        raise ValueError(f"no table view {view!r} (one of {', '.join(VIEWS)})")
    made = _summary(report, width) if view == "summary" else build(report)
    titles.apply(made, report)
    headers = columns.short_names(report.environments)
    columns.shorten(made, headers)
    key = columns.legend(report.environments, headers)
    if key is not None:  # after the first table, whose headers it explains
        made.insert(1, key)
    return made


def _summary(report: CampaignResults, width: int | None = None) -> list[Table]:
    """One table of every environment that ran: per workload its primary metric, the
    baseline absolute and the others as a ratio to it (report/summary.py), the campaign's
    typical spread said once above it; sized for a terminal `width` columns wide."""
    table = summary.summary_table(report, width)
    table.lead = spread_line(report)
    return [table]


def _every_table(report: CampaignResults, own_footnotes: bool = False) -> list[Table]:
    """Every table that has data, in the catalogue's order (report/catalogue.py): measured
    values and ratios first (what every reader looks for), then the published tables, then
    the per-cell statistics and the checks of clock and host. (Their modules load here: the
    summary, drawn from a digest, needs none of them.)"""
    footnotes = Footnotes()
    out: list[Table] = []
    built = set()
    for entry in catalogue.ENTRIES.values():
        if entry.build in built:
            continue  # one builder gives several entries' tables (bonnie++'s sections)
        built.add(entry.build)
        out += catalogue.build(entry, report, footnotes)
    out[0].lead = spread_line(report)
    if own_footnotes:  # a write-up: each table with its own, numbered from 1
        from guestbench.report.chosen import own_footnotes as give
        give(out, footnotes)
        return out
    return _footnoted(out, footnotes)


def _footnoted(out: list[Table], footnotes: Footnotes) -> list[Table]:
    """The set with its footnotes under its last table, so each number is explained once."""
    out[-1].footnotes = footnotes.lines()
    return out


VIEWS: dict[str, Callable[[CampaignResults], list[Table]]] = {
    "summary": _summary, "detail": _every_table,
    "published": lambda report: _every_table(report, own_footnotes=True)}

__all__ = ["View", "VIEWS", "tables"]
