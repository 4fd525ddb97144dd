"""What the host measures of a run's instance itself, beside its agent's records.

A workload names its part (Workload.host_part); the runner makes one per run and calls its
hooks around the run's one instance:

    refusal()        before anything starts: why it cannot run here (unsupported)
    arrange()        before the instance starts: what it needs on the host (the network's
                     peer and path); may change the job (the agent's arguments)
    agent_workloads() the agent workloads whose samples the run may have (footprint's load)
    on_record()      each record as it arrives, while the instance runs (footprint reads the
                     host's memory accounting when the agent says it is idle)
    finish()         the ok outcome, once the instance has stopped: samples added
    run()            the whole run, where one instance is not the shape (density)

A new host-measured workload is one class here and one line in PARTS.
docs/workloads-startup.md, docs/workloads-network.md."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any, ClassVar

from guestbench.process import memory
from guestbench.environments.base import Environment, Guest, Job
from guestbench.environments.fullsystem import vsock
from guestbench.network import paths, peer
from guestbench.protocol import Record
from guestbench.runner.burst import alive_at_once, run_burst
from guestbench.runner.density import memory_refusal, run_density
from guestbench.runner.snapshot import run_snapshot
from guestbench.runner.outcomes import Outcome, Seen, Status
from guestbench.workloads.instance import PEAK_INTERVAL_MS


class PartFailed(Exception):
    """arrange() could not give the run what it needs: the run ends with this outcome."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.outcome = Outcome(status, reason)


class HostPart:
    """No part: the agent's records are the run's samples."""

    # the VMM's threads are read over its agent workloads (runner/thread_cpu.py): not in a
    # run that times the instance's own life, whose instance must not wait to be read
    reads_threads: ClassVar[bool] = True

    def __init__(self, environment: Environment, params: Any) -> None:
        self.environment = environment
        self.params = params

    def refusal(self) -> str | None:
        return None

    def arrange(self, job: Job, stack: ExitStack, logdir: Path) -> Job:
        """What the run needs on the host, set up and its ending pushed on `stack`."""
        return job

    def agent_workloads(self, name: str) -> frozenset[str]:
        """The agent workloads whose samples the run may have: its own (name)."""
        return frozenset({name})

    def on_record(self, guest: Guest, record: Record) -> None:
        pass

    def finish(self, outcome: Outcome, seen: Seen, guest: Guest, launched_ns: int,
               stopped_ns: int) -> Outcome:
        """The ok outcome of the run, with what the host measured."""
        return outcome

    def run(self, job: Job, logdir: Path, timeout_s: float) -> Outcome | None:
        """The whole run, where the part starts its instances itself; None: the runner's."""
        return None


class Start(HostPart):
    """start: from asking the environment for an instance to its agent's first record
    (start_ready), from the agent's end to the instance gone (start_teardown), then the
    kind's own steps (an OCI runtime's delete), in ms on the host's clock. Not the whole
    span: a full-system guest's agent waits for its clock check in between."""

    reads_threads = False

    def finish(self, outcome: Outcome, seen: Seen, guest: Guest, launched_ns: int,
               stopped_ns: int) -> Outcome:
        if seen.hello is None or seen.end is None or not seen.hello.host_arrival_ns:
            return Outcome(Status.FAILED, "the agent's hello or end record is missing: no "
                                          "start-up to time")
        outcome.samples += start_samples(seen, launched_ns, stopped_ns, guest.start_phases())
        return outcome


def start_samples(seen: Seen, launched_ns: int, stopped_ns: int,
                  own_phases: dict[str, float]) -> list[tuple[str, str, float]]:
    """start's samples (see Start); [] if the hello or the end record is missing."""
    if seen.hello is None or seen.end is None or not seen.hello.host_arrival_ns:
        return []
    return [("start_ready", "ms", (seen.hello.host_arrival_ns - launched_ns) / 1e6),
            ("start_teardown", "ms", (stopped_ns - seen.end.host_arrival_ns) / 1e6),
            *((f"start_{phase}", "ms", ms) for phase, ms in own_phases.items())]


class Footprint(HostPart):
    """footprint: at the agent's idle workload record (the instance is ready), wait
    settle_s, then read the memory of the instance's whole process tree (PSS, USS, RSS,
    processes; beyond the guest's RAM where the kind maps one). With a load, read it again
    every PEAK_INTERVAL_MS while the load runs, and keep the reading of the highest PSS
    (footprint_peak_*); the load's own samples are not the run's."""

    reads_threads = False

    def __init__(self, environment: Environment, params: Any) -> None:
        super().__init__(environment, params)
        self.at_rest: list[tuple[str, str, float]] = []
        self.peak: memory.Usage | None = None
        self._sampling: threading.Event | None = None
        self._sampler: threading.Thread | None = None

    def agent_workloads(self, name: str) -> frozenset[str]:
        return frozenset({name, self.params.load} - {"none"})

    def on_record(self, guest: Guest, record: Record) -> None:
        pid = guest.root_pid()
        if pid is None:
            return
        if record.type == "workload" and not self.at_rest:
            time.sleep(self.params.settle_s)
            self.at_rest.extend(memory.usage(pid, self.environment.guest_ram()).samples())
        elif (record.type == "workload" and self._sampler is None
              and record.body.get("workload") == self.params.load):
            self._sampling = threading.Event()
            self._sampler = threading.Thread(target=self._sample, args=(pid,), daemon=True)
            self._sampler.start()
        elif record.type == "end":
            self._stop_sampling()

    def _sample(self, pid: int) -> None:
        while not self._sampling.is_set():
            now = memory.usage(pid, self.environment.guest_ram())
            if now.processes and (self.peak is None or now.pss_kib > self.peak.pss_kib):
                self.peak = now
            self._sampling.wait(PEAK_INTERVAL_MS / 1000)

    def _stop_sampling(self) -> None:
        if self._sampler is not None:
            self._sampling.set()
            self._sampler.join()

    def finish(self, outcome: Outcome, seen: Seen, guest: Guest, launched_ns: int,
               stopped_ns: int) -> Outcome:
        self._stop_sampling()
        if not self.at_rest:
            return Outcome(Status.FAILED, "the instance's memory was not read: no process "
                                          "tree to read, or the agent never said it was ready")
        samples = [*outcome.samples, *self.at_rest]
        if self.params.load != "none":
            if self.peak is None:
                return Outcome(Status.FAILED, f"the instance's memory was not read while "
                                              f"{self.params.load} ran")
            samples = [sample for sample in samples if sample[0].startswith("footprint_")
                       or sample[0] == "clock_ratio"]
            samples += [sample for sample in self.peak.samples("footprint_peak")
                        if sample[0] != "footprint_peak_processes"
                        and memory.PROCESS_METRIC not in sample[0]]
        return Outcome(outcome.status, outcome.reason, samples, list(outcome.flags))


