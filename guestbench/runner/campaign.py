"""Runs a plan's campaign: probes and prepares every environment, then runs the cells
round by round, each run in a fresh guest, and stores every run as it ends."""

from __future__ import annotations

import contextlib

import datetime as dt
import itertools
import math
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from guestbench import __version__, environments
from guestbench.process import proc, reaper, stopping
from guestbench import host as host_checks
from guestbench.analysis import efficiency
from guestbench.runner.batching import Part, job_arguments, part_of
from guestbench.environments.base import (
    Availability, Environment, EnvironmentSpec, GuestStartError, Job, JobNeeds, PlanNeeds)
from guestbench.runner.estimate import REFUSED_RUN_S, first_estimate, seconds_left, typical_run_s
from guestbench.host import Host
from guestbench.plan.schema import AutoSection, Plan, WorkloadCase
from guestbench.protocol import ProtocolError, Record
from guestbench.runner.caches import drop_host_caches
from guestbench.runner import host_parts, thread_cpu
from guestbench.runner.outcomes import (
    Outcome, Seen, Status, agent_span_s, broken, derived, ended_midway, keep_outputs,
    part_outcome, read_to_the_end, watch, watch_own_program)
from guestbench.runner.schedule import Cell, Column, StopReason, refusal, restore
from guestbench import store as store_module
from guestbench.store import damage
from guestbench.store import Store
from guestbench.store.records import RunRecord
from guestbench.workloads.base import InputError, InputMissing, Workload

LOAD_SAMPLE_S = 5.0  # the host's load is read as a run ends, at most this often


class Interrupted(Exception):
    """The campaign was stopped (Ctrl-C, SIGTERM); finished runs are stored."""

    def __init__(self, campaign_id: int, signal_name: str, unreachable: str = "") -> None:
        super().__init__(f"campaign {campaign_id} interrupted by {signal_name}")
        self.campaign_id = campaign_id
        self.signal_name = signal_name
        self.unreachable = unreachable  # the store's lost server, if the teardown met it


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
    def expected(self, lines: list[str]) -> None: ...  # before the first run: how long, and why


def new_cell(column: Column, case: WorkloadCase, auto: AutoSection) -> Cell:
    """The cell of a case in an environment, before its first run: its most runs (one for
    a refused cell, which records why) and what a run typically costs."""
    refused = refusal(column, case) is not None
    prior = REFUSED_RUN_S if refused or _refuses_memory(column, case) else \
        typical_run_s(column.environment, case.workload, case.params)
    if not case.adaptive:
        return Cell(column, case, None, 1 if refused else case.repeat, prior_s=prior)
    return Cell(column, case, auto, 1 if refused else auto.max_runs, prior_s=prior)


def _refuses_memory(column: Column, case: WorkloadCase) -> bool:
    """The environment will refuse the cell's first run for the memory it touches (known from
    its parameters alone): the estimate counts that run as nothing."""
    memory = case.workload.memory_mib
    return memory is not None and column.environment.refusal(
        case.workload.requires, JobNeeds(memory_mib=memory(case.params))) is not None


