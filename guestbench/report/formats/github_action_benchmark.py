"""The github-action-benchmark format: the custom tools' entries (``name``, ``value``, ``unit``,
``range``, ``extra``), one per measured cell, one list per direction, in one document:
``{"customSmallerIsBetter": [...], "customBiggerIsBetter": [...]}``. The action reads one
list per file, so a workflow splits it: ``jq .customSmallerIsBetter`` (examples/ci/)."""

from __future__ import annotations

import json
from typing import Any

from guestbench.analysis.cells import is_success
from guestbench.analysis.results import CampaignResults
from guestbench.report.formats.request import Request
from guestbench.report import functional
from guestbench.report.formats.dashboards import benchmark, measured, tails_of


def report(results: CampaignResults, request: Request) -> str:
    return json.dumps(github_action_benchmark(results), indent=2) + "\n"


def github_action_benchmark(report: CampaignResults) -> dict[str, list[dict[str, Any]]]:
    smaller: list[dict[str, Any]] = []
    bigger: list[dict[str, Any]] = []
    said = functional.sentences(report)
    for cell in measured(report):
        stats = cell.stats
        known = stats.ci_low is not None and stats.ci_high is not None
        flags = f", flags: {', '.join(stats.flags)}" if stats.flags else ""
        spread = f"; cv {stats.cv:.3g}" if stats.cv is not None else ""
        if cell.environment in said:
            ran = functional.what_ran(report, cell.environment)
            flags += (f"; {functional.MARK} functional figures only"
                      f"{f' ({ran})' if ran else ''}: {said[cell.environment]}")
        (bigger if cell.higher_is_better or is_success(cell) else smaller).append({
            "name": f"{benchmark(report, cell)} {cell.metric}",
            "value": stats.median, "unit": cell.unit,
            **({"range": f"[{stats.ci_low:.6g}, {stats.ci_high:.6g}] (95% CI)"} if known else {}),
            "extra": (f"campaign {report.campaign.id}; runs x values "
                      f"{stats.count_text}{spread}{flags}")})
        for told in tails_of(cell):  # a tail: as the median, in its own series
            bounds = ", ".join("?" if end is None else f"{end:.6g}"
                               for end in (told.low, told.high))
            (bigger if cell.higher_is_better else smaller).append({
                "name": f"{benchmark(report, cell)} {cell.metric} {told.name}",
                "value": told.value, "unit": cell.unit,
                "range": f"[{bounds}] (95% CI, order statistics; ?: not bounded)",
                "extra": (f"campaign {report.campaign.id}; {told.name} of "
                          f"{len(cell.values)} values{flags}")})
    return {"customSmallerIsBetter": smaller, "customBiggerIsBetter": bigger}
