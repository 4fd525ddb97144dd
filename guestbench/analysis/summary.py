"""Cells of results: the samples of one workload metric in one environment, and their summary."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from guestbench.analysis import stats as cell_stats
from guestbench.analysis.stats import CellStats

# Units where a larger number is better; every other unit (time, cycles) is a cost.
HIGHER_IS_BETTER_UNITS = frozenset({"MB/s", "MiB/s", "GB/s", "IOPS", "ops/s", "files/s"})
# Metrics that describe how a run was measured rather than what it measured.
CONTEXT_METRICS = frozenset({"iterations", "array_mib", "clock_ratio"})


def higher_is_better(unit: str, declared: bool | None = None) -> bool:
    """Whether a larger number is better: as declared for the metric if it was (exec's
    `better`), else by its unit."""
    return declared if declared is not None else unit in HIGHER_IS_BETTER_UNITS


def declared_directions(params: dict[str, Any] | None) -> dict[str, bool]:
    """{metric: higher is better} that a run's stored parameters declare: a workload whose
    parameters name its metrics (exec) lists them as metrics = [{name, better}, ...]."""
    declared = (params or {}).get("metrics")
    if not isinstance(declared, list):
        return {}
    return {metric["name"]: metric["better"] == "higher" for metric in declared
            if isinstance(metric, dict) and isinstance(metric.get("name"), str)
            and metric.get("better") in ("higher", "lower")}


@dataclass
class Cell:
    environment: str
    label: str
    metric: str
    unit: str
    values: list[float] = field(default_factory=list)  # grouped by run, in the runs' order
    sizes: list[int] = field(default_factory=list)  # values of each ok run that gave any
    # every non-ok run of this environment and workload: (status, reason)
    problems: list[tuple[str, str]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # one entry per flag per ok run
    runs: int = 0
    run_ids: list[int] = field(default_factory=list)  # every run of this cell, ok or not
    stats: CellStats | None = None  # filled by analyse()
    declared_higher: bool | None = None  # the direction its workload declared; None: by unit

    @property
    def higher_is_better(self) -> bool:
        return higher_is_better(self.unit, self.declared_higher)

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def n_runs(self) -> int:
        """Runs that gave values: the unit of replication, whatever each gave."""
        return len(self.sizes) if self.sizes else len(self.values)

    def run_values(self) -> list[list[float]]:
        """The values, one list per run."""
        if not self.sizes:
            return [[value] for value in self.values]
        out, start = [], 0
        for size in self.sizes:
            out.append(self.values[start:start + size])
            start += size
        return out

    @property
    def median(self) -> float | None:
        if self.stats is not None:
            return self.stats.median
        return statistics.median(self.values) if self.values else None

    @property
    def minimum(self) -> float | None:
        return min(self.values) if self.values else None

    @property
    def maximum(self) -> float | None:
        return max(self.values) if self.values else None

    @property
    def flag_names(self) -> list[str]:
        """Flags of this cell: those its runs carry (clock-drift), then those its values show."""
        from_values = self.stats.flags if self.stats is not None else []
        return list(dict.fromkeys([*self.flags, *from_values]))

    def ratio_to(self, baseline: "Cell | None") -> float | None:
        """This cell's median over the baseline's (2.0 = twice the baseline's number)."""
        if baseline is None or self.median is None or not baseline.median:
            return None
        return self.median / baseline.median


@dataclass
class Results:
    """Every cell of a campaign, keyed (label, metric) then environment, in plan order."""

    environments: list[str]
    rows: list[tuple[str, str, str]]  # (label, metric, unit); metric "" for a workload with no samples
    cells: dict[tuple[str, str], dict[str, Cell]]

    def cell(self, label: str, metric: str, environment: str) -> Cell:
        return self.cells[(label, metric)][environment]


def summarise(environments: list[str], runs: Iterable[dict[str, Any]],
              samples: Iterable[dict[str, Any]], include_context: bool = False) -> Results:
    """Group raw runs and samples into cells.

    runs: dicts with id, environment, label, status, reason; params (optional) may declare
    the metrics' directions (declared_directions).
    samples: dicts with run_id, metric, unit, value.
    """
    runs = list(runs)
    run_of = {run["id"]: run for run in runs}
    labels = list(dict.fromkeys(run["label"] for run in runs))
    metrics: dict[str, dict[str, str]] = {label: {} for label in labels}
    # (label, metric, environment) -> run id -> its values
    values: dict[tuple[str, str, str], dict[int, list[float]]] = defaultdict(dict)
    for sample in samples:  # one pass over the samples: they can number 500,000
        metric = sample["metric"]
        run = run_of.get(sample["run_id"])
        if run is None or (not include_context and metric in CONTEXT_METRICS):
            continue
        metrics[run["label"]].setdefault(metric, sample["unit"])
        if run["status"] == "ok":  # a failed run's samples are never counted
            by_run = values[(run["label"], metric, run["environment"])]
            found = by_run.get(run["id"])
            if found is None:
                by_run[run["id"]] = [sample["value"]]
            else:
                found.append(sample["value"])
    rows = [(label, metric, unit) for label in labels for metric, unit in metrics[label].items()]
    rows += [(label, "", "") for label in labels if not metrics[label]]
    order = {label: index for index, label in enumerate(labels)}
    rows.sort(key=lambda row: order[row[0]])
    declared: dict[str, dict[str, bool]] = {}
    for run in runs:
        if run["label"] not in declared:
            declared[run["label"]] = declared_directions(run.get("params"))
    cells = {(label, metric): {env: Cell(env, label, metric, unit,
                                         declared_higher=declared[label].get(metric))
                               for env in environments}
             for label, metric, unit in rows}
    rows_of_label: dict[str, list[dict[str, Cell]]] = defaultdict(list)
    for (label, _metric), row in cells.items():
        rows_of_label[label].append(row)
    for run in runs:
        for row in rows_of_label[run["label"]]:
            cell = row[run["environment"]]
            cell.runs += 1
            cell.run_ids.append(run["id"])
            if run["status"] != "ok":
                cell.problems.append((run["status"], run["reason"]))
            else:
                cell.flags += run.get("flags") or []
    for (label, metric, env), by_run in values.items():
        cell = cells[(label, metric)][env]
        cell.values = [value for found in by_run.values() for value in found]
        cell.sizes = [len(found) for found in by_run.values()]
    return Results(environments, rows, cells)


def status_counts(cell: Cell) -> Counter:
    return Counter(status for status, _ in cell.problems)


def analyse(results: Results, resamples: int | None = None) -> int:
    """Fill every measured cell's statistics in one vectorised pass; returns the resamples used."""
    measured = [cell for row in results.cells.values() for cell in row.values() if cell.values]
    total = sum(cell.n for cell in measured)
    resamples = resamples or cell_stats.resamples_for(total)
    for cell, described in zip(measured, cell_stats.describe(
            [cell.values for cell in measured], resamples, sizes=[cell.sizes for cell in measured])):
        cell.stats = described
    return resamples
