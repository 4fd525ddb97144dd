"""The HTML report: one self-contained page (inline CSS, SVG plots), every value linked to logs."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from html import escape
from itertools import pairwise
from pathlib import Path
from typing import Any

from guestbench import __version__
from guestbench.analysis.boot import PHASES
from guestbench.analysis.cells import Cell
from guestbench.plan import catalogue
from guestbench.report import columns, functional, model, restyle, select
from guestbench.report.formats.html import (burst_plot, card as overview_card, density_plot,
                                            overview, snapshot_plot, svg)
from guestbench.report.formats.html.assets import CSS, SCRIPT
from guestbench.report.links import log_href
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import STATUS_MARKS, Table, format_value

# The boot phases that follow each other without overlap, so they stack.
BOOT_POINTS = (None, "clock_zero", "boot_userspace", "boot_agent_ready", "boot_powered_off")
STACKED_PHASES = [name for name, end, start in PHASES if (start, end) in pairwise(BOOT_POINTS)]
BOOT_TOTAL = next(name for name, end, start in PHASES if end == BOOT_POINTS[-1] and start is None)
MAX_FILES_LISTED = 50  # per log folder; the folder link shows the rest
TRAILING_MARKS = re.compile(r"(\s*\[\d+\])+\s*$")
TALL_ROWS = 40  # a table longer than this is folded under its title (the statistics)


def _e(text: object) -> str:
    return escape(str(text), quote=True)


@dataclass
class Section:
    """One part of the page: its anchor, heading (none: no h2), body, and its named parts."""

    id: str
    heading: str
    body: str
    parts: list[tuple[str, str]] = field(default_factory=list)  # (anchor, title)


class Anchors:
    """Readable, unique element ids made from any text (labels may hold anything)."""

    def __init__(self) -> None:
        self._used: set[str] = set()

    def make(self, prefix: str, text: str) -> str:
        stem = f"{prefix}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', text).strip('-') or 'x'}"
        anchor, number = stem, 1
        while anchor in self._used:
            number += 1
            anchor = f"{stem}-{number}"
        self._used.add(anchor)
        return anchor


def render(report: CampaignResults, base_dir: Path | None) -> str:
    """The whole page; log links are relative to base_dir (the page's folder) where they can be.

    It opens with the overview (the heatmap of ratios, the system card, the geometric means),
    then the plots, the tables, and the long sections collapsed: what a reader needs first
    fits on one screen, the rest is one click away."""
    report = restyle.reordered(report)  # the columns in the order a --style gives
    anchors = Anchors()
    runs = RunIndex(report, anchors)
    plots = {label: anchors.make("plot", label) for label in report.primary}
    drawn = select.tables(report, "published")
    measures = [table for table in drawn if any(catalogue.selects(entry, table.name or "")
                                                for entry in catalogue.VMM_TABLES)]
    drawn = [table for table in drawn if table not in measures]
    tables = _tables_section("published", "Tables", drawn, runs, anchors)
    host_anchor = next((anchor for (anchor, _title), table in zip(tables.parts, drawn)
                        if table.name == "host"), None)
    sections = [_overview_section(report, runs, plots, host_anchor, measures),
                _plots_section(report, plots, anchors), tables, _environments_section(report),
                _host_section(report), _plan_section(report),
                _runs_section(report, runs, base_dir)]
    campaign = report.campaign
    page_title = f"guestbench report: campaign {campaign.id} '{campaign.name}'"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(page_title)}</title>", f"<style>{CSS}{overview.CSS}</style>", "</head>",
        "<body>", _header(report), _contents(sections),
        *(f'<section id="{section.id}">\n<h2>{_e(section.heading)}</h2>\n{section.body}\n'
          "</section>" if section.heading else
          f'<section id="{section.id}">\n{section.body}\n</section>' for section in sections),
        f"<footer><p class=\"note\">Made by guestbench {_e(__version__)}.</p></footer>",
        f"<script>{SCRIPT}</script>", "</body>", "</html>", ""])


def _header(report: CampaignResults) -> str:
    """The campaign's name and facts in two lines: the overview must fit on the first screen."""
    campaign = report.campaign
    finished = campaign.finished_at
    facts = [
        ("created", f"{campaign.created_at:%Y-%m-%d %H:%M:%S} UTC"),
        ("finished", f"{finished:%H:%M:%S} UTC" if finished else "-"),
        ("baseline", report.baseline or "none"),
        ("runs", f"{len(report.runs)} ({sum(run.status == 'ok' for run in report.runs)} ok)"),
        ("measured by", f"guestbench {campaign.guestbench_version or '?'}"),
        ("logs", campaign.log_dir or "-"),
        *([("ended because", campaign.end_reason)] if campaign.end_reason else []),
    ]
    return "\n".join([
        f"<header><h1>Campaign {_e(campaign.id)} '{_e(campaign.name)}' "
        f"({_e(campaign.status)}), {campaign.created_at:%Y-%m-%d}</h1>",
        '<dl class="campaign">',
        *(f"<div><dt>{_e(name)}</dt> <dd>{_e(value)}</dd></div>" for name, value in facts),
        "</dl></header>"])


def _contents(sections: list[Section]) -> str:
    """One line of links to the sections; each section lists its own parts."""
    items = "".join(f'<li><a href="#{section.id}">{_e(section.heading or section.id.title())}'
                    "</a></li>" for section in sections)
    return f'<nav aria-label="contents"><ul>{items}</ul></nav>'


def _parts_list(parts: list[tuple[str, str]]) -> str:
    items = "".join(f'<li><a href="#{_e(anchor)}">{_e(title)}</a></li>' for anchor, title in parts)
    return f'<ul class="parts">{items}</ul>' if parts else ""


# -- the overview ------------------------------------------------------------------------


def _overview_section(report: CampaignResults, runs: "RunIndex", plots: dict[str, str],
                      host_anchor: str | None, measures: list[Table] = ()) -> Section:
    """The heatmap and the system card side by side, the geometric means, the host's
    warnings: the answer on the first screen; then the tables of what VMM and sandbox teams
    publish (catalogue.VMM_TABLES: start-up, footprint, density, network), absolute."""
    headers = {**columns.short_names(report.environments), **restyle.labels()}
    card = overview_card.system_card(report, "host-warnings")
    if report.baseline_measured and report.performance_primary():
        heatmap = overview.heatmap(report, runs.anchor, headers, plots)
        geomeans = overview.geomean_chart(report, headers) if report.geomeans else ""
    else:
        why = ("no baseline was chosen" if not report.baseline else
               f"the baseline {report.baseline} has no value" if not report.baseline_measured
               else "no workload measured a performance figure")
        heatmap = (f'<figure id="overview-heatmap" class="heatmap"><p class="note">No ratios: '
                   f"{_e(why)} (choose one with --baseline); the tables show every measured "
                   "value.</p></figure>")
        geomeans = ""
    body = (f'<div class="overview">{heatmap}{card}</div>\n{geomeans}\n'
            + _host_verdict(report, host_anchor)
            + "".join(_table_html(table, f"overview-{table.name}", runs,
                                  f"fn-overview-{table.name}") for table in measures))
    return Section("overview", "", body)


# -- host and environments ----------------------------------------------------------

def _host_verdict(report: CampaignResults, host_anchor: str | None) -> str:
    """The host checks' warnings, near the top: they say how far to trust every number."""
    checks = report.host_checks
    if not checks:
        return ('<p class="note" id="host-warnings">No host checks were recorded for this '
                "campaign.</p>")
    readings = f' (readings in <a href="#{host_anchor}">Host checks</a>)' if host_anchor else ""
    if checks.get("warnings"):
        return (f'<div class="warnings" id="host-warnings"><p><strong>Host warnings</strong>'
                f"{readings}: the numbers may be noisy.</p><ul>"
                + "".join(f"<li>{_e(warning)}</li>" for warning in checks["warnings"])
                + "</ul></div>")
    return (f'<p class="quiet" id="host-warnings">No warning: the host looked quiet{readings}.'
            "</p>")


def _host_section(report: CampaignResults) -> Section:
    """Every fact read from the host, collapsed: the system card has the few that matter."""
    facts = report.host_facts
    return Section("host", "Host facts", (
        f"<details><summary>All {len(facts)} facts read from the host (CPU, kernel, "
        "mitigations, clock source, cgroups...)</summary>"
        f'<div class="scroll">{_facts_table(facts)}</div></details>'))


def _facts_table(facts: dict[str, Any]) -> str:
    rows = "".join(f'<tr><th scope="row">{_e(key)}</th><td>{_fact_html(value)}</td></tr>'
                   for key, value in facts.items())
    return f'<table class="facts"><tbody>{rows}</tbody></table>'


def _fact_html(value: Any) -> str:
    if isinstance(value, dict):
        return _facts_table(value) if value else "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return _e(", ".join(f"{item:.2f}" if isinstance(item, float) else str(item)
                            for item in value)) or "-"
    return "-" if value is None else _e(value)


