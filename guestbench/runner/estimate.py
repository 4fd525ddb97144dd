"""How long a campaign still has to go, in host seconds, from what its runs took so far.

A count of runs makes a poor clock: a STREAM run under qemu-user takes 4 s where a getpid
run takes 0.2 s, and an adaptive cell may stop at its fifth run or go on to its thirtieth.
The estimate sums, over the cells still open, the runs each is expected to take more times
what one of its runs costs:

- runs left: a fixed cell's repeat minus its runs. An adaptive cell that reached its
  minimum and is still open has not converged, and most such cells go on to their
  maximum: it is expected to. One below its minimum is expected to stop at the minimum
  with the share of cells that did so (of its environment, else of the campaign; a half
  before any cell reached it), else at the maximum. Either is capped by the cell's time
  limit. (Expecting the mean count of the cells that had stopped made the default
  campaign's ETA 2-3x too short: the cells that stop late have not stopped yet.)
- cost of one run: the cell's own mean so far; else the mean run of its environment; else
  the mean run of the campaign; else 1 s.
"""

from __future__ import annotations

import math
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

    @property
    def max_seconds(self) -> float | None: ...  # host seconds after which it stops


def seconds_left(cells: Sequence[OpenCell]) -> float:
    """Host seconds the open cells are expected to take still."""
    spent: dict[str, list[float]] = {}
    for cell in cells:
        if cell.runs:
            spent.setdefault(cell.environment, []).append(cell.host_seconds / cell.runs)
    every = [cost for costs in spent.values() for cost in costs]
    campaign_run = statistics.fmean(every) if every else UNKNOWN_RUN_S
    converging = _converging_shares(cells)
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
        share = converging.get(cell.environment, converging.get(None, 0.5))
        total += _runs_left(cell, share, cost) * cost
    return total


def _converging_shares(cells: Sequence[OpenCell]) -> dict[str | None, float]:
    """Per environment and (None) in all: of the adaptive cells that reached their
    minimum, the share that stopped there."""
    reached: dict[str | None, list[bool]] = {}
    for cell in cells:
        if cell.min_runs is not None and cell.runs >= cell.min_runs:
            at_minimum = cell.stopped is not None and cell.runs == cell.min_runs
            reached.setdefault(cell.environment, []).append(at_minimum)
            reached.setdefault(None, []).append(at_minimum)
    return {key: sum(found) / len(found) for key, found in reached.items()}


def _runs_left(cell: OpenCell, converging: float, cost: float) -> float:
    if cell.min_runs is None:
        return max(cell.most_runs - cell.runs, 0)
    if cell.runs >= cell.min_runs:
        left = float(cell.most_runs - cell.runs)
    else:
        expected = converging * cell.min_runs + (1 - converging) * cell.most_runs
        left = expected - cell.runs
    if cell.max_seconds is not None and cost > 0:
        left = min(left, math.ceil(max(cell.max_seconds - cell.host_seconds, 0) / cost))
    return max(left, 1.0)
