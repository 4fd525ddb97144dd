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
  A cell that stops once its target is out of reach (stop_out_of_reach, the default
  campaign's) is expected to stop at its minimum, or one run past it.
- cost of one run: the cell's own mean so far; else what such a run typically costs (its
  prior: the environment's start and stop, the workload's timed loop and its work, slowed
  as the environment slows work: typical_run_s), times how much slower or faster than
  their priors this environment's runs were so far, else the campaign's, else 1. The
  first estimate, printed before any run, is the priors' sum. (The mean run of the
  environment, used before, priced a STREAM cell like the micro cells of its environment
  that ran before it: the default campaign's first ETA was 34 s for 124.)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

UNKNOWN_RUN_S = 1.0  # a run without a prior, before any has finished
REFUSED_RUN_S = 0.001  # the prior of a cell whose one run says why it cannot run
# Beside each run's host seconds, the runner's own (storing its samples and logs, the next
# run's set-up): 9 s of a 79 s default campaign of 279 runs here, 2026-11-29
RUN_OVERHEAD_S = 0.03
SUMMARY_S = 3.0  # after the last run: the summary and the time line
SPEED_CLAMP = (0.25, 4.0)  # a host measured slower or faster than the priors by more: noise


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

    @property
    def stops_out_of_reach(self) -> bool: ...

    @property
    def prior_s(self) -> float: ...  # what one of its runs typically costs; 0: unknown


def typical_run_s(environment, workload, params) -> float:
    """What one run of the workload typically costs in the environment, before any ran."""
    start_s, work_factor = environment.typical_cost()
    timed_s, work_s = workload.typical_run(params)
    return start_s + timed_s + work_factor * work_s


def seconds_left(cells: Sequence[OpenCell]) -> float:
    """Host seconds the open cells are expected to take still."""
    speeds = _speeds(cells)
    converging = _converging_shares(cells)
    total = 0.0
    for cell in cells:
        if cell.stopped is not None:
            continue
        if cell.runs:
            cost = cell.host_seconds / cell.runs
        elif cell.prior_s > 0:
            cost = cell.prior_s * speeds.get(cell.environment, speeds.get(None, 1.0))
        else:
            cost = UNKNOWN_RUN_S
        default = 1.0 if cell.stops_out_of_reach else 0.5
        share = converging.get(cell.environment, converging.get(None, default))
        total += _runs_left(cell, share, cost) * (cost + RUN_OVERHEAD_S)
    return total


# STREAM taking more than this share of a campaign expected to last over LONG_S is said
# before the first run, with how to shorten it
STREAM_SHARE = 0.4
LONG_S = 90.0


def first_estimate(cells: Sequence, seconds: float, host) -> list[str]:
    """What is said before the first run: how long the campaign should take, and where
    STREAM's arrays (sized by the host's cache) make most of it, why and how to shorten it."""
    open_cells = [cell for cell in cells if cell.stopped is None]
    lines = [f"guestbench: expected to take about {_clock(seconds + SUMMARY_S)} (estimated "
             "before any run "
             "from typical costs; the progress lines correct it as runs end)"]
    streams = [cell for cell in open_cells if cell.case.workload.family == "stream"
               and cell.prior_s > 0]
    stream_s = seconds_left(streams) if streams else 0.0
    if streams and seconds > LONG_S and stream_s > STREAM_SHARE * seconds:
        array_mib = getattr(streams[0].case.params, "array_mib", 0)
        llc = host.llc_bytes
        cache = f"4x this host's {llc / 2**20:.0f} MiB last-level cache, " if llc else ""
        lines.append(
            f"guestbench: note: STREAM is about {_clock(stream_s)} of it: its arrays are "
            f"{array_mib} MiB each ({cache}as STREAM's rules ask), and each run writes all "
            f"three before it measures (fix: --workload without stream for a shorter "
            "campaign; arrays smaller than that measure the cache, not memory)")
    return lines


def _clock(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 60}:{whole % 60:02d}" if whole < 3600 else \
        f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


def _speeds(cells: Sequence[OpenCell]) -> dict[str | None, float]:
    """Per environment and (None) in all: the host seconds of the runs so far over their
    priors (above 1: slower than typical)."""
    sums: dict[str | None, list[float]] = {}
    for cell in cells:
        if cell.runs and cell.prior_s > 0:
            for key in (cell.environment, None):
                spent, prior = sums.setdefault(key, [0.0, 0.0])
                sums[key] = [spent + cell.host_seconds, prior + cell.prior_s * cell.runs]
    low, high = SPEED_CLAMP
    return {key: min(max(spent / prior, low), high) for key, (spent, prior) in sums.items()}


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
        # past its minimum, a cell that stops out of reach is within reach: near its target
        left = 1.0 if cell.stops_out_of_reach else float(cell.most_runs - cell.runs)
    else:
        expected = converging * cell.min_runs + (1 - converging) * cell.most_runs
        left = expected - cell.runs
    if cell.max_seconds is not None and cost > 0:
        left = min(left, math.ceil(max(cell.max_seconds - cell.host_seconds, 0) / cost))
    return max(left, 1.0)
