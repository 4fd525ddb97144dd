"""JSON: every raw sample with its run, environment spec, host facts, cell statistics and flags."""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from typing import Any

from guestbench import __version__
from guestbench.analysis.cells import UNSTABLE_CV
from guestbench.analysis.stats import CONFIDENCE, OUTLIER_IQR
from guestbench.analysis.compare import Comparison
from guestbench.analysis.history import History
from guestbench.analysis.results import RATIO_RULE, CampaignResults
from guestbench.host import host_class
from guestbench.plan import catalogue
from guestbench.report import functional, select
from guestbench.report.formats.request import Request
from guestbench.report.tables import comparison as compared, history as trend
from guestbench.report.tables.platform import what_ran

# Bump when a key is removed, renamed or changes meaning; a new key is added without a
# bump (readers ignore keys they do not know). docs/results.md keeps the history.
JSON_SCHEMA_VERSION = 4


def document(report: CampaignResults) -> dict[str, Any]:
    by_run = defaultdict(list)
    for sample in report.samples:
        by_run[sample.run_id].append(
            {"metric": sample.metric, "unit": sample.unit, "value": sample.value})
    campaign = report.campaign
    said = functional.sentences(report)
    return {
        "schema": "guestbench-results",
        "schema_version": JSON_SCHEMA_VERSION,
        "generated_by": f"guestbench {__version__}",
        "campaign": {
            "id": campaign.id, "name": campaign.name, "status": campaign.status,
            "created_at": campaign.created_at.isoformat(),
            "finished_at": campaign.finished_at.isoformat() if campaign.finished_at else None,
            "guestbench_version": campaign.guestbench_version,
            "baseline": report.baseline, "plan": campaign.plan, "log_dir": campaign.log_dir,
            "end_reason": campaign.end_reason,
        },
        "host": campaign.host_facts,
        # the host's class (CPU vendor and model, XSAVE, LLC, cgroup mode, kernel, VM): what a
        # comparison across hosts is judged by; a fact the campaign did not record is null
        "host_class": host_class(campaign.host_facts or {}).document(),
        "host_checks": report.host_checks,
        # every ratio_to_baseline and geometric mean of this document reads this way
        "ratio_rule": RATIO_RULE.replace("baseline", report.baseline or "baseline"),
        "statistics": {"confidence": CONFIDENCE, "bootstrap_resamples": report.resamples,
                       "method": "percentile bootstrap of the median: runs, then values within runs",
                       "unstable_cv": UNSTABLE_CV, "outlier_iqr": OUTLIER_IQR},
        "environments": [
            {"name": env.name, "kind": env.kind, "spec": env.spec,
             "available": env.available, "probe": env.probe,
             "facts": env.facts or {},
             # what ran, in the words of the HTML system card and the platform table
             "version": what_ran(env, campaign.host_facts.get("kernel")),
             # only where its figures are functional only: why (report/functional.py)
             **({"functional": said[env.name]} if env.name in said else {})}
            for env in report.environments],
        "runs": [
            {"id": run.id, "environment": run.environment, "workload": run.workload,
             "label": run.label, "params": run.params, "repetition": run.repetition,
             "status": run.status, "reason": run.reason, "flags": run.flags,
             "started_at": run.started_at.isoformat(), "host_seconds": run.host_seconds,
             "log_path": run.log_path, "samples": by_run.get(run.id, [])}
            for run in report.runs],
        "cells": cells(report),
        # the campaign's geometric means, one set per kind of measure (analysis/geomean.py);
        # none of an environment whose ratios are no finding (functional.judged)
        "geometric_means": [
            {"group": group, "workloads": [*next(iter(means.values())).labels],
             "left_out": [*next(iter(means.values())).left_out],
             "of": next(iter(means.values())).of,
             "environments": {env: {"slowdown": mean.interval.value,
                                    "ci": [mean.interval.low, mean.interval.high]}
                              for env, mean in means.items()}}
            for group, means in report.geomeans.items()],
        "repetition_stops": [_plain(dataclasses.asdict(stop)) for stop in report.cell_stops],
        # the start-up, footprint, density, burst, snapshot and network tables as published:
        # their text, and beside it, per row and value column, the figure as numbers
        # ({statistic, value, low, high, unit}; null where the text is no figure)
        "tables": [{"name": table.name, "title": table.title, "header": table.header,
                    "label_columns": table.label_columns, "rows": table.rows,
                    "figures": table.numbers, "note": table.note}
                   for table in select.with_data(report, catalogue.VMM_TABLES)],
    }


def cells(report: CampaignResults) -> list[dict[str, Any]]:
    """Every cell's statistics, flags, problems and ratio to the baseline."""
    out = []
    unjudged = {env for env in report.results.environments
                if env != report.baseline and not functional.judged(report, env)}
    for (label, metric), row in report.results.cells.items():
        if not metric:
            continue
        for env, cell in row.items():
            described = cell.stats
            ratio = report.ratios.get((label, metric, env))
            out.append({
                "environment": env, "label": label, "metric": metric, "unit": cell.unit,
                "primary": report.primary.get(label) == metric,
                "n": cell.n, "runs": cell.runs, "run_ids": cell.run_ids,
                "values_per_run": cell.sizes,
                "statistics": None if described is None else {
                    "median": described.median, "mean": described.mean,
                    "min": described.minimum, "max": described.maximum,
                    "stdev": described.stdev, "cv": described.cv,
                    "ci": [described.ci_low, described.ci_high],
                    "outliers": described.outliers},
                "flags": cell.flag_names,
                "problems": [{"status": status, "reason": reason}
                             for status, reason in cell.problems],
                "ratio_to_baseline": None if ratio is None else {
                    "value": ratio.value, "ci": [ratio.low, ratio.high],
                    # a ratio of or to functional figures only: shown, no finding
                    **({"functional": True} if env in unjudged else {})},
            })
    return out


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {key: value.isoformat() if hasattr(value, "isoformat") else value
            for key, value in row.items()}


# Beyond this many samples the document is written compact: indentation makes
# json use its pure-Python encoder, ~5 s for a 500,000-sample campaign.
INDENT_LIMIT = 100_000


def render(report: CampaignResults) -> str:
    indent = 2 if len(report.samples) <= INDENT_LIMIT else None
    return json.dumps(document(report), indent=indent) + "\n"


def report(results: CampaignResults, request: Request) -> str:
    return render(results)


def compare(comparison: Comparison, request: Request) -> str:
    return json.dumps(compared.document(comparison), indent=2) + "\n"


def history(found: History, request: Request) -> str:
    return json.dumps(trend.document(found), indent=2) + "\n"
