"""How much host CPU a VMM's threads used over a window, by kind of thread: its vCPUs, its
I/O threads, and the rest (the VMM's own: device emulation, its event loop, its API), as
Firecracker's performance tests report cpu_utilization_vcpus_total and _vmm.

A reading is text, one line per file, `PATH:CONTENT`, as `grep -H '' FILES` prints it:

    /proc/uptime:UPTIME_S IDLE_S
    /proc/PID/task/TID/stat:...        comm, session, utime and stime
    /proc/PID/task/TID/schedstat:NS .. the thread's time on a CPU, in ns (where the kernel
                                       keeps it; else utime + stime, in clock ticks)

On the host, host_text() makes it from the VMM's process; inside an L1 machine one grep
there makes it from every process, and the session of the run's VMM picks its threads
(nested.Run.thread_text). One parser reads both. docs/environments.md, "The VMM's threads'
host CPU"."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from guestbench.process import memory

PROC = Path("/proc")
TICK_NS = 1_000_000_000 // os.sysconf("SC_CLK_TCK")
CLASSES = ("vcpus", "vmm", "io")
# a metric per class: percent of one host CPU over the workload's window
METRIC = "threads_cpu_"
# A thread's kind from its name (/proc/.../comm, at most 15 characters), the first match:
# QEMU's "CPU 0/KVM", "CPU 1/TCG" and (one TCG thread for every vCPU) "ALL CPUs/TCG", Firecracker's "fc_vcpu 0", Cloud Hypervisor's "vcpu0",
# kvmtool's "kvm-vcpu-0"; QEMU's "IO iothread0" and thread-pool "worker", Cloud Hypervisor's
# per-queue device threads ("_disk0_q0", "_net1_qp0"), kvmtool's "virtio-blk-io". The rest is
# the VMM's own. A shell, socat or the vsock's peer (gbagent) beside the VMM is no VMM thread.
DEFAULT_VCPU = r"CPU \d+/|CPUs/|fc_vcpu|vcpu"
DEFAULT_IO = r"IO |worker|iothread|^_|-io$|virtio"
NOT_VMM = frozenset({"sh", "bash", "socat", "script", "grep", "cat", "gbagent"})


@dataclass(frozen=True)
class Reading:
    at_ns: int  # the machine's boot clock when it was read
    threads: dict[int, tuple[str, int]]  # thread id -> (name, ns on a CPU)


class ReadingError(Exception):
    """The text is no reading (the L1 machine's grep failed, the process was gone)."""


Classify = Callable[[str], str | None]


def classifier(vcpu: str = DEFAULT_VCPU, io: str = DEFAULT_IO) -> Classify:
    """name -> "vcpus", "io", "vmm", or None for a program that is no VMM thread."""
    vcpus, ios = re.compile(vcpu), re.compile(io)

    def classify(name: str) -> str | None:
        if name in NOT_VMM:
            return None
        if vcpus.search(name):
            return "vcpus"
        return "io" if ios.search(name) else "vmm"
    return classify


def host_text(root: int) -> str:
    """A reading of the threads of a host process and the processes below it (a VMM that a
    shell started beside a helper), in the text form (the boot clock in ns)."""
    lines = [f"/proc/uptime:{time.clock_gettime_ns(time.CLOCK_BOOTTIME) / 1e9:.9f} 0"]
    for pid in memory.tree(root):
        try:
            tids = os.listdir(PROC / str(pid) / "task")
        except OSError:  # the process ended while it was read
            continue
        for tid in tids:
            for name in ("stat", "schedstat"):
                path = PROC / str(pid) / "task" / tid / name
                try:
                    lines.append(f"{path}:{path.read_text().strip()}")
                except OSError:  # the thread ended while it was read
                    continue
    return "\n".join(lines)


_PATH = re.compile(r"/proc/\d+/task/(\d+)/(stat|schedstat):(.*)")


def parse(text: str, session: int | None = None) -> Reading:
    """The threads in a reading; with session, only those of that session's processes."""
    at_ns: int | None = None
    stats: dict[int, tuple[str, int, int]] = {}  # tid -> name, session, ticks
    sched: dict[int, int] = {}
    for line in text.splitlines():
        if line.startswith("/proc/uptime:"):
            try:
                at_ns = round(float(line.split(":", 1)[1].split()[0]) * 1e9)
            except (ValueError, IndexError):
                raise ReadingError(f"a clock line that is no number: {line[:80]!r}") from None
            continue
        found = _PATH.fullmatch(line.strip())
        if not found:
            continue
        tid, what, content = int(found[1]), found[2], found[3]
        if what == "schedstat":
            fields = content.split()
            if fields and fields[0].isdigit():
                sched[tid] = int(fields[0])
            continue
        name_end = content.rfind(")")
        rest = content[name_end + 2:].split()
        if "(" not in content or name_end < 0 or len(rest) < 13:
            continue
        name = content[content.index("(") + 1:name_end]
        stats[tid] = (name, int(rest[3]), int(rest[11]) + int(rest[12]))
    if at_ns is None:
        raise ReadingError("no clock line (/proc/uptime) in the reading")
    threads = {tid: (name, sched.get(tid, ticks * TICK_NS))
               for tid, (name, sid, ticks) in stats.items()
               if session is None or sid == session}
    return Reading(at_ns, threads)


def used(before: Reading, after: Reading, classify: Classify) -> list[tuple[int, str, str, int]]:
    """(thread id, name, class, ns on a CPU) of each VMM thread between two readings (a
    thread that began between them counts from zero; one that ended between them is not
    seen)."""
    out = []
    for tid, (name, ns) in sorted(after.threads.items()):
        kind = classify(name)
        if kind is not None:
            earlier = before.threads.get(tid)
            out.append((tid, name, kind, max(0, ns - (earlier[1] if earlier else 0))))
    return out


def vcpus_gone(before: Reading, after: Reading, classify: Classify) -> list[str]:
    """The vCPU threads of the first reading that the second no longer has: the VMM was
    ending, and what they used since is lost with them."""
    return [name for tid, (name, _) in sorted(before.threads.items())
            if classify(name) == "vcpus" and tid not in after.threads]


def usage(before: Reading, after: Reading, classify: Classify) -> dict[str, float]:
    """Percent of one host CPU each class used between two readings; {} if no VMM thread
    was seen, a vCPU thread ended between them (its time would be missing) or the clock
    did not advance."""
    span = after.at_ns - before.at_ns
    each = used(before, after, classify)
    if span <= 0 or not each or vcpus_gone(before, after, classify):
        return {}
    total = dict.fromkeys(CLASSES, 0)
    for _, _, kind, ns in each:
        total[kind] += ns
    return {kind: 100 * ns / span for kind, ns in total.items()}


def samples(shares: dict[str, float]) -> list[tuple[str, str, float]]:
    return [(f"{METRIC}{kind}", "%", share) for kind, share in shares.items()]
