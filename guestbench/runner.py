"""Executes a plan's matrix: owns every guest, turns what happened into a status, stores each run."""

from __future__ import annotations

import datetime as dt
import itertools
import os
import shutil
import signal
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from guestbench import __version__, environments, proc
from guestbench import host as host_checks
from guestbench.estimate import seconds_left
from guestbench.batching import Part, job_arguments, part_of
from guestbench.environments.base import (
    Availability, Environment, EnvironmentSpec, Guest, GuestCrashed, GuestStartError, Job,
    JobNeeds, PlanNeeds)
from guestbench.host import Host
from guestbench.plan import AutoSection, Plan, WorkloadCase
from guestbench.protocol import ProtocolError, Record
from guestbench.analysis import clock
from guestbench.analysis.stats import relative_half_width
from guestbench.store import CellStop, RunRecord, Store
from guestbench.workloads.base import InputError, OutputError, RunOutput


class Status:
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    INFRA = "infra"
    UNSUPPORTED = "unsupported"
    UNAVAILABLE = "unavailable"
    INTERRUPTED = "interrupted"


class StopReason:
    """Why a cell (one environment x one workload label) stopped repeating."""

    FIXED = "fixed"  # it had its repeat = N runs
    CONVERGED = "converged"  # the median's interval is as narrow as the plan's target
    MAX_RUNS = "max-runs"
    MAX_TIME = "max-time"
    FAILING = "failing"  # after min_runs runs, fewer than 2 ok runs gave the primary metric
    UNAVAILABLE = Status.UNAVAILABLE  # nothing to repeat: one run says why
    UNSUPPORTED = Status.UNSUPPORTED
    INTERRUPTED = Status.INTERRUPTED  # the campaign stopped while the cell was open


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
    def start(self, total_runs: int) -> None: ...  # the most runs the campaign can take
    def total_changed(self, total_runs: int) -> None: ...  # a cell stopped before its most
    def run_started(self, environment: str, label: str, repetition: int) -> None: ...
    def run_finished(self, environment: str, label: str, outcome: Outcome) -> None: ...
    def host_warning(self, message: str) -> None: ...  # the host may make results noisy
    def preparing(self, environment: str) -> None: ...  # building its image, before any run
    def estimate(self, seconds_left: float) -> None: ...  # host seconds still to go (estimate.py)


@dataclass
class _Column:
    spec: EnvironmentSpec
    environment: Environment
    availability: Availability
    row_id: int = 0


INTERVAL_MIN_RUNS = 3  # fewer runs give the median no bootstrap interval


@dataclass
class _Cell:
    """One environment x one workload case: its runs so far and, once it stops, why."""

    column: _Column
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

    @property
    def environment(self) -> str:
        return self.column.spec.name

    @property
    def min_runs(self) -> int | None:
        return self.auto.min_runs if self.auto is not None else None

    @property
    def max_seconds(self) -> float | None:
        return self.auto.max_cell_s if self.auto is not None else None

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
        """Why the cell stops now, or None while it goes on."""
        if self.auto is None:
            return StopReason.FIXED if self.runs >= self.case.repeat else None
        if self.last_status in (Status.UNAVAILABLE, Status.UNSUPPORTED):
            return self.last_status
        self._measure()
        return _adaptive_stop(self, self.auto)

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


def _adaptive_stop(cell: _Cell, auto: AutoSection) -> str | None:
    judged = len(cell.primary_sizes)  # runs, however many values each gave
    if judged >= auto.min_runs and cell.half_width is not None and cell.half_width <= auto.target:
        return StopReason.CONVERGED
    if cell.runs >= auto.min_runs and judged < 2:
        return StopReason.FAILING
    if cell.runs >= auto.max_runs:
        return StopReason.MAX_RUNS
    if cell.host_seconds >= auto.max_cell_s:
        return StopReason.MAX_TIME
    return None


