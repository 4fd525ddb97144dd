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
from guestbench.analysis.boot import PHASES, breakdown
from guestbench.analysis.cells import Cell
from guestbench.report import model, svg, views
from guestbench.report.links import log_href
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import STATUS_MARKS, Table, format_value

# The boot phases that follow each other without overlap, so they stack.
BOOT_POINTS = (None, "clock_zero", "boot_userspace", "boot_agent_ready", "boot_powered_off")
STACKED_PHASES = [name for name, end, start in PHASES if (start, end) in pairwise(BOOT_POINTS)]
BOOT_TOTAL = next(name for name, end, start in PHASES if end == BOOT_POINTS[-1] and start is None)
MAX_FILES_LISTED = 50  # per log folder; the folder link shows the rest
TRAILING_MARKS = re.compile(r"(\s*\[\d+\])+\s*$")

CSS = """
body { font-family: "DejaVu Sans", "Liberation Sans", system-ui, sans-serif; font-size: 14px;
       margin: 1.5em 2em; color: #111; background: #fff; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; } h2 { border-bottom: 2px solid #0072b2;
     padding-bottom: 0.2em; margin-top: 2em; } h3 { font-size: 1.05em; margin: 1.6em 0 0.4em; }
table { border-collapse: collapse; margin: 0.3em 0; }
th, td { border: 1px solid #ccc; padding: 0.2em 0.5em; vertical-align: top; }
div.table table { font-size: 13px; } div.table th, td.label { white-space: nowrap; }
thead th { background: #eef3f8; text-align: left; }
tbody th { text-align: left; font-weight: normal; }
tbody tr:nth-child(even) { background: #f8f8f8; }
td.value { text-align: right; white-space: nowrap; font-variant-numeric: tabular-nums; }
td.value a { color: inherit; text-decoration: none; border-bottom: 1px dotted #0072b2; }
td.value a:hover, td.value a:focus { background: #fff3c4; }
a.mark { color: #a33; text-decoration: none; margin-left: 0.2em; }
.scroll { overflow-x: auto; }
p.note { color: #444; max-width: 75em; margin: 0.3em 0; font-size: 0.92em; }
ul.footnotes { list-style: none; padding-left: 0; font-size: 0.92em; }
ul.footnotes li:target, section.cell:target { background: #fff3c4; }
.warnings { border-left: 4px solid #d55e00; background: #fff4ec; padding: 0.4em 1em; }
.quiet { border-left: 4px solid #009e73; background: #effaf5; padding: 0.4em 1em; }
dl.campaign { display: grid; grid-template-columns: max-content auto; gap: 0.1em 1em; }
dl.campaign dt { font-weight: bold; } dl.campaign dd { margin: 0; }
pre { background: #f6f6f6; padding: 0.5em; overflow-x: auto; font-size: 0.9em; }
figure { margin: 1em 0 1.5em; } figcaption { font-weight: bold; margin-bottom: 0.3em; }
svg text { font-family: inherit; }
nav ul ul { padding-left: 1.2em; margin: 0.1em 0 0.3em; }
nav ul ul li { display: inline; } nav ul ul li + li::before { content: " \\00b7  "; }
.status-ok { color: #006b4f; } .status-bad { color: #a33; font-weight: bold; }
.missing { color: #a33; }
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


@dataclass
class Section:
    """One part of the page: its anchor, heading, body, and named parts for the contents."""

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
    """The whole page; log links are relative to base_dir (the page's folder) where they can be."""
    anchors = Anchors()
    runs = RunIndex(report, anchors)
    drawn = views.tables(report, "published")
    tables = _tables_section("published", "Tables", drawn, runs, anchors)
    host_anchor = next((anchor for (anchor, _title), table in zip(tables.parts, drawn)
                        if table.name == "host"), None)
    sections = [_plots_section(report, anchors), tables, _environments_section(report),
                _host_section(report), _plan_section(report), _runs_section(report, runs, base_dir)]
    campaign = report.campaign
    page_title = f"guestbench report: campaign {campaign['id']} '{campaign['name']}'"
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(page_title)}</title>", f"<style>{CSS}</style>", "</head>", "<body>",
        _header(report), _host_verdict(report, host_anchor), _contents(sections),
        *(f'<section id="{section.id}">\n<h2>{_e(section.heading)}</h2>\n{section.body}\n'
          "</section>" for section in sections),
        f"<footer><p class=\"note\">Made by guestbench {_e(__version__)}.</p></footer>",
        "</body>", "</html>", ""])


