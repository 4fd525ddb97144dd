"""A traced disk: a loop device whose writes and flushes the host's kernel records.

The durability check (fsync_honoured) models a power cut at the host's storage under a
VMM. The VMM opens /dev/loopN as its raw disk with the cache mode under test. The loop
device has a volatile write cache, so whatever the VMM asks of the host's storage
arrives at its request queue as plain data: writes, flush requests (fdatasync on the
device, a FUA write's post-flush) and, on devices with native FUA, FUA-flagged writes.
The kernel's block_rq_issue and block_rq_complete tracepoints, in a private ftrace
instance filtered to the loop device, record each of them with its time on the host's
monotonic clock (trace_clock mono: the clock of every record's host_arrival_ns).

What the loop device shows (measured on a 6.18 host kernel; rwbs flags of the requests):

    pwrite + fdatasync        "WS", then a flush request: issue "FF", complete "FF"
    O_DSYNC write             the same (generic_write_sync is an fdatasync)
    O_DIRECT|O_DSYNC write    the bio is "WFS" (FUA) but loop has no FUA: the block layer
                              issues the data as "WS", then a post-flush "FF"
    buffered, no fsync        "WS" when written back (on close at the latest), no "FF"

A flush request completes once the loop driver has fsync'ed its backing file. The
flush machinery also ends the request that asked for the flush, as a "WS" completion of
0 sectors: it carries no data and covers nothing.

Nothing global is changed: the instance has its own buffer, events and clock, and is
removed with the loop device by close().
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from guestbench.process import proc

TRACEFS_MOUNTS = (Path("/sys/kernel/tracing"), Path("/sys/kernel/debug/tracing"))
EVENTS = ("block_rq_issue", "block_rq_complete")
BUFFER_KB = 4096          # per CPU; a 30-record run takes a few KiB
LOSETUP_TIMEOUT_S = 30
SECTOR_BYTES = 512
# The text trace prints times truncated to the microsecond: an event printed at t
# happened in [t, t + TIME_RESOLUTION_NS).
TIME_RESOLUTION_NS = 1000

_instances = itertools.count()


class TraceDiskError(Exception):
    """The traced disk could not be set up, or its trace is unusable (lost events)."""


@dataclass(frozen=True)
class BlockEvent:
    """One request at the traced disk, as the kernel recorded it.

    Lists of events keep the trace's order, which is exact even where two events
    share a printed microsecond.
    """

    time_ns: int      # host CLOCK_MONOTONIC (proc.now_ns), truncated to the microsecond
    phase: str        # "issue" (the driver got it) or "complete" (the driver finished it)
    kind: str         # "write", "fua_write", "flush", "read", "discard" or "other"
    sector: int       # first 512-byte sector (0 for flushes)
    sectors: int      # length in sectors (0 for flushes and for a flush sequence's end)
    rwbs: str         # the kernel's flags: F(preflush) W/R/D/F(flush)/N, then F(FUA) A S M
    preflush: bool = False  # the device flushes its cache before this request
    error: int = 0          # completion status (0: success), complete only

    @property
    def end(self) -> int:
        return self.sector + self.sectors


# "   kworker/1:2H-12008   [001] ..... 14871.723806: block_rq_issue: 7,0 FF 0 () 0 + 0 ..."
_LINE = re.compile(r"\s(?P<sec>\d+)\.(?P<usec>\d{6}): (?P<event>block_rq_issue|block_rq_complete): "
                   r"(?P<major>\d+),(?P<minor>\d+) (?P<rwbs>[A-Z]+) (?:\d+ )?\([^)]*\) "
                   r"(?P<sector>\d+) \+ (?P<sectors>\d+)(?P<rest>.*)$")
_ERROR = re.compile(r"\[(-?\d+)\]\s*$")
_ENTRIES = re.compile(r"entries-in-buffer/entries-written: (\d+)/(\d+)")


def parse_rwbs(rwbs: str) -> tuple[str, bool]:
    """(kind, preflush) of a request from its rwbs flags (blk_fill_rwbs)."""
    preflush = rwbs.startswith("F")
    rest = rwbs[1:] if preflush else rwbs
    op, flags = rest[:1], rest[1:]
    if op == "D" and flags.startswith("E"):  # secure erase
        return "discard", preflush
    fua = flags.startswith("F")
    if op == "W":
        return ("fua_write" if fua else "write"), preflush
    if preflush and op in ("", "F", "N"):
        return "flush", preflush
    return {"F": "flush", "R": "read", "D": "discard"}.get(op, "other"), preflush


def parse_line(line: str, device: tuple[int, int] | None = None) -> BlockEvent | None:
    """The block request event in one line of a text trace; None for any other line.

    device (major, minor) keeps only that device's events.
    """
    match = _LINE.search(line)
    if not match or (device and (int(match["major"]), int(match["minor"])) != device):
        return None
    kind, preflush = parse_rwbs(match["rwbs"])
    phase = "issue" if match["event"] == "block_rq_issue" else "complete"
    error = 0
    if phase == "complete":
        found = _ERROR.search(match["rest"])
        error = int(found[1]) if found else 0
    sector, sectors = int(match["sector"]), int(match["sectors"])
    if kind == "flush":
        sector, sectors = 0, 0  # a flush completes with sector -1 (all ones)
    return BlockEvent(int(match["sec"]) * 1_000_000_000 + int(match["usec"]) * 1000, phase,
                      kind, sector, sectors, match["rwbs"], preflush, error)


def parse_trace(text: str, device: tuple[int, int] | None = None) -> list[BlockEvent]:
    """Every block request event of a text trace, in order; TraceDiskError if events were lost."""
    events = []
    for line in text.splitlines():
        entries = _ENTRIES.search(line) if line.startswith("#") else None
        if entries and int(entries[1]) < int(entries[2]):
            raise TraceDiskError(f"the block trace lost events: its buffer kept {entries[1]} of "
                                 f"{entries[2]} (the buffer was too small)")
        if "LOST" in line and "EVENTS" in line:
            raise TraceDiskError(f"the block trace lost events ({line.strip()}); "
                                 "its buffer was too small")
        event = parse_line(line, device)
        if event:
            events.append(event)
    return events


def tracefs() -> Path | None:
    """Where tracefs is mounted (a folder with instances/), or None."""
    for mount in TRACEFS_MOUNTS:
        if (mount / "instances").is_dir():
            return mount
    return None


def unavailable_reason() -> str | None:
    """Why this host cannot give a traced disk (one line with the fix), or None if it can."""
    if os.geteuid() != 0:
        return "a traced disk needs root (loop devices, tracefs): run guestbench as root"
    if not shutil.which("losetup"):
        return "losetup not found (apt-get install mount)"
    if not Path("/dev/loop-control").exists():
        return "no loop devices (/dev/loop-control missing): modprobe loop"
    root = tracefs()
    if root is None:
        return "tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing"
    missing = [event for event in EVENTS if not (root / "events" / "block" / event).is_dir()]
    if missing:
        return (f"the kernel has no {', '.join(missing)} tracepoint(s): it needs "
                "CONFIG_BLK_DEV_IO_TRACE or CONFIG_EVENT_TRACING with the block layer's events")
    try:
        clocks = (root / "trace_clock").read_text()
    except OSError as error:
        return f"cannot read {root / 'trace_clock'}: {error.strerror}"
    if "mono" not in clocks.replace("[", " ").replace("]", " ").split():
        return f"the kernel's trace clocks ({clocks.strip()}) lack mono, the host's monotonic clock"
    return None


class TracedDisk:
    """A raw image of size_mib MiB in folder, attached as /dev/loopN, its requests traced.

    Use as a context manager, or call close() (idempotent, safe after errors). stop()
    ends the trace and returns its events (raw_trace keeps its text); close() detaches the
    loop device and removes the ftrace instance and (unless keep_image) the image. Stop
    the trace after the VMM has exited, so it holds everything the VMM did.
    """

    def __init__(self, folder: Path, size_mib: int = 64, name: str = "traced-disk.img",
                 keep_image: bool = False) -> None:
        reason = unavailable_reason()
        if reason:
            raise TraceDiskError(reason)
        self.image = Path(folder) / name
        self.keep_image = keep_image
        self.device: str = ""
        self.instance: Path | None = None
        self._created = False
        self.device_id: tuple[int, int] = (0, 0)
        self.raw_trace = ""  # the trace's text, once stop() has read it (for a run's logs)
        self._events: list[BlockEvent] | None = None
        try:
            self._create_image(size_mib)
            self.device = self._attach()
            self.device_id = self._device_id()  # (major, minor)
            self.instance = self._start_trace()
        except BaseException:
            self.close()
            raise

    # ---- set-up ----

    def _create_image(self, size_mib: int) -> None:
        try:
            with open(self.image, "xb") as image:
                self._created = True
                image.truncate(size_mib * 2**20)
        except OSError as error:
            raise TraceDiskError(f"cannot create {self.image}: {error.strerror}") from None

    def _attach(self) -> str:
        try:
            result = proc.run(["losetup", "--find", "--show", str(self.image)],
                              timeout_s=LOSETUP_TIMEOUT_S)
        except (proc.ProcessError, proc.DeadlineExceeded) as error:
            raise TraceDiskError(f"losetup failed: {error}") from None
        device = result.stdout.strip()
        if result.returncode != 0 or not device.startswith("/dev/"):
            raise TraceDiskError(f"losetup could not attach {self.image}: "
                                 f"{(result.stderr or result.stdout).strip()[:200]}")
        return device

    def _device_id(self) -> tuple[int, int]:
        try:
            rdev = os.stat(self.device).st_rdev
        except OSError as error:
            raise TraceDiskError(f"cannot stat {self.device}: {error.strerror}") from None
        return os.major(rdev), os.minor(rdev)

    def _start_trace(self) -> Path:
        root = tracefs()
        assert root is not None  # unavailable_reason() said it is mounted
        instance = root / "instances" / f"guestbench-{os.getpid()}-{next(_instances)}"
        try:
            instance.mkdir()
        except OSError as error:
            raise TraceDiskError(f"cannot create the ftrace instance {instance}: "
                                 f"{error.strerror}") from None
        self.instance = instance
        major, minor = self.device_id
        try:
            _write(instance / "tracing_on", "0")
            _write(instance / "trace_clock", "mono")
            _write(instance / "buffer_size_kb", str(BUFFER_KB))
            for event in EVENTS:
                folder = instance / "events" / "block" / event
                _write(folder / "filter", f"dev == {(major << 20) | minor}")  # the kernel's dev_t
                _write(folder / "enable", "1")
            _write(instance / "tracing_on", "1")
        except OSError as error:
            raise TraceDiskError(f"cannot set up the ftrace instance {instance}: "
                                 f"{error.strerror}") from None
        return instance

    # ---- results and teardown ----

    def stop(self) -> list[BlockEvent]:
        """Stop tracing; the requests the loop device saw, in order (later calls: the same)."""
        if self._events is not None:
            return self._events
        if self.instance is None:
            raise TraceDiskError("the traced disk is closed or was never set up")
        try:
            _write(self.instance / "tracing_on", "0")
            text = (self.instance / "trace").read_text()
        except OSError as error:
            raise TraceDiskError(f"cannot read the block trace of {self.instance}: "
                                 f"{error.strerror}") from None
        self.raw_trace = text
        self._events = parse_trace(text, self.device_id)
        return self._events

    def close(self) -> None:
        """Detach the loop device, remove the ftrace instance and the image; idempotent."""
        problems = []
        if self.instance is not None:
            problems += _remove_instance(self.instance)
            self.instance = None
        if self.device:
            problems += _detach(self.device)
            self.device = ""
        if self._created and not self.keep_image:
            self._created = False
            try:
                self.image.unlink(missing_ok=True)
            except OSError as error:
                problems.append(f"cannot remove {self.image}: {error.strerror}")
        if problems:
            raise TraceDiskError("; ".join(problems))

    def __enter__(self) -> "TracedDisk":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _write(path: Path, value: str) -> None:
    with open(path, "w") as file:
        file.write(value)


def _remove_instance(instance: Path) -> list[str]:
    """Turn the instance's events off and remove it (rmdir frees its buffer)."""
    for event in EVENTS:
        try:
            _write(instance / "events" / "block" / event / "enable", "0")
        except OSError:
            pass
    try:
        instance.rmdir()
    except FileNotFoundError:
        pass
    except OSError as error:
        return [f"cannot remove the ftrace instance {instance}: {error.strerror}"]
    return []


def _detach(device: str) -> list[str]:
    """losetup -d; a device still open (a VMM not yet reaped) is detached on its last close."""
    try:
        result = proc.run(["losetup", "-d", device], timeout_s=LOSETUP_TIMEOUT_S)
    except (proc.ProcessError, proc.DeadlineExceeded) as error:
        return [f"cannot detach {device}: {error}"]
    if result.returncode != 0:
        return [f"cannot detach {device}: {result.stderr.strip()[:200]}"]
    return []
