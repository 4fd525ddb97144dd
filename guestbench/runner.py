"""Executes a plan's matrix: owns every guest, turns what happened into a status, stores each run."""

from __future__ import annotations

import datetime as dt
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from guestbench import __version__, environments, proc
from guestbench.environments.base import (
    Availability, Environment, EnvironmentSpec, Guest, GuestCrashed, GuestStartError, Job)
from guestbench.host import Host
from guestbench.plan import Plan, WorkloadCase
from guestbench.protocol import ProtocolError, Record
from guestbench.analysis import clock
from guestbench.store import RunRecord, Store


class Status:
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    INFRA = "infra"
    UNSUPPORTED = "unsupported"
    UNAVAILABLE = "unavailable"
    INTERRUPTED = "interrupted"


class Interrupted(Exception):
    """The campaign was stopped (Ctrl-C, SIGTERM); finished runs are stored."""

    def __init__(self, campaign_id: int, signal_name: str) -> None:
        super().__init__(f"campaign {campaign_id} interrupted by {signal_name}")
        self.campaign_id = campaign_id
        self.signal_name = signal_name


@dataclass
class Outcome:
    status: str
    reason: str = ""
    samples: list[tuple[str, str, float]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


class Progress:
    """What the runner tells its caller; the CLI draws it, tests count it."""

    def unavailable(self, environment: str, reason: str) -> None: ...
    def start(self, total_runs: int) -> None: ...
    def run_started(self, environment: str, label: str, repetition: int) -> None: ...
    def run_finished(self, environment: str, label: str, outcome: Outcome) -> None: ...


@dataclass
class _Column:
    spec: EnvironmentSpec
    environment: Environment
    availability: Availability
    row_id: int = 0


class Runner:
    def __init__(self, plan: Plan, store: Store, host: Host, logs_root: Path, agent_path: Path,
                 progress: Progress | None = None,
                 create: Callable[[EnvironmentSpec], Environment] = environments.create) -> None:
        self.plan, self.store, self.host = plan, store, host
        self.logs_root, self.agent_path = logs_root, agent_path
        self.progress = progress or Progress()
        self.create = create
        self.campaign_id = 0

    def run(self) -> int:
        """Run the whole matrix; returns the campaign id. Raises Interrupted on Ctrl-C/SIGTERM."""
        columns = self._probe_all()
        # ids restart in every store: a random part keeps two stores' logs apart
        self.campaign_logs = self.logs_root.resolve() / (
            f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}")
        self.campaign_id = self.store.create_campaign(
            self.plan.campaign.name, self.plan.as_dict(), self.host.facts, self.host.fingerprint,
            self.plan.baseline, str(self.campaign_logs), __version__)
        for position, column in enumerate(columns):
            column.row_id = self.store.add_environment(
                self.campaign_id, column.spec.name, column.spec.kind,
                column.spec.model_dump(mode="json"), column.availability.available,
                column.availability.reason, position)
            if not column.availability.available:
                self.progress.unavailable(column.spec.name, column.availability.reason)
        self.progress.start(self.plan.campaign.repeat * len(columns) * len(self.plan.workloads))
        try:
            self._matrix(columns)
        except KeyboardInterrupt as stop:
            proc.kill_all()
            self.store.finish_campaign(self.campaign_id, Status.INTERRUPTED)
            raise Interrupted(self.campaign_id, str(stop) or "SIGINT") from None
        except BaseException:
            proc.kill_all()  # a bug must not leave guests running or the campaign 'running'
            self.store.finish_campaign(self.campaign_id, "failed")
            raise
        self.store.finish_campaign(self.campaign_id, "finished")
        return self.campaign_id

    def _probe_all(self) -> list[_Column]:
        columns = []
        for spec in self.plan.environments:
            environment = self.create(spec)
            columns.append(_Column(spec, environment, environment.probe(self.host)))
        return columns

    def _matrix(self, columns: list[_Column]) -> None:
        # Repetitions are the outer loop so that slow drift on the host (thermal,
        # background load) spreads over every environment instead of biasing one.
        for repetition in range(self.plan.campaign.repeat):
            for column in columns:
                for case in self.plan.workloads:
                    self._one(column, case, repetition)

    def _one(self, column: _Column, case: WorkloadCase, repetition: int) -> None:
        name = column.spec.name
        logdir = self.campaign_logs / name / case.label / f"rep{repetition}"
        started_at = dt.datetime.now(dt.timezone.utc)
        began = time.monotonic()
        log_path: str | None = str(logdir)
        try:
            self.progress.run_started(name, case.label, repetition)
            outcome = self._outcome(column, case, logdir)
        except KeyboardInterrupt as stop:
            outcome = Outcome(Status.INTERRUPTED,
                              f"campaign stopped by {str(stop) or 'SIGINT'} during this run")
            self._store(column, case, repetition, outcome, started_at, began, log_path)
            raise
        if not logdir.exists():
            log_path = None
        self._store(column, case, repetition, outcome, started_at, began, log_path)
        self.progress.run_finished(name, case.label, outcome)

    def _store(self, column: _Column, case: WorkloadCase, repetition: int, outcome: Outcome,
               started_at: dt.datetime, began: float, log_path: str | None) -> None:
        self.store.add_run(self.campaign_id, RunRecord(
            environment_id=column.row_id, workload=case.name, label=case.label,
            params=case.params.model_dump(mode="json"), repetition=repetition,
            status=outcome.status, reason=outcome.reason, started_at=started_at,
            host_seconds=time.monotonic() - began, log_path=log_path,
            samples=tuple(outcome.samples), flags=tuple(outcome.flags)))

    def _outcome(self, column: _Column, case: WorkloadCase, logdir: Path) -> Outcome:
        if not column.availability.available:
            return Outcome(Status.UNAVAILABLE, column.availability.reason)
        missing = case.workload.capabilities - column.environment.capabilities
        if missing:
            names = ", ".join(sorted(capability.value for capability in missing))
            return Outcome(Status.UNSUPPORTED, f"{column.spec.kind} lacks {names}")
        job = Job(case.name, self.agent_path, tuple(case.workload.agent_args(case.params)))
        timeout_s = self.plan.campaign.timeout_s
        deadline_ns = proc.now_ns() + int(timeout_s * 1e9)
        try:
            guest = column.environment.start(job, logdir, deadline_ns)
        except GuestStartError as error:
            return Outcome(Status.INFRA, f"could not start: {error}")
        with guest:
            outcome = _watch(guest, timeout_s, case.name, case.workload.produces_samples)
            if outcome.status == Status.OK and case.workload.boot_phases:
                outcome.samples += [(f"boot_{phase}", "ms", ms)
                                    for phase, ms in guest.boot_phases().items()]
            return outcome


@dataclass
class _Seen:
    """What a guest's records said, gathered as they arrive."""

    samples: list[tuple[str, str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    workloads: set[str] = field(default_factory=set)
    records: int = 0
    end_status: str | None = None
    hello: Record | None = None
    end: Record | None = None

    def add(self, record: Record) -> None:
        self.records += 1
        body = record.body
        if record.type == "sample":
            self.samples.append((body["metric"], body["unit"], float(body["value"])))
            self.workloads.add(body["workload"])
        elif record.type == "error":
            self.errors.append(f"{body.get('workload', 'agent')}: {body['message']}")
        elif record.type == "end":
            self.end_status = body["status"]
            self.end = record
        elif record.type == "hello":
            self.hello = record

    def problem(self, workload: str, expect_samples: bool) -> str:
        """Why a complete, well-formed record stream still does not make an ok run."""
        if self.errors:
            return "; ".join(self.errors)
        if self.end_status != "ok":
            return f"the agent ended with status {self.end_status!r} and no error record"
        if self.workloads - {workload}:
            return f"samples for {sorted(self.workloads - {workload})}, expected only {workload!r}"
        if expect_samples and not self.samples:
            return "the agent reported no samples"
        return ""


def _watch(guest: Guest, timeout_s: float, workload: str, expect_samples: bool = True) -> Outcome:
    """Collect a guest's records and decide the run's status."""
    seen = _Seen()
    try:
        for record in guest.records():
            seen.add(record)
    except proc.DeadlineExceeded as error:
        guest.stop()
        if type(error) is not proc.DeadlineExceeded:  # a boot timeout, an exit that never came
            return Outcome(Status.TIMEOUT, f"killed: {error}")
        return Outcome(Status.TIMEOUT, _with(f"killed after the {timeout_s:g} s run timeout",
                                             guest.diagnostics()))
    except GuestCrashed as error:
        guest.stop()
        return Outcome(Status.CRASHED, str(error))
    except ProtocolError as error:
        return _broken(guest, seen, error)
    stop = guest.stop()
    problem = seen.problem(workload, expect_samples)
    if problem:
        return Outcome(Status.FAILED, problem)
    if stop.exit_code not in (0, None):
        return Outcome(Status.FAILED, _with(f"agent exited with status {stop.exit_code}",
                                            guest.diagnostics()))
    outcome = Outcome(Status.OK, "", seen.samples)
    ratio = _clock_ratio(seen.hello, seen.end)
    if ratio is not None:
        outcome.samples.append(("clock_ratio", "ratio", ratio))
        if clock.drifted(ratio):
            outcome.flags.append("clock-drift")
    return outcome


def _clock_ratio(first: Record | None, last: Record | None) -> float | None:
    """The clock check over a run: from the hello record to the end record."""
    if first is None or last is None or first.agent_ns is None or last.agent_ns is None:
        return None
    return clock.clock_ratio(last.agent_ns - first.agent_ns,
                             last.host_arrival_ns - first.host_arrival_ns)


def _broken(guest: Guest, seen: _Seen, error: ProtocolError) -> Outcome:
    """The record stream broke off or was garbled: a crash, a start failure or bad output."""
    stop = guest.stop()
    said = guest.diagnostics()
    signal_name = stop.signal_name or _signal_in_status(stop.exit_code)
    if signal_name and not stop.killed:
        return Outcome(Status.CRASHED, _with(f"agent died by {signal_name}: {error}", said))
    if seen.records == 0 and not stop.killed:
        if said.startswith("gbagent:"):
            return Outcome(Status.FAILED, _with("the agent rejected its arguments", said))
        return Outcome(Status.INFRA, _with(
            f"the environment exited with status {stop.exit_code} before the agent printed "
            "a record", said))
    return Outcome(Status.FAILED, _with(str(error), said))


def _signal_in_status(exit_code: int | None) -> str | None:
    """Runtimes and unshare report a child killed by signal N as exit status 128+N."""
    if exit_code is None or not 128 < exit_code < 128 + signal.NSIG:
        return None
    try:
        return signal.Signals(exit_code - 128).name
    except ValueError:
        return None


def _with(reason: str, diagnostics: str) -> str:
    return f"{reason} (stderr: {diagnostics})" if diagnostics else reason
