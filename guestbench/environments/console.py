"""Full-system guests seen through their serial console: boot phases, panics, boot timeout."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated

from pydantic import AfterValidator, Field

from guestbench import proc
from guestbench.environments.guestdisk import GUEST_SCRATCH
from guestbench.environments.base import (
    EnvironmentSpec, GuestCrashed, GuestStartError, Job, JobNeeds, ProcessGuest)
from guestbench.protocol import PREFIX, Record

# Printed by the image's /init as its first act (guestbench/images): the hand-over to userspace.
USERSPACE_MARKER = b"guestbench-init: userspace"
PANIC_MARKER = b"Kernel panic - not syncing"
CONSOLE_TAIL_LINES = 6


class BootTimeout(proc.DeadlineExceeded):
    """The guest did not reach userspace within its boot timeout."""


def check_kernel_args(args: tuple[str, ...]) -> tuple[str, ...]:
    """A plan's extra kernel arguments: one parameter each, and gb.* belongs to guestbench."""
    for arg in args:
        if not arg or any(bad in arg for bad in (" ", '"', "\n")):
            raise ValueError(f"kernel argument {arg!r}: one parameter per list item, "
                             "without spaces or quotes")
        if arg.startswith("gb.") and not arg.startswith("gb.fault="):
            raise ValueError(f"kernel argument {arg!r}: gb.* is guestbench's own (the job)")
    return args


def check_names(names: tuple[str, ...]) -> tuple[str, ...]:
    """Program or module names: each one word, not empty."""
    for name in names:
        if not name or any(char.isspace() for char in name):
            raise ValueError(f"{name!r} is not a program or module name (one word, not empty)")
    return names


Names = Annotated[tuple[str, ...], AfterValidator(check_names)]


@dataclass(frozen=True)
class GuestJob(Job):
    """A job as a full-system guest runs it: with the mounts its /init must make first."""

    mounts: tuple[str, ...] = ()


def guest_job(job: Job, needs: JobNeeds, mounts: list[str] = (), options: list[str] = ()) -> Job:
    """The job with the agent options a guest kernel adds: the scratch folder, dropping its own
    caches; mounts are gb.mount= kernel arguments for the image's /init."""
    added = list(options)
    if mounts and (needs.scratch or needs.scratch_files is not None):
        added = ["--cwd", GUEST_SCRATCH, *added]
    if needs.drop_caches:
        added.append("--drop-caches")
    return GuestJob(job.workload, job.agent_path, job.with_agent_options(*added), needs,
                    tuple(mounts))


def kernel_arguments(job: Job) -> list[str]:
    """The job on the kernel command line: gb.args=A,B,C (the image's /init splits on commas),
    after the gb.mount= words of a GuestJob."""
    for arg in job.agent_args:
        if not arg or any(bad in arg for bad in (",", " ", '"')):
            raise GuestStartError(f"agent argument {arg!r} cannot travel on a kernel command line "
                                  "(no commas, spaces or quotes)")
    mounts = list(getattr(job, "mounts", ()))
    return mounts + ([f"gb.args={','.join(job.agent_args)}"] if job.agent_args else [])


class GuestKernelSpec(EnvironmentSpec):
    """Options every full-system guest has: what goes into its image and onto its command lines."""

    memory_mib: int = Field(512, ge=32, le=1 << 20, strict=True,
                            description="guest memory, MiB; STREAM's default arrays need ~400")
    tools: Names = Field((), description="host programs put in the image with "
                                                   "their shared libraries (e.g. fio)")
    boot_timeout_s: float = Field(60.0, gt=0, le=3600, strict=True,
                                  description="limit from VMM start to userspace, apart from the run's")
    kernel_args: Annotated[tuple[str, ...], AfterValidator(check_kernel_args)] = Field(
        (), description="added to the guest kernel's command line")
    extra_args: tuple[str, ...] = Field((), description="appended to the VMM's command line as is")


@dataclass
class ConsoleGuest(ProcessGuest):
    """A VMM whose stdout is the guest's serial console.

    Each console line is timestamped on arrival (proc.Process) and kept whole in
    stdout.log; records are parsed from it; the phases of the boot are taken
    from what appears on it.
    """

    boot_timeout_s: float = 60.0
    userspace_ns: int | None = None
    agent_ready_ns: int | None = None
    tail: deque = field(default_factory=lambda: deque(maxlen=CONSOLE_TAIL_LINES))

    def __post_init__(self) -> None:
        super().__post_init__()
        self.boot_deadline_ns = self._process.started_ns + int(self.boot_timeout_s * 1e9)

    def records(self) -> Iterator[Record]:
        try:
            for record in super().records():
                if record.type == "hello" and self.agent_ready_ns is None:
                    self.agent_ready_ns = record.host_arrival_ns
                yield record
        except proc.ExitTimeout:
            raise
        except proc.DeadlineExceeded:
            if self.userspace_ns is None and proc.now_ns() >= self.boot_deadline_ns:
                raise BootTimeout(f"the guest did not reach userspace within its "
                                  f"{self.boot_timeout_s:g} s boot timeout; console: "
                                  f"{self.console_tail()}") from None
            raise

    def _current_deadline(self) -> int:
        if self.userspace_ns is None:
            return min(self.boot_deadline_ns, self.deadline_ns)
        return self.deadline_ns

    def _observed(self, lines: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
        for arrival_ns, line in lines:
            if PREFIX not in line and line.strip():
                self.tail.append(line.decode("utf-8", "replace").strip())
            if self.userspace_ns is None and USERSPACE_MARKER in line:
                self.userspace_ns = arrival_ns
            if PANIC_MARKER in line:
                raise GuestCrashed(f"guest kernel panic; console: {self.console_tail()}")
            yield arrival_ns, line

    def console_tail(self) -> str:
        return " | ".join(self.tail)[-600:] or "(nothing)"

    def diagnostics(self) -> str:
        said = super().diagnostics()
        console = f"console: {self.console_tail()}"
        return f"{console}; {said}" if said else console

    def boot_phases(self) -> dict[str, float]:
        start = self._process.started_ns
        points = {"first_byte": self._process.first_byte_ns, "userspace": self.userspace_ns,
                  "agent_ready": self.agent_ready_ns, "powered_off": self.exited_ns}
        return {name: (ns - start) / 1e6 for name, ns in points.items() if ns is not None}
