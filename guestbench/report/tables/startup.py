"""The start-up table, as sandbox and microVM vendors publish it: per environment, the time
to the agent's hello and the teardown (and an OCI runtime's create, start and delete),
absolute, in one unit per metric, with p50, p90, p95 and p99 and their 95% intervals once a
cell has 30 runs (analysis/tails.py); with fewer, the median and its interval alone."""

from __future__ import annotations

from guestbench.analysis.results import CampaignResults
from guestbench.analysis.tails import QUANTILES, TAIL_RUNS, Tail, least_values, tails
from guestbench.report import functional, titles
from guestbench.report.model import (STYLE, Footnotes, Table, figure, format_value,
                                     median_figure, median_text, value_scale)

# the start-up metrics, in the order a start goes (workloads/instance.py)
METRICS = ("start_ready", "start_create", "start_start", "start_teardown", "start_delete",
           "density_start")
NO_END = "?"  # an interval end the values do not bound (a p99 of 30 runs)


def startup_tables(report: CampaignResults, footnotes: Footnotes) -> list[Table]:
    """One table per start-up workload (a sweep's each value: start [steps=one]), so that
    each fits a terminal: a row per metric and environment."""
    results = report.results
    labels = list(dict.fromkeys(label for label, metric, _unit in results.rows
                                if metric in METRICS))
    return [table for table in (_table(report, label, position)
                                for position, label in enumerate(labels)) if table is not None]


def _table(report: CampaignResults, label: str, position: int) -> Table | None:
    results = report.results
    rows = [metric for row_label, metric, _unit in results.rows
            if row_label == label and metric in METRICS]
    names = [f"p{quantile * 100:g}" for quantile in QUANTILES]
    title = titles.label_title(report, label)
    # the start workload's own title is "start-up": not "Start-up of start-up"
    head = ("S" + title[1:] if title.startswith("start-up") else f"Start-up of {title}")
    table = Table(f"{head}: time per instance, with its percentiles",
                  ["metric", "environment", "runs", *names], [], label_columns=2,
                  name="startup" if position == 0 else f"startup-{position + 1}",
                  note=f"p50 is the median with its 95% interval, as in every table; p90, p95 "
                       f"and p99 are the values' percentiles (one definition for all, "
                       f"docs/statistics.md) with 95% intervals from order statistics; a "
                       f"cell with fewer than {TAIL_RUNS} runs gives its median and interval "
                       f"alone, and a percentile needs that many runs (p99: 100): 'needs "
                       f"100' where a cell has fewer. '{NO_END}': the runs do not bound that "
                       "end (an upper bound needs 35 runs for p90, 72 for p95, 368 for p99).")
    unbounded = False
    for metric in rows:
        row = results.cells[(label, metric)]
        unit, divisor = value_scale(next(iter(row.values())).unit, [
            cell.median for cell in row.values() if cell.median is not None])
        for env, cell in row.items():
            if not cell.values:
                continue
            found = tails(cell.values)
            numbers = [median_figure(cell)] + [None] * (len(names) - 1)
            if found is None:
                texts = [median_text(cell, divisor)] + ["-"] * (len(names) - 1)
            else:  # a percentile its count cannot be (p99 of 30 runs: their largest) is not told
                told = [tail for tail in found if len(cell.values) >= least_values(tail.quantile)]
                # p50 is the cell's median with its interval, as in every other table
                texts = [median_text(cell, divisor) if tail.quantile == 0.5
                         else _tail(tail, divisor) if tail in told
                         else f"needs {least_values(tail.quantile)}" for tail in found]
                numbers[1:] = [figure(tail.value, tail.low, tail.high, cell.unit, tail.name)
                               if tail in told else None for tail in found[1:]]
                unbounded |= any(tail.high is None or tail.low is None for tail in told)
            table.add([f"{titles.metric_title(report, label, metric)} ({unit})",
                       functional.named(report, env),
                       str(cell.runs or len(cell.values)), *texts],
                      [None] + [(env, label)] * len(names), [None, *numbers])
    if not table.rows:
        return None
    if not unbounded:
        table.note = table.note.split(f" '{NO_END}':")[0]
    return table


def _tail(tail: Tail, divisor: float) -> str:
    if STYLE.get().plain and not STYLE.get().spread:  # a plain table: values only
        return format_value(tail.value / divisor)
    low = NO_END if tail.low is None else format_value(tail.low / divisor)
    high = NO_END if tail.high is None else format_value(tail.high / divisor)
    return f"{format_value(tail.value / divisor)} [{low}-{high}]"