def _environments_section(report: CampaignResults) -> Section:
    rows = []
    for env in report.environments:
        spec = json.dumps(env.spec, indent=2, sort_keys=True, default=str)
        available = "yes" if env.available else "no"
        facts = "<br>".join(f"{_e(key)}: {_e(value)}" for key, value in
                            (env.facts or {}).items()) or "-"
        rows.append(
            f'<tr><th scope="row">{_e(functional.named(report, env.name))}</th>'
            f'<td>{_e(env.kind)}</td>'
            f'<td class="{"status-ok" if env.available else "status-bad"}">{available}'
            f'</td><td>{_e(env.probe)}</td><td>{facts}</td>'
            f"<td><details><summary>spec</summary><pre>{_e(spec)}</pre></details></td></tr>")
    return Section("environments", "Environments", (
        '<div class="scroll"><table class="environments"><thead><tr><th>name</th><th>kind</th>'
        "<th>available</th><th>probe answer</th><th>what ran (versions, guest kernel)</th>"
        f"<th>resolved spec</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"))


def _plan_section(report: CampaignResults) -> Section:
    plan = json.dumps(report.campaign.plan, indent=2, sort_keys=False, default=str)
    return Section("plan", "Plan", "<details><summary>The resolved plan (JSON)</summary>"
                   f"<pre>{_e(plan)}</pre></details>")


