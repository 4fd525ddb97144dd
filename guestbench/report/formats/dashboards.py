"""Exports for CI dashboards, one entry per measured cell (environment, workload, metric):

* ``bmf``: the Bencher Metric Format, ``{benchmark: {measure: {value, lower_value,
  upper_value}}}``; the benchmark is ``ENVIRONMENT/WORKLOAD``, the measure ``METRIC (UNIT)``,
  the value the median and the bounds its 95% interval (``bencher run --adapter json``).
* ``github-action-benchmark``: github-action-benchmark's custom tools' entries
  (``name``, ``value``, ``unit``, ``range``, ``extra``), one list per direction, in one
  document: ``{"customSmallerIsBetter": [...], "customBiggerIsBetter": [...]}``. The action
  reads one list per file, so a workflow splits it: ``jq .customSmallerIsBetter``
  (examples/ci/).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from guestbench.analysis.cells import CONTEXT_METRICS, Cell
from guestbench.analysis.results import CampaignResults

MEASURE_MAX = 64  # Bencher's longest measure name


def _measured(report: CampaignResults) -> Iterator[Cell]:
    for (_label, metric), row in report.results.cells.items():
        if not metric or metric in CONTEXT_METRICS:
            continue
        for cell in row.values():
            if cell.stats is not None and cell.is_performance:  # dashboards alert on these
                yield cell


def bmf(report: CampaignResults) -> dict[str, Any]:
    document: dict[str, dict[str, dict[str, float]]] = {}
    for cell in _measured(report):
        metric: dict[str, float] = {"value": cell.stats.median}
        if cell.stats.ci_low is not None and cell.stats.ci_high is not None:
            metric["lower_value"], metric["upper_value"] = cell.stats.ci_low, cell.stats.ci_high
        measure = f"{cell.metric} ({cell.unit})"[:MEASURE_MAX]
        document.setdefault(f"{cell.environment}/{cell.label}", {})[measure] = metric
    return document


def github_action_benchmark(report: CampaignResults) -> dict[str, list[dict[str, Any]]]:
    smaller: list[dict[str, Any]] = []
    bigger: list[dict[str, Any]] = []
    for cell in _measured(report):
        stats = cell.stats
        entry = {"name": f"{cell.environment}/{cell.label} {cell.metric}",
                 "value": stats.median, "unit": cell.unit}
        if stats.ci_low is not None and stats.ci_high is not None:
            entry["range"] = f"[{stats.ci_low:.6g}, {stats.ci_high:.6g}] (95% CI)"
        flags = f", flags: {', '.join(stats.flags)}" if stats.flags else ""
        spread = f"; cv {stats.cv:.3g}" if stats.cv is not None else ""
        entry["extra"] = (f"campaign {report.campaign['id']}; runs x values "
                          f"{stats.count_text}{spread}{flags}")
        (bigger if cell.higher_is_better else smaller).append(entry)
    return {"customSmallerIsBetter": smaller, "customBiggerIsBetter": bigger}


def render_bmf(report: CampaignResults) -> str:
    return json.dumps(bmf(report), indent=2) + "\n"


def render_github_action_benchmark(report: CampaignResults) -> str:
    return json.dumps(github_action_benchmark(report), indent=2) + "\n"
