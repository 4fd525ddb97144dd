"""Cells of results: the samples of one workload metric in one environment, and their summary."""

from __future__ import annotations

import dataclasses
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from guestbench.analysis import stats as cell_stats
from guestbench.analysis.stats import CellStats
from guestbench.store.columns import Samples

# Units where a larger number is better; every other unit (time, cycles) is a cost.
HIGHER_IS_BETTER_UNITS = frozenset({"MB/s", "MiB/s", "GB/s", "KB/s", "IOPS", "ops/s",
                                    "files/s", "seeks/s"})
# Context metrics that describe how a run was measured rather than what it measured: no
# table shows them unless asked (--all-metrics).
CONTEXT_METRICS = frozenset({"iterations", "array_mib", "clock_ratio"})

# A cell whose tool timed a span under its clock's resolution, or whose runs all gave one
# identical number (a quantised figure): shown like bonnie++'s +++++, never with an interval.
TOO_FAST = "too-fast"

# What a metric is (docs/results.md): a performance figure, with a direction, that ratios,
# % tables, geometric means, compare and history judge; a context figure (bytes moved,
# max RSS, sleeps, CPU %) that detail tables show beside it and nothing judges; or a
# verdict (1 yes, 0 no) that only its own table shows.
PERFORMANCE, CONTEXT, VERDICT = "performance", "context", "verdict"
KINDS = (PERFORMANCE, CONTEXT, VERDICT)
# Units whose metrics are context unless their workload declares otherwise: counts and
# sizes, shares of a CPU, ratios of clocks.
CONTEXT_UNITS = frozenset({"count", "bytes", "KiB", "MiB", "%", "ratio", "index"})
VERDICT_UNITS = frozenset({"bool"})


def higher_is_better(unit: str, declared: bool | None = None) -> bool:
    """Whether a larger number is better: as declared for the metric if it was (exec's
    `better`), else by its unit."""
    return declared if declared is not None else unit in HIGHER_IS_BETTER_UNITS


def metric_kind(unit: str, declared: str | None = None) -> str:
    """performance, context or verdict: as declared for the metric if it was (exec's
    `kind`), else by its unit."""
    if declared in KINDS:
        return declared
    if unit in VERDICT_UNITS:
        return VERDICT
    return CONTEXT if unit in CONTEXT_UNITS else PERFORMANCE


def declared_directions(params: dict[str, Any] | None) -> dict[str, bool]:
    """{metric: higher is better} that a run's stored parameters declare: a workload whose
    parameters name its metrics (exec) lists them as metrics = [{name, better}, ...]."""
    return {name: entry["better"] == "higher" for name, entry in _declared(params).items()
            if entry.get("better") in ("higher", "lower")}


def declared_kinds(params: dict[str, Any] | None) -> dict[str, str]:
    """{metric: kind} that a run's stored parameters declare (exec's metrics = [{name,
    kind}, ...]); metrics stored before kinds existed declare none."""
    return {name: entry["kind"] for name, entry in _declared(params).items()
            if entry.get("kind") in KINDS}


