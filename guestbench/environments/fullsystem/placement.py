"""Where a VMM's threads run: vCPU threads pinned one per host CPU, the others by placement.

    same       every other VMM thread (main loop, I/O, RCU) on vCPU 0's host CPU
    disjoint   every other VMM thread on a host CPU that runs no vCPU 0
    none       left to the scheduler (nothing is pinned)

QEMU names its vCPU threads through QMP (query-cpus-fast); any other VMM's are found by
their names in /proc/PID/task/*/comm ("fc_vcpu 0", "vcpu0", "CPU 0/KVM").
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from guestbench.environments.base import GuestStartError


def refusal(placement: str, vcpus: int, cpus: int) -> str | None:
    """Why a placement cannot be kept with `cpus` host CPUs (the run is then unsupported, never
    a figure labelled with a placement it did not have), or None. Each vCPU needs a host CPU
    of its own; disjoint one more, that runs no vCPU, for the VMM's other threads."""
    needed = vcpus + (placement == "disjoint")
    if placement == "none" or cpus >= needed:
        return None
    other = " and one more for the VMM's other threads" if placement == "disjoint" else ""
    return (f"placement {placement} with {vcpus} vCPU{'s' if vcpus > 1 else ''} needs "
            f"{needed} host CPUs (one for each vCPU{other}); guestbench may use {cpus} here, "
            "so it cannot be kept (fix: fewer vCPUs, placement "
            + ("same or " if placement == "disjoint" and vcpus < cpus else "")
            + "none, or a host with more CPUs)")


def pin_threads(vmm_pid: int, vcpu_threads: dict[int, int], placement: str) -> dict:
    """Pin vCPU i to host CPU i and every other VMM thread per the placement; returns what
    was applied (kept as the run's placement.json)."""
    cpus = sorted(os.sched_getaffinity(vmm_pid))
    refused = refusal(placement, len(vcpu_threads), len(cpus))
    if refused:
        raise GuestStartError(refused)
    vcpu_cpu = {index: cpus[position] for position, index in enumerate(sorted(vcpu_threads))}
    others_cpu = vcpu_cpu[0] if placement == "same" else next(
        c for c in cpus if c not in vcpu_cpu.values())
    others = [int(tid) for tid in os.listdir(f"/proc/{vmm_pid}/task")
              if int(tid) not in vcpu_threads.values()]
    for index, tid in vcpu_threads.items():
        os.sched_setaffinity(tid, {vcpu_cpu[index]})
    for tid in others:  # later threads inherit the mask of the thread that makes them
        os.sched_setaffinity(tid, {others_cpu})
    return {"placement": placement,
            "vcpu_threads": {str(index): {"thread": tid, "host_cpu": vcpu_cpu[index]}
                             for index, tid in vcpu_threads.items()},
            "other_threads": {"threads": others, "host_cpu": others_cpu}}


def check(applied: dict) -> dict:
    """Each pinned thread's host CPUs now, against what was applied: {"kept": bool,
    "moved": [{"thread", "pinned", "now"}]}. A thread that ended meanwhile is no drift."""
    wanted = {info["thread"]: info["host_cpu"] for info in applied["vcpu_threads"].values()}
    wanted |= {tid: applied["other_threads"]["host_cpu"]
               for tid in applied["other_threads"]["threads"]}
    moved = []
    for tid, cpu in wanted.items():
        try:
            now = sorted(os.sched_getaffinity(tid))
        except OSError:  # ended
            continue
        if now != [cpu]:
            moved.append({"thread": tid, "pinned": cpu, "now": now})
    return {"kept": not moved, "moved": moved}


DRIFT = "placement-drift"  # the flag of a run whose threads did not stay where pinned


class Pinned:
    """A guest whose VMM threads were pinned (QEMU's, a command VMM's): what was applied is
    kept as the run's placement.json, checked again when the agent ends (the VMM still
    runs), the check kept beside it, and a run whose threads moved flagged DRIFT."""

    _applied: dict | None = None
    _drifted: bool = False

    def keep_placement(self, applied: dict) -> None:
        self._applied = applied
        self._write_placement()

    def _at_end(self) -> None:
        if self._applied is not None and "after_run" not in self._applied:
            self._applied["after_run"] = check(self._applied)
            self._drifted = not self._applied["after_run"]["kept"]
            self._write_placement()

    def _write_placement(self) -> None:
        (self.logdir / "placement.json").write_text(json.dumps(self._applied, indent=1) + "\n")

    def flags(self) -> list[str]:
        return [DRIFT] if self._drifted else []


def vcpu_threads_by_name(vmm_pid: int, pattern: str) -> dict[int, int]:
    """{vCPU index: thread id} of the VMM's threads whose name matches pattern, a regular
    expression whose first group (or, failing that, the order found) is the vCPU index."""
    compiled = re.compile(pattern)
    found: dict[int, int] = {}
    for task in sorted(Path(f"/proc/{vmm_pid}/task").iterdir(), key=lambda p: int(p.name)):
        try:
            name = (task / "comm").read_text().strip()
        except OSError:  # the thread ended meanwhile
            continue
        match = compiled.search(name)
        if match is None:
            continue
        index = int(match.group(1)) if compiled.groups and match.group(1) else len(found)
        found[index] = int(task.name)
    return found
