"""The results' data, free of numpy: cells, their statistics and intervals, metric kinds and
flags. What summary.py and stats.py compute is held here, so that a report read from a
campaign's digest (analysis/digest.py) needs neither numpy nor the store's engine."""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

CONFIDENCE = 0.95
UNSTABLE_CV = 0.10  # pyperf's warning threshold: stdev above 10% of the mean
# Resamples per bootstrap. Percentile intervals need about 1,000 or more to be
# stable at 95%; 2,000 keeps the Monte Carlo wobble of an endpoint well under
# the width of the interval itself.
RESAMPLES = 2000


@dataclass(frozen=True)
class CellStats:
    """What a cell's values say: location, spread, the median's interval and the flags."""

    n: int  # values
    median: float
    mean: float
    minimum: float
    maximum: float
    stdev: float | None  # sample standard deviation (n-1); None for one value
    cv: float | None  # stdev / mean
    ci_low: float | None  # bootstrap interval of the median; None under 3 values
    ci_high: float | None
    outliers: int
    multimodal: bool
    runs: int = 0  # fresh processes or guests the values came from; 0: one value per run

    @property
    def half_width(self) -> float | None:
        """Half the interval's width over the median (0.02 = +/-2%)."""
        if self.ci_low is None or self.ci_high is None:
            return None
        if self.median == 0:
            return 0.0 if self.ci_high == self.ci_low else math.inf
        return (self.ci_high - self.ci_low) / 2 / abs(self.median)

    @property
    def count_text(self) -> str:
        """How many: "5" (runs of one value each), "5x3" (5 runs of 3 values) or "5r/17"
        (5 runs, 17 values in all)."""
        if not self.runs:
            return str(self.n)
        if self.n % self.runs == 0:
            return f"{self.runs}x{self.n // self.runs}"
        return f"{self.runs}r/{self.n}"

    @property
    def unstable(self) -> bool:
        return self.cv is not None and self.cv > UNSTABLE_CV

    @property
    def flags(self) -> list[str]:
        return ([*(["unstable"] if self.unstable else []),
                 *(["multimodal"] if self.multimodal else []),
                 *(["outliers"] if self.outliers else [])])


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval (None when it cannot be computed)."""

    value: float
    low: float | None = None
    high: float | None = None


# Units where a larger number is better; every other unit (time, cycles) is a cost.
HIGHER_IS_BETTER_UNITS = frozenset({"MB/s", "MiB/s", "GB/s", "KB/s", "Gbit/s", "Mbit/s", "IOPS", "ops/s",
                                    "files/s", "seeks/s"})
# Context metrics that describe how a run was measured rather than what it measured: no
# table shows them unless asked (--all-metrics).
# "timed": the seconds a run spent inside its timed regions, "in_agent" from the agent's
# first record to its last on the host's clock (the campaign's efficiency); "passes": STREAM's
CONTEXT_METRICS = frozenset({"iterations", "array_mib", "clock_ratio", "timed", "in_agent",
                             "passes", "run_in"})

# A figure too fast to time, by one rule per workload (and so the same on every host and
# in every environment): its tool's own (fio's whole milliseconds, bonnie++'s +++++), met by
# at least half of a cell's runs, so that the cell's median is on the too-fast side; or, for
# a workload whose tool has no such rule, every run giving one identical number (a
# quantised figure). Shown like bonnie++'s +++++, never with an interval.
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
    return {metric.name: metric.better == "higher" for metric in _declared(params)
            if metric.better in ("higher", "lower")}


def declared_kinds(params: dict[str, Any] | None) -> dict[str, str]:
    """{metric: kind} that a run's stored parameters declare (exec's metrics = [{name,
    kind}, ...]); metrics stored before kinds existed declare none."""
    return {metric.name: metric.kind for metric in _declared(params) if metric.kind in KINDS}


class Declared(NamedTuple):
    """What a run's stored parameters say of one of its metrics (exec's metrics = [...])."""

    name: str
    better: str | None
    kind: str | None


def _declared(params: dict[str, Any] | None) -> list[Declared]:
    """The metrics a run's parameters declare, the last of a name winning; none where the
    parameters are not what exec stores."""
    declared = (params or {}).get("metrics")
    if not isinstance(declared, list):
        return []
    by_name = {metric.get("name"): Declared(metric.get("name"), metric.get("better"),
                                            metric.get("kind"))
               for metric in declared if isinstance(metric, dict)}
    return [metric for name, metric in by_name.items() if isinstance(name, str)]


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
    spread_limit: float = UNSTABLE_CV
    # its workload's tool's own too-fast rule (Workload.too_fast_rule), "" for none
    too_fast_rule: str = ""
    quantised: bool = False  # every run gave one number, with no tool rule (set by analyse())
    best_of: int | None = None  # the plan's best_of: published tables show its best run

    @property
    def higher_is_better(self) -> bool:
        return higher_is_better(self.unit, self.declared_higher)

    @property
    def kind(self) -> str:
        return metric_kind(self.unit, self.declared_kind)

    @property
    def too_fast(self) -> bool:
        """Whether its figure is under the resolution of what timed it (TOO_FAST): at least
        half of its ok runs said so, or it is a quantised figure."""
        if self.quantised:
            return True
        flagged = self.flags.count(TOO_FAST)
        return flagged > 0 and 2 * flagged >= self.runs - len(self.problems)

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

    def run_means(self) -> tuple[list[float], float, float | None]:
        """Each run's mean, their mean and their standard deviation (None for one run): how
        kernbench reports its runs."""
        means = [statistics.fmean(values) for values in self.run_values()]
        return means, statistics.fmean(means), statistics.stdev(means) if len(means) > 1 else None

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
        own = [flag for flag in self.flags if flag != TOO_FAST]
        return list(dict.fromkeys([*own, *([TOO_FAST] if self.too_fast else []),
                                   *from_values]))

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
        return self.typical_cv > UNSTABLE_CV


def campaign_spread(cells: Iterable[Cell]) -> Spread | None:
    """The typical spread of these cells (those with a CV from enough runs), or None."""
    cvs = [cell.stats.cv for cell in cells if cell.stats is not None and cell.is_performance
           and cell.stats.cv is not None and cell.n_runs >= SPREAD_MIN_RUNS
           and not cell.too_fast]
    if not cvs:
        return None
    typical = statistics.median(cvs)
    return Spread(typical, len(cvs), max(UNSTABLE_CV, SPREAD_FACTOR * typical))


def slowdown_pair(base: Cell, cell: Cell) -> tuple[CellStats, CellStats]:
    """(base, other) so that median(other)/median(base) > 1 means worse, whatever the unit."""
    assert base.stats is not None and cell.stats is not None
    if cell.higher_is_better:  # the metric's declared direction, else its unit's
        return cell.stats, base.stats
    return base.stats, cell.stats


# Memory an instance holds (workloads/instance.py, runner/density.py): MiB, a context unit
# that ratios and means never take, but that compare and history judge, as Firecracker's
# tests gate its VMM's memory overhead: a change counts once it is significant and its
# interval lies beyond compare.MEMORY_THRESHOLD_MIB, whatever its ratio (2 MiB more on a
# 5 MiB VMM overhead is a regression). RSS counts shared pages once per process: not judged.
def is_breakdown(metric: str) -> bool:
    """A metric that breaks another down by name (footprint_process_pss:runsc-gofer, a
    process's share of footprint_pss): shown in its own table (report/tables/memory.py), not
    as a row of every environment's."""
    return ":" in metric


MEMORY_METRICS = frozenset({
    "footprint_pss", "footprint_uss", "footprint_overhead", "footprint_peak_pss",
    "footprint_peak_uss", "footprint_peak_overhead", "density_pss"})


# Success rates (%, higher is better): metric -> the workload parameter that counts each
# run's tries (a burst's instances launched). compare judges them as proportions of those
# tries (compare.lower_success), and the dashboards export them.
SUCCESS_RATES = {"burst_success": "instances"}
SUCCESS_METRICS = frozenset(SUCCESS_RATES)


def is_success(cell: Cell) -> bool:
    return cell.unit == "%" and cell.metric in SUCCESS_METRICS


def is_memory(cell: Cell) -> bool:
    """Whether compare and history judge this cell as memory (MiB, smaller is better)."""
    return cell.unit == "MiB" and cell.metric in MEMORY_METRICS
