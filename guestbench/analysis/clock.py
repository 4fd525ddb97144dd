"""The clock check's thresholds, shared by the runner that flags and the report that explains,
and each environment's summary of it over a campaign."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

# The guest's clock may disagree with the host's by this much before a run is flagged.
CLOCK_DRIFT_LIMIT = 0.05
# Shorter spans are dominated by console latency, not by the clocks: not judged.
CLOCK_MIN_SPAN_S = 0.2


def clock_ratio(agent_span_ns: int, host_span_ns: int) -> float | None:
    """The guest's time over the host's for one span, None when too short to judge."""
    if host_span_ns < CLOCK_MIN_SPAN_S * 1e9:
        return None
    return agent_span_ns / host_span_ns


def drifted(ratio: float) -> bool:
    return abs(ratio - 1) > CLOCK_DRIFT_LIMIT


# Full-system guests' agents mark their own clock after the hello (the agent's
# --clock-marks-ms): this long in all, in equal spans.
CLOCK_MARKS_MS = 300


def marks_verdict(points: list[tuple[int, int]]) -> tuple[float | None, str | None]:
    """The clock check over the hello and the agent's clock marks: (agent_ns, host_ns) of
    each, in order. Returns the guest's time over the host's over all of them, and a flag:
    "clock-drift" when every span between marks is beyond CLOCK_DRIFT_LIMIT in the same
    direction (a guest clock that runs fast or slow is wrong in every span);
    "console-latency" when some are and others are not (the host was slow to timestamp
    the console: a late mark lengthens one span and shortens the next); else None."""
    if len(points) < 3:
        return None, None
    spans = [(a2 - a1, h2 - h1) for (a1, h1), (a2, h2) in zip(points, points[1:])]
    ratios = [agent / host if host > 0 else float("inf") for agent, host in spans]
    total_host = points[-1][1] - points[0][1]
    total = (points[-1][0] - points[0][0]) / total_host if total_host > 0 else float("inf")
    fast = [ratio > 1 + CLOCK_DRIFT_LIMIT for ratio in ratios]
    slow = [ratio < 1 - CLOCK_DRIFT_LIMIT for ratio in ratios]
    if all(fast) or all(slow):
        return total, "clock-drift"
    if any(fast) or any(slow):
        return total, "console-latency"
    return total, None


@dataclass(frozen=True)
class ClockSummary:
    """One environment's clock check over a campaign: its runs' guest/host time ratios."""

    runs_judged: int
    median_ratio: float
    lowest: float
    highest: float
    flagged: int  # runs flagged clock-drift


def clock_summaries(runs: list[dict[str, Any]], samples, environments: list[str]
                    ) -> dict[str, ClockSummary]:
    """Per environment (in the given order) that has clock ratios: their summary."""
    run_env = {run.id: run.environment for run in runs}
    ratios: dict[str, list[float]] = {}
    for sample in samples.of_metrics("clock_ratio"):
        ratios.setdefault(run_env[sample.run_id], []).append(sample.value)
    flagged = {env: sum("clock-drift" in (run.flags or []) for run in runs
                        if run.environment == env) for env in ratios}
    return {env: ClockSummary(len(ratios[env]), statistics.median(ratios[env]),
                              min(ratios[env]), max(ratios[env]), flagged[env])
            for env in environments if env in ratios}
