"""Which runs a campaign still owes: one cell per environment x workload case, its runs so
far, and when it stops (a fixed repeat, or the adaptive rule over its primary metric)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from guestbench.analysis.stats import relative_half_width
from guestbench.environments.base import Availability, Environment, EnvironmentSpec
from guestbench.plan.schema import AutoSection, WorkloadCase
from guestbench.runner.outcomes import Outcome, Status
from guestbench.store.records import CellStop


class StopReason:
    """Why a cell (one environment x one workload label) stopped repeating."""

    FIXED = "fixed"  # it had its repeat = N runs
    CONVERGED = "converged"  # the median's interval is as narrow as the plan's target
    MAX_RUNS = "max-runs"
    MAX_TIME = "max-time"
    # its interval, narrowing as 1/sqrt(runs), would not reach the target by max_runs
    OUT_OF_REACH = "out-of-reach"
    FAILING = "failing"  # after min_runs runs, fewer than 2 ok runs gave the primary metric
    UNAVAILABLE = Status.UNAVAILABLE  # nothing to repeat: one run says why
    UNSUPPORTED = Status.UNSUPPORTED
    INTERRUPTED = Status.INTERRUPTED  # the campaign stopped while the cell was open


@dataclass
class Column:
    spec: EnvironmentSpec
    environment: Environment
    availability: Availability
    row_id: int = 0


INTERVAL_MIN_RUNS = 3  # fewer runs give the median no bootstrap interval


@dataclass
class Cell:
    """One environment x one workload case: its runs so far and, once it stops, why."""

    column: Column
    case: WorkloadCase
    auto: AutoSection | None  # None: a fixed repeat
    most_runs: int
    runs: int = 0
    ok_runs: int = 0
    host_seconds: float = 0.0
    last_status: str = ""
    primary_values: list[float] = field(default_factory=list)
    primary_sizes: list[int] = field(default_factory=list)  # primary values of each ok run
    half_width: float | None = None
    stopped: str | None = None
    prior_s: float = 0.0  # what one run typically costs, before any ran (estimate.py)

    @property
    def environment(self) -> str:
        return self.column.spec.name

    @property
    def min_runs(self) -> int | None:
        return self.auto.min_runs if self.auto is not None else None

    @property
    def max_seconds(self) -> float | None:
        return self.auto.max_cell_s if self.auto is not None else None

    @property
    def stops_out_of_reach(self) -> bool:
        return self.auto is not None and self.auto.stop_out_of_reach

    def add(self, outcome: Outcome, host_seconds: float) -> None:
        self.runs += 1
        self.host_seconds += host_seconds
        self.last_status = outcome.status
        if outcome.status == Status.OK:
            self.ok_runs += 1
            metric = self.case.workload.primary_metric
            found = [value for name, _, value in outcome.samples if name == metric]
            if found:
                self.primary_values += found
                self.primary_sizes.append(len(found))

    def stop_reason(self) -> str | None:
        """Why the cell stops now, or None while it goes on. A cell whose environment is
        unavailable, or lacks what the workload needs, stops after its first run, whatever
        its repeat: there is nothing to repeat (its one run says why)."""
        if self.last_status in (Status.UNAVAILABLE, Status.UNSUPPORTED):
            return self.last_status
        if self.auto is None:
            return StopReason.FIXED if self.runs >= self.case.repeat else None
        self._measure()
        return adaptive_stop(self, self.auto)

    def _measure(self) -> None:
        if len(self.primary_sizes) >= INTERVAL_MIN_RUNS:
            self.half_width = relative_half_width(self.primary_values,
                                                  sizes=self.primary_sizes)

    def record(self) -> CellStop:
        if self.auto is None:
            self._measure()  # once, at the end: a fixed cell never needs it before
        return CellStop(self.column.row_id, self.case.label, self.runs, self.ok_runs,
                        self.stopped or "", self.half_width,
                        self.auto.target if self.auto else None)


def adaptive_stop(cell: Cell, auto: AutoSection) -> str | None:
    judged = len(cell.primary_sizes)  # runs, however many values each gave
    if judged >= auto.min_runs and cell.half_width is not None and cell.half_width <= auto.target:
        return StopReason.CONVERGED
    if cell.runs >= auto.min_runs and judged < 2:
        return StopReason.FAILING
    if (auto.stop_out_of_reach and judged >= auto.min_runs and cell.half_width is not None
            and cell.runs < auto.max_runs
            and cell.half_width * math.sqrt(judged / auto.max_runs) > auto.target
            and not _in_reach_but_for_one_run(cell, auto)):
        return StopReason.OUT_OF_REACH
    if cell.runs >= auto.max_runs:
        return StopReason.MAX_RUNS
    if cell.host_seconds >= auto.max_cell_s:
        return StopReason.MAX_TIME
    return None


def _in_reach_but_for_one_run(cell: Cell, auto: AutoSection) -> bool:
    """Would the cell reach its target by max_runs without its one run farthest from the
    median? One wild run (a host's hiccup: a native fork + exit run at 2 ms a fork against
    80 us in the others) makes the interval of a few runs' median many times the median,
    where the spread of the rest is a few percent; more runs then make it matter far less
    than 1/sqrt(runs) says, as the median hardly moves for it. Two wild runs in a few are
    the host's way, and stop the cell as before."""
    judged = len(cell.primary_sizes)
    if judged < 4:  # an interval needs three runs besides the one left out
        return False
    runs, at = [], 0
    for size in cell.primary_sizes:
        runs.append(cell.primary_values[at:at + size])
        at += size
    medians = [sorted(values)[len(values) // 2] for values in runs]
    middle = sorted(medians)[len(medians) // 2]
    wild = max(range(judged), key=lambda index: abs(medians[index] - middle))
    rest = [run for index, run in enumerate(runs) if index != wild]
    half_width = relative_half_width([value for run in rest for value in run],
                                     sizes=[len(run) for run in rest])
    return half_width is not None and \
        half_width * math.sqrt((judged - 1) / (auto.max_runs - 1)) <= auto.target


def refusal(column: Column, case: WorkloadCase) -> Outcome | None:
    """The outcome of a run that cannot start: the environment is unavailable or lacks a need."""
    if not column.availability.available:
        return Outcome(Status.UNAVAILABLE, column.availability.reason)
    refused = column.environment.refusal(case.workload.requires)
    return Outcome(Status.UNSUPPORTED, refused) if refused else None


def restore(cells: list[Cell], runs: Iterable[dict[str, Any]], samples: Iterable[dict[str, Any]],
            stops: Iterable[dict[str, Any]]) -> None:
    """Each cell as a stored campaign left it: its runs in the order they ran (an adaptive
    cell gets back the values it judges by), and the stop of each cell that had stopped.
    Runs of a cell the plan no longer has are left alone."""
    by_key = {(cell.column.row_id, cell.case.label): cell for cell in cells}
    of_run: dict[int, list[tuple[str, str, float]]] = defaultdict(list)
    for sample in samples:
        of_run[sample.run_id].append((sample.metric, sample.unit, sample.value))
    for run in sorted(runs, key=lambda run: run.id):
        cell = by_key.get((run.environment_id, run.label))
        if cell is not None:
            cell.add(Outcome(run.status, run.reason, of_run.get(run.id, [])),
                     run.host_seconds)
    for stop in stops:
        cell = by_key.get((stop.environment_id, stop.label))
        if cell is not None:
            cell.stopped = stop.reason

