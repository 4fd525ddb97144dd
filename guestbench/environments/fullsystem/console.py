"""Full-system guests seen through their serial console: boot phases, panics, boot timeout."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from guestbench.process import proc
from guestbench.analysis.clock import CLOCK_MARKS_MS
from guestbench.environments.fullsystem.guestdisk import GUEST_SCRATCH
from guestbench.environments.base import (
    GuestCrashed, GuestStartError, Job, JobNeeds, ProcessGuest)
from guestbench.environments.fullsystem.consoles import Console
from guestbench.protocol import PREFIX, ProtocolError, Record

# Printed by the image's /init as its first act (guestbench/images): the hand-over to userspace.
USERSPACE_MARKER = b"guestbench-init: userspace"
# Printed by the image's /init when the agent has ended; before its hello, it never started.
AGENT_EXITED = re.compile(rb"guestbench-init: agent exited with status (\d+)")
CONSOLE_TAIL_LINES = 6
CONSOLE_TAIL_CHARS = 600
# What a kernel or a hypervisor prints as it meets a fault: Linux's panic (UML's too, whose
# faults in its own kernel mode are panics that name them), BUG, Oops and general protection
# fault, and Xen's panic (its message on the next line). A run's reason starts with the first
# such line and the one before it, often the guest's own words for what went wrong.
FAULT = re.compile(r"Kernel panic - not syncing|kernel BUG at |\bBUG: |\bOops\b"
                   r"|general protection fault|Panic on CPU \d+"
                   r"|Kernel mode (?:fault at addr|signal \d+)|Segfault with no mm"
                   r"|Initramfs unpacking failed")
# A guest whose memory cannot hold its unpacked image: its /init finds no /proc, no agent.
UNPACK_FAILED = "Initramfs unpacking failed"
# Of those, the ones after which the guest is gone: the run has crashed.
FATAL = re.compile(r"Kernel panic - not syncing|Panic on CPU \d+")
# After a fatal line, the console is read on this long for the rest of what it says (the CPU,
# the call trace, Xen's message), into the reason and the run's log, unless it ends first.
LAST_WORDS_S = 1.0


class BootTimeout(proc.DeadlineExceeded):
    """The guest did not reach userspace within its boot timeout."""


class AgentNotStarted(ProtocolError):
    """The guest booted, but its /init could not start the agent (an infrastructure fault:
    a wrong binary in the image, a missing library), told at once rather than at a timeout."""

    infra = True


@dataclass(frozen=True)
class GuestJob(Job):
    """A job as a full-system guest runs it: with the mounts its /init must make first."""

    mounts: tuple[str, ...] = field(default=(), kw_only=True)


def guest_job(job: Job, needs: JobNeeds, mounts: list[str] = (), options: list[str] = ()) -> Job:
    """The job with the agent options a guest kernel adds: the scratch folder, dropping its own
    caches; mounts are gb.mount= kernel arguments for the image's /init."""
    added = ["--clock-marks-ms", str(CLOCK_MARKS_MS), *options]  # the clock check's marks
    if mounts and (needs.scratch or needs.scratch_files is not None):
        added = ["--cwd", GUEST_SCRATCH, *added]
    if needs.drop_caches:
        added.append("--drop-caches")
    return GuestJob(job.workload, job.agent_path, job.with_agent_options(*added), needs,
                    network=job.network, read_threads=job.read_threads,
                    vsock_port=job.vsock_port, mounts=tuple(mounts))


def kernel_arguments(job: Job) -> list[str]:
    """The job on the kernel command line: gb.args=A,B,C (the image's /init splits on commas),
    after the gb.mount= words of a GuestJob."""
    for arg in job.agent_args:
        if not arg or any(bad in arg for bad in (",", " ", '"')):
            raise GuestStartError(f"agent argument {arg!r} cannot travel on a kernel command line "
                                  "(no commas, spaces or quotes)")
    mounts = list(getattr(job, "mounts", ()))
    return mounts + ([f"gb.args={','.join(job.agent_args)}"] if job.agent_args else [])


Line = tuple[int, str]  # a console line, numbered in the order it came


