"""Whether the machine is quiet, for the tests that judge timings: the CPU time the host's
processes took over a short window, from /proc, and which processes took it."""

from __future__ import annotations

import os
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")
WINDOW_S = 0.5
QUIET_CPUS = 0.25  # busy CPUs, summed over the host, under which it counts as quiet


def _busy_and_total() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    total = sum(fields[:8])       # guest time is counted in user already
    return total - idle, total


def busy_cpus(window_s: float = WINDOW_S) -> float:
    """How many CPUs' worth of time the host's processes took over the window."""
    busy0, total0 = _busy_and_total()
    time.sleep(window_s)
    busy1, total1 = _busy_and_total()
    cpus = os.cpu_count() or 1
    return cpus * (busy1 - busy0) / max(total1 - total0, 1)


def _cpu_ticks() -> dict[int, tuple[str, int]]:
    out = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            text = (entry / "stat").read_text()
        except OSError:
            continue
        name = text[text.index("(") + 1:text.rindex(")")]
        rest = text[text.rindex(")") + 2:].split()
        out[int(entry.name)] = (name, int(rest[11]) + int(rest[12]))  # utime + stime
    return out


def busiest(window_s: float = WINDOW_S, count: int = 4) -> str:
    """The processes that took the most CPU over the window: "qemu-system-x86 (pid 42) 95%"."""
    before = _cpu_ticks()
    time.sleep(window_s)
    after = _cpu_ticks()
    used = sorted(((ticks - before[pid][1], name, pid) for pid, (name, ticks) in after.items()
                   if pid in before and ticks > before[pid][1]), reverse=True)[:count]
    return ", ".join(f"{name} (pid {pid}) {100 * ticks / TICKS / window_s:.0f}%"
                     for ticks, name, pid in used) or "none"


def wait(timeout_s: float = 30.0) -> str:
    """Waits until the host is quiet, for timeout_s at most: "" once it is, else what was
    busy at the end."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if busy_cpus() < QUIET_CPUS:
            return ""
    return busiest()