def _declared(params: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    declared = (params or {}).get("metrics")
    if not isinstance(declared, list):
        return {}
    return {metric["name"]: metric for metric in declared
            if isinstance(metric, dict) and isinstance(metric.get("name"), str)}


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
    declared_kind: str | None = None  # the kind its workload declared; None: by unit
    # the coefficient of variation above which this cell's spread stands out from its
    # campaign's (set by analyse(); the absolute floor until then)
    spread_limit: float = cell_stats.UNSTABLE_CV

    @property
    def higher_is_better(self) -> bool:
        return higher_is_better(self.unit, self.declared_higher)

    @property
    def kind(self) -> str:
        return metric_kind(self.unit, self.declared_kind)

    @property
    def too_fast(self) -> bool:
        """Whether its figure is under the resolution of what timed it (TOO_FAST)."""
        return TOO_FAST in self.flags

    @property
    def is_performance(self) -> bool:
        """Whether ratios, % tables, geometric means, compare and history may judge it."""
        return self.kind == PERFORMANCE

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def count_text(self) -> str:
        """Runs and values per run, as CellStats.count_text; "0" without values."""
        return self.stats.count_text if self.stats is not None else str(self.n_runs)

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
        """Flags of this cell: those its runs carry (clock-drift), then those that say its
        values differ from the campaign's other cells: unstable (a spread well above the
        campaign's typical one, spread_limit) and multimodal. Only performance metrics are
        judged: a count of context switches that varies is no warning about a measurement.
        Outliers are counted in the statistics, not flagged: the median stands up to them."""
        judged = self.stats is not None and self.is_performance
        from_values = [*(["unstable"] if judged and self.stats.cv is not None
                         and self.stats.cv > self.spread_limit else []),
                       *(["multimodal"] if judged and self.stats.multimodal else [])]
        return list(dict.fromkeys([*self.flags, *from_values]))

    def slowdown_to(self, baseline: "Cell | None") -> float | None:
        """This cell's median against the baseline's under the one ratio rule (above 1 is
        worse): median over the baseline's for a cost, the baseline's over it for a rate."""
        if baseline is None or self.median is None or baseline.median is None:
            return None
        top, bottom = ((baseline.median, self.median) if self.higher_is_better
                       else (self.median, baseline.median))
        return top / bottom if bottom else None


@dataclass
class Results:
    """Every cell of a campaign, keyed (label, metric) then environment, in plan order."""

    environments: list[str]
    rows: list[tuple[str, str, str]]  # (label, metric, unit); metric "" for a workload with no samples
    cells: dict[tuple[str, str], dict[str, Cell]]
    spread: "Spread | None" = None  # the campaign's typical spread (analyse())

    def cell(self, label: str, metric: str, environment: str) -> Cell:
        return self.cells[(label, metric)][environment]


def summarise(environments: list[str], runs: Iterable[dict[str, Any]],
              samples: Samples | Iterable[dict[str, Any]], include_context: bool = False) -> Results:
    """Group raw runs and samples into cells.

    runs: dicts with id, environment, label, status, reason; params (optional) may declare
    the metrics' directions (declared_directions).
    samples: Samples, or dicts with run_id, metric, unit, value. They can number 500,000:
    they are grouped with numpy, never one by one in Python.
    """
    runs = list(runs)
    samples = Samples.coerce(samples)
    labels = list(dict.fromkeys(run["label"] for run in runs))
    label_code = {label: index for index, label in enumerate(labels)}
    env_code = {env: index for index, env in enumerate(environments)}
    run_ids = np.fromiter((run["id"] for run in runs), dtype=np.int64, count=len(runs))
    run_label = np.fromiter((label_code[run["label"]] for run in runs), dtype=np.int64, count=len(runs))
    run_env = np.fromiter((env_code[run["environment"]] for run in runs), dtype=np.int64, count=len(runs))
    run_ok = np.fromiter((run["status"] == "ok" for run in runs), dtype=bool, count=len(runs))
    # each sample's run, as an index into runs (samples of runs not listed are left out)
    order = np.argsort(run_ids, kind="stable")
    found = np.searchsorted(run_ids[order], samples.run_id)
    found = np.minimum(found, max(len(runs) - 1, 0))
    known = (run_ids[order][found] == samples.run_id) if len(runs) else np.zeros(len(samples), bool)
    run_of = order[found]
    metric, names = samples.metric_codes()
    kept = known & ~np.isin(metric, [code for code, name in enumerate(names)
                                     if not include_context and name in CONTEXT_METRICS])
    rows = _rows(labels, names, samples, run_label[run_of], metric, kept)
    cells = _cells(environments, runs, rows)
    _fill_values(cells, labels, environments, names, samples.value, run_of, metric,
                 run_label, run_env, kept & run_ok[run_of])  # a failed run's samples never count
    return Results(environments, rows, cells)


def _rows(labels: list[str], names: list[str], samples: Samples, label: np.ndarray,
          metric: np.ndarray, kept: np.ndarray) -> list[tuple[str, str, str]]:
    """(label, metric, unit) in the order labels ran, then metrics first appeared; a label
    with no sample gets one row with metric "". A metric's unit is the first one seen."""
    positions = np.flatnonzero(kept)
    combined = label[positions] * (len(names) + 1) + metric[positions]
    _, first = np.unique(combined, return_index=True)
    first = np.sort(positions[first])
    seen: dict[str, dict[str, str]] = {name: {} for name in labels}
    for position in first.tolist():
        name, unit = samples.kinds[samples.kind[position]]
        seen[labels[label[position]]].setdefault(name, unit)
    rows = [(name, metric_name, unit) for name in labels for metric_name, unit in seen[name].items()]
    rows += [(name, "", "") for name in labels if not seen[name]]
    order = {name: index for index, name in enumerate(labels)}
    rows.sort(key=lambda row: order[row[0]])
    return rows


def _cells(environments: list[str], runs: list[dict[str, Any]], rows: list[tuple[str, str, str]]
           ) -> dict[tuple[str, str], dict[str, Cell]]:
    """Empty cells for every row and environment, with their runs: counts, ids, problems and
    flags, gathered once per (label, environment) and shared out to the label's metrics."""
    declared: dict[str, dict[str, bool]] = {}
    kinds: dict[str, dict[str, str]] = {}
    gathered: dict[tuple[str, str], tuple[list[int], list[tuple[str, str]], list[str]]] = {}
    for run in runs:
        if run["label"] not in declared:
            declared[run["label"]] = declared_directions(run.get("params"))
            kinds[run["label"]] = declared_kinds(run.get("params"))
        ids, problems, flags = gathered.setdefault((run["label"], run["environment"]), ([], [], []))
        ids.append(run["id"])
        if run["status"] != "ok":
            problems.append((run["status"], run["reason"]))
        else:
            flags += run.get("flags") or []
    cells = {}
    for label, metric, unit in rows:
        row = {}
        for env in environments:
            ids, problems, flags = gathered.get((label, env), ([], [], []))
            row[env] = Cell(env, label, metric, unit, problems=list(problems),
                            flags=flags_of_metric(flags, metric),
                            runs=len(ids), run_ids=list(ids),
                            declared_higher=declared.get(label, {}).get(metric),
                            declared_kind=kinds.get(label, {}).get(metric))
        cells[(label, metric)] = row
    return cells


def _fill_values(cells: dict[tuple[str, str], dict[str, Cell]], labels: list[str],
                 environments: list[str], names: list[str], values: np.ndarray,
                 run_of: np.ndarray, metric: np.ndarray, run_label: np.ndarray,
                 run_env: np.ndarray, counted: np.ndarray) -> None:
    """Each cell's values, grouped by run in the runs' order, and the values per run."""
    positions = np.flatnonzero(counted)
    runs = run_of[positions]
    keys = (run_label[runs], metric[positions], run_env[runs])
    order = np.lexsort((runs, keys[2], keys[1], keys[0]))  # stable: stored order within a run
    positions, runs = positions[order], runs[order]
    keys = tuple(key[order] for key in keys)
    if positions.size == 0:
        return
    new_cell = np.ones(positions.size, dtype=bool)
    new_cell[1:] = (np.diff(keys[0]) != 0) | (np.diff(keys[1]) != 0) | (np.diff(keys[2]) != 0)
    new_run = new_cell.copy()
    new_run[1:] |= np.diff(runs) != 0
    cell_starts = np.flatnonzero(new_cell)
    run_starts = np.flatnonzero(new_run)
    sorted_values = values[positions]
    bounds = np.append(cell_starts, positions.size)
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        cell = cells[(labels[keys[0][start]], names[keys[1][start]])][environments[keys[2][start]]]
        cell.values = sorted_values[start:end].tolist()
        firsts = run_starts[np.searchsorted(run_starts, start):np.searchsorted(run_starts, end)]
        cell.sizes = np.diff(np.append(firsts, end)).tolist()


def flags_of_metric(flags: list[str], metric: str) -> list[str]:
    """A run's flags that concern one metric: those of the whole run (clock-drift), and
    those scoped to this metric ("too-fast:create" concerns create alone)."""
    out = []
    for flag in flags:
        name, _, scope = flag.partition(":")
        if not scope or scope == metric:
            out.append(name)
    return out


def row_kind(row: dict[str, Cell]) -> str:
    """A row's metric kind: its cells share their workload's declaration and unit."""
    return next(iter(row.values())).kind if row else PERFORMANCE


def status_counts(cell: Cell) -> Counter:
    return Counter(status for status, _ in cell.problems)


# A cell is unstable when its coefficient of variation is above both the absolute floor
# (pyperf's 10%) and this many times the campaign's typical one: on a host where every
# cell varies by 20%, a mark on each would say nothing about any one of them.
SPREAD_FACTOR = 2.0
SPREAD_MIN_RUNS = 3  # cells of fewer runs have no coefficient of variation worth counting


@dataclass(frozen=True)
class Spread:
    """The campaign's typical spread: the median coefficient of variation of its primary
    performance cells of SPREAD_MIN_RUNS runs or more, and the limit a cell must pass to be
    marked unstable."""

    typical_cv: float
    cells: int  # how many cells it is the median of
    limit: float

    @property
    def noisy(self) -> bool:
        """Whether the whole campaign varied beyond the absolute floor: said once, above
        every table, not as a mark on each cell."""
        return self.typical_cv > cell_stats.UNSTABLE_CV


def campaign_spread(cells: Iterable[Cell]) -> Spread | None:
    """The typical spread of these cells (those with a CV from enough runs), or None."""
    cvs = [cell.stats.cv for cell in cells if cell.stats is not None and cell.is_performance
           and cell.stats.cv is not None and cell.n_runs >= SPREAD_MIN_RUNS
           and not cell.too_fast]
    if not cvs:
        return None
    typical = statistics.median(cvs)
    return Spread(typical, len(cvs), max(cell_stats.UNSTABLE_CV, SPREAD_FACTOR * typical))


def analyse(results: Results, resamples: int | None = None,
            rows: Iterable[tuple[str, str]] | None = None,
            judged: Iterable[tuple[str, str]] = ()) -> int:
    """Fill the measured cells' statistics in one vectorised pass; returns the resamples used.

    rows: only the cells of these (label, metric) rows (a view that shows no others). The
    resamples are chosen from every measured cell all the same, and a cell's interval
    depends on its own values alone, so a cell gets the same numbers in every view."""
    # a verdict's 1s and 0s have no median to estimate: its runs are counted, not described
    every = [cell for row in results.cells.values() for cell in row.values()
             if cell.values and cell.kind != VERDICT]
    resamples = resamples or cell_stats.resamples_for(sum(cell.n for cell in every))
    wanted = None if rows is None else set(rows)
    measured = [cell for cell in every if wanted is None or (cell.label, cell.metric) in wanted]
    for cell, described in zip(measured, cell_stats.describe(
            [cell.values for cell in measured], resamples, sizes=[cell.sizes for cell in measured])):
        cell.stats = described
        if quantised(cell) and TOO_FAST not in cell.flags:
            cell.flags.append(TOO_FAST)
        if cell.too_fast and described.ci_low is not None:  # no interval for such a figure
            cell.stats = dataclasses.replace(described, ci_low=None, ci_high=None)
    # the typical spread comes from the rows every view describes (the primary metrics), so
    # a cell carries the same marks in the summary as in the detail
    results.spread = campaign_spread(cell for label, metric in judged
                                     for cell in results.cells[(label, metric)].values())
    if results.spread is not None:
        for cell in every:
            cell.spread_limit = results.spread.limit
    return resamples


def quantised(cell: Cell) -> bool:
    """A performance figure that every run (two or more) gave identically: a time or a rate
    computed from a count of a coarse clock's ticks (fio's milliseconds), not a measurement
    with a spread. Its interval would be falsely tight."""
    return cell.is_performance and len(cell.values) >= 2 and min(cell.values) == max(cell.values)