@dataclass
class Faults:
    """The first fault a console told of, in context: the line before it, its own and the
    next; then the fatal line that ended the guest, when that came later."""

    shown: list[Line] = field(default_factory=list)
    _before: Line | None = None
    _after: int = 0  # lines still to keep after the first fault's
    _fatal_shown: bool = False

    def see(self, line: Line) -> bool:
        """Take one console line; True when it says the guest is gone."""
        fatal = FATAL.search(line[1]) is not None
        if self._after:
            self._after -= 1
            self._show(line, fatal)
        elif not self.shown and FAULT.search(line[1]):
            if self._before is not None:
                self.shown.append(self._before)
            self._show(line, fatal)
            self._after = 1
        elif fatal and self.shown and not self._fatal_shown:  # a panic after an Oops
            self._show(line, fatal)
        if re.search("[A-Za-z]", line[1].removeprefix("(XEN)")):  # not Xen's row of stars
            self._before = line
        return fatal

    def _show(self, line: Line, fatal: bool) -> None:
        self.shown.append(line)
        self._fatal_shown |= fatal


def joined(lines: list[Line]) -> str:
    """Lines as one, with "..." where some between them are left out."""
    parts: list[str] = []
    for index, (number, text) in enumerate(lines):
        if index and number > lines[index - 1][0] + 1:
            parts.append("...")
        parts.append(text)
    return " | ".join(parts)


