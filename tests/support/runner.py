"""Watching the runner: a Progress that records, interrupted runs, a quiet host, and runs and
cell stops read back from the store."""

from __future__ import annotations

import pytest

from guestbench.environments.kinds.fake import Fake
from guestbench.runner import Interrupted, Outcome, Progress


class Recorder(Progress):
    """Counts what the runner reports."""

    def __init__(self) -> None:
        self.total: int | None = None
        self.totals: list[int] = []  # at the start, then each change
        self.started: list[tuple[str, str, int]] = []
        self.finished: list[tuple[str, str, str]] = []
        self.unavailable_envs: list[tuple[str, str]] = []
        self.warnings: list[tuple[str, str]] = []  # (when: "start" or "end", message)

    def unavailable(self, environment: str, reason: str) -> None:
        self.unavailable_envs.append((environment, reason))

    def start(self, total_runs: int) -> None:
        self.total = total_runs
        self.totals.append(total_runs)

    def total_changed(self, total_runs: int) -> None:
        self.total = total_runs
        self.totals.append(total_runs)

    def host_warning(self, message: str) -> None:
        self.warnings.append(("end" if self.started else "start", message))

    def run_started(self, environment: str, label: str, repetition: int) -> None:
        self.started.append((environment, label, repetition))

    def run_finished(self, environment: str, label: str, outcome: Outcome) -> None:
        self.finished.append((environment, label, outcome.status))


def run_interrupted(run_plan, plan, **kwargs) -> Interrupted:
    try:
        run_plan(plan, **kwargs)
    except Interrupted as stop:
        return stop
    except KeyboardInterrupt:  # must never escape the runner
        pytest.fail("KeyboardInterrupt escaped Runner.run()")
    pytest.fail("the campaign was not interrupted")


def interrupting_create(on_start: int):
    """An environment factory whose on_start-th guest start is hit by Ctrl-C."""
    count = {"starts": 0}

    class Interrupting(Fake):
        def start(self, job, logdir, deadline_ns):
            count["starts"] += 1
            if count["starts"] == on_start:
                raise KeyboardInterrupt
            return super().start(job, logdir, deadline_ns)

    return Interrupting


QUIET_HOST = {"load_avg": [0.0, 0.0, 0.0], "logical_cpus": 4, "governors": None,
              "cpu_ticks": None, "virtualised": False}


def stops(store, campaign_id: int) -> dict[tuple[str, str], dict]:
    names = {env.id: env.name for env in store.environments(campaign_id)}
    return {(names[s.environment_id], s.label): s for s in store.cell_stops(campaign_id)}


def runs_of(store, campaign_id: int) -> dict[tuple[str, str], list[dict]]:
    names = {env.id: env.name for env in store.environments(campaign_id)}
    out: dict[tuple[str, str], list[dict]] = {}
    for run in store.runs(campaign_id):
        out.setdefault((names[run.environment_id], run.label), []).append(run)
    return out