# -- plots ---------------------------------------------------------------------------

def _plots_section(report: CampaignResults, plots: dict[str, str], anchors: Anchors) -> Section:
    """A plot per workload's primary metric (the heatmap's rows link to them), two abreast."""
    figures = []
    primary = list(report.primary.items())
    for (label, metric), (title, metric_title) in zip(primary,
                                                      overview.row_titles(report, primary)):
        caption = f"{title}, {metric_title}: median (dot) and 95% CI (whisker)"
        figures.append(_figure(plots[label], caption,
                               _workload_plot(report, label, metric, caption)))
    boot = _boot_plot(report)
    if boot:
        figures.append(_figure(anchors.make("plot", "boot-phases"), "Boot phases per environment",
                               boot))
    for metric, caption, drawing in [*density_plot.figures(report), *burst_plot.figures(report),
                                     *snapshot_plot.figures(report)]:
        figures.append(_figure(anchors.make("plot", metric), caption, drawing))
    body = (f'<div class="plots">{"".join(figures)}</div>' if figures else
            '<p class="note">No measured value to plot.</p>')
    return Section("plots", "Plots", body)


def _figure(anchor: str, caption: str, drawing: str) -> str:
    return (f'<figure id="{anchor}"><figcaption>{_e(caption)}</figcaption>\n{drawing}\n'
            "</figure>")


def _workload_plot(report: CampaignResults, label: str, metric: str, caption: str) -> str:
    row = report.results.cells[(label, metric)]
    cells = [row[env] for env in report.results.environments]
    unit, divisor = model.row_scale(cells[0].unit, cells)
    dots = []
    for cell in cells:
        name = functional.named(report, cell.environment)
        if not cell.values:
            dots.append(svg.Dot(name, missing=_no_data(cell)))
            continue
        dots.append(svg.cell_dot(name, cell, divisor))
    better = ", higher is better" if cells[0].higher_is_better else ""
    return svg.dots(caption, unit, dots, better)


def _no_data(cell: Cell) -> str:
    if not cell.runs:
        return "no data: not run"
    return _no_data_text(status for status, _reason in cell.problems)


def _no_data_text(statuses: Iterable[str]) -> str:
    """'no data: ∅ unsupported x3, ✗ failed' from the statuses of a cell's non-ok runs."""
    counts = Counter(statuses)
    return "no data: " + (", ".join(f"{STATUS_MARKS.get(status, '')} {status}".strip()
                                    + (f" x{count}" if count > 1 else "")
                                    for status, count in counts.items()) or "no samples")


def _boot_plot(report: CampaignResults) -> str:
    cells = report.boot
    if not cells:
        return ""
    boot_labels = {run.label for run in report.runs if run.workload == "boot"}
    envs = [env for env in report.results.environments
            if env in cells or any(run.environment == env and run.label in boot_labels
                                   for run in report.runs)]
    stacks = []
    for env in envs:
        phases = cells.get(env, {})
        segments = [svg.Segment(name, phases[name].median_ms if name in phases else None)
                    for name in STACKED_PHASES]
        total = phases.get(BOOT_TOTAL)
        text = f"total {format_value(total.median_ms)} ms, n={total.n}" if total else ""
        lacking = [name.split(" (")[0] for name in STACKED_PHASES if name not in phases]
        if lacking and total:
            text += "; without " + ", ".join(lacking)
        missing = "" if phases else _boot_no_data(report, env, boot_labels)
        stacks.append(svg.Stack(functional.named(report, env), segments, text, missing))
    return svg.stacked("Boot phases per environment: median of each phase, stacked", "ms",
                       STACKED_PHASES, stacks)