def _header(report: CampaignResults) -> str:
    campaign = report.campaign
    finished = campaign.get("finished_at")
    facts = [
        ("status", campaign["status"]),
        ("created", f"{campaign['created_at']:%Y-%m-%d %H:%M:%S} UTC"),
        ("finished", f"{finished:%Y-%m-%d %H:%M:%S} UTC" if finished else "-"),
        ("baseline", report.baseline or "none"),
        ("runs", f"{len(report.runs)} ({sum(run['status'] == 'ok' for run in report.runs)} ok)"),
        ("measured by", f"guestbench {campaign.get('guestbench_version', '?')}"),
        ("log folder", campaign.get("log_dir", "-")),
        *([("ended because", campaign["end_reason"])] if campaign.get("end_reason") else []),
    ]
    return "\n".join([
        f"<header><h1>Campaign {_e(campaign['id'])} '{_e(campaign['name'])}' "
        f"({_e(campaign['status'])}), {campaign['created_at']:%Y-%m-%d}</h1>",
        '<dl class="campaign">',
        *(f"<dt>{_e(name)}</dt><dd>{_e(value)}</dd>" for name, value in facts),
        "</dl></header>"])


def _contents(sections: list[Section]) -> str:
    items = []
    for section in sections:
        parts = "".join(f'<li><a href="#{_e(anchor)}">{_e(title)}</a></li>'
                        for anchor, title in section.parts)
        items.append(f'<li><a href="#{section.id}">{_e(section.heading)}</a>'
                     + (f"<ul>{parts}</ul>" if parts else "") + "</li>")
    return f'<nav><h2>Contents</h2><ul>{"".join(items)}</ul></nav>'


# -- host and environments ----------------------------------------------------------

def _host_verdict(report: CampaignResults, host_anchor: str | None) -> str:
    """The host checks' warnings, near the top: they say how far to trust every number."""
    checks = report.host_checks
    if not checks:
        return '<p class="note">No host checks were recorded for this campaign.</p>'
    readings = f' (readings in <a href="#{host_anchor}">Host checks</a>)' if host_anchor else ""
    if checks.get("warnings"):
        return (f'<div class="warnings"><p><strong>Host warnings</strong>{readings}: the '
                "numbers may be noisy.</p><ul>"
                + "".join(f"<li>{_e(warning)}</li>" for warning in checks["warnings"])
                + "</ul></div>")
    return f'<p class="quiet">No warning: the host looked quiet{readings}.</p>'


def _host_section(report: CampaignResults) -> Section:
    return Section("host", "Host facts", _facts_table(report.host_facts))


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
        spec = json.dumps(env.get("spec"), indent=2, sort_keys=True, default=str)
        available = "yes" if env.get("available") else "no"
        facts = "<br>".join(f"{_e(key)}: {_e(value)}" for key, value in
                            (env.get("facts") or {}).items()) or "-"
        rows.append(
            f'<tr><th scope="row">{_e(env["name"])}</th><td>{_e(env["kind"])}</td>'
            f'<td class="{"status-ok" if env.get("available") else "status-bad"}">{available}'
            f'</td><td>{_e(env.get("probe", ""))}</td><td>{facts}</td>'
            f"<td><details><summary>spec</summary><pre>{_e(spec)}</pre></details></td></tr>")
    return Section("environments", "Environments", (
        "<table><thead><tr><th>name</th><th>kind</th><th>available</th><th>probe answer</th>"
        "<th>what ran (VMM, guest kernel)</th><th>resolved spec</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"))


def _plan_section(report: CampaignResults) -> Section:
    plan = json.dumps(report.campaign.get("plan"), indent=2, sort_keys=False, default=str)
    return Section("plan", "Plan", "<details><summary>The resolved plan (JSON)</summary>"
                   f"<pre>{_e(plan)}</pre></details>")


# -- plots ---------------------------------------------------------------------------

def _plots_section(report: CampaignResults, anchors: Anchors) -> Section:
    figures, parts = [], []
    for label, metric in report.primary.items():
        anchor = anchors.make("plot", label)
        caption = f"{label}: {metric}, median per environment with its 95% CI"
        figures.append(_figure(anchor, caption, _workload_plot(report, label, metric, caption)))
        parts.append((anchor, f"{label}: {metric}"))
    boot = _boot_plot(report)
    if boot:
        anchor = anchors.make("plot", "boot-phases")
        figures.append(_figure(anchor, "Boot phases per environment", boot))
        parts.append((anchor, "Boot phases"))
    body = "\n".join(figures) or '<p class="note">No measured value to plot.</p>'
    return Section("plots", "Plots", body, parts)


