"""What a guest can leave behind on this host: its processes (agents, OCI runtimes and their
sandboxes, VMMs), guestbench's folders under /tmp, and the network devices and namespaces of
its network paths. The integration and faults suites check, after each test, that nothing
new of any is left."""

from __future__ import annotations

import re
import time
from pathlib import Path

GUEST_NAMES = ("gbagent", "runc", "runsc", "exe", "qemu-system-x86", "qemu-x86_64", "linux.uml",
               "setpriv", "criu")
# the suite's own PostgreSQL server; the reapers' journals (a folder shared by every run)
NOT_A_GUESTS = ("guestbench-pg-", "guestbench-reaper")


def running(pid: int) -> bool:
    """The process is alive (a zombie that nobody reaps yet is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def guest_processes() -> set[int]:
    """Live processes of guests (zombies that nobody reaps are not alive)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if state not in ("Z", "X") and name in GUEST_NAMES:
            found.add(int(entry.name))
    return found


# guestbench/network/paths.py: a veth's ends, a tap (gbPIDnN, gbPIDnNg); a namespace
LINK = re.compile(r"gb[0-9]+n[0-9]+g?")


def guest_folders() -> set[str]:
    """guestbench's folders under /tmp, and its network devices and namespaces ("link NAME",
    "netns NAME")."""
    folders = {str(path) for path in Path("/tmp").glob("guestbench-*")
               if not path.name.startswith(NOT_A_GUESTS)}
    return folders | guest_network()


def guest_network() -> set[str]:
    links = {f"link {path.name}" for path in Path("/sys/class/net").glob("gb*")
             if LINK.fullmatch(path.name)}
    spaces = {f"netns {path.name}" for path in Path("/run/netns").glob("guestbench-*")}
    return links | spaces


def left_since(processes: set[int], folders: set[str], wait_s: float = 5.0) -> str:
    """What is new since the snapshot, after waiting up to wait_s for it to go; '' if none."""
    deadline = time.monotonic() + wait_s
    while True:
        new_processes = guest_processes() - processes
        new_folders = guest_folders() - folders
        if not (new_processes or new_folders) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    described = []
    for pid in sorted(new_processes):
        try:
            described.append(f"process {pid}: "
                             f"{Path(f'/proc/{pid}/cmdline').read_bytes()[:160]!r}")
        except OSError:
            pass
    described += [folder if folder.startswith(("link ", "netns ")) else f"folder {folder}"
                  for folder in sorted(new_folders)]
    return "; ".join(described)
