"""The terminal's first answer: one table of every environment that ran.

A row per workload (its primary metric); the baseline's column absolute (median ±half its
95% interval), every other column its ratio to the baseline under the one rule (x baseline,
above 1 is worse, rates inverted), with one-character marks and a one-line legend. What
could not run at all is one line under the table, not a column of marks. The layout is the
widest of three that fits the terminal: ratios with their intervals, ratios alone, then
shorter labels and no interval on the baseline; a terminal narrower than that wraps columns.
"""

from __future__ import annotations

from dataclasses import dataclass

from guestbench.analysis.geomean import Geomean
from guestbench.analysis.results import CampaignResults
from guestbench.analysis.cells import Interval, PERFORMANCE, VERDICT, Cell, row_kind
from guestbench.report import columns, functional, titles
from guestbench.report.model import (FLAG_MEANINGS, STATUS_MARKS, Footnotes, Table, empty_text, format_percent,
                                     format_ratio, format_value, geomean_caption,
                                     parameter_notes, ratio_rule,
                                     row_scale, spread_line, table_bytes, title,
                                     too_fast_text)

# One character per flag; flags of one meaning share their mark.
FLAG_MARKS = {"unstable": "!", "multimodal": "~", "clock-drift": "c", "console-latency": "c",
              "vmm-exit": "v"}
MARK_MEANINGS = {
    "!": "runs vary far more than the campaign's typical cell",
    "~": "runs form two clusters",
    "c": "clock suspect (clock-drift or console-latency)",
    "v": "the VMM exited with an error after the guest's agent had ended",
}
# A ratio's tone, for colour where the terminal has it: (upper bound, tone), first that holds.
TONES = ((0.95, "better"), (1.05, "same"), (2.0, "worse"), (10.0, "much-worse"),
         (float("inf"), "far-worse"))


@dataclass(frozen=True)
class Layout:
    """How much each cell says: the widest layout that fits is chosen."""

    intervals: bool  # ratios with their [low-high]
    baseline_spread: bool  # the baseline's ±half-width
    long_labels: bool  # "STREAM triad (MB/s, inverted)" rather than "STREAM triad (MB/s)"
    counts: bool  # a geometric mean over fewer workloads says "(8/9)", else "*" and a line


LAYOUTS = (Layout(True, True, True, True), Layout(False, True, True, True),
           Layout(False, False, False, False))


def summary_table(report: CampaignResults, width: int | None = None) -> Table:
    """The summary for a terminal of `width` columns (None: the normal layout)."""
    if width is None:
        return _build(report, LAYOUTS[1])
    for layout in LAYOUTS:
        table = _build(report, layout)
        if table_bytes(table) <= width:
            return table
    return table  # the narrowest; the terminal wraps its columns


def _build(report: CampaignResults, layout: Layout) -> Table:
    results, baseline = report.results, report.baseline
    ratios = report.baseline_measured
    shown = [env for env in results.environments if _measured(report, env)]
    footnotes = Footnotes()
    what = (f"{baseline}: median ±95% CI; the others: {ratio_rule(baseline)}" if ratios
            else "median ±95% CI")
    table = Table(title(report, "Summary"), ["workload", *(
        functional.named(report, env) for env in shown)], [], label_columns=1,
                  name="summary", note=what + ". Every metric, the intervals of ratios and "
                  "the statistics: report --detail, or --format markdown|html|json.")
    table.tones = []
    everywhere = environment_flags(report, shown)
    used: dict[str, None] = {}
    for label, metric, unit in results.rows:
        if metric != report.primary.get(label, ""):
            continue  # not the primary metric; "" rows: labels whose runs gave no values
        row = results.cells[(label, metric)]
        shown_unit, divisor = row_scale(unit, list(row.values()))  # as every table
        base = row.get(baseline) if ratios else None
        # verdicts and context figures are never divided: their row stays absolute
        absolute = base is None or not base.values or row_kind(row) != PERFORMANCE
        texts, tones = [], []
        for env in shown:
            cell = row[env]
            marks = marks_of(cell, everywhere.get(env, set()), used)
            if not absolute and env != baseline:
                text, tone = _ratio_text(cell, base, report.ratios.get((label, metric, env)),
                                         layout, footnotes)
                if cell.values and not functional.judged(report, env):
                    marks += functional.ratio_mark(report, env)  # shown, never coloured
                    tone = None
            else:
                text, tone = _absolute_text(cell, divisor, layout, footnotes), None
                if cell.values:  # a figure of functional figures only says so, as ratios do
                    marks += functional.mark(report, env)
            texts.append(text + marks)
            tones.append(tone)
        table.add([_row_label(report, label, metric, shown_unit, row[shown[0]] if shown else None,
                              layout, absolute), *texts],
                  [(env, label) for env in shown])
        table.tones.append(tones)
    for name, means in report.geomean_rows() if ratios else ():
        table.add([name, *(_geomean_text(report, env, means, layout) for env in shown)])
        table.tones.append([None if env == baseline else _tone(means[env].interval.value)
                            if env in means else None for env in shown])
    if ratios and report.geomeans and (len(report.geomeans) > 1 or any(
            mean.workloads < mean.of for means in report.geomeans.values()
            for mean in means.values())):  # the rows it covers, where not simply all
        table.note += " " + geomean_caption(report)
    table.footnotes = functional.legend(report, shown) + legend(used) + footnotes.lines() + \
        environment_lines(report, everywhere) + _not_run_lines(report, shown)
    differing = parameter_notes(report)
    if differing:
        table.note += " " + differing
    return table


