"""What happened in a run, as a status: the guest's records read to the end, then judged.

A run is ok only when the agent's record stream is whole and well formed, said no
error and gave samples; everything else gets the status that says what went wrong
(failed, timeout, crashed, infra, unsupported) and a reason a person can act on.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from guestbench.process import proc, threads
from guestbench.analysis import clock
from guestbench.environments.base import Guest, GuestCrashed
from guestbench.protocol import ProtocolError, Record
from guestbench.workloads.base import Derived, OutputError, RunOutput


class Status:
    OK = "ok"
    FAILED = "failed"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    INFRA = "infra"
    UNSUPPORTED = "unsupported"
    UNAVAILABLE = "unavailable"
    INTERRUPTED = "interrupted"


# a run that measured, or that said why it could not run here (an environment the probe
# found unavailable, a workload refused before it ran): any other status is a run that did
# not end ok, and `guestbench run` then exits 1 (commands/run.py)
ENDED_OK = frozenset({Status.OK, Status.UNSUPPORTED, Status.UNAVAILABLE})
# A run's flag: its VMM exited with an error after the agent's end and the guest's /init
# saying it ended with status 0 (the figures are whole; the VMM's stderr is in the run's logs)
VMM_EXIT = "vmm-exit"


@dataclass
class Outcome:
    status: str
    reason: str = ""
    samples: list[tuple[str, str, float]] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)


def keep_outputs(seen: "Seen", logdir: Path) -> None:
    """A tool's output, joined from its output records, is kept whole in the run's log folder."""
    for stream, chunks in seen.outputs.items():
        if logdir.exists():
            (logdir / f"program-{stream}.txt").write_text("".join(chunks))


def derived(outcome: Outcome, workload, params, seen: "Seen", artifacts: dict) -> Outcome:
    """The samples of a workload whose figures come from a tool's output, not the agent's."""
    output = RunOutput(samples=list(outcome.samples), stdout="".join(seen.outputs.get("stdout", [])),
                       stderr="".join(seen.outputs.get("stderr", [])), records=seen.all,
                       artifacts=artifacts)
    try:
        derived = workload.derive(params, output)
    except OutputError as error:
        return Outcome(Status.FAILED, f"{workload.name}: {error}", [], outcome.flags)
    flags = list(outcome.flags)
    if isinstance(derived, Derived):
        derived, flags = derived.samples, [*flags, *derived.flags]
    # kept beside the derived ones: the clock check, and the boot phases the host measured
    context = [sample for sample in outcome.samples
               if sample[0] == "clock_ratio" or sample[0].startswith(threads.METRIC)
               or (workload.boot_phases and sample[0].startswith("boot_"))]
    return Outcome(Status.OK, "", [*derived, *context], flags)


@dataclass
class Seen:
    """What a guest's records said, gathered as they arrive."""

    samples: list[tuple[str, str, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # what the environment lacked
    by_workload: dict[str, list] = field(default_factory=dict)  # samples per agent workload
    workloads: set[str] = field(default_factory=set)
    records: int = 0
    end_status: str | None = None
    hello: Record | None = None
    clocks: list[Record] = field(default_factory=list)  # the agent's clock marks
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
        elif record.type == "clock":
            self.clocks.append(record)

    def problem(self, workload: str | frozenset[str], expect_samples: bool) -> str:
        """Why a complete, well-formed record stream still does not make an ok run;
        workload: the agent workload (or workloads) whose samples the run may have."""
        if self.errors or self.unsupported:
            return "; ".join([*self.errors, *self.unsupported])
        if self.end_status != "ok":
            return f"the agent ended with status {self.end_status!r} and no error record"
        expected = {workload} if isinstance(workload, str) else set(workload)
        if self.workloads - expected:
            return (f"samples for {sorted(self.workloads - expected)}, expected only "
                    f"{' and '.join(repr(name) for name in sorted(expected))}")
        if expect_samples and not self.samples:
            return "the agent reported no samples"
        return ""


def watch(guest: Guest, timeout_s: float, workload: str | frozenset[str],
          expect_samples: bool = True,
          seen: Seen | None = None, on_record: Callable[[Record], None] | None = None) -> Outcome:
    """Collect a guest's records and decide the run's status; on_record sees each record
    as it arrives, while the guest runs."""
    seen = seen if seen is not None else Seen()
    outcome = _watched(guest, timeout_s, workload, expect_samples, seen, on_record)
    if outcome.status != Status.OK and seen.records == 0 and guest.log_overflow:
        return Outcome(Status.FAILED, (
            f"its output passed the {proc.LOG_CAP_BYTES >> 20} MiB cap of the run's logs "
            f"({guest.log_overflow} bytes dropped from their middle) without one valid record "
            f"(then: {outcome.reason})"))
    return outcome


def _watched(guest: Guest, timeout_s: float, workload: str | frozenset[str],
             expect_samples: bool,
             seen: Seen, on_record: Callable[[Record], None] | None) -> Outcome:
    def take(record: Record) -> None:
        seen.add(record)
        if on_record is not None:
            on_record(record)

    try:
        ended = read_to_the_end(guest, timeout_s, take)
    except ProtocolError as error:
        return broken(guest, seen, error)
    if ended is not None:
        return ended
    stop = guest.stop()
    if seen.unsupported and not seen.errors:
        return Outcome(Status.UNSUPPORTED, "; ".join(seen.unsupported))
    problem = seen.problem(workload, expect_samples)
    if problem:
        return Outcome(Status.FAILED, problem)
    after = []
    if stop.exit_code not in (0, None):
        if not guest.agent_ended_in_guest():
            return Outcome(Status.FAILED, _with(f"agent exited with status {stop.exit_code}",
                                                guest.diagnostics()))
        # the agent said its end and the guest's /init its status 0: the VMM's failure came
        # after the measurement (UML aborting at power-off inside an L1 machine, rarely)
        after = [VMM_EXIT]
    outcome = ok_outcome(seen, seen.samples)
    outcome.flags += [*guest.flags(), *after]
    return outcome


def ok_outcome(seen: "Seen", samples: list) -> Outcome:
    """An ok run's outcome: its samples and the clock check over the guest's records: over
    the agent's clock marks where it made them (full-system guests), which judges every
    run however short; else from the hello to the end, when that is long enough."""
    outcome = Outcome(Status.OK, "", list(samples))
    if seen.clocks and seen.hello is not None:
        points = [(record.agent_ns, record.host_arrival_ns) for record in (seen.hello,
                                                                         *seen.clocks)]
        if all(agent is not None for agent, _ in points):
            ratio, flag = clock.marks_verdict(points)
            if ratio is not None:
                outcome.samples.append(("clock_ratio", "ratio", ratio))
            if flag:
                outcome.flags.append(flag)
            return outcome
    ratio = clock_ratio(seen.hello, seen.end)
    if ratio is not None:
        outcome.samples.append(("clock_ratio", "ratio", ratio))
        if clock.drifted(ratio):
            outcome.flags.append("clock-drift")
    return outcome


def watch_own_program(guest: Guest, timeout_s: float) -> Outcome:
    """A guest that runs its own program (no agent): ok once its console ended in time;
    what it printed is the workload's to judge."""
    ended = read_to_the_end(guest, timeout_s, lambda record: None)
    guest.stop()
    return ended or Outcome(Status.OK)


def read_to_the_end(guest: Guest, timeout_s: float, take,
                    timeout_said: str | None = None) -> Outcome | None:
    """Every record of the guest given to take(); the outcome of a guest killed on its
    deadline or crashed (stopped already), else None. ProtocolError passes through.
    timeout_said: what the deadline was, for the reason (default: the run timeout)."""
    try:
        for record in guest.records():
            take(record)
    except proc.DeadlineExceeded as error:
        guest.stop()
        if type(error) is not proc.DeadlineExceeded:  # a boot timeout, an exit that never came
            return Outcome(Status.TIMEOUT, f"killed: {error}")
        said = timeout_said or f"the {timeout_s:g} s run timeout"
        return Outcome(Status.TIMEOUT, _with(f"killed after {said}", guest.diagnostics()))
    except GuestCrashed as error:
        guest.stop()
        return Outcome(Status.CRASHED, str(error))
    return None


def started_workloads(seen: Seen) -> list[str]:
    """The agent workloads whose start record came, in the order they started."""
    return [record.body["workload"] for record in seen.all if record.type == "workload"]


def ended_midway(ended: Outcome, seen: Seen, names: list[str], guest: Guest
                 ) -> dict[str, Outcome]:
    """The outcomes of a shared guest that was killed or crashed: a workload that had
    finished (a later one started after it) keeps its own outcome and samples; the one
    running then gets the guest's end; one that never started says so."""
    started = started_workloads(seen)
    outcomes = {}
    for name in names:
        if name in started[:-1]:
            outcomes[name] = part_outcome(seen, name, None, guest)
        elif started and name == started[-1]:
            outcomes[name] = Outcome(ended.status, ended.reason)
        else:
            running = f" (during {started[-1]})" if started else ""
            outcomes[name] = Outcome(ended.status, f"did not start: the guest it shared "
                                                   f"ended first{running}: {ended.reason}")
    return outcomes


def part_outcome(seen: "Seen", name: str, exit_code: int | None, guest: Guest) -> Outcome:
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
    return ok_outcome(seen, samples)


def agent_span_s(seen: Seen) -> float | None:
    """How long the agent ran, on the host's clock: its hello's arrival to its end's (the rest
    of a run's host time starts and stops the environment: analysis/efficiency.py)."""
    if seen.hello is None or seen.end is None:
        return None
    span = seen.end.host_arrival_ns - seen.hello.host_arrival_ns
    return span / 1e9 if seen.hello.host_arrival_ns and span >= 0 else None


def clock_ratio(first: Record | None, last: Record | None) -> float | None:
    """The clock check over a run: from the hello record to the end record."""
    if first is None or last is None or first.agent_ns is None or last.agent_ns is None:
        return None
    return clock.clock_ratio(last.agent_ns - first.agent_ns,
                             last.host_arrival_ns - first.host_arrival_ns)


def broken(guest: Guest, seen: Seen, error: ProtocolError) -> Outcome:
    """The record stream broke off or was garbled: a crash, a start failure or bad output."""
    stop = guest.stop()
    said = guest.diagnostics()
    if getattr(error, "infra", False):  # the environment failed the agent (console.py)
        return Outcome(Status.INFRA, str(error))
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
