"""The density workload's run: N instances of one environment started together, each timed to
its agent's ready record on the host's clock, their memory read once all are ready and idle,
then all stopped (docs/workloads-startup.md)."""

from __future__ import annotations

import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from guestbench.process import memory, proc
from guestbench.environments.base import Environment, Guest, GuestCrashed, GuestStartError, Job
from guestbench.protocol import ProtocolError
from guestbench.runner.outcomes import Outcome, Status

MEMINFO = Path("/proc/meminfo")


@dataclass
class _Instance:
    guest: Guest
    launched_ns: int
    ready_ns: int | None = None
    problem: str = ""


def available_mib() -> int | None:
    """The host's MemAvailable, MiB; None where the kernel does not say."""
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def memory_refusal(environment: Environment, count: int) -> str | None:
    """Why the host's memory cannot hold `count` instances of a kind with a fixed guest RAM
    (the run is then unsupported: density's refusal), or None."""
    guest_mib = environment.instance_mib()
    free = available_mib()
    if not guest_mib or free is None or count * guest_mib <= free:
        return None
    return (f"{count} guests of {guest_mib} MiB need more than this host's available "
            f"memory ({free} MiB): the host's memory stops density here")


def _wait_ready(instance: _Instance) -> None:
    """Reads the instance's records until its agent idles (its workload record); its start
    ends at the agent's first record, the hello (as start_ready: a full-system guest's agent
    waits for its clock check in between)."""
    hello_ns = None
    try:
        for record in instance.guest.records():
            if record.type == "hello":
                hello_ns = record.host_arrival_ns
            elif record.type == "workload" and hello_ns is not None:
                instance.ready_ns = hello_ns
                return
            elif record.type in ("error", "end"):
                break
        instance.problem = "its agent ended before it was ready"
    except proc.DeadlineExceeded:
        instance.problem = "not ready within the run timeout"
    except (GuestCrashed, ProtocolError) as error:
        instance.problem = str(error) or type(error).__name__


def run_density(environment: Environment, job: Job, count: int, logdir: Path,
                timeout_s: float, settle_s: float) -> Outcome:
    """`count` instances started one right after another (memory_refusal() has said the
    host can hold them), all read concurrently; ok with each
    one's start time (density_start, ms: a value per instance), the host memory per instance
    once all are ready (density_pss, MiB) and how many started, else why not."""
    deadline_ns = proc.now_ns() + int(timeout_s * 1e9)
    with ExitStack() as instances_alive:
        instances: list[_Instance] = []
        for index in range(count):
            launched_ns = proc.now_ns()
            try:
                guest = environment.start(job, logdir / f"instance{index + 1}", deadline_ns)
            except GuestStartError as error:
                return Outcome(error.status, f"instance {index + 1} of {count} could not start: "
                                             f"{error}")
            instances_alive.callback(guest.stop)
            instances.append(_Instance(guest, launched_ns))
        readers = [threading.Thread(target=_wait_ready, args=(instance,), daemon=True)
                   for instance in instances]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join()
        started = [instance for instance in instances if instance.ready_ns is not None]
        if len(started) < count:
            failed = next(instance for instance in instances if instance.ready_ns is None)
            return Outcome(Status.FAILED, f"{len(started)} of {count} instances started; "
                                          f"instance {instances.index(failed) + 1}: "
                                          f"{failed.problem}")
        time.sleep(settle_s)
        roots = [instance.guest.root_pid() for instance in instances]
        if None in roots:
            return Outcome(Status.FAILED, "an instance has no process tree to read")
        total = [memory.usage(root, environment.guest_ram()) for root in roots]
    pss_mib = sum(usage.pss_kib for usage in total) / 1024
    return Outcome(Status.OK, "", [
        *(("density_start", "ms", (instance.ready_ns - instance.launched_ns) / 1e6)
          for instance in instances),
        ("density_pss", "MiB", pss_mib / count),
        ("density_started", "count", float(len(started)))])
