"""What the CI dashboards' formats (bmf.py, github_action_benchmark.py) export: one entry per
measured cell (environment, workload, metric), the cells a dashboard alerts on."""

from __future__ import annotations

from collections.abc import Iterator

from guestbench.analysis.cells import CONTEXT_METRICS, Cell
from guestbench.analysis.results import CampaignResults
from guestbench.report import functional


def measured(report: CampaignResults) -> Iterator[Cell]:
    for (_label, metric), row in report.results.cells.items():
        if not metric or metric in CONTEXT_METRICS:
            continue
        for cell in row.values():
            if cell.stats is not None and cell.is_performance:  # dashboards alert on these
                yield cell


def benchmark(report: CampaignResults, cell: Cell) -> str:
    """ENVIRONMENT/WORKLOAD; "ENVIRONMENT §/WORKLOAD" for an environment of functional figures
    only (report/functional.py), whose figures are no finding to alert on."""
    return f"{functional.named(report, cell.environment)}/{cell.label}"
