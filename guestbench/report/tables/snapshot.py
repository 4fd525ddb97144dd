"""The snapshot table, as microVM and sandbox teams publish it: per environment, a cold start
beside a restore from a snapshot (p50 and p99), the save and the image's size, and the first
write to a page after the restore (per page p50 and p99). A cell's p50 is the median of its
values with its interval; a p99 is told where the values support one (analysis/tails.py:
100 of them), and says how many it needs where they do not."""

from __future__ import annotations

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.analysis.tails import least_values, quantile, tail
from guestbench.report import functional
from guestbench.report.model import (Footnotes, Table, decorate, figure, format_value,
                                     median_figure, median_text, problem_text, too_fast_text,
                                     value_scale)

P99 = 0.99
# (figure, workload, metric, what the cell shows): the rows, in the order a reader compares
ROWS = (("cold start p50", "start", "start_ready", "median"),
           ("cold start p99", "start", "start_ready", "p99"),
           ("restore p50", "restore", "restore", "median"),
           ("restore p99", "restore", "restore", "p99"),
           ("save", "snapshot_create", "snapshot_create", "median"),
           ("image", "snapshot_create", "snapshot_size", "median"),
           ("first touch p50", "restore_first_touch", "restore_touch_p50", "median"),
           ("first touch p99", "restore_first_touch", "restore_touch_p99", "median"))
SNAPSHOT_WORKLOADS = ("snapshot_create", "restore", "restore_first_touch")


def snapshot_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """A column per environment, a row per figure the campaign measured somewhere."""
    labels = first_labels(report)
    if not any(workload in labels for workload in SNAPSHOT_WORKLOADS):
        return None
    results = report.results
    envs = [env for env in results.environments
            if any(results.cells.get((labels[workload], metric), {}).get(env) is not None
                   for workload in SNAPSHOT_WORKLOADS if workload in labels
                   for _h, w, metric, _s in ROWS if w == workload)]
    table = Table("Snapshots: a cold start against a restore, the save and the first touch",
                  ["figure", *(functional.named(report, env) for env in envs)], [],
                  label_columns=1, name="snapshot",
                  note="Cold start: `start`, from asking for an instance to its agent's hello. "
                       "Restore: from asking for a restore to the restored agent's first "
                       "record, which proves it is the process saved, with its memory. Save: "
                       "the instance's state written (QEMU's migration, the runtime's "
                       "checkpoint, the VMM's snapshot request); image: its size on the host's disk (runsc compresses "
                       "it). First touch: the first write to each page of the agent's memory "
                       "after the restore; its p50 and p99 are over the pages of one restore "
                       "(thousands), then the median over the runs. Each p50: the median of "
                       "the values [95% interval]; a cold start's or a restore's p99 needs 100 "
                       "values ('needs 100' where there are fewer).")
    for header, workload, metric, shown in ROWS:
        row = results.cells.get((labels.get(workload, ""), metric))
        if not row:
            continue
        unit, divisor = value_scale(next(iter(row.values())).unit, [
            cell.median for cell in row.values() if cell.median is not None])
        table.add([f"{header} ({unit})",
                   *(_text(row.get(env), shown, divisor, footnotes) for env in envs)],
                  [(env, labels[workload]) for env in envs],
                  [_number(row.get(env), shown) for env in envs])
    return table if table.rows else None


def first_labels(report: CampaignResults) -> dict[str, str]:
    """workload -> its first label in the campaign (a sweep's first value): the one the
    snapshot table and plot show."""
    found: dict[str, str] = {}
    for label, workload in report.workload_of.items():
        found.setdefault(workload, label)
    return found


def _number(cell: Cell | None, shown: str) -> dict | None:
    """The figure _text() shows, as numbers: a p99 where the values tell one, with its
    interval from order statistics; else the median's."""
    if shown != "p99":
        return median_figure(cell)
    if cell is None or len(cell.values) < least_values(P99):
        return None
    told = tail(sorted(cell.values), P99)
    return figure(told.value, told.low, told.high, cell.unit, told.name)


def _text(cell: Cell | None, shown: str, divisor: float, footnotes: Footnotes) -> str:
    if cell is None:
        return "-"
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else "-"
    if shown == "p99":
        if len(cell.values) < least_values(P99):
            return f"needs {least_values(P99)}"
        return format_value(quantile(sorted(cell.values), P99) / divisor)
    if cell.too_fast:  # the clock's own step (30 ns, every run): no figure to give
        return decorate(too_fast_text(cell, divisor), cell, footnotes)
    return decorate(median_text(cell, divisor), cell, footnotes)