class Runner:
    def __init__(self, plan: Plan, store: Store, host: Host, logs_root: Path, agent_path: Path,
                 progress: Progress | None = None,
                 create: Callable[[EnvironmentSpec], Environment] = environments.create,
                 snapshot_host: Callable[[Host], dict[str, Any]] = host_checks.noise_snapshot
                 ) -> None:
        self.plan, self.store, self.host = plan, store, host
        self.logs_root, self.agent_path = logs_root, agent_path
        self.progress = progress or Progress()
        self.create, self.snapshot_host = create, snapshot_host
        self.campaign_id = 0
        self.cells: list[_Cell] = []
        self._inputs_dir: Path | None = None

    def run(self) -> int:
        """Run the whole matrix; returns the campaign id. Raises Interrupted on Ctrl-C/SIGTERM."""
        self.host_before = self.snapshot_host(self.host)  # before probes boot or start anything
        for message in host_checks.warnings_at_start(self.host_before):
            self.progress.host_warning(message)
        columns = self._probe_all()
        self._create_campaign(columns)
        self.cells = [self._cell(column, case) for column in columns for case in self.plan.workloads
                      if case.runs_in(column.spec.name)]
        self.total_runs = sum(cell.most_runs for cell in self.cells)
        self.progress.start(self.total_runs)
        try:
            self._matrix()
        except KeyboardInterrupt as stop:
            self._remove_inputs()
            proc.kill_all()
            for cell in self._open_cells():
                self._close(cell, StopReason.INTERRUPTED)
            self._finish(Status.INTERRUPTED)
            raise Interrupted(self.campaign_id, str(stop) or "SIGINT") from None
        except BaseException:
            proc.kill_all()  # a bug must not leave guests running or the campaign 'running'
            self._remove_inputs()
            self.store.finish_campaign(self.campaign_id, "failed")
            raise
        self._remove_inputs()
        self._finish("finished")
        return self.campaign_id

    def _remove_inputs(self) -> None:
        if self._inputs_dir is not None:
            shutil.rmtree(self._inputs_dir, ignore_errors=True)
            self._inputs_dir = None

    def _create_campaign(self, columns: list[_Column]) -> None:
        # ids restart in every store: a random part keeps two stores' logs apart
        self.campaign_logs = self.logs_root.resolve() / (
            f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}")
        self.campaign_id = self.store.create_campaign(
            self.plan.campaign.name, self.plan.as_dict(), self.host.facts, self.host.fingerprint,
            self.plan.baseline, str(self.campaign_logs), __version__,
            host_checks.noise_checks(self.host_before, None))
        for position, column in enumerate(columns):
            column.row_id = self.store.add_environment(
                self.campaign_id, column.spec.name, column.spec.kind,
                column.spec.model_dump(mode="json"), column.availability.available,
                column.availability.reason, position, facts=column.environment.facts() or None)
            if not column.availability.available:
                self.progress.unavailable(column.spec.name, column.availability.reason)

    def _finish(self, status: str) -> None:
        """Close the campaign with the host checks of its end; warnings never fail it."""
        after = self.snapshot_host(self.host)
        self.store.finish_campaign(self.campaign_id, status,
                                   host_checks.noise_checks(self.host_before, after))
        for message in host_checks.warnings_at_end(self.host_before, after):
            self.progress.host_warning(message)

    def _cell(self, column: _Column, case: WorkloadCase) -> _Cell:
        if not case.adaptive:
            return _Cell(column, case, None, case.repeat)
        auto = self.plan.campaign.auto
        # a refused cell takes one run, which records why
        return _Cell(column, case, auto, 1 if _refusal(column, case) else auto.max_runs)

    def _probe_all(self) -> list[_Column]:
        """Every environment probed (fast), then each available one prepared: the explicit
        step that builds guest images before the first run."""
        columns = []
        cases = self.plan.workloads
        # a tool missing here makes its workloads unsupported (_outcome), not the environment
        needs = PlanNeeds(
            tools=tuple(dict.fromkeys(tool for case in cases
                                      for tool in case.workload.needed_tools(case.params)
                                      if shutil.which(tool))),
            capabilities=frozenset().union(*(case.workload.requires for case in cases)))
        for spec in self.plan.environments:
            environment = self.create(spec)
            environment.plan_workloads(needs)
            columns.append(_Column(spec, environment, environment.probe(self.host)))
        for column in columns:
            if column.availability.available:
                if column.environment.full_system:  # the others have nothing to build
                    self.progress.preparing(column.spec.name)
                prepared = column.environment.prepare(self.host)
                column.availability = prepared if not prepared.available else Availability.yes(
                    "; ".join(r for r in (column.availability.reason, prepared.reason) if r))
        return columns

    def _matrix(self) -> None:
        # Repetitions are the outer loop (rounds) so that slow drift on the host
        # (thermal, background load) spreads over every environment instead of
        # biasing one. Round r runs every cell still open once, in plan order.
        for repetition in itertools.count():
            open_cells = self._open_cells()
            if not open_cells:
                return
            if self.plan.interleave and repetition % 2:  # A/B: A B, then B A, ...
                open_cells.reverse()
            for group, parts in self._groups(open_cells):
                if parts:
                    self._shared(group, parts, repetition)
                else:
                    self._one(group[0], repetition)
                for cell in group:
                    reason = cell.stop_reason()
                    if reason is not None:
                        self._close(cell, reason)
                self.progress.estimate(seconds_left(self.cells))

    def _groups(self, cells: list[_Cell]) -> list[tuple[list[_Cell], list[Part]]]:
        """Consecutive cells of one full-system environment whose workloads can share a
        guest (batching.py), as one group with their parts; every other cell alone."""
        groups: list[tuple[list[_Cell], list[Part]]] = []
        for cell in cells:
            part = self._part(cell)
            last = groups[-1] if groups else None
            if (part is not None and last is not None and last[1]
                    and last[0][-1].column is cell.column
                    and job_arguments([*last[1], part], 0) is not None):
                last[0].append(cell)
                last[1].append(part)
            else:
                groups.append(([cell], [part] if part is not None else []))
        return [(group, parts if len(group) > 1 else []) for group, parts in groups]

    def _part(self, cell: _Cell) -> Part | None:
        column, case = cell.column, cell.case
        if not column.environment.full_system or _refusal(column, case) is not None:
            return None
        workload = case.workload
        if any(shutil.which(tool) is None for tool in workload.needed_tools(case.params)):
            return None
        try:
            needs = workload.job_needs(case.params, self._inputs())
        except InputError:
            return None
        if column.environment.refusal(workload.requires, needs) is not None:
            return None
        return part_of(case, needs)

    def _shared(self, group: list[_Cell], parts: list[Part], repetition: int) -> None:
        """One fresh guest runs every part of the group; each cell stores its own run."""
        column = group[0].column
        name = column.spec.name
        logdir = self.campaign_logs / name / "shared" / f"rep{repetition}"
        started_at = dt.datetime.now(dt.timezone.utc)
        began = time.monotonic()
        for cell in group:
            self.progress.run_started(name, cell.case.label, repetition)
        try:
            outcomes = self._shared_outcomes(column, parts, repetition, logdir)
        except KeyboardInterrupt as stop:
            outcome = Outcome(Status.INTERRUPTED,
                              f"campaign stopped by {str(stop) or 'SIGINT'} during this run")
            for cell in group:
                cell.add(outcome, self._store(cell, repetition, outcome, started_at, began,
                                              str(logdir), len(group)))
            raise
        log_path = str(logdir) if logdir.exists() else None
        for cell, part in zip(group, parts):
            outcome = outcomes[part.name]
            cell.add(outcome, self._store(cell, repetition, outcome, started_at, began,
                                          log_path, len(group)))
            self.progress.run_finished(name, cell.case.label, outcome)

    def _shared_outcomes(self, column: _Column, parts: list[Part], repetition: int,
                         logdir: Path) -> dict[str, Outcome]:
        names = [part.name for part in parts]
        args = job_arguments(parts, repetition)
        job = Job("+".join(names), self.agent_path, tuple(args), JobNeeds())
        # the run timeout holds for each workload: the shared guest gets it once per workload
        timeout_s = self.plan.campaign.timeout_s * len(parts)
        try:
            guest = column.environment.start(job, logdir, proc.now_ns() + int(timeout_s * 1e9))
        except GuestStartError as error:
            return dict.fromkeys(names, Outcome(Status.INFRA, f"could not start: {error}"))
        seen = _Seen()
        with guest:
            try:
                ended = _read_to_the_end(guest, timeout_s, seen.add)
            except ProtocolError as error:
                ended = _broken(guest, seen, error)
            stop = guest.stop()
        if ended is not None:
            return {name: Outcome(ended.status, ended.reason) for name in names}
        return {name: _part_outcome(seen, name, stop.exit_code, guest) for name in names}

    def _open_cells(self) -> list[_Cell]:
        return [cell for cell in self.cells if cell.stopped is None]

    def _close(self, cell: _Cell, reason: str) -> None:
        cell.stopped = reason
        self.store.add_cell_stop(self.campaign_id, cell.record())
        if cell.runs < cell.most_runs:
            self.total_runs -= cell.most_runs - cell.runs
            self.progress.total_changed(self.total_runs)

    def _one(self, cell: _Cell, repetition: int) -> None:
        column, case = cell.column, cell.case
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
            cell.add(outcome, self._store(cell, repetition, outcome, started_at, began, log_path))
            raise
        if not logdir.exists():
            log_path = None
        cell.add(outcome, self._store(cell, repetition, outcome, started_at, began, log_path))
        self.progress.run_finished(name, case.label, outcome)

    def _store(self, cell: _Cell, repetition: int, outcome: Outcome, started_at: dt.datetime,
               began: float, log_path: str | None, sharing: int = 1) -> float:
        """Stores the run; returns its host seconds (its share of a guest shared by
        `sharing` workloads)."""
        host_seconds = (time.monotonic() - began) / sharing
        self.store.add_run(self.campaign_id, RunRecord(
            environment_id=cell.column.row_id, workload=cell.case.name, label=cell.case.label,
            params=cell.case.params.model_dump(mode="json"), repetition=repetition,
            status=outcome.status, reason=outcome.reason, started_at=started_at,
            host_seconds=host_seconds, log_path=log_path,
            samples=tuple(outcome.samples), flags=tuple(outcome.flags)))
        return host_seconds

    def _outcome(self, column: _Column, case: WorkloadCase, logdir: Path) -> Outcome:
        refused = _refusal(column, case)
        if refused is not None:
            return refused
        workload = case.workload
        missing = [tool for tool in workload.needed_tools(case.params)
                   if shutil.which(tool) is None]
        if missing:
            return Outcome(Status.UNSUPPORTED, f"{', '.join(missing)} not installed on this host "
                                               f"(apt-get install {' '.join(missing)})")
        try:
            needs = workload.job_needs(case.params, self._inputs())
        except InputError as error:
            return Outcome(Status.INFRA, f"could not prepare the workload's inputs: {error}")
        refused_need = column.environment.refusal(workload.requires, needs)
        if refused_need is not None:
            return Outcome(Status.UNSUPPORTED, refused_need)
        if needs.drop_caches:
            dropped = drop_host_caches()
            if dropped:
                return Outcome(Status.UNSUPPORTED, dropped)
        job = Job(case.name, self.agent_path, tuple(workload.agent_args(case.params)), needs)
        timeout_s = self.plan.campaign.timeout_s
        deadline_ns = proc.now_ns() + int(timeout_s * 1e9)
        try:
            guest = column.environment.start(job, logdir, deadline_ns)
        except GuestStartError as error:
            return Outcome(Status.INFRA, f"could not start: {error}")
        seen = _Seen()
        with guest:
            if workload.uses_agent:
                outcome = _watch(guest, timeout_s, workload.agent_workload,
                                 workload.produces_samples, seen)
            else:
                outcome = _watch_own_program(guest, timeout_s)
                seen.outputs["stdout"] = [guest.console_text()]
            if outcome.status == Status.OK and workload.boot_phases:
                outcome.samples += [(f"boot_{phase}", "ms", ms)
                                    for phase, ms in guest.boot_phases().items()]
        if workload.uses_agent:
            _keep_outputs(seen, logdir)
        if outcome.status == Status.OK and workload.derive is not None:
            return _derived(outcome, workload, case.params, seen, guest.artifacts())
        return outcome

    def _inputs(self) -> Path:
        """The campaign's folder for generated inputs (source trees, data files), made once."""
        if self._inputs_dir is None:
            self._inputs_dir = Path(tempfile.mkdtemp(prefix="guestbench-inputs-"))
        return self._inputs_dir


