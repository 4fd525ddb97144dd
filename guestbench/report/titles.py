"""Display titles in tables: "malloc 1 MiB" for malloc_1mib, "cycles per op" for tsc_per_op.

Stored names stay what they are (JSON, CSV, the store, plans); tables a person reads show
each workload's title (Workload.title) and each metric's (Workload.metric_title). Applied
to finished tables in one pass (apply), like the short column headers, so that no table
builder needs to know.
"""

from __future__ import annotations

import re

from guestbench.analysis.results import CampaignResults
from guestbench.report.model import Table

METRIC_COLUMNS = ("metric", "verdict")
NOT_LABELS = ("environment", "column", "kernel", "check", "phase")
_METRIC_CELL = re.compile(r"^(?P<metric>[A-Za-z0-9_.-]+)(?P<rest>( \(.*\))?)$")


def label_title(report: CampaignResults, label: str) -> str:
    """A row label with its workload's title for the workload's name ("STREAM [array_mib=32]");
    a label the plan gave (label = "...") stays as given."""
    return report.label_titles.get(label, label)


def metric_title(report: CampaignResults, label: str, metric: str) -> str:
    """A metric by its title ("TSC per op"), or as stored where no workload names it."""
    return report.metric_titles.get(label, {}).get(metric, metric)


def apply(tables: list[Table], report: CampaignResults) -> None:
    labels = {run.label for run in report.runs}
    for table in tables:
        # a table with a column per workload (% of the baseline) heads it with the title
        table.header = [label_title(report, cell) if cell in labels else cell
                        for cell in table.header]
        columns = range(min(table.label_columns, len(table.header)))
        label_at = next((index for index in columns
                         if table.header[index] not in (*METRIC_COLUMNS, *NOT_LABELS)), None)
        for row in table.rows:
            label = row[label_at] if label_at is not None and label_at < len(row) else None
            for index in columns:
                if index >= len(row):
                    continue
                if table.header[index] in METRIC_COLUMNS and label is not None:
                    row[index] = _metric_cell(report, label, row[index])
                elif index == label_at:
                    row[index] = label_title(report, row[index])


def _metric_cell(report: CampaignResults, label: str, text: str) -> str:
    found = _METRIC_CELL.match(text)
    if not found or label not in report.metric_titles:
        return text
    return metric_title(report, label, found.group("metric")) + found.group("rest")