class Runner:
    def __init__(self, plan: Plan, store: Store, host: Host, logs_root: Path, agent_path: Path,
                 progress: Progress | None = None,
                 create: Callable[[EnvironmentSpec], Environment] = environments.create,
                 snapshot_host: Callable[[Host], dict[str, Any]] = host_checks.noise_snapshot,
                 pool: dict[str, Any] | None = None) -> None:
        """pool: {"group_id", "pool_host"} of a campaign a pool worker runs."""
        self.plan, self.store, self.host = plan, store, host
        self.logs_root, self.agent_path = logs_root, agent_path
        self.progress = progress or Progress()
        self.create, self.snapshot_host = create, snapshot_host
        self.pool = pool or {}
        self.campaign_id = 0
        self.cells: list[Cell] = []
        self._inputs_dir: Path | None = None
        self._stored_logs: set[str] = set()  # log folders of runs stored before a resume
        self.load_during: list[float] = []  # the host's load, sampled as runs end
        self._sampled_at = -math.inf

    def run(self) -> int:
        """Run the whole matrix; returns the campaign id. Raises Interrupted on Ctrl-C/SIGTERM."""
        columns = self._start()
        try:
            self._create_campaign(columns)
            self.cells = self._cells(columns)
            return self._run_cells()
        finally:
            _close(columns)

    def resume(self, campaign: dict[str, Any]) -> int:
        """Run what a stored campaign still owes (`run --resume`): its interrupted runs are
        dropped and run again, every cell takes up where it stopped, adaptive cells with the
        values they had. The Runner's plan must be the campaign's (plan.stored)."""
        columns = self._start()
        try:
            return self._resume(campaign, columns)
        finally:
            _close(columns)

    def _resume(self, campaign: dict[str, Any], columns: list[Column]) -> int:
        self.campaign_id = campaign.id
        self.campaign_logs = Path(campaign.log_dir)
        for log_path in self.store.reopen_campaign(self.campaign_id, proc.identity()):
            if Path(log_path).resolve().is_relative_to(self.campaign_logs.resolve()):
                shutil.rmtree(log_path, ignore_errors=True)  # the dropped run's logs
        stored = {env.name: env.id for env in self.store.environments(self.campaign_id)}
        for column in columns:
            column.row_id = stored[column.spec.name]
            if not column.availability.available:
                self.progress.unavailable(column.spec.name, column.availability.reason)
        self.cells = self._cells(columns)
        runs = self.store.runs(self.campaign_id)
        self._stored_logs = {run.log_path for run in runs if run.log_path}
        restore(self.cells, runs, self.store.samples(self.campaign_id),
                self.store.cell_stops(self.campaign_id))
        return self._run_cells()

    def _start(self) -> list[Column]:
        proc.LOG_CAP_BYTES = self.plan.campaign.log_cap_mib << 20  # each run's logs' bound
        self.host_before = self.snapshot_host(self.host)  # before probes boot or start anything
        for message in host_checks.warnings_at_start(self.host_before):
            self.progress.host_warning(message)
        return self._probe_all()

    def _cells(self, columns: list[Column]) -> list[Cell]:
        return [self._cell(column, case) for column in columns for case in self.plan.workloads
                if case.runs_in(column.spec.name)]

    def _run_cells(self) -> int:
        self.total_runs = sum(cell.most_runs - cell.runs for cell in self._open_cells())
        self.progress.start(self.total_runs)
        # a resumed cell may have had all its runs already
        self._close_all([(cell, reason) for cell in self._open_cells()
                         if cell.runs and (reason := cell.stop_reason()) is not None])
        left = seconds_left(self.cells)
        self.progress.expected(first_estimate(self.cells, left, self.host))
        self.progress.estimate(left)
        try:
            self._matrix()
        except KeyboardInterrupt as stop:
            self._remove_inputs()
            proc.kill_all()
            unreachable = ""
            try:  # what can be stored is; a lost server is not waited for (store.stopping)
                self._close_all([(cell, StopReason.INTERRUPTED) for cell in self._open_cells()])
                self._finish(Status.INTERRUPTED,
                             f"stopped by {str(stop) or 'SIGINT'} at "
                             f"{dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M:%S} UTC")
            except store_module.Unreachable as error:
                unreachable = str(error)
            raise Interrupted(self.campaign_id, str(stop) or "SIGINT", unreachable) from None
        except BaseException as error:
            proc.kill_all()  # a bug must not leave guests running or the campaign 'running'
            self._remove_inputs()
            if damage.full_disk(error):  # resumable once there is room
                self.store.finish_campaign(self.campaign_id, Status.INTERRUPTED, end_reason=(
                    f"a disk was full: {type(error).__name__}: {str(error)[:300]}"))
                raise
            self.store.finish_campaign(self.campaign_id, "failed", end_reason=(
                f"guestbench met an error: {type(error).__name__}: {str(error)[:300]}"))
            raise
        self._remove_inputs()
        self._finish("finished")
        return self.campaign_id

    def _remove_inputs(self) -> None:
        if self._inputs_dir is not None:
            shutil.rmtree(self._inputs_dir, ignore_errors=True)
            reaper.KEEPER.folder_gone(str(self._inputs_dir))
            self._inputs_dir = None

    def _create_campaign(self, columns: list[Column]) -> None:
        # ids restart in every store: a random part keeps two stores' logs apart
        self.campaign_logs = self.logs_root.resolve() / (
            f"{dt.datetime.now(dt.timezone.utc):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}")
        self.campaign_id = self.store.create_campaign(
            self.plan.campaign.name, self.plan.as_dict(), self.host.facts, self.host.fingerprint,
            self.plan.baseline, str(self.campaign_logs), __version__,
            host_checks.noise_checks(self.host_before, None), owner=proc.identity(),
            **self.pool)
        for position, column in enumerate(columns):
            column.row_id = self.store.add_environment(
                self.campaign_id, column.spec.name, column.spec.kind,
                column.spec.model_dump(mode="json"), column.availability.available,
                column.availability.reason, position, facts=column.environment.facts() or None)
            if not column.availability.available:
                self.progress.unavailable(column.spec.name, column.availability.reason)

    def _finish(self, status: str, end_reason: str | None = None) -> None:
        """Close the campaign with the host checks of its end; warnings never fail it."""
        after = self.snapshot_host(self.host)
        self.store.finish_campaign(
            self.campaign_id, status,
            host_checks.noise_checks(self.host_before, after, self.load_during), end_reason)
        for message in host_checks.warnings_at_end(self.host_before, after):
            self.progress.host_warning(message)

    def _cell(self, column: Column, case: WorkloadCase) -> Cell:
        return new_cell(column, case, self.plan.campaign.auto)

    def _probe_all(self) -> list[Column]:
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
            columns.append(Column(spec, environment, environment.probe(self.host)))
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
        # biasing one. Round r runs every cell still open once, in plan order; a cell's
        # run is its repetition number runs (the same as r, unless the campaign was resumed
        # with cells at different counts).
        first = min((cell.runs for cell in self._open_cells()), default=0)
        for round_number in itertools.count(first):
            open_cells = self._open_cells()
            if not open_cells:
                return
            if self.plan.interleave and round_number % 2:  # A/B: A B, then B A, ...
                open_cells.reverse()
            for group, parts in self._groups(open_cells):
                stopping.check()  # a Ctrl-C or SIGTERM whose exception was lost
                if parts:
                    self._shared(group, parts, round_number)
                else:
                    self._one(group[0], group[0].runs)
                for cell in group:
                    reason = cell.stop_reason()
                    if reason is not None:
                        self._close(cell, reason)
                self.progress.estimate(seconds_left(self.cells))

    def _groups(self, cells: list[Cell]) -> list[tuple[list[Cell], list[Part]]]:
        """Consecutive cells of one environment whose workloads can share it (batching.py),
        as one group with their parts; every other cell alone."""
        groups: list[tuple[list[Cell], list[Part]]] = []
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

    def _part(self, cell: Cell) -> Part | None:
        column, case = cell.column, cell.case
        if (not self.plan.campaign.shared_rounds or not column.environment.shares_rounds
                or refusal(column, case) is not None):
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

    def _shared(self, group: list[Cell], parts: list[Part], repetition: int) -> None:
        """One fresh guest runs every part of the group; each cell stores its own run."""
        column = group[0].column
        name = column.spec.name
        logdir = self._fresh(self.campaign_logs / name / "shared" / f"rep{repetition}")
        started_at = dt.datetime.now(dt.timezone.utc)
        began = time.monotonic()
        for cell in group:
            self.progress.run_started(name, cell.case.label, cell.runs)
        try:
            outcomes = self._shared_outcomes(column, parts, repetition, logdir)
        except KeyboardInterrupt as stop:
            outcome = Outcome(Status.INTERRUPTED,
                              f"campaign stopped by {str(stop) or 'SIGINT'} during this run")
            with contextlib.suppress(store_module.Unreachable):  # the teardown says so
                for cell in group:
                    cell.add(outcome, self._store(cell, cell.runs, outcome, started_at, began,
                                                  str(logdir), len(group)))
            raise
        log_path = str(logdir) if logdir.exists() else None
        for cell, part in zip(group, parts):
            outcome = outcomes[part.name]
            cell.add(outcome, self._store(cell, cell.runs, outcome, started_at, began,
                                          log_path, len(group)))
            self.progress.run_finished(name, cell.case.label, outcome)

    def _shared_outcomes(self, column: Column, parts: list[Part], repetition: int,
                         logdir: Path) -> dict[str, Outcome]:
        names = [part.name for part in parts]
        args = job_arguments(parts, repetition)
        job = Job("+".join(names), self.agent_path, run_in(column, args), JobNeeds(),
                  read_threads=True)
        # the run timeout holds for each workload: the shared guest gets it once per workload
        each_s = self.plan.campaign.timeout_s
        timeout_s = each_s * len(parts)
        try:
            guest = column.environment.start(job, logdir, proc.now_ns() + int(timeout_s * 1e9))
        except GuestStartError as error:
            return dict.fromkeys(names, Outcome(error.status, f"could not start: {error}"))
        seen = Seen()
        threads = thread_cpu.watching(column.environment, guest, job, logdir)

        def take(record: Record) -> None:
            seen.add(record)
            if threads is not None:
                threads.on_record(record)
        with guest:
            try:
                ended = read_to_the_end(guest, timeout_s, take, timeout_said=(
                    f"the {timeout_s:g} s timeout of a guest shared by {len(parts)} workloads "
                    f"(the run timeout, {each_s:g} s, for each)"))
            except ProtocolError as error:
                ended = broken(guest, seen, error)
            stop = guest.stop()
        by_workload = threads.finish() if threads is not None else {}
        if ended is not None:
            outcomes = ended_midway(ended, seen, names, guest)
        else:
            outcomes = {name: part_outcome(seen, name, stop.exit_code, guest) for name in names}
        for name, outcome in outcomes.items():
            thread_cpu.add(outcome, by_workload, name)
        if ended is not None:
            return outcomes
        span = agent_span_s(seen)
        for outcome in outcomes.values():
            if outcome.status == Status.OK and span is not None:  # its share, as its host time
                outcome.samples.append((efficiency.IN_AGENT, "s", span / len(names)))
        return outcomes

    def _open_cells(self) -> list[Cell]:
        return [cell for cell in self.cells if cell.stopped is None]

    def _close(self, cell: Cell, reason: str) -> None:
        self._close_all([(cell, reason)])

    def _close_all(self, closing: list[tuple[Cell, str]]) -> None:
        """Cells stopped for these reasons, stored in one transaction."""
        if not closing:
            return
        for cell, reason in closing:
            cell.stopped = reason
        self.store.add_cell_stops(self.campaign_id, [cell.record() for cell, _ in closing])
        left = sum(cell.most_runs - cell.runs for cell, _ in closing if cell.runs < cell.most_runs)
        if left:
            self.total_runs -= left
            self.progress.total_changed(self.total_runs)

    def _one(self, cell: Cell, repetition: int) -> None:
        column, case = cell.column, cell.case
        name = column.spec.name
        logdir = self._fresh(self.campaign_logs / name / case.label / f"rep{repetition}")
        started_at = dt.datetime.now(dt.timezone.utc)
        began = time.monotonic()
        log_path: str | None = str(logdir)
        try:
            self.progress.run_started(name, case.label, repetition)
            outcome = self._outcome(column, case, logdir)
        except KeyboardInterrupt as stop:
            outcome = Outcome(Status.INTERRUPTED,
                              f"campaign stopped by {str(stop) or 'SIGINT'} during this run")
            with contextlib.suppress(store_module.Unreachable):  # the teardown says so
                cell.add(outcome, self._store(cell, repetition, outcome, started_at, began,
                                              log_path))
            raise
        if not logdir.exists():
            log_path = None
        cell.add(outcome, self._store(cell, repetition, outcome, started_at, began, log_path))
        self.progress.run_finished(name, case.label, outcome)

    def _store(self, cell: Cell, repetition: int, outcome: Outcome, started_at: dt.datetime,
               began: float, log_path: str | None, sharing: int = 1) -> float:
        """Stores the run; returns its host seconds (its share of a guest shared by
        `sharing` workloads)."""
        host_seconds = (time.monotonic() - began) / sharing
        self._sample_load()
        self.store.add_run(self.campaign_id, RunRecord(
            environment_id=cell.column.row_id, workload=cell.case.name, label=cell.case.label,
            params=cell.case.stored_params(), repetition=repetition,
            status=outcome.status, reason=outcome.reason, started_at=started_at,
            host_seconds=host_seconds, log_path=log_path,
            samples=tuple(outcome.samples), flags=tuple(outcome.flags)))
        return host_seconds

    def _sample_load(self) -> None:
        """The host's load as a run ends, at most every LOAD_SAMPLE_S: what compare and
        history read of the load other work put on the host while the campaign ran."""
        now = time.monotonic()
        if now - self._sampled_at >= LOAD_SAMPLE_S:
            self._sampled_at = now
            load = host_checks.load_now()
            if load is not None:
                self.load_during.append(load)

    def _outcome(self, column: Column, case: WorkloadCase, logdir: Path) -> Outcome:
        refused = refusal(column, case)
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
        except InputMissing as error:
            return Outcome(Status.UNSUPPORTED, str(error))
        except InputError as error:
            return Outcome(Status.INFRA, f"could not prepare the workload's inputs: {error}")
        refused_need = column.environment.refusal(workload.requires, needs)
        if refused_need is not None:
            return Outcome(Status.UNSUPPORTED, refused_need)
        if needs.drop_caches:
            dropped = drop_host_caches()
            if dropped:
                return Outcome(Status.UNSUPPORTED, dropped)
        args = workload.agent_args(case.params)
        host_part = host_parts.part(workload.host_part, column.environment, case.params)
        job = Job(case.name, self.agent_path,
                  run_in(column, args) if workload.uses_agent else tuple(args), needs,
                  read_threads=workload.uses_agent and host_part.reads_threads)
        timeout_s = self.plan.campaign.timeout_s
        refused_part = host_part.refusal()
        if refused_part is not None:
            return Outcome(Status.UNSUPPORTED, refused_part)
        with ExitStack() as arranged:
            try:
                job = host_part.arrange(job, arranged, logdir)
            except host_parts.PartFailed as failed:
                return failed.outcome
            whole = host_part.run(job, logdir, timeout_s)
            if whole is not None:
                return whole
            return self._one_instance(column, workload, case, job, host_part, logdir, timeout_s)

    def _one_instance(self, column: Column, workload: Workload, case: WorkloadCase, job: Job,
                      host_part: host_parts.HostPart, logdir: Path, timeout_s: float) -> Outcome:
        """The run of one instance: started, its records read to its end, stopped."""
        launched_ns = proc.now_ns()
        deadline_ns = launched_ns + int(timeout_s * 1e9)
        try:
            guest = column.environment.start(job, logdir, deadline_ns)
        except GuestStartError as error:
            return Outcome(error.status, f"could not start: {error}")
        seen = Seen()
        with guest:
            if workload.uses_agent:
                threads = thread_cpu.watching(column.environment, guest, job, logdir)

                def on_record(record: Record) -> None:
                    host_part.on_record(guest, record)
                    if threads is not None:
                        threads.on_record(record)
                outcome = watch(guest, timeout_s,
                                host_part.agent_workloads(workload.agent_workload),
                                workload.produces_samples, seen, on_record)
                if outcome.status == Status.OK:  # watch() has stopped it
                    outcome = host_part.finish(outcome, seen, guest, launched_ns, proc.now_ns())
                if threads is not None:
                    thread_cpu.add(outcome, threads.finish(), workload.agent_workload)
            else:
                outcome = watch_own_program(guest, timeout_s)
                seen.outputs["stdout"] = [guest.console_text()]
            span = agent_span_s(seen) if workload.uses_agent else None
            if outcome.status == Status.OK and span is not None:
                outcome.samples.append((efficiency.IN_AGENT, "s", span))
            if outcome.status == Status.OK and workload.boot_phases:
                outcome.samples += [(f"boot_{phase}", "ms", ms)
                                    for phase, ms in guest.boot_phases().items()]
        if workload.uses_agent:
            keep_outputs(seen, logdir)
        if outcome.status == Status.OK and workload.derive is not None:
            return derived(outcome, workload, case.params, seen, guest.artifacts())
        return outcome

    def _fresh(self, logdir: Path) -> Path:
        """A run's log folder, new. What a run that was never stored left there (a campaign
        killed as that run started, then resumed) is removed; a folder that a stored run
        names is never touched: the run gets another beside it."""
        while str(logdir) in self._stored_logs:
            logdir = logdir.with_name(logdir.name + "-again")
        if logdir.exists():
            shutil.rmtree(logdir)
        return logdir

    def _inputs(self) -> Path:
        """The campaign's folder for generated inputs (source trees, data files), made once."""
        if self._inputs_dir is None:
            self._inputs_dir = Path(tempfile.mkdtemp(prefix="guestbench-inputs-"))
            reaper.KEEPER.folder(str(self._inputs_dir))  # removed even if we are killed
        return self._inputs_dir


def run_in(column: Column, args: list[str]) -> tuple[str, ...]:
    """The agent's arguments with the environment kind's run-in first, where it has one."""
    ms = column.environment.run_in_ms
    return ("--run-in-ms", str(ms), *args) if ms else tuple(args)


def _close(columns: list[Column]) -> None:
    """Every environment told the campaign is done with it (a nested one's L1 machine ends)."""
    for column in columns:
        try:
            column.environment.close()
        except Exception:  # noqa: BLE001 - the campaign's result stands; the reaper ends the rest
            pass