def drop_host_caches() -> str:
    """sync, then drop the host kernel's page cache, dentries and inodes (cold-cache runs).

    Returns "" when done, else why not (the run is then unsupported): it needs root.
    """
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as file:
            file.write("3\n")
    except OSError as error:
        return (f"a cold-cache run drops the host's page cache, which needs root "
                f"(/proc/sys/vm/drop_caches: {error.strerror}); run guestbench as root or "
                "measure with a warm cache only")
    return ""


def _keep_outputs(seen: "_Seen", logdir: Path) -> None:
    """A tool's output, joined from its output records, is kept whole in the run's log folder."""
    for stream, chunks in seen.outputs.items():
        if logdir.exists():
            (logdir / f"program-{stream}.txt").write_text("".join(chunks))


def _derived(outcome: Outcome, workload, params, seen: "_Seen", artifacts: dict) -> Outcome:
    """The samples of a workload whose figures come from a tool's output, not the agent's."""
    output = RunOutput(samples=list(outcome.samples), stdout="".join(seen.outputs.get("stdout", [])),
                       stderr="".join(seen.outputs.get("stderr", [])), records=seen.all,
                       artifacts=artifacts)
    try:
        derived = workload.derive(params, output)
    except OutputError as error:
        return Outcome(Status.FAILED, f"{workload.name}: {error}", [], outcome.flags)
    # kept beside the derived ones: the clock check, and the boot phases the host measured
    context = [sample for sample in outcome.samples
               if sample[0] == "clock_ratio" or (workload.boot_phases and sample[0].startswith("boot_"))]
    return Outcome(Status.OK, "", [*derived, *context], outcome.flags)


