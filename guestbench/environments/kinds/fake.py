"""A scripted environment for unit tests: deterministic records, injectable faults, no processes."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from guestbench.process import proc, threads
from guestbench.environments.base import (
    Availability, Capability, Environment, EnvironmentSpec, Guest, GuestStartError, Job,
    StopInfo)
from guestbench.host import Host
from guestbench.protocol import ProtocolError, Record, RecordStream, encode
from guestbench.store.records import FUNCTIONAL

# hang_midway: a guest shared by several workloads reports the first ones whole, then hangs
# in its last one until its deadline
Behaviour = Literal["ok", "hang", "hang_midway", "garbled", "truncated", "error", "crash",
                    "infra", "unavailable"]


class FakeSpec(EnvironmentSpec):
    kind: Literal["fake"] = "fake"
    behaviour: Behaviour = Field("ok", description="what the fake guest does")
    scale: float = Field(1.0, gt=0, description="multiplies every value it reports")
    fail_every: int = Field(0, ge=0, description="every Nth run fails as behaviour = "
                                                 "\"error\" does (0: none): a flaky guest")
    slow_every: int = Field(0, ge=0, description="every Nth run reports its values times "
                                                 "slow_factor (0: none): a slow tail")
    slow_factor: float = Field(2.0, gt=0, description="how much slower a slow_every run is")
    capabilities: tuple[Capability, ...] = Field(
        tuple(Capability), description="capabilities the fake environment claims")
    full_system: bool = Field(False, description="behave as a full-system kind (one guest "
                                                 "per round may serve several workloads)")
    functional: str | None = Field(None, description="say its figures are functional only, "
                                                     "with this sentence (as nested kinds do)")
    vmm_threads: bool = Field(False, description="read guestbench's own threads as its VMM's "
                                                 "(the runner's thread watch, in tests)")


class Fake(Environment):
    kind: ClassVar[str] = "fake"
    capabilities = frozenset(Capability)
    spec_model = FakeSpec

    def __init__(self, spec: FakeSpec) -> None:
        super().__init__(spec)
        # a fake guest always 'runs the agent': it prints agent records
        self.capabilities = frozenset(spec.capabilities) | {Capability.AGENT}
        self.full_system = self.shares_rounds = spec.full_system
        self.started = 0

    def facts(self) -> dict:
        facts = super().facts()
        if self.spec.functional:
            facts.update({FUNCTIONAL: self.spec.functional, "vmm_version": "Fake 1.0"})
        return facts

    def thread_reader(self, guest: Guest):
        if not self.spec.vmm_threads:
            return None
        return (lambda: (threads.host_text(os.getpid()), None)), threads.classifier()

    def probe(self, host: Host) -> Availability:
        if self.spec.behaviour == "unavailable":
            return Availability.no("the fake environment was told to be unavailable")
        return Availability.yes("fake")

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        if self.spec.behaviour == "infra":
            raise GuestStartError("the fake environment was told not to start")
        self.started += 1
        return FakeGuest(self.spec, job, logdir, deadline_ns, self.started)


class FakeGuest(Guest):
    def __init__(self, spec: FakeSpec, job: Job, logdir: Path, deadline_ns: int,
                 ordinal: int) -> None:
        self.spec, self.job, self.deadline_ns, self.ordinal = spec, job, deadline_ns, ordinal
        logdir.mkdir(parents=True, exist_ok=True)
        self.log = logdir / "stdout.log"
        self.stopped: StopInfo | None = None

    def _lines(self) -> Iterator[bytes]:
        jitter = 1 + 0.01 * (self.ordinal % 5)
        if self.spec.slow_every > 0 and self.ordinal % self.spec.slow_every == 0:
            jitter *= self.spec.slow_factor
        bodies = [{"type": "hello", "t_ns": 0, "agent": "fake", "version": "0", "protocol": 1,
                   "tsc": True, "argv": list(self.job.agent_args)}]
        for workload in self.job.workload.split("+"):  # a guest shared by several workloads
            bodies += [
                {"type": "workload", "t_ns": 1, "workload": workload, "params": {}},
                {"type": "sample", "t_ns": 2, "workload": workload, "metric": "time_per_op",
                 "unit": "ns", "value": 100.0 * self.spec.scale * jitter},
                {"type": "sample", "t_ns": 3, "workload": workload, "metric": "tsc_per_op",
                 "unit": "cycles", "value": 250.0 * self.spec.scale * jitter},
            ]
        failing = self.spec.behaviour == "error" or (
            self.spec.fail_every > 0 and self.ordinal % self.spec.fail_every == 0)
        if failing:
            bodies[2:] = [{"type": "error", "t_ns": 2, "workload": self.job.workload,
                           "message": "the fake workload was told to fail"}]
        bodies.append({"type": "end", "t_ns": 4, "records": len(bodies),
                       "status": "failed" if failing else "ok"})
        lines = [b"fake console noise"] + [encode(seq, body) for seq, body in enumerate(bodies)]
        if self.spec.behaviour == "garbled":
            lines[3] = lines[3].replace(b"time_per_op", b"time_per_oq")
        if self.spec.behaviour in ("truncated", "crash"):
            lines = lines[:-1]
        if self.spec.behaviour == "hang_midway":  # up to the last workload's start record
            lines = lines[:len(lines) - 3]
        return iter(lines)

    def records(self) -> Iterator[Record]:
        if self.spec.behaviour == "hang":
            while proc.now_ns() < self.deadline_ns:
                time.sleep(0.01)
            raise proc.DeadlineExceeded("fake guest hung")
        stream = RecordStream()
        lines = list(self._lines())
        self.log.write_bytes(b"\n".join(lines) + b"\n")
        yield from stream.feed((proc.now_ns(), line) for line in lines)
        if self.spec.behaviour == "hang_midway":
            while proc.now_ns() < self.deadline_ns:
                time.sleep(0.01)
            raise proc.DeadlineExceeded("fake guest hung")
        stream.finish()

    def stop(self) -> StopInfo:
        if self.stopped is None:
            crashed = self.spec.behaviour == "crash"
            self.stopped = StopInfo(None if crashed else 0, "SIGSEGV" if crashed else None, False)
        return self.stopped

    @property
    def returncode(self) -> int | None:
        if self.spec.behaviour == "crash":
            return -11
        return 1 if self.spec.behaviour == "error" else 0


__all__ = ["Fake", "FakeSpec", "ProtocolError"]