def _figure(anchor: str, caption: str, drawing: str) -> str:
    return (f'<figure id="{anchor}"><figcaption>{_e(caption)}</figcaption>\n{drawing}\n'
            "</figure>")


def _workload_plot(report: CampaignResults, label: str, metric: str, caption: str) -> str:
    row = report.results.cells[(label, metric)]
    cells = [row[env] for env in report.results.environments]
    unit, divisor = model.row_scale(cells[0].unit, cells)
    bars = []
    for cell in cells:
        if not cell.values:
            bars.append(svg.Bar(cell.environment, missing=_no_data(cell)))
            continue
        described = cell.stats
        low = described.ci_low / divisor if described and described.ci_low is not None else None
        high = described.ci_high / divisor if described and described.ci_high is not None else None
        bars.append(svg.Bar(cell.environment, cell.median / divisor, low, high))
    better = ", higher is better" if cells[0].higher_is_better else ""
    return svg.bars(caption, unit, bars, better)


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
    cells = breakdown(report.runs, report.samples)
    if not cells:
        return ""
    boot_labels = {run["label"] for run in report.runs if run["workload"] == "boot"}
    envs = [env for env in report.results.environments
            if env in cells or any(run["environment"] == env and run["label"] in boot_labels
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
        stacks.append(svg.Stack(env, segments, text, "" if phases else _boot_no_data(
            report, env, boot_labels)))
    return svg.stacked("Boot phases per environment: median of each phase, stacked", "ms",
                       STACKED_PHASES, stacks)


def _boot_no_data(report: CampaignResults, env: str, boot_labels: set[str]) -> str:
    return _no_data_text(run["status"] for run in report.runs if run["environment"] == env
                         and run["label"] in boot_labels and run["status"] != "ok")


# -- tables --------------------------------------------------------------------------

def _tables_section(group: str, heading: str, tables: list[Table], runs: "RunIndex",
                    anchors: Anchors) -> Section:
    parts, bodies = [], []
    for table in tables:
        anchor = anchors.make(f"table-{group}", table.name or table.title)
        parts.append((anchor, table.title if len(table.title) < 80 else table.title[:77] + "..."))
        bodies.append(_table_html(table, anchor, runs, f"fn-{group}"))
    note = ('<p class="note">Every value links to the runs it comes from (status, reason, log '
            "files); a [n] mark links to its footnote.</p>")
    return Section(f"tables-{group}", heading, note + "\n" + "\n".join(bodies), parts)


def _table_html(table: Table, anchor: str, runs: "RunIndex", footnote_prefix: str) -> str:
    head = "".join(f'<th scope="col">{_e(name)}</th>' for name in table.header)
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
        body.append(f"<tr>{''.join(cells)}</tr>")
    out = [f'<div class="table" id="{anchor}"><h3>{_e(table.title)}</h3>',
           f'<div class="scroll"><table><thead><tr>{head}</tr></thead>',
           f"<tbody>{''.join(body)}</tbody></table></div>"]
    if table.note:
        out.append(f'<p class="note">{_e(table.note)}</p>')
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
            self.runs[(run["environment"], run["label"])].append(run)
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
            f"<h3>{_e(label)} in {_e(env)}</h3><table><thead><tr>{RUN_COLUMNS}</tr></thead>"
            f"<tbody>{rows}</tbody></table></section>")
    intro = ('<p class="note">Every run of every cell, ok or not, with its raw logs. Links are '
             + ("relative to this page's folder where the logs share a parent folder with it."
                if base_dir else "absolute file:// links.") + "</p>")
    return Section("runs", "Runs and their logs", intro + "\n" + "\n".join(blocks))


def _run_row(run: dict[str, Any], report: CampaignResults, base_dir: Path | None) -> str:
    status_class = "status-ok" if run["status"] == "ok" else "status-bad"
    folder, files = _log_cells(run.get("log_path"), report.campaign.get("log_dir"), base_dir)
    started = run.get("started_at")
    cells = [_e(run["id"]), _e(run["repetition"]), f"{started:%H:%M:%S}" if started else "-",
             f'<span class="{status_class}">{_e(run["status"])}</span>',
             _e(run["reason"] or "-"), f"{run['host_seconds']:.2f}",
             _e(", ".join(run.get("flags") or []) or "-"), folder, files]
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