@dataclass
class ConsoleGuest(ProcessGuest):
    """A VMM whose guest's serial console the host reads: its stdout, or another console
    (consoles.py).

    Each console line is timestamped on arrival and kept whole in the run's log; records
    are parsed from it; the phases of the boot are taken from what appears on it. A guest
    that runs its own program instead of the agent (agent=False: image = "none") gives no
    records: its console is kept (console_text) for the workload to read, its boot phases
    end at the line `ready` matches, and it has finished when `done` matches or it exits.
    """

    boot_timeout_s: float = 60.0
    console: Console | None = None  # None: stdout
    agent: bool = True
    ready: re.Pattern | None = None
    done: re.Pattern | None = None
    userspace_ns: int | None = None
    agent_ready_ns: int | None = None
    # the guest's own clock (the agent's t_ns) as it wrote its hello: paired with the
    # hello's arrival, it places the guest's clock zero on the host's timeline
    guest_clock_at_ready_ns: int | None = None
    console_lines: int = 0  # console lines seen (records and blank lines apart)
    tail: deque = field(default_factory=lambda: deque(maxlen=CONSOLE_TAIL_LINES))  # (n, text)
    faults: Faults = field(default_factory=Faults)
    text: list = field(default_factory=list)
    resumed: bool = False  # restored from a snapshot: no boot, its agent goes on
    init_said_status: int | None = None  # the agent's exit status, as the image's /init said it
    last_words_until_ns: int | None = None  # set once the guest is gone (_last_words)

    def __post_init__(self) -> None:
        self.stdout_to_log = self.console is not None and self.console.stdout_to_log
        super().__post_init__()
        self.boot_deadline_ns = self._process.started_ns + int(self.boot_timeout_s * 1e9)
        if self.resumed:  # past userspace when it was saved; no hello will come
            self.userspace_ns = self.agent_ready_ns = self._process.started_ns

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        if self.console is None:
            return super()._lines()
        return self.console.lines(self._process, self._current_deadline)

    def records(self) -> Iterator[Record]:
        try:
            if not self.agent:
                yield from self._own_program()
                return
            for record in super().records():
                if record.type == "hello" and self.agent_ready_ns is None:
                    self.agent_ready_ns = record.host_arrival_ns
                    self.guest_clock_at_ready_ns = record.agent_ns
                if record.type == "end":
                    self._at_end()
                yield record
        except proc.ExitTimeout:
            raise
        except proc.DeadlineExceeded:
            if self.userspace_ns is None and proc.now_ns() >= self.boot_deadline_ns:
                what = "reach userspace" if self.agent else "print its ready line"
                raise BootTimeout(f"the guest did not {what} within its "
                                  f"{self.boot_timeout_s:g} s boot timeout; console: "
                                  f"{self.console_tail()}") from None
            raise

    def _at_end(self) -> None:
        """The agent said its last record; the VMM still runs (a hook: the placement's check)."""

    def _current_deadline(self) -> int:
        deadline = self.deadline_ns if self.last_words_until_ns is None \
            else min(self.deadline_ns, self.last_words_until_ns)
        if self.userspace_ns is None:
            return min(self.boot_deadline_ns, deadline)
        return deadline

    def _observed(self, lines: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
        lines = iter(lines)
        for arrival_ns, line in lines:
            if self._seen(line):
                self._last_words(lines)
                raise GuestCrashed(self.console_tail())
            if not self.agent:
                self.text.append(line.decode("utf-8", "replace"))
            if self.userspace_ns is None and self._booted(line):
                self.userspace_ns = arrival_ns
            exited = AGENT_EXITED.search(line)
            if exited:
                self.init_said_status = int(exited.group(1))
            if exited and self.agent and self.agent_ready_ns is None:
                raise AgentNotStarted(
                    f"the agent could not start in the guest (its /init says: exit status "
                    f"{int(exited.group(1))}){self._unpack_hint()}; console: "
                    f"{self.console_tail()}")
            yield arrival_ns, line

    def _unpack_hint(self) -> str:
        """Why, where the kernel could not unpack the image: its memory was too small."""
        if any(UNPACK_FAILED in text for _, text in self.faults.shown):
            return (": the kernel could not unpack the guest image into the guest's memory "
                    "(fix: a larger memory_mib)")
        return ""

    def _seen(self, line: bytes) -> bool:
        """A console line kept for the reasons; True when it says the guest is gone."""
        if PREFIX in line or not line.strip():  # an agent's record is no console talk
            return False
        text = line.decode("utf-8", "replace").strip()
        self.console_lines += 1
        self.tail.append((self.console_lines, text))
        return self.faults.see((self.console_lines, text))

    def _last_words(self, lines: Iterator[tuple[int, bytes]]) -> None:
        """The rest of what a guest that is gone prints, for LAST_WORDS_S at most: each
        line read is in the run's log too."""
        self.last_words_until_ns = proc.now_ns() + int(LAST_WORDS_S * 1e9)
        try:
            for _, line in lines:
                self._seen(line)
        except proc.DeadlineExceeded:
            pass

    def _booted(self, line: bytes) -> bool:
        """The line that ends the boot: the image's /init, or the guest's own `ready`."""
        if self.agent:
            return USERSPACE_MARKER in line
        return self.ready is None or bool(self.ready.search(line.decode("utf-8", "replace")))

    def _own_program(self) -> Iterator[Record]:
        """A guest running its own program: its console is read to the end, or to `done`."""
        for _, line in self._observed(self._lines()):
            if self.done is not None and self.done.search(line.decode("utf-8", "replace")):
                self.exited_ns = proc.now_ns()
                return
        self.exited_ns = proc.now_ns()
        yield from ()

    def agent_ended_in_guest(self) -> bool:
        return self.agent and self.agent_ready_ns is not None and self.init_said_status == 0

    def console_text(self) -> str:
        """What a guest running its own program printed (agent=False)."""
        return "\n".join(self.text)

    def console_tail(self) -> str:
        """The console's last lines; where it told of a fault, that fault in its context
        first (Faults), then what came after."""
        shown = self.faults.shown
        later = [line for line in self.tail if not shown or line[0] > shown[-1][0]]
        if not shown:
            return joined(later)[-CONSOLE_TAIL_CHARS:] or "(nothing)"
        if not later:
            return joined(shown)[:CONSOLE_TAIL_CHARS]
        gap = " | ... | " if later[0][0] > shown[-1][0] + 1 else " | "
        # after a fault its call trace and registers: the end of them, the rest is in the log
        return (joined(shown)[:CONSOLE_TAIL_CHARS] + gap
                + joined(later)[-(CONSOLE_TAIL_CHARS // 2):])

    def diagnostics(self) -> str:
        said = super().diagnostics()
        console = f"console: {self.console_tail()}"
        return f"{console}; {said}" if said else console

    def boot_phases(self) -> dict[str, float]:
        start = self._process.started_ns
        first_byte = self.console.first_byte_ns if self.console else self._process.first_byte_ns
        booted = "userspace" if self.agent else "ready"
        points = {"clock_zero": self._clock_zero_ns(), "first_byte": first_byte,
                  booted: self.userspace_ns, "agent_ready": self.agent_ready_ns,
                  "powered_off": self.exited_ns}
        return {name: (ns - start) / 1e6 for name, ns in points.items() if ns is not None}

    def _clock_zero_ns(self) -> int | None:
        """Where the guest's clock read zero, on the host's clock: the hello's arrival minus the
        guest's clock in that hello (late by the console's delay, as the arrival is). Not
        minus the guest_uptime sample: the agent reads that after its clock check's marks,
        CLOCK_MARKS_MS later."""
        guest_ns = self.guest_clock_at_ready_ns
        if self.agent_ready_ns is None or not isinstance(guest_ns, int):
            return None
        return self.agent_ready_ns - guest_ns
