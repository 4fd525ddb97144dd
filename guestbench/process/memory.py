"""What a process tree costs the host in memory, from the kernel's own accounting.

PSS (proportional set size: each shared page divided among the processes that map it) and USS
(pages only one process maps) come from /proc/PID/smaps_rollup; a guest's memory, for the
overhead beyond it, from /proc/PID/smaps: the mappings that the environment kind says hold
the guest's RAM (QEMU's RAM block, exactly as large as the guest's memory, as Firecracker's
footprint test singles out its guest's region; UML's physical-memory file). A process that
ends while it is read is left out."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# which mappings hold a guest's RAM: (size in KiB, the mapping's smaps header line) -> bool
GuestRam = Callable[[int, str], bool]

PROC = Path("/proc")
# a process's share, by command name: footprint_process_pss:runsc-gofer
PROCESS_METRIC = "_process_pss:"


@dataclass(frozen=True)
class Usage:
    """KiB, summed over a process tree."""

    processes: int
    rss_kib: int
    pss_kib: int
    uss_kib: int
    guest_pss_kib: int | None  # the guest's RAM mappings; None: no guest RAM to tell apart
    # PSS by command name (command_name), summed over the processes of that name
    by_command: tuple[tuple[str, int], ...] = ()

    def samples(self, prefix: str = "footprint") -> list[tuple[str, str, float]]:
        """The footprint workload's samples, in MiB (processes: a count), and the PSS of each
        command name (PROCESS_METRIC + name: runsc-sandbox, runsc-gofer, qemu-system-x86)."""
        out = [(f"{prefix}_pss", "MiB", self.pss_kib / 1024),
               (f"{prefix}_uss", "MiB", self.uss_kib / 1024),
               (f"{prefix}_rss", "MiB", self.rss_kib / 1024),
               (f"{prefix}_processes", "count", float(self.processes))]
        if self.guest_pss_kib is not None:
            out.append((f"{prefix}_overhead", "MiB", (self.pss_kib - self.guest_pss_kib) / 1024))
        out += [(f"{prefix}{PROCESS_METRIC}{name}", "MiB", kib / 1024)
                for name, kib in self.by_command]
        return out


def tree(root: int) -> list[int]:
    """root and every process below it, by parent links (a runtime's sandbox and gofer, a
    VMM's helpers: whatever group or session they moved to)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        try:
            stat = (PROC / entry.name / "stat").read_text()
        except OSError:
            continue  # gone already
        # the command name is in parentheses and may hold spaces: the fields follow its ")"
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        found.append(pid)
        pending.extend(children.get(pid, []))
    return found


def _fields(text: str) -> dict[str, int]:
    """The "Name:   N kB" lines of smaps_rollup, in KiB."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        words = rest.split()
        if len(words) == 2 and words[1] == "kB":
            out[name] = int(words[0])
    return out


def _guest_pss_kib(pid: int, is_guest_ram: GuestRam) -> int:
    """PSS of the process's mappings that hold the guest's RAM."""
    total, size, header = 0, 0, ""
    for line in (PROC / str(pid) / "smaps").read_text().splitlines():
        if line[:1] in "0123456789abcdef" and "-" in line.split(" ", 1)[0]:
            header = line
        elif line.startswith("Size:"):
            size = int(line.split()[1])
        elif line.startswith("Pss:") and is_guest_ram(size, header):
            total += int(line.split()[1])
    return total


def command_name(pid: int) -> str:
    """The name a process goes by: its argv[0]'s last part (runsc-sandbox and runsc-gofer,
    whose comm is "exe" as runsc runs itself again), else its comm; spaces become "_"."""
    argv0 = (PROC / str(pid) / "cmdline").read_bytes().split(b"\0", 1)[0]
    name = argv0.decode(errors="replace").rsplit("/", 1)[-1]
    if not name:
        name = (PROC / str(pid) / "comm").read_text()
    return "_".join(name.split())[:40] or "?"


def usage(root: int, guest_ram: GuestRam | None = None) -> Usage:
    """The tree under root, now; guest_ram tells the guest's RAM, for the overhead beyond it."""
    count = rss = pss = uss = guest = 0
    by_command: dict[str, int] = {}
    for pid in tree(root):
        try:
            rolled = _fields((PROC / str(pid) / "smaps_rollup").read_text())
            if guest_ram is not None:
                guest += _guest_pss_kib(pid, guest_ram)
            name = command_name(pid)
        except (OSError, ValueError):
            continue  # ended while read: it costs nothing now
        if not rolled:
            continue  # a zombie, or a kernel thread: no memory of its own
        count += 1
        rss += rolled.get("Rss", 0)
        pss += rolled.get("Pss", 0)
        uss += rolled.get("Private_Clean", 0) + rolled.get("Private_Dirty", 0)
        by_command[name] = by_command.get(name, 0) + rolled.get("Pss", 0)
    return Usage(count, rss, pss, uss, guest if guest_ram is not None else None,
                 tuple(sorted(by_command.items(), key=lambda item: -item[1])))


def sized(mib: int) -> GuestRam:
    """Guest RAM as one mapping of exactly its size (QEMU's RAM block, Firecracker's)."""
    return lambda size_kib, header: size_kib == mib * 1024


def shared_deleted_file(size_kib: int, header: str) -> bool:
    """Guest RAM as a shared mapping of an unlinked file (UML's physical memory, mapped by
    its kernel process and each of its address spaces' processes)."""
    fields = header.split()
    return len(fields) >= 6 and fields[1].endswith("s") and header.endswith("(deleted)")