class Density(HostPart):
    """density: N instances started together (runner/density.py)."""

    reads_threads = False

    def refusal(self) -> str | None:
        alone = self.environment.one_at_a_time() if self.params.instances > 1 else None
        if alone:
            return f"{self.params.instances} instances at once: {alone} (fix: instances = 1)"
        return memory_refusal(self.environment, self.params.instances)

    def run(self, job: Job, logdir: Path, timeout_s: float) -> Outcome | None:
        return run_density(self.environment, job, self.params.instances, logdir, timeout_s,
                           self.params.settle_s)


class Burst(HostPart):
    """burst: N instances started together, staggered or in turn (runner/burst.py)."""

    reads_threads = False

    def refusal(self) -> str | None:
        at_once = alive_at_once(self.params.mode, self.params.instances)
        alone = self.environment.one_at_a_time() if at_once > 1 else None
        if alone:
            return f"a burst of {at_once} {self.params.mode}: {alone} (fix: mode = \"serial\")"
        return memory_refusal(self.environment, at_once)

    def run(self, job: Job, logdir: Path, timeout_s: float) -> Outcome | None:
        return run_burst(self.environment, job, self.params, logdir, timeout_s)


class Snapshot(HostPart):
    """snapshot_create, restore, restore_first_touch: one instance saved, then restored
    (runner/snapshot.py); the workload's name says which figures the run keeps."""

    reads_threads = False

    def run(self, job: Job, logdir: Path, timeout_s: float) -> Outcome | None:
        return run_snapshot(self.environment, job, job.workload,
                            getattr(self.params, "restores", 1), logdir, timeout_s)


class Network(HostPart):
    """net_rr, net_stream: the instance's path made (network/paths.py), the agent's peer
    started on the host's end of it (network/peer.py), the agent told where to connect
    (and, in a full-system guest, which address to give its NIC); all of it ended after."""

    def refusal(self) -> str | None:
        cpu, allowed = self.params.peer_cpu, os.sched_getaffinity(0)
        if cpu is not None and cpu not in allowed:
            return f"peer_cpu {cpu}: guestbench may run on host CPUs {peer.cpu_ranges(allowed)} here"
        return (self.environment.network_refusal()
                or peer.congestion_refusal(self.params.congestion))

    def arrange(self, job: Job, stack: ExitStack, logdir: Path) -> Job:
        try:
            path = paths.make(self.environment.network_path(), stack)
        except paths.PathError as error:
            raise PartFailed(Status.UNSUPPORTED, f"network path: {error}") from None
        try:
            listening = peer.start(job.agent_path, path.listen, logdir, stack,
                                   self.params.peer_cpu, self.params.congestion)
        except peer.PeerError as error:
            raise PartFailed(Status.INFRA, str(error)) from None
        dial, gateway = self.environment.peer_route(path)
        options = ["--peer", f"{dial}:{listening.port}"]
        if path.guest_cidr:
            options += ["--net-if", "auto", "--net-addr", path.guest_cidr]
        if gateway:
            options += ["--net-gw", gateway]
        facts = {**path.facts(), "peer's host CPUs": listening.cpus}
        (logdir / "network.txt").write_text(
            "".join(f"{key}: {value}\n" for key, value in facts.items()))
        return dataclasses.replace(job, network=path,
                                   agent_args=job.with_agent_options(*options))


class Vsock(HostPart):
    """vsock_rr: the guest given a vsock device whose host end is the agent's peer, which
    the environment starts beside its VMM (environments/fullsystem/vsock.py); the agent
    told the port."""

    def refusal(self) -> str | None:
        return self.environment.vsock_refusal()

    def arrange(self, job: Job, stack: ExitStack, logdir: Path) -> Job:
        return dataclasses.replace(job, vsock_port=vsock.PORT, agent_args=job.with_agent_options(
            "--vsock-port", str(vsock.PORT)))


PARTS: dict[str, type[HostPart]] = {"start": Start, "footprint": Footprint, "density": Density,
                                    "burst": Burst, "snapshot": Snapshot, "network": Network,
                                    "vsock": Vsock}


def part(name: str | None, environment: Environment, params: Any) -> HostPart:
    """The run's part: its workload's, or the one that adds nothing."""
    return PARTS[name](environment, params) if name else HostPart(environment, params)
