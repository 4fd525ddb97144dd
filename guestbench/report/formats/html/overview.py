"""The HTML report's overview: a heatmap of every environment's ratio to the baseline per
workload, and the geometric mean of each environment with its interval."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from html import escape

from guestbench.analysis.cells import Cell, Interval
from guestbench.analysis.geomean import Geomean
from guestbench.analysis.results import CampaignResults
from guestbench.report import functional, model, titles
from guestbench.report.tables import summary
from guestbench.report.formats.html import svg
from guestbench.report.model import (STATUS_MARKS, Table, format_percent, format_ratio,
                                     format_value, row_scale)

# (environment, label) -> the anchor of that cell's runs, or None
CellAnchor = Callable[[tuple[str, str]], "str | None"]

CSS = """
div.overview { display: grid; grid-template-columns: minmax(0, max-content) minmax(15em, 1fr);
  gap: 0.8em 1.2em; align-items: start; }
@media (max-width: 60em) { div.overview { grid-template-columns: minmax(0, 1fr); } }
figure.heatmap { margin: 0; min-width: 0; width: min-content; max-width: 100%; }
figure.heatmap > p.note { width: 24em; max-width: 100%; }
figure.heatmap figcaption, figure.geomeans figcaption { font-weight: normal; font-size: 0.92em;
  color: #333; max-width: 62em; }
table.heatmap { font-size: 13px; }
table.heatmap td { text-align: center; white-space: nowrap; min-width: 4.6em;
  font-variant-numeric: tabular-nums; padding: 0.15em 0.4em; }
table.heatmap th { white-space: nowrap; }
table.heatmap tbody th { max-width: 11em; }
table.heatmap tbody th span.metric { white-space: normal; }
table.heatmap span.metric, table.heatmap span.ci { display: block; font-size: 0.8em; }
table.heatmap span.metric { color: #555; font-weight: normal; }
table.heatmap th a { color: inherit; text-decoration: underline dotted #0072b2; }
table.heatmap td a { color: inherit; text-decoration: none; display: block; }
table.heatmap td a:hover, table.heatmap td a:focus { outline: 2px solid #000; }
table.heatmap td.status { color: #555; font-style: italic; background: #fff;
  font-size: 0.85em; vertical-align: middle; }
table.heatmap td.base { background: #fff; }
table.heatmap tr.geomean > * { border-top: 2px solid #888; font-weight: bold; }
div.legend { display: flex; flex-wrap: wrap; gap: 0.2em 0.8em; font-size: 0.85em;
  align-items: center; margin-top: 0.3em; }
div.legend ul { display: flex; flex-wrap: wrap; gap: 0.2em 0.7em; list-style: none;
  margin: 0; padding: 0; }
span.swatch { display: inline-block; width: 1.1em; height: 0.9em; margin-right: 0.25em;
  vertical-align: -0.1em; border: 1px solid #999; }
aside.card { border: 1px solid #ccc; border-radius: 4px;
  padding: 0.4em 0.8em; font-size: 0.9em; background: #fafbfc; }
aside.card h2 { margin: 0 0 0.3em; font-size: 1.1em; border: 0; padding: 0; }
aside.card dl { display: grid; grid-template-columns: max-content auto; gap: 0 0.8em;
  margin: 0 0 0.4em; }
aside.card dt { font-weight: bold; } aside.card dd { margin: 0; }
aside.card table.versions { width: 100%; font-size: 0.95em; }
aside.card table.versions span.detail { font-size: 0.85em; color: #555; }
aside.card table.versions th { position: static; white-space: nowrap; }
aside.card table.versions tbody tr:nth-child(even) > * { background: transparent; }
p.card-warning { margin: 0.2em 0 0.4em; color: #a33; }
figure.geomeans { margin: 0.8em 0 0.4em; }
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def ratio_rule(baseline: str) -> str:
    """The one rule every ratio on the page follows, said in each caption."""
    return (f"x {baseline}, above 1 is worse: an environment's median over {baseline}'s; "
            f"for rates (higher is better, e.g. MB/s) inverted: {baseline}'s over the "
            "environment's")


def ratio(report: CampaignResults, label: str, metric: str, env: str) -> Interval | None:
    """The cell's ratio to the baseline with its 95% interval, by the one rule (ratio_rule):
    above 1 is worse, rates inverted; None where the results take no ratio (no value on
    either side, a verdict or context metric, a figure too fast to time)."""
    return report.ratios.get((label, metric, env))


@dataclass(frozen=True)
class Shade:
    """The colour of the ratios below `below` (and at or above the previous shade's)."""

    below: float
    fill: str
    ink: str  # the text's colour on it
    label: str


# Bins on a log scale: half a decade wide from 3x up (3, 10, 30, 100), finer near 1 where the
# light environments' ratios lie, the same below 1 as above. ColorBrewer's YlOrBr for worse
# and Blues for better: both ramps run from light to dark, so a reader with a colour-vision
# deficiency (or a grey print) still reads the size; blue against orange stays apart for all.
SHADES = (
    Shade(1 / 1.5, "#4a90c2", "#000", "below 0.67"),
    Shade(1 / 1.1, "#c6dbef", "#000", "0.67-0.91"),
    Shade(1.1, "#f4f4f4", "#000", "0.91-1.1"),
    Shade(1.5, "#fee391", "#000", "1.1-1.5"),
    Shade(3, "#fec44f", "#000", "1.5-3"),
    Shade(10, "#fe9929", "#000", "3-10"),
    Shade(30, "#ec7014", "#000", "10-30"),
    Shade(100, "#b84a04", "#fff", "30-100"),
    Shade(float("inf"), "#662506", "#fff", "100 and above"),
)


def shade(value: float) -> Shade:
    return next(candidate for candidate in SHADES if value < candidate.below)


def interval_text(interval: Interval) -> str:
    """'[0.93-1.12]': the interval of a ratio, or '' without one."""
    if interval.low is None or interval.high is None:
        return ""
    return f"[{format_ratio(interval.low).rstrip('x')}-{format_ratio(interval.high).rstrip('x')}]"


def status_text(cell: Cell) -> str:
    """What a cell without a value shows: its runs' statuses with their marks, never blank."""
    if not cell.problems:
        return model.empty_text(cell)
    counts = Counter(status for status, _reason in cell.problems)
    return ", ".join(f"{STATUS_MARKS.get(status, '')} {status}".strip()
                     + (f" x{count}" if count > 1 else "") for status, count in counts.items())


# -- the heatmap -----------------------------------------------------------------------------

def heatmap(report: CampaignResults, anchor: CellAnchor, headers: dict[str, str],
            plots: dict[str, str]) -> str:
    """Workloads down, environments across: each cell its ratio by the one rule, coloured by
    its size, with its interval, linked to the cell's runs; the baseline's column absolute.
    A row's title links to its workload's plot (plots: label -> anchor)."""
    rows = list(report.performance_primary().items())
    shown = row_titles(report, rows)
    envs = report.results.environments
    everywhere = summary.environment_flags(report, envs)
    used: dict[str, None] = {}
    head = "".join(_column_head(report, env, functional.named(report, env, headers.get(env)))
                   for env in envs)
    body = []
    for (label, metric), (title, metric_title) in zip(rows, shown):
        row = report.results.cells[(label, metric)]
        unit, divisor = row_scale(row[envs[0]].unit, list(row.values()))
        inverted = ", inverted" if row[envs[0]].higher_is_better else ""
        cells = "".join(_cell_html(report, label, metric, row[env], divisor, unit, anchor,
                                   summary.marks_of(row[env], everywhere.get(env, set()), used))
                        for env in envs)
        named = f'<a href="#{_e(plots[label])}">{_e(title)}</a>' if label in plots else _e(title)
        body.append(f'<tr><th scope="row">{named}<span class="metric">{_e(metric_title)} '
                    f"({_e(unit)}{inverted})</span></th>{cells}</tr>")
    body += [_geomean_row(report, name, means) for name, means in report.geomean_rows()]
    baseline = report.baseline
    caption = (f"Ratio to {baseline} per workload, {ratio_rule(baseline)}; its 95% interval "
               f"below it; colour by the ratio's size on a log scale. The {baseline} column: "
               "its own median ±half its 95% interval. A cell links to its runs.")
    said = [model.spread_line(report), *functional.legend(report, envs)] + [
        line for line in summary.environment_lines(report, everywhere)]
    said += summary.legend(used)
    return (f'<figure id="overview-heatmap" class="heatmap"><figcaption>{_e(caption)}'
            '</figcaption><div class="scroll"><table class="heatmap sortable"><thead><tr>'
            f'<th scope="col">workload</th>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            f"</table></div>{_legend(report)}"
            + "".join(f'<p class="note">{_e(line)}</p>' for line in said if line)
            + "</figure>")


def row_titles(report: CampaignResults, rows: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """(workload title, metric title) per row, as every table shows them."""
    named = Table("", ["workload", "metric"], [[label, metric] for label, metric in rows])
    titles.apply([named], report)
    return [(title, metric) for title, metric in named.rows]


def _facts(report: CampaignResults, env: str) -> dict:
    """What the environment recorded about what it ran (environments' facts())."""
    return next((row.facts or {} for row in report.environments if row.name == env),
                {})


def _column_head(report: CampaignResults, env: str, header: str) -> str:
    platform = _facts(report, env).get("platform")
    detail = f"{platform}" if platform else ""
    if env == report.baseline:
        detail = "baseline"
    return (f'<th scope="col">{_e(header)}'
            + (f'<span class="metric">{_e(detail)}</span>' if detail else "") + "</th>")


def _cell_html(report: CampaignResults, label: str, metric: str, cell: Cell, divisor: float,
               unit: str, anchor: CellAnchor, flags: str = "") -> str:
    """A ratio coloured by its size over its interval; the baseline's own median; else what
    the cell's runs said, or why there is no ratio."""
    base = report.results.cells[(label, metric)][report.baseline]
    attributes, detail = "", ""
    if cell is base and cell.values:
        text, detail, kind = f"{format_value(cell.median / divisor)} {unit}", _spread(cell), "base"
    elif not cell.values:
        text, kind = status_text(cell), "status"
    else:
        found = ratio(report, label, metric, cell.environment)
        if found is not None and not functional.judged(report, cell.environment):
            # shown, marked, and never coloured: it is no finding (functional.py)
            text, detail, kind = format_ratio(found.value), interval_text(found), "functional"
            flags += functional.ratio_mark(report, cell.environment)
            attributes = f' data-sort="{found.value:.6g}"'
        elif found is not None:
            colour = shade(found.value)
            text, detail, kind = format_ratio(found.value), interval_text(found), "heat"
            attributes = (f' data-sort="{found.value:.6g}" '
                          f'style="background:{colour.fill};color:{colour.ink}"')
        elif cell.too_fast or base.too_fast:
            text, kind = "+++++ too fast to time", "status"
        else:
            text, kind = f"no {report.baseline} value" if not base.values else "no ratio", \
                "status"
    marks = "".join(dict.fromkeys(STATUS_MARKS.get(status, "") for status, _ in cell.problems))
    if cell.values and marks:  # a cell with values whose other runs did not give any
        detail = f"{detail} {marks}".strip()
    inner = _e(text + flags) + (f'<span class="ci">{_e(detail)}</span>' if detail else "")
    target = anchor((cell.environment, label))
    if target:
        where = f"the runs of {label} in {cell.environment}"
        inner = f'<a href="#{_e(target)}" title="{_e(where)}">{inner}</a>'
    return f'<td class="{kind}"{attributes}>{inner}</td>'


def _spread(cell: Cell) -> str:
    half = cell.stats.half_width if cell.stats else None
    if half is not None:
        return f"±{format_percent(half)}"
    return f"n={cell.n}"


def _geomean_row(report: CampaignResults, name: str, means: dict[str, Geomean]) -> str:
    cells = []
    available = {row.name: row.available for row in report.environments}
    for env in report.results.environments:
        geomean = means.get(env)
        if env == report.baseline:
            cells.append('<td class="base">1 (reference)</td>')
        elif not functional.judged(report, env):
            cells.append(f'<td class="status">{_e(functional.LEFT_OUT)}</td>')
        elif geomean is None:
            text = "no ratio" if available.get(env) else \
                f"{STATUS_MARKS['unavailable']} unavailable"
            cells.append(f'<td class="status">{_e(text)}</td>')
        else:
            colour = shade(geomean.interval.value)
            detail = interval_text(geomean.interval)
            cells.append(f'<td class="heat" data-sort="{geomean.interval.value:.6g}" '
                         f'style="background:{colour.fill};color:{colour.ink}">'
                         f'{_e(format_ratio(geomean.interval.value))}'
                         + (f'<span class="ci">{_e(detail)}</span>' if detail else "")
                         + "</td>")
    one = next(iter(means.values()))
    covers = (f"over {one.workloads} of {one.of} rows (left out: {', '.join(one.left_out)})"
              if one.workloads < one.of else f"over its {one.of} rows")
    return (f'<tr class="keep geomean"><th scope="row">{_e(name)}<span class="metric">'
            f'{_e(covers)}</span></th>{"".join(cells)}</tr>')


def _legend(report: CampaignResults) -> str:
    swatches = "".join(f'<li><span class="swatch" style="background:{item.fill}"></span>'
                       f"{_e(item.label)}</li>" for item in SHADES)
    used = dict.fromkeys(status for row in report.results.cells.values()
                         for cell in row.values() for status, _ in cell.problems)
    marks = ", ".join(f"{STATUS_MARKS[status]} {status}" for status in used
                      if status in STATUS_MARKS)
    return (f'<div class="legend"><span>x {_e(report.baseline)}:</span><ul>{swatches}</ul>'
            + (f"<span>Marks: {_e(marks)}.</span>" if marks else "") + "</div>")


# -- the geometric means ---------------------------------------------------------------------

def geomean_chart(report: CampaignResults, headers: dict[str, str]) -> str:
    """Each environment's geometric-mean ratio over its workloads' primary metrics, a dot
    with a whisker over its interval, on a log axis with the baseline's 1 marked."""
    baseline = report.baseline
    available = {row.name: row.available for row in report.environments}
    dots = []
    rows = report.geomean_rows()
    for (group_name, means), env in ((row, env) for row in rows
                                     for env in report.results.environments):
        if env == baseline:
            continue
        geomean = means.get(env)
        platform = _facts(report, env).get("platform")
        name = functional.named(report, env, headers.get(env)) + (
            f" ({platform})" if platform else "") + (
            f", {group_name.removeprefix('geometric mean, ')}" if len(rows) > 1 else "")
        if not functional.judged(report, env):
            dots.append(svg.Dot(name, missing=f"{functional.LEFT_OUT}: functional figures only"))
            continue
        if geomean is None:
            why = "no ratio" if available.get(env) else \
                f"{STATUS_MARKS['unavailable']} unavailable"
            dots.append(svg.Dot(name, missing=why))
            continue
        interval = geomean.interval
        text = model.format_interval(interval)
        dots.append(svg.Dot(name, interval.value, interval.low, interval.high, text=text))
    caption = (f"Geometric mean per environment of the ratios above ({ratio_rule(baseline)}), "
               "with its 95% interval. " + model.geomean_caption(report))
    drawing = svg.dots(caption, f"x {baseline}", dots, log=True, reference=(1.0, f"= {baseline}"))
    return (f'<figure id="overview-geomeans" class="geomeans"><figcaption>{_e(caption)}'
            f"</figcaption>{drawing}</figure>")
