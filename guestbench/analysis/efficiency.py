"""Where a campaign's time went: how much of its wall time was spent measuring.

Shares of the wall time (the command's, or the campaign's start to its end):
- timed: inside the agent's timed regions, the batches whose times are the values (the
  agent reports each run's sum as its `timed` sample, in seconds);
- in the agent, not timed: the rest of the agent's time, from its first record to its last
  on the host's clock (the runner stores it as `in_agent`): warm-up and calibration,
  STREAM's set-up and check, a full-system guest's clock check;
- starting and stopping environments: the rest of each run's host time (a VMM's boot, a
  container's creation, the teardown);
- preparing (the command's line only): probing environments and building images before the
  campaign's first run;
- outside runs: writing the store between runs, the report.

Runs of workloads that time no region of their own (a boot, a build, a program run by
exec) report no `timed` sample; they are counted apart, so that a share never guesses.
Runs whose spans the host times on its own clock (a start's time to the agent and its
teardown, a save, a restore: Workload.host_timed) count those spans as timed.
A store written before `in_agent` existed gives its runs' untimed time unsplit.
This is the figure to drive down, as a profiler's would be (docs/results.md, "Where the
time went").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

TIMED = "timed"
IN_AGENT = "in_agent"


@dataclass(frozen=True)
class Efficiency:
    wall_s: float
    runs_s: float  # the runs' host time
    timed_s: float  # inside timed regions, over the runs that report them
    runs: int
    untimed_runs: int  # runs that report no timed region (boot, build, exec)
    untimed_runs_s: float  # their host time
    agent_s: float = 0.0  # the agent's span, over the timed runs that report it
    split_runs_s: float = 0.0  # the host time of those runs
    preparing_s: float = 0.0  # before the campaign's first run (the command's line only)
    split_timed_s: float = 0.0  # the timed part of the split runs

    @property
    def between_s(self) -> float:
        return max(self.wall_s - self.runs_s - self.preparing_s, 0.0)

    @property
    def starting_s(self) -> float:
        """Starting and stopping environments, over the runs whose agent span is known."""
        return max(self.split_runs_s - self.agent_s, 0.0)

    def share(self, seconds: float) -> float:
        return seconds / self.wall_s if self.wall_s > 0 else 0.0

    def line(self, campaign_s: float | None = None) -> str:
        """'Time: timed 56% of this command's 1 min 49 s; in the agent, not timed 20% (...);
        starting and stopping environments 18%; ...; outside runs 3% (...).' campaign_s: the
        campaign's own time (its start to its end, what report gives), said beside it."""
        in_runs = max(self.runs_s - self.timed_s - self.untimed_runs_s, 0.0)
        own = ("" if campaign_s is None else
               f" (the campaign itself, start to end: {duration(campaign_s)})")
        parts = [f"timed {_percent(self.share(self.timed_s))} of this command's "
                 f"{duration(self.wall_s)}{own}"]
        if self.split_runs_s > 0:
            # the split runs' agent span beyond their timed regions; and the other runs'
            # time beyond theirs (no span recorded: it cannot be split), told with it
            in_agent = max(self.agent_s - self.split_timed_s, 0.0)
            unsplit = max(in_runs - in_agent - self.starting_s, 0.0)
            parts.append(f"in the agent, not timed "
                         f"{_percent(self.share(in_agent + unsplit))} "
                         "(warm-up, calibration, STREAM's set-up and check, clock checks)")
            parts.append("starting and stopping environments "
                         f"{_percent(self.share(self.starting_s))}")
        else:
            parts.append(f"in runs, not timed {_percent(self.share(in_runs))} (starting and "
                         "stopping environments, warm-up, calibration)")
        if self.untimed_runs:
            parts.append(f"runs that time no region of their own {_percent(self.share(self.untimed_runs_s))}"
                         f" ({self.untimed_runs} runs: boots, builds, programs)")
        if self.preparing_s > 0:
            parts.append(f"preparing {_percent(self.share(self.preparing_s))} (probes, images)")
            parts.append(f"outside runs {_percent(self.share(self.between_s))} (the store, "
                         "the report)")
        else:
            parts.append(f"outside runs {_percent(self.share(self.between_s))} (probes, images, "
                         "the store, the report)")
        return "Time: " + "; ".join(parts) + "."


def metrics(host_timed: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    """The sample metrics that of() reads."""
    return tuple(dict.fromkeys([TIMED, IN_AGENT, *(m for ms in host_timed.values() for m in ms)]))


def timed_by_run(runs: list[Any], samples: Iterable[Any],
                 host_timed: dict[str, tuple[str, ...]] | None = None
                 ) -> tuple[dict[int, float], dict[int, float], set[int]]:
    """(each run's timed seconds, each run's agent span, the runs the host timed): from the
    `timed` samples, or, for a workload in host_timed, the samples of its host-timed metrics
    (in ms or s), of these runs only (not another command's runs of a resumed campaign)."""
    host_timed = host_timed or {}
    by_host = {run.id: host_timed[run.workload] for run in runs if run.workload in host_timed}
    ids = {run.id for run in runs}
    timed: dict[int, float] = {}
    agent: dict[int, float] = {}
    for sample in samples:
        if sample.run_id not in ids:
            continue
        if sample.metric == TIMED and sample.run_id not in by_host:
            timed[sample.run_id] = timed.get(sample.run_id, 0.0) + sample.value
        elif sample.metric == IN_AGENT:
            agent[sample.run_id] = sample.value
        elif sample.metric in by_host.get(sample.run_id, ()):
            seconds = sample.value / 1000 if sample.unit == "ms" else sample.value
            timed[sample.run_id] = timed.get(sample.run_id, 0.0) + seconds
    return timed, agent, set(by_host)


def of(wall_s: float, runs: list[dict[str, Any]], samples: Iterable[dict[str, Any]],
       preparing_s: float = 0.0,
       host_timed: dict[str, tuple[str, ...]] | None = None) -> Efficiency:
    """The efficiency of wall_s seconds (the command's, or the campaign's start to its end)
    spent on these runs; samples: their `timed` and `in_agent` samples, and those of the
    metrics host_timed gives per workload (others are ignored); preparing_s: the part of
    wall_s before the campaign's first run."""
    timed, agent_by_run, by_host = timed_by_run(runs, samples, host_timed)
    runs_s = sum(run.host_seconds or 0.0 for run in runs)
    untimed = [run for run in runs if run.id not in timed and run.status == "ok"]
    # a host-timed run's spans are its start and stop: not split again as starting
    split = [run for run in runs if run.id in timed and run.id in agent_by_run
             and run.id not in by_host]
    return Efficiency(wall_s, runs_s, sum(timed.values()), len(runs), len(untimed),
                      sum(run.host_seconds or 0.0 for run in untimed),
                      agent_s=sum(agent_by_run[run.id] for run in split),
                      split_runs_s=sum(run.host_seconds or 0.0 for run in split),
                      preparing_s=preparing_s,
                      split_timed_s=sum(timed[run.id] for run in split))


def campaign_wall(campaign: dict[str, Any]) -> float | None:
    """The campaign's start to its end in seconds; None while it has none (running, killed).
    (Probing and preparing before its start are not in it: `run` says those too.)"""
    started, finished = campaign.created_at, campaign.finished_at
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
