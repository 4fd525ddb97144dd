"""Where a campaign's time went: how much of its wall time was spent measuring.

Three shares of the wall time (the campaign's start to its end):
- timed: inside the agent's timed regions, the batches whose times are the values (the
  agent reports each run's sum as its `timed` sample, in seconds);
- in runs, not timed: the rest of each run's host time (starting and stopping the
  environment, the agent's warm-up and calibration, the clock check, checking the output);
- outside runs: probing environments, building images, writing the store, the report.

Runs of workloads that time no region of their own (a boot, a build, a program run by
exec) report no `timed` sample; they are counted apart, so that a share never guesses.
This is the figure to drive down, as a profiler's would be (docs/results.md, "Where the
time went").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TIMED = "timed"


@dataclass(frozen=True)
class Efficiency:
    wall_s: float
    runs_s: float  # the runs' host time
    timed_s: float  # inside timed regions, over the runs that report them
    runs: int
    untimed_runs: int  # runs that report no timed region (boot, build, exec)
    untimed_runs_s: float  # their host time

    @property
    def between_s(self) -> float:
        return max(self.wall_s - self.runs_s, 0.0)

    def share(self, seconds: float) -> float:
        return seconds / self.wall_s if self.wall_s > 0 else 0.0

    def line(self) -> str:
        """'timed 23% of 3 min 48 s; in runs, not timed 70% (...); between runs 7% (...)'."""
        in_runs = self.runs_s - self.timed_s - self.untimed_runs_s
        parts = [f"timed {_percent(self.share(self.timed_s))} of {duration(self.wall_s)}",
                 f"in runs, not timed {_percent(self.share(in_runs))} (starting and stopping "
                 "environments, warm-up, calibration)"]
        if self.untimed_runs:
            parts.append(f"runs that time no region of their own {_percent(self.share(self.untimed_runs_s))}"
                         f" ({self.untimed_runs} runs: boots, builds, programs)")
        parts.append(f"outside runs {_percent(self.share(self.between_s))} (probes, images, "
                     "the store, the report)")
        return "Time: " + "; ".join(parts) + "."


def of(wall_s: float, runs: list[dict[str, Any]],
       timed_samples: Iterable[dict[str, Any]]) -> Efficiency:
    """The efficiency of wall_s seconds (the command's, or the campaign's start to its end)
    spent on these runs."""
    timed_by_run: dict[int, float] = {}
    for sample in timed_samples:
        if sample["metric"] == TIMED:
            timed_by_run[sample["run_id"]] = timed_by_run.get(sample["run_id"], 0.0) + sample["value"]
    runs_s = sum(run["host_seconds"] or 0.0 for run in runs)
    untimed = [run for run in runs if run["id"] not in timed_by_run and run["status"] == "ok"]
    return Efficiency(wall_s, runs_s, sum(timed_by_run.values()), len(runs), len(untimed),
                      sum(run["host_seconds"] or 0.0 for run in untimed))


def campaign_wall(campaign: dict[str, Any]) -> float | None:
    """The campaign's start to its end in seconds; None while it has none (running, killed).
    (Probing and preparing before its start are not in it: `run` says those too.)"""
    started, finished = campaign.get("created_at"), campaign.get("finished_at")
    if started is None or finished is None:
        return None
    return (finished - started).total_seconds()


def duration(seconds: float) -> str:
    """'48 s', '3 min 48 s', '1 h 2 min'."""
    whole = int(round(seconds))
    if whole < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    minutes, rest = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _percent(share: float) -> str:
    return f"{share * 100:.0f}%"
