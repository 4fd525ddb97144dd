"""What the CI dashboards' formats (bmf.py, github_action_benchmark.py) export: one entry per
measured cell (environment, workload, metric), the cells a dashboard alerts on: performance
figures, footprint and density memory (cells.is_memory: smaller is better), and success
rates (cells.is_success: a burst's share of instances ready, bigger is better); and a
performance cell's p95 and p99 where it has the values for them (tails.least_values: 20
and 100), each with its interval from order statistics, since a tail is what a user of a
start-up feels and a median alone hides it."""

from __future__ import annotations

from collections.abc import Iterator

from guestbench.analysis.cells import CONTEXT_METRICS, Cell, is_memory, is_success
from guestbench.analysis.tails import Tail, least_values, tail
from guestbench.analysis.results import CampaignResults
from guestbench.report import functional


def measured(report: CampaignResults) -> Iterator[Cell]:
    for (_label, metric), row in report.results.cells.items():
        if not metric or metric in CONTEXT_METRICS:
            continue
        for cell in row.values():
            # dashboards alert on these: performance figures, the memory an instance holds,
            # and how many of a burst's instances became ready
            if cell.stats is not None and (cell.is_performance or is_memory(cell)
                                           or is_success(cell)):
                yield cell


def benchmark(report: CampaignResults, cell: Cell) -> str:
    """ENVIRONMENT/WORKLOAD; "ENVIRONMENT §/WORKLOAD" for an environment of functional figures
    only (report/functional.py), whose figures are no finding to alert on."""
    return f"{functional.named(report, cell.environment)}/{cell.label}"


EXPORTED_TAILS = (0.95, 0.99)


def tails_of(cell: Cell) -> list[Tail]:
    """The cell's p95 and p99 where it has the values each needs; none for memory or a
    success rate, whose tail no one alerts on."""
    if not cell.is_performance:
        return []
    ordered = sorted(cell.values)
    return [tail(ordered, q) for q in EXPORTED_TAILS if len(ordered) >= least_values(q)]
