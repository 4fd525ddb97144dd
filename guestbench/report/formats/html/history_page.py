"""The history as one self-contained HTML page: the summary table, then each cell's medians
over the campaigns with their intervals and the change points drawn."""

from __future__ import annotations

from guestbench import __version__
from guestbench.report.formats.html import svg
from guestbench.report.tables.history import (History, method_note, noise_table,
                                              series_tables, summary_table)
from guestbench.report.formats.html.page import CSS, _e
from guestbench.report.model import Table, format_value


def render(found: History) -> str:
    summary, noise = summary_table(found), noise_table(found)
    figures = []
    for index, (one, table) in enumerate(zip(found.series, series_tables(found)), start=1):
        points = [svg.TrendPoint(str(p.campaign), p.median, p.low, p.high,
                                 f"campaign {p.campaign} '{p.name}' {p.created_at:%Y-%m-%d %H:%M}"
                                 f": median {format_value(p.median)} {one.unit}")
                  for p in one.points]
        changes = [(c.index, f"{c.change:+.1%}") for c in one.changes]
        figures.append(
            f'<section class="cell" id="series-{index}"><h3>{_e(table.title)}</h3>'
            + svg.trend(table.title, one.unit, points, changes) + _table(table) + "</section>")
    title = f"guestbench history: {len(found.campaigns)} campaigns"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
        f"<header><h1>{_e(summary.title)}</h1>"
        f"<p class=\"note\">Hosts: {_e(', '.join(found.hosts))}. {_e(method_note(found))} "
        "A dashed line marks a change point, before the first campaign after the change; "
        "whiskers are each median's 95% interval.</p>"
        + (f'<div class="warnings" id="host-classes"><p>{_e(summary.lead)}</p></div>'
           if summary.lead else "")
        + "</header>",
        f'<section id="summary"><h2>Change points</h2>{_table(summary)}</section>',
        '<section id="series"><h2>Each cell over the campaigns</h2>', *figures, "</section>",
        f'<section id="host-noise"><h2>Host noise</h2>{_table(noise)}'
        f'<p class="note">{_e(noise.note)}</p></section>',
        f'<footer><p class="note">Made by guestbench {_e(__version__)}.</p></footer>',
        "</body>", "</html>", ""])


def _table(table: Table) -> str:
    head = "".join(f"<th>{_e(name)}</th>" for name in table.header)
    rows = []
    for row in table.rows:
        cells = [f'<td class="label">{_e(text)}</td>' if index < table.label_columns
                 else f"<td>{_e(text)}</td>" for index, text in enumerate(row)]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    notes = "".join(f"<li>{_e(line)}</li>" for line in table.footnotes)
    return ('<div class="table scroll"><table><thead><tr>' + head + "</tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></div>"
            + (f'<ul class="footnotes">{notes}</ul>' if notes else ""))
