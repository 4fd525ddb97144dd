"""How long a campaign still has to go, in host seconds, from what its runs took so far.

A count of runs makes a poor clock: a STREAM run under qemu-user takes 4 s where a getpid
run takes 0.2 s, and an adaptive cell may stop at its fifth run or go on to its thirtieth.
The estimate sums, over the cells still open, the runs each is expected to take more times
what one of its runs costs:

- runs left: a fixed cell's repeat minus its runs; an adaptive cell's expected runs minus
  its runs, at least one. The expected runs are those that the adaptive cells of the same
  environment took when they stopped (their median), else the minimum.
- cost of one run: the cell's own mean so far; else the mean run of its environment; else
  the mean run of the campaign; else 1 s.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Protocol

UNKNOWN_RUN_S = 1.0  # before any run has finished


class OpenCell(Protocol):
    """What the estimate reads of a runner's cell."""

    runs: int
    most_runs: int
    host_seconds: float
    stopped: str | None

    @property
    def environment(self) -> str: ...

    @property
    def min_runs(self) -> int | None: ...  # None: a fixed repeat


def seconds_left(cells: Sequence[OpenCell]) -> float:
    """Host seconds the open cells are expected to take still."""
    spent: dict[str, list[float]] = {}
    for cell in cells:
        if cell.runs:
            spent.setdefault(cell.environment, []).append(cell.host_seconds / cell.runs)
    every = [cost for costs in spent.values() for cost in costs]
    campaign_run = statistics.fmean(every) if every else UNKNOWN_RUN_S
    taken = _runs_taken(cells)
    total = 0.0
    for cell in cells:
        if cell.stopped is not None:
            continue
        if cell.runs:
            cost = cell.host_seconds / cell.runs
        elif cell.environment in spent:
            cost = statistics.fmean(spent[cell.environment])
        else:
            cost = campaign_run
        total += _runs_left(cell, taken.get(cell.environment)) * cost
    return total


def _runs_taken(cells: Sequence[OpenCell]) -> dict[str, float]:
    """Per environment, the median runs its adaptive cells took to stop."""
    stopped: dict[str, list[int]] = {}
    for cell in cells:
        if cell.stopped is not None and cell.min_runs is not None:
            stopped.setdefault(cell.environment, []).append(cell.runs)
    return {env: statistics.median(runs) for env, runs in stopped.items()}


def _runs_left(cell: OpenCell, taken: float | None) -> float:
    if cell.min_runs is None:
        return max(cell.most_runs - cell.runs, 0)
    expected = max(taken if taken is not None else cell.min_runs, cell.min_runs)
    return min(max(expected - cell.runs, 1), cell.most_runs - cell.runs)
