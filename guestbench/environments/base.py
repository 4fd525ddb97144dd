"""The one interface every environment kind implements, and the guest of process-level kinds."""

from __future__ import annotations

import contextlib
import enum
import re
import shutil
import signal
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from guestbench.process import memory, proc, reaper, threads
from guestbench.host import Host
from guestbench.network.paths import NetPath
from guestbench.protocol import Record, RecordStream

IDENTIFIER = r"^[A-Za-z][A-Za-z0-9_.-]*$"


class Capability(enum.Enum):
    """What a workload may need from an environment, and what an environment provides: the
    one vocabulary for both. A run whose workload or job needs one its environment lacks
    is `unsupported`, with the environment's reason (Environment.lacking) or these words."""

    PROCESSES = "processes"        # fork, pipes between processes
    TSC = "tsc"                    # rdtsc gives host-comparable ticks
    FILESYSTEM = "filesystem"      # a writable scratch filesystem
    BLOCK_DEVICE = "block_device"  # a virtual disk (full-system guests)
    GUEST_KERNEL = "guest_kernel"  # a kernel of its own that boots (boot phases)
    PORT_IO = "port_io"            # the agent may read an I/O port (root in a full-system guest)
    DROP_CACHES = "drop_caches"    # the run's caches can be dropped (cold-cache runs)
    EXEC_CHILDREN = "exec_children"  # a program may start other programs (make runs gcc)
    TRACED_DISK = "traced_disk"    # an unformatted disk whose writes and flushes are recorded
    UPLOAD = "upload"              # a channel moves a host file in (which ones: upload_channels)
    AGENT = "agent"                # guestbench's agent runs there (not a guest of its own)
    GUEST_PROGRAM = "guest_program"  # the guest runs its own program and prints its results
    NETWORK = "network"            # a TCP path to a peer on the host (guestbench/network/)
    HOST_PROCESSES = "host_processes"  # the instance is host processes the host can read
    SNAPSHOT = "snapshot"          # a running instance can be saved and restored (snapshots())
    VSOCK = "vsock"                # a virtio-vsock device to the host (fullsystem/vsock.py)

    @property
    def words(self) -> str:
        return _CAPABILITY_WORDS[self]


_CAPABILITY_WORDS = {
    Capability.PROCESSES: "processes (fork, pipes)",
    Capability.TSC: "a usable TSC",
    Capability.FILESYSTEM: "a scratch filesystem",
    Capability.BLOCK_DEVICE: "a virtual disk",
    Capability.GUEST_KERNEL: "a guest kernel of its own, for boot phases",
    Capability.PORT_IO: "I/O port access",
    Capability.DROP_CACHES: "dropping caches",
    Capability.EXEC_CHILDREN: "running programs that start other programs",
    Capability.TRACED_DISK: "a traced block device",
    Capability.UPLOAD: "an upload channel",
    Capability.AGENT: "guestbench's agent (the guest runs its own program: image = \"none\")",
    Capability.GUEST_PROGRAM: "a guest running its own program (image = \"none\")",
    Capability.NETWORK: "a network path to the host",
    Capability.HOST_PROCESSES: "an instance made of host processes, whose memory the host reads",
    Capability.SNAPSHOT: "a snapshot of a running instance and its restore",
    Capability.VSOCK: "a virtio-vsock device to the host",
}


class EnvironmentSpec(BaseModel):
    """Options common to every environment kind; each kind extends it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=IDENTIFIER, description="column name in reports; a plain identifier")
    kind: str = Field(description="environment kind, e.g. native, namespace, oci, qemu-user")

    def cpu_count(self, host_cpus: int) -> int:
        """The CPUs a workload inside sees: the spec's vCPUs where it has them, else the
        host's (a kind whose guests see fewer says so in its own spec)."""
        vcpus = getattr(self, "vcpus", None)
        return vcpus if isinstance(vcpus, int) else host_cpus

    def options(self) -> dict[str, Any]:
        """The kind-specific options, for display."""
        return self.model_dump(exclude={"name", "kind"})


@dataclass(frozen=True)
class Availability:
    available: bool
    reason: str = ""

    @classmethod
    def yes(cls, detail: str = "") -> "Availability":
        return cls(True, detail)

    @classmethod
    def no(cls, reason: str) -> "Availability":
        return cls(False, reason)


@dataclass(frozen=True)
class Upload:
    """Data the host sends into the guest through a channel (the upload workload)."""

    channel: str      # serial, virtio-serial, 9p (qemu); serial, hostfs (uml)
    source: Path      # the host file whose bytes are sent