def _boot_no_data(report: CampaignResults, env: str, boot_labels: set[str]) -> str:
    return _no_data_text(run.status for run in report.runs if run.environment == env
                         and run.label in boot_labels and run.status != "ok")


# -- tables --------------------------------------------------------------------------

def _tables_section(group: str, heading: str, tables: list[Table], runs: "RunIndex",
                    anchors: Anchors) -> Section:
    parts, bodies = [], []
    for table in tables:
        anchor = anchors.make(f"table-{group}", table.name or table.title)
        parts.append((anchor, _short_title(table.title)))
        bodies.append(_table_html(table, anchor, runs, f"fn-{anchor}"))  # footnotes per table
    note = ('<p class="note">Every value links to the runs it comes from (status, reason, log '
            "files); a [n] mark links to its footnote. A click on a column's header sorts the "
            f"rows by it. Tables of more than {TALL_ROWS} rows are folded: click a title to "
            "show one.</p>")
    return Section(f"tables-{group}", heading,
                   _parts_list(parts) + note + "\n" + "\n".join(bodies), parts)


def _short_title(title: str) -> str:
    """The title without the campaign's description (" - campaign 1 'quick' ..."), cut."""
    title = title.split(" - campaign ")[0]
    return title if len(title) < 80 else title[:77] + "..."


def _table_html(table: Table, anchor: str, runs: "RunIndex", footnote_prefix: str) -> str:
    """A table in a box of its own that scrolls (header row and first column stay in view),
    sortable; one of more than TALL_ROWS rows is folded under its title."""
    head = "".join(f'<th scope="col">{_e(name)}</th>' for name in table.header)
    sourced = any(source for sources in table.sources for source in sources)
    body = []
    for index, row in enumerate(table.rows):
        sources = table.sources[index] if index < len(table.sources) else []
        cells = [f'<th scope="row">{_e(text)}</th>' if column == 0 else
                 f'<td class="label">{_e(text)}</td>'
                 for column, text in enumerate(row[:table.label_columns])]
        for column, text in enumerate(row[table.label_columns:]):
            source = sources[column] if column < len(sources) else None
            cells.append(f'<td class="value">{_value_html(text, source, runs, footnote_prefix)}'
                         "</td>")
        # a row of no cell (geometric mean, n per column) keeps its place when sorting
        keep = ' class="keep"' if sourced and not any(sources) else ""
        body.append(f"<tr{keep}>{''.join(cells)}</tr>")
    title = f"<h3>{_e(table.title)}</h3>"
    drawn = (f'<div class="scroll"><table class="sortable"><thead><tr>{head}</tr></thead>'
             f"<tbody>{''.join(body)}</tbody></table></div>")
    if table.note:
        drawn += f'\n<p class="note">{_e(table.note)}</p>'
    if len(table.rows) > TALL_ROWS:
        drawn = (f"<details><summary>{title}<span class=\"rows\">{len(table.rows)} rows"
                 f"</span></summary>\n{drawn}\n</details>")
    else:
        drawn = f"{title}\n{drawn}"
    out = [f'<div class="table" id="{anchor}">', drawn]
    if table.footnotes:
        out.append(_footnotes_html(table.footnotes, footnote_prefix))
    out.append("</div>")
    return "\n".join(out)


def _value_html(text: str, source: tuple[str, str] | None, runs: "RunIndex",
                footnote_prefix: str) -> str:
    """The cell's text, linked to its runs; trailing [n] marks linked to their footnotes."""
    found = TRAILING_MARKS.search(text)
    value, marks = (text[:found.start()], found.group(0)) if found else (text, "")
    anchor = runs.anchor(source) if source else None
    shown = _e(value)
    if anchor:
        env, label = source
        shown = f'<a href="#{anchor}" title="{_e(f"the runs of {label} in {env}")}">{shown}</a>'
    for mark in re.finditer(r"(\s*)\[(\d+)\]", marks):
        space, number = mark.groups()
        shown += f'{space}<a class="mark" href="#{footnote_prefix}-{number}">[{number}]</a>'
    return shown


def _footnotes_html(lines: list[str], prefix: str) -> str:
    items = []
    for line in lines:
        number = re.match(r"\[(\d+)\] ", line)
        anchor = f' id="{prefix}-{number.group(1)}"' if number else ""
        items.append(f"<li{anchor}>{_e(line)}</li>")
    return f'<ul class="footnotes">{"".join(items)}</ul>'