def _measured(report: CampaignResults, env: str) -> bool:
    """Whether an environment gave any value: one that gave none is listed under the table."""
    return any(row[env].values or row[env].too_fast for row in report.results.cells.values())


def _row_label(report: CampaignResults, label: str, metric: str, unit: str, cell: Cell | None,
               layout: Layout, absolute: bool) -> str:
    """"getpid (ns)", "STREAM triad (MB/s, inverted)": the workload, the metric where it is
    not the workload's time per operation, and the unit the baseline's column is in."""
    name = titles.label_title(report, label)
    if metric and metric != "time_per_op":
        metric_title = titles.metric_title(report, label, metric)
        if unit in ("MB/s", "MiB/s", "GB/s") and metric_title.split()[-1:] == ["bandwidth"]:
            metric_title = metric_title[:-len("bandwidth")].strip()  # the unit says it
        if metric_title and metric_title not in name:
            name = f"{name} {metric_title}"
    inverted = cell is not None and cell.higher_is_better and not absolute
    suffix = ", inverted" if inverted and layout.long_labels else ""
    if cell is not None and cell.kind == VERDICT:
        return f"{name} (verdict)"
    if absolute and cell is not None and cell.kind == PERFORMANCE:
        suffix += ", absolute"  # no baseline value to divide by
    return f"{name} ({unit}{suffix})" if metric else f"{name} (no values)"


def _ratio_text(cell: Cell, base: Cell, ratio: Interval | None, layout: Layout,
                footnotes: Footnotes) -> tuple[str, str | None]:
    if not cell.values:
        return _problems(cell, footnotes) or empty_text(cell), None
    if cell.too_fast or base.too_fast:
        return "+++++", None
    if ratio is None:
        return "-", None
    text = _ratio_shown(ratio, layout)
    problems = _problems(cell, footnotes)
    return (f"{text} {problems}" if problems else text), _tone(ratio.value)


def _ratio_shown(ratio: Interval, layout: Layout) -> str:
    """"2.45x", or with the layout's intervals "2.45x [2.38-2.52]"."""
    text = format_ratio(ratio.value)
    if layout.intervals and ratio.low is not None and ratio.high is not None:
        text += f" [{format_ratio(ratio.low).rstrip('x')}-{format_ratio(ratio.high).rstrip('x')}]"
    return text


def _absolute_text(cell: Cell, divisor: float, layout: Layout, footnotes: Footnotes) -> str:
    if not cell.values:
        return _problems(cell, footnotes) or empty_text(cell)
    if cell.kind == VERDICT:
        yes = sum(1 for value in cell.values if value >= 1)
        text = "yes" if yes == len(cell.values) else "no" if yes == 0 else \
            f"yes {yes}/{len(cell.values)}"
        problems = _problems(cell, footnotes)
        return f"{text} {problems}" if problems else text
    if cell.too_fast:
        return too_fast_text(cell, divisor)
    text = format_value(cell.median / divisor)
    half_width = cell.stats.half_width if cell.stats else None
    if layout.baseline_spread and half_width is not None:
        text += f" ±{format_percent(half_width)}"
    problems = _problems(cell, footnotes)
    return f"{text} {problems}" if problems else text