@dataclass(frozen=True)
class JobNeeds:
    """What a run needs from its environment besides the agent (disk, transfer, build workloads).

    An environment that cannot give one of them refuses the run as unsupported
    (Environment.refusal), with the reason.
    """

    scratch: bool = False              # a writable folder on a real filesystem: the agent's --cwd
    scratch_files: Path | None = None  # a host folder whose contents start in the scratch folder
    scratch_mib: int = 0               # free space the workload needs there
    uncache_files: bool = False        # the scratch files leave the host's page cache before start
    drop_caches: bool = False          # cold caches: the host's dropped, guest kernels drop theirs
    exec_children: bool = False        # the program runs other programs (make runs gcc)
    traced_disk: bool = False          # an unformatted disk whose writes and flushes are recorded
    upload: Upload | None = None
    memory_mib: int = 0                # memory the workload touches (STREAM's three arrays)
    # the kind's own start steps taken one by one and timed (an OCI runtime's create, then
    # start), for start-up figures; a kind with one step ignores it
    start_steps: bool = False

    def capabilities(self) -> frozenset[Capability]:
        """What these needs ask of the environment, in the one vocabulary."""
        asked = {
            Capability.FILESYSTEM: self.scratch or self.scratch_files is not None,
            Capability.DROP_CACHES: self.drop_caches,
            Capability.EXEC_CHILDREN: self.exec_children,
            Capability.TRACED_DISK: self.traced_disk,
            Capability.UPLOAD: self.upload is not None,
        }
        return frozenset(capability for capability, wanted in asked.items() if wanted)


@dataclass(frozen=True)
class Job:
    """What one run asks of a guest: the agent and its arguments."""

    workload: str
    agent_path: Path
    agent_args: tuple[str, ...]
    needs: JobNeeds = JobNeeds()
    # the path made for it (network workloads), to attach
    network: NetPath | None = field(default=None, kw_only=True)
    # the host reads the VMM's threads over its workloads (runner/thread_cpu.py), where the
    # kind has them: a run that times the instance's own life (start, restore) is not read
    read_threads: bool = field(default=False, kw_only=True)
    # the vsock port its agent connects to on the host (vsock_rr): the guest gets a device
    vsock_port: int | None = field(default=None, kw_only=True)

    def with_agent_options(self, *options: str) -> tuple[str, ...]:
        """The agent's arguments with options put first (before the workload name and exec's
        command, where the agent takes every word as the command's)."""
        return (*options, *self.agent_args)


@dataclass(frozen=True)
class StopInfo:
    exit_code: int | None       # None if it had to be killed
    signal_name: str | None     # the signal that ended it, if any
    killed: bool                # guestbench killed it (deadline, interrupt)


class GuestStartError(Exception):
    """The environment could not start a guest (status infra, unless a subclass knows
    better: a VMM that refused the plan's configuration failed it)."""

    status = "infra"


class SnapshotUnavailable(Exception):
    """This host cannot save and restore the environment's instances (the run is then
    unsupported, with this reason): a kind without snapshots, a missing or broken tool."""


class GuestCrashed(Exception):
    """The guest died on its own: a kernel panic, a VMM that crashed (status crashed)."""


class Guest(ABC):
    """A started environment instance; a context manager whose stop() is idempotent."""

    @abstractmethod
    def records(self) -> Iterator[Record]:
        """Protocol records with host arrival times; ProtocolError or DeadlineExceeded on failure."""

    @abstractmethod
    def stop(self) -> StopInfo:
        """End the guest (kill what is left); safe on a dead guest and when called twice."""

    def diagnostics(self) -> str:
        """The last lines of what the guest said besides records, for a failure's reason."""
        return ""

    def boot_phases(self) -> dict[str, float]:
        """Milliseconds from process start to each boot phase seen; {} for process guests."""
        return {}

    def flags(self) -> list[str]:
        """What the environment found wrong with the run itself (a placement that drifted)."""
        return []

    def agent_ended_in_guest(self) -> bool:
        """Whether the guest itself said its agent ended with status 0 (a full-system
        guest's /init): then the VMM's own exit status comes after the measurement, not
        from it. False where the process that exits is the agent's."""
        return False

    def start_phases(self) -> dict[str, float]:
        """Milliseconds each of the kind's own start or stop steps took, where it has separate
        ones (an OCI runtime's delete), after stop(); {} where it has none."""
        return {}

    def root_pid(self) -> int | None:
        """The host process at the root of the instance's process tree; None if none."""
        return None

    @property
    def log_overflow(self) -> int:
        """Bytes dropped from the middle of its logs, over their cap (after stop())."""
        return 0

    def artifacts(self) -> dict[str, Any]:
        """What the environment recorded beside the agent for this run (after stop()): e.g.
        "block_trace", the traced disk's writes and flushes. {} when nothing was."""
        return {}

    def __enter__(self) -> "Guest":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


