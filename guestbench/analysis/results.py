"""A campaign's results as every view reads them: cells with their statistics, each
environment's ratio to the baseline under the one rule, and geometric means.

The one ratio rule (docs/reading-results.md): a ratio is "x baseline, above 1 is worse".
For a cost (ns, cycles, s) it is median(environment) / median(baseline); for a rate (MB/s,
IOPS: higher is better) it is inverted, median(baseline) / median(environment), so 2.0 means
half the baseline's bandwidth. Nothing outside this package divides one cell by another.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from guestbench.analysis import geomean
from guestbench.analysis.cells import (CONTEXT_METRICS, PERFORMANCE, RESAMPLES, Cell,
                                       Interval, Results, row_kind, slowdown_pair)
from guestbench.analysis.geomean import Geomean

if TYPE_CHECKING:  # numpy loads only where results are derived
    from guestbench.store.columns import Samples

from guestbench.store.records import FUNCTIONAL, Campaign, Environment, Run, StoredCellStop

RATIO_RULE = "x baseline, above 1 is worse (rates inverted)"


@dataclass(frozen=True)
class CampaignResults:
    """Everything a view may show of one campaign, derived once from its stored samples."""

    campaign: dict[str, Any]
    environments: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    samples: Samples | None  # None when read from a digest (analysis/digest.py)
    baseline: str | None
    results: Results
    resamples: int = RESAMPLES
    primary: dict[str, str] = field(default_factory=dict)  # label -> its primary metric
    # (label, metric, environment) -> the ratio to the baseline under the one rule
    ratios: dict[tuple[str, str, str], Interval] = field(default_factory=dict)
    # {group: {environment: its geometric mean}} (analysis/geomean.py): taken once, read by
    # every view
    geomeans: dict[str, dict[str, Geomean]] = field(default_factory=dict)
    cell_stops: list[dict[str, Any]] = field(default_factory=list)
    workload_of: dict[str, str] = field(default_factory=dict)  # label -> its workload
    # how tables name what was stored: label -> its workload's title ("STREAM [array_mib=32]"),
    # and label -> metric -> the metric's title ("TSC per op")
    label_titles: dict[str, str] = field(default_factory=dict)
    metric_titles: dict[str, dict[str, str]] = field(default_factory=dict)
    every_cell: bool = True  # every cell described (else only the primary metrics')

    @property
    def host_facts(self) -> dict[str, Any]:
        return self.campaign.host_facts

    @property
    def host_checks(self) -> dict[str, Any] | None:
        return self.campaign.host_checks

    @property
    def baseline_measured(self) -> bool:
        """Whether the baseline has any value to divide by."""
        return bool(self.baseline) and any(
            row[self.baseline].values for row in self.results.cells.values())

    @functools.cached_property
    def boot(self) -> dict[str, dict[str, Any]]:
        """Boot phases per environment, each a median over its runs (analysis/boot.py);
        {} for results read from a digest, which keeps no boot samples."""
        from guestbench.analysis.boot import breakdown  # deferred: numpy, as stats below
        return breakdown(self.runs, self.samples) if self.samples is not None else {}

    def geomean_rows(self) -> list[tuple[str, dict[str, Geomean]]]:
        """(the row's name, its means by environment) for each group with a mean."""
        return [(geomean.title(group, len(self.geomeans)), means)
                for group, means in self.geomeans.items()]

    def geomeans_of(self, env: str) -> list[Geomean]:
        """The environment's means, one per group that has one for it."""
        return [means[env] for means in self.geomeans.values() if env in means]

    def performance_primary(self) -> dict[str, str]:
        """The primary metrics that are performance figures: what % tables, scaling tables
        and history judge (a workload whose primary is a verdict, fsync_honoured, has none)."""
        return {label: metric for label, metric in self.primary.items()
                if row_kind(self.results.cells[(label, metric)]) == PERFORMANCE}


class Described(Protocol):
    """What analysis needs of a workload (workloads/base.py's Workload gives it): the name a
    table shows, each metric's title, the metric it leads with, and its family (which
    group of geometric means its rows join: analysis/geomean.py)."""

    name: str
    display: str
    primary_metric: str | None
    family: str
    too_fast_rule: str  # its tool's own too-fast rule, "" for none

    def metric_title(self, metric: str) -> str: ...


def derive(campaign: Campaign, environments: list[Environment], runs: list[Run],
           samples: Samples, cell_stops: list[StoredCellStop], baseline: str | None,
           described: Mapping[str, Described], all_metrics: bool = False,
           resamples: int | None = None, primary_only: bool = False) -> CampaignResults:
    """One campaign's results from its stored rows; described: each workload by name.
    primary_only=True describes only the primary metrics' cells (what the summary shows),
    and leaves the others' statistics None."""
    from guestbench.analysis.summary import analyse, summarise  # deferred: numpy, as below
    names = [env.name for env in environments]
    results = summarise(names, runs, samples, include_context=all_metrics,
                        too_fast_rules={name: workload.too_fast_rule
                                        for name, workload in described.items()
                                        if workload.too_fast_rule})
    primary = primary_metrics(results, runs, described)
    used = analyse(results, resamples, primary.items() if primary_only else None,
                   judged=primary.items())
    workload_of = {run.label: run.workload for run in runs}
    family_of = {label: getattr(described.get(workload), "family", None)
                 for label, workload in workload_of.items()}
    functional = {env.name for env in environments if (env.facts or {}).get(FUNCTIONAL)}
    return CampaignResults(campaign, environments, runs, samples, baseline, results, used,
                           primary, ratios(results, baseline),
                           geomean.campaign(results, baseline, primary, family_of, functional),
                           cell_stops, workload_of,
                           *display_names(results, workload_of, described), not primary_only)


def display_names(results: Results, workload_of: dict[str, str],
                  described: Mapping[str, Described]
                  ) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """Each label's title and its metrics' titles, from the workloads' descriptions; a label
    the plan gave (label = "...") and a metric no workload names stay as they are."""
    labels, metrics = {}, {}
    for label, metric, _unit in results.rows:
        workload = described.get(workload_of.get(label, ""))
        if workload is None:
            continue
        if label == workload.name:
            labels[label] = workload.display
        elif label.startswith(workload.name + "["):
            labels[label] = f"{workload.display} {label[len(workload.name):]}"
        if metric:
            metrics.setdefault(label, {})[metric] = workload.metric_title(metric)
    return labels, metrics


def primary_metrics(results: Results, runs: list[Run],
                    described: Mapping[str, Described]) -> dict[str, str]:
    """Each label's primary metric: the workload's own choice, else its first performance
    metric, else its first metric."""
    workload_of = {run.label: run.workload for run in runs}  # the last run's
    metrics: dict[str, list[str]] = {}
    for label, metric, _unit in results.rows:
        if metric and metric not in CONTEXT_METRICS:
            metrics.setdefault(label, []).append(metric)
    chosen = {}
    for label, present in metrics.items():
        workload = described.get(workload_of.get(label, ""))
        wanted = getattr(workload, "primary_metric", None)
        judged = [metric for metric in present
                  if row_kind(results.cells[(label, metric)]) == PERFORMANCE]
        chosen[label] = wanted if wanted in present else (judged or present)[0]
    return chosen


def slowdown(base: Cell, cell: Cell) -> Interval | None:
    """A cell's ratio to the baseline's under the one rule, with its interval."""
    from guestbench.analysis import stats  # deferred: numpy (0.1 s); a digest's summary needs none
    if base.stats is None or cell.stats is None:
        return None
    return stats.ratio_interval(*slowdown_pair(base, cell))


def change(base: Cell, cell: Cell) -> Interval | None:
    """median(cell) / median(base) with its interval, whatever the unit: how much a number
    itself changed between two versions (the version table gives it as a % change)."""
    from guestbench.analysis import stats  # deferred: numpy (0.1 s); a digest's summary needs none
    if base.stats is None or cell.stats is None:
        return None
    return stats.ratio_interval(base.stats, cell.stats)


def ratios(results: Results, baseline: str | None) -> dict[tuple[str, str, str], Interval]:
    """Every performance cell's ratio to the baseline's cell of its row (the one rule)."""
    if baseline is None:
        return {}
    out = {}
    for (label, metric), row in results.cells.items():
        base = row.get(baseline)
        if not metric or base is None or base.stats is None or not base.is_performance:
            continue  # context and verdicts are never divided
        for env, cell in row.items():
            if cell.too_fast or base.too_fast:
                continue  # no ratio of a figure under its tool's resolution
            interval = slowdown(base, cell)
            if interval is not None:
                out[(label, metric, env)] = interval
    return out
