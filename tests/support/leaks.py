"""What a guest can leave behind on this host: its processes (agents, OCI runtimes and their
sandboxes, VMMs), guestbench's folders, and the network devices and namespaces of its network
paths. The integration and faults suites check, after each test, that nothing new of any is
left that the test made; what others run on the machine (a person's own VMs, a second test
session) is not theirs to count.

What is a test's: each pytest process claims its own at the session's start (claim()). It
puts OWNER=its pid in its environment, which everything it starts inherits (guestbench, the
reaper, runtimes, VMMs, agents), and takes a private temporary folder as TMPDIR, where
guestbench makes its folders. A guest process is then the test's if
- its environment carries that mark;
- or its command line or its root mount names the private folder: a container's processes
  have the container's own environment (runc's init and the agent: their root is the
  bundle's rootfs, a path that stays in /proc/PID/mountinfo after the folder is removed),
  and gVisor's sandbox and gofer exec themselves again with an empty one (their --root is
  the bundle's state folder);
- or it descends from such a process or from the pytest process (gVisor's stubs). A process
  orphaned to pid 1 is still told by the first two: after a kill -9, ancestry is gone.
A process whose files cannot be read is not the test's. A process that has claimed nothing
(a script in benchmarks/) counts every guest process of the machine and the guestbench
folders under its temporary folder."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from guestbench.environments import oci_leftovers

GUEST_NAMES = ("gbagent", "runc", "runsc", "exe", "qemu-system-x86", "qemu-x86_64", "linux.uml",
               "setpriv", "criu", "firecracker", "cloud-hyperviso")  # comm keeps 15 bytes
# the suite's own PostgreSQL server; the reapers' journals (a folder shared by every run)
NOT_A_GUESTS = ("guestbench-pg-", "guestbench-reaper")
OWNER = "GUESTBENCH_TEST_OWNER"  # the pid of the pytest process whose tests started it
# guestbench makes a folder for sockets under TMPDIR only if its path stays within 80 bytes
# (guestbench/environments/scratch.py), else in /tmp: a base of 24, the private folder's name
# (up to 25) and guestbench's longest prefix with mkdtemp's 9 leave it 10 to spare
PRIVATE_BASE_MAX = 24

_claimed: Path | None = None  # this process's private folder, once claimed


def claim() -> Path:
    """Makes what this process's tests start its own: the mark in the environment, a private
    folder as TMPDIR (and Python's temporary folder). Call it before guestbench's reaper is
    imported (its journals' folder is computed then; it is moved if not)."""
    global _claimed
    base = tempfile.gettempdir()
    if len(base) > PRIVATE_BASE_MAX:
        base = "/tmp"
    _claimed = Path(tempfile.mkdtemp(prefix=f"gbtests-{os.getpid()}-", dir=base))
    _claimed.chmod(0o1777)  # as /tmp: the suite's PostgreSQL runs as its own user
    os.environ[OWNER] = str(os.getpid())
    os.environ["TMPDIR"] = str(_claimed)
    tempfile.tempdir = str(_claimed)
    reaper = sys.modules.get("guestbench.process.reaper")
    if reaper is not None:
        reaper.JOURNALS = _claimed / "guestbench-reaper"
    return _claimed


def release() -> None:
    """At the session's end: the journals that guestbench processes killed with their reaper
    left are swept (their commands run, their folders removed), then the private folder goes."""
    global _claimed
    if _claimed is None:
        return
    try:
        if (_claimed / "guestbench-reaper").is_dir():
            from guestbench.process import reaper
            reaper.sweep()
    finally:
        shutil.rmtree(_claimed, ignore_errors=True)
        _claimed = None


def temporary_folder() -> Path:
    """Where the test's guestbench makes its folders: the private folder once claimed."""
    return _claimed or Path(tempfile.gettempdir())


def running(pid: int) -> bool:
    """The process is alive (a zombie that nobody reaps yet is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def guest_processes() -> set[int]:
    """Live processes of guests that are the test's (zombies that nobody reaps are not
    alive)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if (entry / "comm").read_text().strip() not in GUEST_NAMES:
                continue
        except OSError:
            continue
        if running(int(entry.name)):
            found.add(int(entry.name))
    if _claimed is None:
        return found
    ours = Ownership(_claimed)
    return {pid for pid in found if ours.counts(pid)}


class Ownership:
    """Tells the processes of this process's tests (the module's docstring says how), each
    process read once."""

    def __init__(self, folder: Path) -> None:
        self.mark = f"{OWNER}={os.environ.get(OWNER, os.getpid())}".encode()
        self.folder = f"/{folder.name}/"  # as a command line, or a mount's root, names it
        self.known = {os.getpid(): True, 0: False, 1: False}

    def counts(self, pid: int) -> bool:
        chain = []
        while pid not in self.known:
            chain.append(pid)
            if self._marked(pid):
                verdict = True
                break
            pid = _parent(pid)
        else:
            verdict = self.known[pid]
        for each in chain:
            self.known[each] = verdict
        return verdict

    def _marked(self, pid: int) -> bool:
        proc = Path(f"/proc/{pid}")
        try:
            if self.mark in (proc / "environ").read_bytes().split(b"\0"):
                return True
            if self.folder.encode() in (proc / "cmdline").read_bytes():
                return True
            return any(self.folder in fields[3] for fields in
                       (line.split() for line in (proc / "mountinfo").read_text().splitlines())
                       if len(fields) > 4 and fields[4] == "/")
        except OSError:
            return False


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


# guestbench/network/paths.py: a veth's ends, a tap (gbPIDnN, gbPIDnNg, PID modulo 100000);
# a namespace (guestbench-PID-N)
LINK = re.compile(r"gb([0-9]+)n[0-9]+g?")
NAMESPACE = re.compile(r"guestbench-([0-9]+)-[0-9]+")


def guest_folders() -> set[str]:
    """guestbench's folders in the test's temporary folder, its network devices and
    namespaces ("link NAME", "netns NAME"), and its containers' empty cgroups ("cgroup
    PATH")."""
    folders = {str(path) for path in temporary_folder().glob("guestbench-*")
               if not path.name.startswith(NOT_A_GUESTS)}
    return folders | guest_network() | guest_cgroups()


CGROUPS = Path("/sys/fs/cgroup")


def guest_cgroups() -> set[str]:
    """The cgroup folders of guestbench's containers (named after them, in each v1 hierarchy
    or the v2 tree) that hold no process: a running container's hold its processes, which
    the process check tells apart; an empty one outlived its container, whoever made it."""
    found = set()
    nested = [path for place in oci_leftovers.own_cgroups(CGROUPS)
              for path in place.glob("guestbench-*")]
    for path in [*CGROUPS.glob("*/guestbench-*"), *CGROUPS.glob("guestbench-*"), *nested]:
        try:
            if not (path / "cgroup.procs").read_text().strip():
                found.add(f"cgroup {path}")
        except OSError:
            continue
    return found


def guest_network() -> set[str]:
    """guestbench's network devices and namespaces, but those of a guestbench that runs and
    is not the test's (the one that made it is named by its pid, modulo 100000 for a
    device). One whose guestbench is gone is counted: nothing tells whose it was."""
    links = {f"link {path.name}": int(LINK.fullmatch(path.name).group(1))
             for path in Path("/sys/class/net").glob("gb*") if LINK.fullmatch(path.name)}
    spaces = {f"netns {path.name}": int(match.group(1)) for path in
              Path("/run/netns").glob("guestbench-*")
              if (match := NAMESPACE.fullmatch(path.name))}
    if _claimed is None or not (links or spaces):
        return set(links) | set(spaces)
    ours, alive = Ownership(_claimed), [pid for pid in _pids() if running(pid)]
    kept = {name for name, pid in spaces.items()
            if not running(pid) or ours.counts(pid)}
    for name, tag in links.items():
        makers = [pid for pid in alive if pid % 100000 == tag]
        if not makers or any(ours.counts(pid) for pid in makers):
            kept.add(name)
    return kept


def _pids() -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir() if entry.name.isdigit()]


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
    described += [folder if folder.startswith(("link ", "netns ", "cgroup "))
                  else f"folder {folder}"
                  for folder in sorted(new_folders)]
    return "; ".join(described)