@dataclass(frozen=True)
class PlanNeeds:
    """What a plan's workloads together ask of an environment, told before it is prepared:
    full-system kinds put the tools, the disk drivers and the channels' drivers in its image."""

    tools: tuple[str, ...] = ()                 # host programs the workloads run (fio, make)
    capabilities: frozenset[Capability] = frozenset()


class Environment(ABC):
    """One environment kind: probe whether it can run here, prepare it, start guests.

    probe() only answers, quickly; prepare() does the slow work a campaign needs before
    its first run (building a guest image); start() starts one guest for one job.
    """

    kind: ClassVar[str]
    capabilities: ClassVar[frozenset[Capability]]
    spec_model: ClassVar[type[EnvironmentSpec]]
    full_system: ClassVar[bool] = False  # boots a kernel of its own (a VMM, UML)
    # one fresh environment per round runs its agent-only workloads (batching.py): where a
    # start costs a boot or a container, not a process's few milliseconds
    shares_rounds: ClassVar[bool] = False
    # the agent's run-in (--run-in-ms): how long the first timing workload in a process warms
    # up, where the host must first settle how it places the environment's own processes
    # (docs/workloads-micro.md, "The run-in")
    run_in_ms: ClassVar[int] = 0
    # the kind's own reason for lacking a capability, where the generic words say too little
    lacking: ClassVar[dict[Capability, str]] = {}
    # What a run costs here before any has run, for the first estimate of a campaign's length
    # (runner/estimate.py): seconds to start and end one, and how many times its native
    # seconds a workload's own work takes (what STREAM's passes do; a timed loop's length is
    # its own). Typical figures of a 2-core VM (docs/measurements.md, "The first estimate").
    typical_start_s: ClassVar[float] = 0.05
    typical_work_factor: ClassVar[float] = 1.0

    def typical_cost(self) -> tuple[float, float]:
        """(start and stop seconds, work factor) of one run: see typical_start_s."""
        return self.typical_start_s, self.typical_work_factor

    @classmethod
    def example_options(cls) -> dict[str, Any]:
        """Options that make a working spec of this kind beside name and kind (the contract
        test starts every registered kind with them)."""
        return {}

    def __init__(self, spec: EnvironmentSpec) -> None:
        self.spec = spec
        self.plan_needs = PlanNeeds()

    def plan_workloads(self, needs: PlanNeeds) -> None:
        """What the plan's workloads need, told before prepare()."""
        self.plan_needs = needs

    def provides(self) -> frozenset[Capability]:
        """What this environment gives a run; kinds whose options change it override this."""
        return self.capabilities

    def upload_channels(self) -> tuple[str, ...]:
        """The upload channels it has (Capability.UPLOAD)."""
        return ()

    @abstractmethod
    def probe(self, host: Host) -> Availability:
        """Available, or unavailable with a one-line reason. Fast; never hangs; never builds."""

    def prepare(self, host: Host) -> Availability:
        """The slow part of getting ready (building an image), once per campaign, after an
        available probe; unavailable with the reason if it fails. Default: nothing to do."""
        return Availability.yes()

    def facts(self) -> dict[str, Any]:
        """What was found while probing and preparing (versions), stored with the environment."""
        return {}

    def close(self) -> None:
        """The campaign is done with it: end what prepare() left running (a nested
        environment's L1 machine). Safe to call twice, and without prepare()."""

    @abstractmethod
    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        """Start a guest running the job; GuestStartError if it cannot be started."""

    def network_path(self) -> str:
        """The kind of path a network workload takes into an instance (network/paths.py);
        only asked of kinds that provide Capability.NETWORK."""
        return "loopback"

    def peer_route(self, path: NetPath) -> tuple[str, str | None]:
        """The address the agent dials to reach the host's peer on the path made for it, and
        the gateway its default route needs for that (None: the peer is on its subnet)."""
        return path.dial, None

    def network_refusal(self) -> str | None:
        """Why this environment's network, as its spec sets it, cannot work on this host
        (the run is then unsupported), or None."""
        return None

    def instance_mib(self) -> int | None:
        """The host memory one instance may take for its guest's RAM (a full-system guest's
        memory_mib); None where an instance has no fixed size (process kinds)."""
        return None

    def one_at_a_time(self) -> str | None:
        """Why only one instance can run at a time (a burst of several is then refused),
        or None where several can."""
        return None

    def guest_ram(self) -> memory.GuestRam | None:
        """Which of the instance's mappings hold its guest's RAM, where the kind boots a guest
        with memory of its own (footprint then gives the overhead beyond it); None for
        process kinds."""
        return None

    def vsock_refusal(self) -> str | None:
        """Why a vsock device cannot be given here though the kind has one (the host lacks
        what it needs); None: it can."""
        return None

    def thread_reader(self, guest: Guest) -> "tuple[Any, threads.Classify] | None":
        """How to read the host CPU of the instance's VMM threads over each workload
        (runner/thread_cpu.py), and which thread is which; None: no VMM threads to read
        (process kinds: their workload's own threads are the instance)."""
        return None

    def refusal(self, needed: frozenset[Capability], needs: JobNeeds = JobNeeds()) -> str | None:
        """Why this environment cannot run a job (the run is then unsupported), or None.

        needed is the workload's capabilities; needs the job's own (a scratch disk, an
        upload channel), asked in the same vocabulary.
        """
        missing = (needed | needs.capabilities()) - self.provides()
        if missing:
            first = sorted(missing, key=lambda capability: capability.value)[0]
            return self.lacking.get(first) or f"{self.kind} lacks {first.value} ({first.words})"
        if needs.upload is not None and needs.upload.channel not in self.upload_channels():
            return self.channel_refusal(needs.upload.channel)
        return None

    def snapshots(self, job: Job, folder: Path) -> Any:
        """How one instance of the job is started, saved and restored (Capability.SNAPSHOT):
        an environments/snapshots.py Snapshots, its files in `folder`; SnapshotUnavailable
        with the reason where this host cannot."""
        raise SnapshotUnavailable(f"{self.kind}: guestbench does not save and restore its "
                                  "instances")

    def channel_refusal(self, channel: str) -> str:
        have = ", ".join(self.upload_channels()) or "none"
        return f"{self.kind} has no upload channel {channel!r} (it has: {have})"