def _refusal(column: _Column, case: WorkloadCase) -> Outcome | None:
    """The outcome of a run that cannot start: the environment is unavailable or lacks a need."""
    if not column.availability.available:
        return Outcome(Status.UNAVAILABLE, column.availability.reason)
    refused = column.environment.refusal(case.workload.requires)
    return Outcome(Status.UNSUPPORTED, refused) if refused else None


@dataclass
class _Seen:
    """What a guest's records said, gathered as they arrive."""

    samples: list[tuple[str, str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # what the environment lacked
    by_workload: dict[str, list] = field(default_factory=dict)  # samples per agent workload
    workloads: set[str] = field(default_factory=set)
    records: int = 0
    end_status: str | None = None
    hello: Record | None = None
    end: Record | None = None
    outputs: dict[str, list[str]] = field(default_factory=dict)
    all: list[Record] = field(default_factory=list)

    def add(self, record: Record) -> None:
        self.records += 1
        self.all.append(record)
        body = record.body
        if record.type == "output":
            self.outputs.setdefault(body["stream"], []).append(body["text"])
        if record.type == "sample":
            sample = (body["metric"], body["unit"], float(body["value"]))
            self.samples.append(sample)
            self.by_workload.setdefault(body["workload"], []).append(sample)
            self.workloads.add(body["workload"])
        elif record.type == "error":
            said = f"{body.get('workload', 'agent')}: {body['message']}"
            (self.unsupported if body.get("unsupported") is True else self.errors).append(said)
        elif record.type == "end":
            self.end_status = body["status"]
            self.end = record
        elif record.type == "hello":
            self.hello = record

    def problem(self, workload: str, expect_samples: bool) -> str:
        """Why a complete, well-formed record stream still does not make an ok run."""
        if self.errors or self.unsupported:
            return "; ".join([*self.errors, *self.unsupported])
        if self.end_status != "ok":
            return f"the agent ended with status {self.end_status!r} and no error record"
        if self.workloads - {workload}:
            return f"samples for {sorted(self.workloads - {workload})}, expected only {workload!r}"
        if expect_samples and not self.samples:
            return "the agent reported no samples"
        return ""


def _watch(guest: Guest, timeout_s: float, workload: str, expect_samples: bool = True,
           seen: _Seen | None = None) -> Outcome:
    """Collect a guest's records and decide the run's status."""
    seen = seen if seen is not None else _Seen()
    try:
        ended = _read_to_the_end(guest, timeout_s, seen.add)
    except ProtocolError as error:
        return _broken(guest, seen, error)
    if ended is not None:
        return ended
    stop = guest.stop()
    if seen.unsupported and not seen.errors:
        return Outcome(Status.UNSUPPORTED, "; ".join(seen.unsupported))
    problem = seen.problem(workload, expect_samples)
    if problem:
        return Outcome(Status.FAILED, problem)
    if stop.exit_code not in (0, None):
        return Outcome(Status.FAILED, _with(f"agent exited with status {stop.exit_code}",
                                            guest.diagnostics()))
    return _ok(seen, seen.samples)


def _ok(seen: "_Seen", samples: list) -> Outcome:
    """An ok run's outcome: its samples and the clock check over the guest's records."""
    outcome = Outcome(Status.OK, "", list(samples))
    ratio = _clock_ratio(seen.hello, seen.end)
    if ratio is not None:
        outcome.samples.append(("clock_ratio", "ratio", ratio))
        if clock.drifted(ratio):
            outcome.flags.append("clock-drift")
    return outcome


def _watch_own_program(guest: Guest, timeout_s: float) -> Outcome:
    """A guest that runs its own program (no agent): ok once its console ended in time;
    what it printed is the workload's to judge."""
    ended = _read_to_the_end(guest, timeout_s, lambda record: None)
    guest.stop()
    return ended or Outcome(Status.OK)


def _read_to_the_end(guest: Guest, timeout_s: float, take) -> Outcome | None:
    """Every record of the guest given to take(); the outcome of a guest killed on its
    deadline or crashed (stopped already), else None. ProtocolError passes through."""
    try:
        for record in guest.records():
            take(record)
    except proc.DeadlineExceeded as error:
        guest.stop()
        if type(error) is not proc.DeadlineExceeded:  # a boot timeout, an exit that never came
            return Outcome(Status.TIMEOUT, f"killed: {error}")
        return Outcome(Status.TIMEOUT, _with(f"killed after the {timeout_s:g} s run timeout",
                                             guest.diagnostics()))
    except GuestCrashed as error:
        guest.stop()
        return Outcome(Status.CRASHED, str(error))
    return None


def _part_outcome(seen: "_Seen", name: str, exit_code: int | None, guest: Guest) -> Outcome:
    """One workload's outcome from the records of a guest it shared with others."""
    mine = [said for said in seen.errors if said.startswith(f"{name}: ")]
    if mine:
        return Outcome(Status.FAILED, "; ".join(mine))
    unsupported = [said for said in seen.unsupported if said.startswith(f"{name}: ")]
    if unsupported:
        return Outcome(Status.UNSUPPORTED, "; ".join(unsupported))
    samples = seen.by_workload.get(name, [])
    if not samples:
        if exit_code not in (0, None) and not seen.errors:
            return Outcome(Status.FAILED, _with(f"agent exited with status {exit_code}",
                                                guest.diagnostics()))
        return Outcome(Status.FAILED, f"the agent reported no samples for {name}")
    return _ok(seen, samples)


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
