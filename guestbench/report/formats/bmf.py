"""The bmf format: the Bencher Metric Format, ``{benchmark: {measure: {value, lower_value,
upper_value}}}``, one entry per measured cell; the benchmark is ``ENVIRONMENT/WORKLOAD``,
the measure ``METRIC (UNIT)``, the value the median and the bounds its 95% interval
(``bencher run --adapter json``)."""

from __future__ import annotations

import json
from typing import Any

from guestbench.analysis.results import CampaignResults
from guestbench.report.formats.request import Request
from guestbench.report.formats.dashboards import benchmark, measured

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
    return document