@dataclass
class ProcessGuest(Guest):
    """A guest that is one host process tree printing records on stdout.

    ``cleanup`` commands run after the process group is killed, for runtimes
    that keep state outside the process tree (an OCI runtime's container);
    then the ``scratch`` directories are removed. ``reaped`` commands are for the reaper
    alone, if guestbench dies before the teardown: the teardown's finalizers do the same
    in-process, where a command would lengthen the timed cleanup.
    """

    argv: list[str]
    logdir: Path
    deadline_ns: int
    cleanup: list[list[str]] = field(default_factory=list)
    cleanup_phase: str = "cleanup"  # the cleanup commands' name among start_phases()
    reaped: list[list[str]] = field(default_factory=list)
    scratch: list[Path] = field(default_factory=list)
    # run after the process group is killed, before the scratch folders go: they end what
    # served the guest (an upload feeder) and collect what recorded it (a traced disk),
    # putting results into `collected` (returned by artifacts())
    finalizers: list[Callable[[], None]] = field(default_factory=list)
    collected: dict[str, Any] = field(default_factory=dict)
    pass_fds: tuple[int, ...] = ()  # host descriptors the process inherits (UML's serial pipes)
    # what starts argv in place of a host process (proc.Process's signature and interface):
    # a nested environment's runs inside its L1 machine (fullsystem/nested.py)
    launcher: Callable[..., Any] | None = None
    stdout_to_log: bool = False  # its stdout is only logged (its output is read elsewhere)
    stdin: bool = False  # its stdin is a pipe send() writes to (else /dev/null)
    first_seq: int = 0  # a restored instance: its records go on from this number
    exit_grace_s: float = 10.0  # how long a guest may live on after closing its output
    exited_ns: int | None = None
    _process: proc.Process | None = None
    _stop_info: StopInfo | None = None
    _phases: dict[str, float] = field(default_factory=dict)  # start_phases()

    def __post_init__(self) -> None:
        self.logdir.mkdir(parents=True, exist_ok=True)
        (self.logdir / "command").write_text(" ".join(_quote(a) for a in self.argv) + "\n")
        for argv in [*self.cleanup, *self.reaped]:  # done even if guestbench is killed
            reaper.KEEPER.command(argv)                # (reaper.py)
        for directory in self.scratch:
            reaper.KEEPER.folder(str(directory))
        try:
            self._process = (self.launcher or proc.Process)(
                self.argv, self.logdir / "stdout.log",
                self.logdir / "stderr.log", pass_fds=self.pass_fds,
                stdout_to_log=self.stdout_to_log,
                **({"stdin_pipe": True} if self.stdin else {}))  # a launcher may have none
        except (proc.ProcessError, GuestStartError) as error:
            self._finalize()
            for directory in self.scratch:
                shutil.rmtree(directory, ignore_errors=True)
            self._released()
            raise GuestStartError(str(error)) from error

    def _released(self) -> None:
        """Its cleanup commands have run and its folders are gone: the reaper forgets them."""
        for argv in [*self.cleanup, *self.reaped]:
            reaper.KEEPER.command_done(argv)
        for directory in self.scratch:
            reaper.KEEPER.folder_gone(str(directory))

    def send(self, text: str) -> None:
        """Writes text to the instance's stdin (stdin=True): a full-system guest's console
        input, a container's or a process's stdin. OSError if it has gone."""
        self._process.send(text.encode())

    def records(self) -> Iterator[Record]:
        stream = RecordStream(first_seq=self.first_seq)
        yield from stream.feed(self._observed(self._lines()))
        remaining_s = (self.deadline_ns - proc.now_ns()) / 1e9
        grace_s = max(0.0, min(remaining_s, self.exit_grace_s))
        if self._process.wait(grace_s) is None:
            raise proc.ExitTimeout(f"the guest closed its output but did not exit within "
                                   f"{grace_s:g} s")
        self.exited_ns = proc.now_ns()
        stream.finish()

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        """The output lines records come from, timestamped on arrival: stdout by default."""
        return self._process.lines(self._current_deadline)

    def _current_deadline(self) -> int:
        """The deadline for the next read; console guests move it once booted."""
        return self.deadline_ns

    def _observed(self, lines: Iterator[tuple[int, bytes]]) -> Iterator[tuple[int, bytes]]:
        """Every output line passes here before the protocol parser; a hook for consoles."""
        return lines

    def stop(self) -> StopInfo:
        if self._stop_info is not None:
            return self._stop_info
        # A second Ctrl-C or SIGTERM must not cut the teardown short: an OCI
        # runtime's container lives outside our process group until `delete`.
        with _signals_deferred():
            self._stop_info = self._teardown()
        return self._stop_info

    def _teardown(self) -> StopInfo:
        killed = self._process.returncode is None
        self._process.kill()
        began_ns = proc.now_ns()
        for argv in self.cleanup:
            try:
                proc.run(argv, timeout_s=30)
            except (proc.ProcessError, proc.DeadlineExceeded):
                pass
        if self.cleanup:
            self._phases[self.cleanup_phase] = (proc.now_ns() - began_ns) / 1e6
        self._finalize()
        for directory in self.scratch:
            shutil.rmtree(directory, ignore_errors=True)
        self._released()
        code = self._process.returncode
        signal_name = signal.Signals(-code).name if code is not None and code < 0 else None
        return StopInfo(code if not killed else None, signal_name, killed)

    def start_phases(self) -> dict[str, float]:
        return dict(self._phases)

    def root_pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def thread_text(self) -> tuple[str, int | None]:
        """A reading of the threads of the instance's process (process/threads.py), and the
        session whose threads are the VMM's (None: all of them); the process's own way where
        it has one (a run inside an L1 machine)."""
        own = getattr(self._process, "thread_text", None)
        if own is not None:
            return own()
        return threads.host_text(self._process.pid), None

    def _finalize(self) -> None:
        """Each finalizer once (the list may be shared with whoever made them)."""
        pending = list(self.finalizers)
        self.finalizers.clear()
        for finalizer in pending:
            try:
                finalizer()
            except Exception as error:  # noqa: BLE001 - teardown goes on; the run says why
                self.collected.setdefault("errors", []).append(f"{type(error).__name__}: {error}")

    def artifacts(self) -> dict[str, Any]:
        return self.collected

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    @property
    def log_overflow(self) -> int:
        return self._process.log_overflow if self._process is not None else 0

    def diagnostics(self) -> str:
        try:
            lines = (self.logdir / "stderr.log").read_text(errors="replace").splitlines()
        except OSError:
            return ""
        tail = [line.strip() for line in lines if line.strip()][-3:]
        return " | ".join(tail)[-400:]


@contextlib.contextmanager
def _signals_deferred() -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends (main thread only; elsewhere a no-op)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = {signal.SIGINT, signal.SIGTERM}
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def _quote(arg: str) -> str:
    return arg if re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace("'", "'\\''") + "'"