def _problems(cell: Cell, footnotes: Footnotes) -> str:
    """The marks of a cell's failed runs and their footnote: "∅ [1]", "✗x2 [3]"."""
    if not cell.problems:
        return ""
    counts: dict[str, int] = {}
    for status, _reason in cell.problems:
        counts[status] = counts.get(status, 0) + 1
    marks = "".join(STATUS_MARKS.get(status, "?") + (f"x{count}" if count > 1 else "")
                    for status, count in counts.items())
    numbers = footnotes.mark(Cell(cell.environment, cell.label, cell.metric, cell.unit,
                                  problems=cell.problems))
    return f"{marks} {numbers}"


def marks_of(cell: Cell, environment_wide: set[str], used: dict[str, None]) -> str:
    """The cell's one-character flag marks ("!", "~", "c"), those of its environment's every
    cell left to the line under the table; each mark used is remembered for the legend."""
    marks = dict.fromkeys(FLAG_MARKS[name] for name in cell.flag_names
                          if name in FLAG_MARKS and name not in environment_wide)
    used.update(marks)
    return (" " + "".join(marks)) if marks else ""


def environment_flags(report: CampaignResults, shown: list[str]) -> dict[str, set[str]]:
    """Per environment, the flags every one of its measured primary cells carries (UML's
    clock marks all arriving late, every one of its cells varying widely): a property of
    the environment on this host, said once instead of on every cell."""
    out = {}
    for env in shown:
        cells = [report.results.cells[(label, metric)][env]
                 for label, metric in report.primary.items()
                 if report.results.cells[(label, metric)][env].values]
        common = set.intersection(*(set(cell.flag_names) for cell in cells)) \
            if len(cells) > 1 else set()
        common &= set(FLAG_MARKS)
        if common:
            out[env] = common
    return out


def environment_lines(report: CampaignResults, flags: dict[str, set[str]]) -> list[str]:
    return [f"{env}: every cell {name}: {FLAG_MEANINGS.get(name, name)}"
            for env, names in flags.items() for name in sorted(names)]


def legend(used: dict[str, None]) -> list[str]:
    if not used:
        return []
    return ["Flags: " + "; ".join(f"{mark} {MARK_MEANINGS[mark]}" for mark in used) + "."]


def _not_run_lines(report: CampaignResults, shown: list[str]) -> list[str]:
    """Environments that gave no value at all, in one line, each with its reason; those
    whose runs were all fine but measure nothing the table shows (hang) apart."""
    missing = [env for env in report.results.environments if env not in shown]
    names = {env.id: env.name for env in report.environments}
    ran_ok = {names.get(run.environment_id) for run in report.runs
              if run.status == "ok"}
    parts, quiet = [], []
    for env in missing:
        reasons = dict.fromkeys((status, " ".join(reason.split())) for row in
                                report.results.cells.values() for status, reason in
                                row[env].problems)
        if not reasons and env in ran_ok:
            quiet.append(env)
            continue
        said = "; ".join(f"{STATUS_MARKS.get(status, '')} {status}: {reason}".strip()
                         for status, reason in list(reasons)[:2]) or "no run"
        parts.append(f"{env} ({said})")
    lines = ["Could not run here: " + ", ".join(parts) + "."] if parts else []
    if quiet:
        lines.append("Ran, with no value to show: " + ", ".join(quiet) +
                     " (their workloads measure nothing here, as hang).")
    return lines


def _geomean_text(report: CampaignResults, env: str, means: dict[str, Geomean],
                  layout: Layout) -> str:
    if env == report.baseline:
        return "1"
    if not functional.judged(report, env):
        return functional.LEFT_OUT
    geomean = means.get(env)
    if geomean is None:
        return "-"
    return _ratio_shown(geomean.interval, layout)


def _tone(ratio: float) -> str:
    return next(tone for bound, tone in TONES if ratio < bound)


def view(report: CampaignResults, width: int | None = None) -> list[Table]:
    """The summary view: one table of every environment that ran, per workload its primary
    metric, the baseline absolute and the others as a ratio to it, the campaign's typical
    spread said once above it; sized for a terminal `width` columns wide."""
    table = summary_table(report, width)
    table.lead = spread_line(report)
    return columns.present([table], report)
