"""Who a process is beyond its pid, which the kernel reuses, and whether it still runs."""

from __future__ import annotations

import os
from pathlib import Path


def identity(pid: int | None = None) -> dict[str, object]:
    """This host's name, the pid, and the process's start time in clock ticks since boot
    (/proc/PID/stat, field 22)."""
    pid = os.getpid() if pid is None else pid
    return {"hostname": os.uname().nodename, "pid": pid, "started": _start_ticks(pid)}


def still_running(owner: dict[str, object] | None) -> bool | None:
    """Is the process an identity() names still running? None when it cannot be told from
    here (another host, or no identity recorded)."""
    if not owner or owner.get("hostname") != os.uname().nodename:
        return None
    pid = owner.get("pid")
    return isinstance(pid, int) and _start_ticks(pid) == owner.get("started") is not None


def _start_ticks(pid: int) -> int | None:
    """The process's start time, or None if there is no such process or it has exited (a
    zombie that nobody reaped: under a PID 1 that does not reap, it stays)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command: field 3, the state, first
    return None if fields[0] in ("Z", "X") else int(fields[19])
