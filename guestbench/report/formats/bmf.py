"""The bmf format: the Bencher Metric Format, ``{benchmark: {measure: {value, lower_value,
upper_value}}}``, one entry per measured cell; the benchmark is ``ENVIRONMENT/WORKLOAD``,
the measure ``METRIC (UNIT)``, the value the median and the bounds its 95% interval
(``bencher run --adapter json``); a performance cell's p95 and p99, where it has the values
for them, are the measures ``METRIC p95 (UNIT)`` and ``METRIC p99 (UNIT)``, their bounds the
interval from order statistics where the values give one (dashboards.py)."""

from __future__ import annotations

import json
from typing import Any

from guestbench.analysis.results import CampaignResults
from guestbench.report.formats.request import Request
from guestbench.report.formats.dashboards import benchmark, measured, tails_of

MEASURE_MAX = 64  # Bencher's longest measure name


def report(results: CampaignResults, request: Request) -> str:
    return json.dumps(bmf(results), indent=2) + "\n"


def bmf(report: CampaignResults) -> dict[str, Any]:
    document: dict[str, dict[str, dict[str, float]]] = {}
    for cell in measured(report):
        metric: dict[str, float] = {"value": cell.stats.median}
        if cell.stats.ci_low is not None and cell.stats.ci_high is not None:
            metric["lower_value"], metric["upper_value"] = cell.stats.ci_low, cell.stats.ci_high
        measure = f"{cell.metric} ({cell.unit})"[:MEASURE_MAX]
        document.setdefault(benchmark(report, cell), {})[measure] = metric
        for told in tails_of(cell):
            figure: dict[str, float] = {"value": told.value}
            if told.low is not None:
                figure["lower_value"] = told.low
            if told.high is not None:
                figure["upper_value"] = told.high
            measure = f"{cell.metric} {told.name} ({cell.unit})"[:MEASURE_MAX]
            document[benchmark(report, cell)][measure] = figure
    return document