# -- runs and their logs ----------------------------------------------------------------

class RunIndex:
    """The runs of each cell (environment, label) and the anchor of its entry under Runs."""

    def __init__(self, report: CampaignResults, anchors: Anchors) -> None:
        self.runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
        for run in report.runs:
            self.runs[(run.environment, run.label)].append(run)
        labels = list(dict.fromkeys(label for label, _metric, _unit in report.results.rows))
        labels += [label for _env, label in self.runs if label not in labels]
        order = {env: index for index, env in enumerate(report.results.environments)}
        self.cells = sorted(self.runs, key=lambda key: (labels.index(key[1]),
                                                        order.get(key[0], len(order))))
        self._anchors = {key: anchors.make("runs", f"{key[1]}--{key[0]}") for key in self.cells}

    def anchor(self, source: tuple[str, str]) -> str | None:
        return self._anchors.get(source)


RUN_COLUMNS = "".join(f"<th>{name}</th>" for name in (
    "run", "repetition", "started (UTC)", "status", "reason", "host s", "flags", "log folder",
    "log files"))


def _runs_section(report: CampaignResults, runs: RunIndex, base_dir: Path | None) -> Section:
    blocks = []
    for env, label in runs.cells:
        rows = "".join(_run_row(run, report, base_dir) for run in runs.runs[(env, label)])
        blocks.append(
            f'<section class="cell" id="{runs.anchor((env, label))}">'
            f'<h3>{_e(label)} in {_e(functional.named(report, env))}</h3>'
            '<div class="scroll"><table class="runs">'
            f"<thead><tr>{RUN_COLUMNS}</tr></thead><tbody>{rows}</tbody></table></div>"
            "</section>")
    intro = ('<p class="note">Every run of every cell, ok or not, with its raw logs. Links are '
             + ("relative to this page's folder where the logs share a parent folder with it."
                if base_dir else "absolute file:// links.") + "</p>")
    not_ok = sum(run.status != "ok" for run in report.runs)
    summary = (f"{len(report.runs)} runs of {len(runs.cells)} cells ({not_ok} not ok), with "
               "their logs")
    return Section("runs", "Runs and their logs", (
        f'<details id="runs-list"><summary>{_e(summary)}</summary>\n{intro}\n'
        + "\n".join(blocks) + "\n</details>"))


def _run_row(run: dict[str, Any], report: CampaignResults, base_dir: Path | None) -> str:
    status_class = "status-ok" if run.status == "ok" else "status-bad"
    folder, files = _log_cells(run.log_path, report.campaign.log_dir, base_dir)
    started = run.started_at
    cells = [_e(run.id), _e(run.repetition), f"{started:%H:%M:%S}" if started else "-",
             f'<span class="{status_class}">{_e(run.status)}</span>',
             _e(run.reason or "-"), f"{run.host_seconds:.2f}",
             _e(", ".join(run.flags or []) or "-"), folder, files]
    return "<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>"


def _log_cells(log_path: str | None, log_root: str | None, base_dir: Path | None
               ) -> tuple[str, str]:
    """(folder link, file links) of a run's log folder, read now."""
    if not log_path:
        return "(no log: the run never started)", "-"
    folder = Path(log_path).absolute()
    shown = _e(_shown_path(folder, log_root))
    if not folder.is_dir():
        return f'{shown} <span class="missing">(missing)</span>', "-"
    try:
        files = sorted(path for path in folder.rglob("*") if path.is_file())
        links = [f'<a href="{_e(log_href(path, base_dir))}">{_e(path.relative_to(folder))}</a> '
                 f"({_size(path)})" for path in files[:MAX_FILES_LISTED]]
    except OSError as error:  # unreadable, or changing while the report is made
        files, links = [], [f'<span class="missing">(unreadable: {_e(error.strerror)})</span>']
    if len(files) > MAX_FILES_LISTED:
        links.append(f"and {len(files) - MAX_FILES_LISTED} more in the folder")
    return (f'<a href="{_e(log_href(folder, base_dir, folder=True))}">{shown}/</a>',
            " · ".join(links) or "(empty)")


def _shown_path(folder: Path, log_root: str | None) -> str:
    if log_root and folder.is_relative_to(log_root):
        return str(folder.relative_to(log_root))
    return str(folder)


def _size(path: Path) -> str:
    size = path.stat().st_size
    return f"{size} B" if size < 10_000 else f"{format_value(size / 1024)} KiB"


