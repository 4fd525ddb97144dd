"""The base of every full-system kind: image, job hand-over, devices, console, teardown.

A VMM kind (qemu, uml, command) subclasses FullSystem and supplies only what is its own:
a fast probe of its program, the kernel it boots, its command line, and how a disk and
an upload channel are attached to it (VmmMapping). Everything else is here, once.
"""

from __future__ import annotations

import os
import shutil
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field

from guestbench import images
from guestbench.images import vmlinux
from guestbench.process import memory, proc, threads
from guestbench.environments import scratch
from guestbench.environments.fullsystem import (
    channels, guestdisk, nested, placement, tracedisk, vsock)
from guestbench.environments.base import (
    Availability, Capability, Environment, EnvironmentSpec, Guest, GuestStartError, Job,
    JobNeeds)
from guestbench.environments.fullsystem.console import ConsoleGuest, guest_job, kernel_arguments
from guestbench.environments.fullsystem.consoles import CONSOLES
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.host import Host
from guestbench.network.paths import NetPath
from guestbench.store import records

VERSION_TIMEOUT_S = 5.0


class VersionHangs(Exception):
    """The VMM's version command did not end within VERSION_TIMEOUT_S."""


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


class FullSystemSpec(EnvironmentSpec):
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
    inside: Literal["none", "tcg", "kvm"] = Field(
        "none", description="run the VMM inside an L1 VM that QEMU boots under tcg (emulating "
                            "SVM, so a kvm guest inside is real KVM, nested) or kvm (the host's, "
                            "nested=1); none: on the host")
    thread_cpu: bool | None = Field(None, description=(
        "read the VMM's threads' host CPU over each agent workload (threads_cpu_vcpus, _vmm, "
        "_io); unset: on where the VMM is a host process, off inside an L1 machine, where "
        "each reading is a process there beside the workload"))


# How long a guest whose VMM's threads are read inside an L1 machine waits after its agent
# ends (the image's /init, gb.linger): the reading there starts 0.1-0.3 s after the end.
LINGER_MS = 1000

FUNCTIONAL = records.FUNCTIONAL  # the fact of figures that are functional only

# What a run inside an L1 machine cannot have, and why (docs/environments.md, "Inside a VM").
NOT_INSIDE = {
    Capability.TRACED_DISK: "the traced disk is a host block device, which the L1 machine "
                            "cannot hand on: run with inside = \"none\"",
}
# What footprint reads of an instance inside an L1 machine (its facts say it, and the
# footprint table under its figures): the host sees one process, the machine's QEMU.
INSIDE_FOOTPRINT = ("the {machine}'s QEMU process, which holds the instance: the {machine}'s "
                    "memory as touched ({held}) and QEMU's own; beyond guest RAM is QEMU's "
                    "own, outside the {machine}'s {mib} MiB")


@dataclass(frozen=True)
class AttachedDisk:
    """One disk as a VMM kind attached it: its arguments and the guest's name for it."""

    vmm_args: tuple[str, ...]
    guest_device: str


class FullSystem(Environment):
    """A guest kernel booted by a VMM process whose console carries the agent's records."""

    full_system: ClassVar[bool] = True
    shares_rounds: ClassVar[bool] = True
    # a boot a round under emulation (about 5 s), shared by the round's runs; the guest's code
    # emulated. A kind that knows better (KVM) says so.
    typical_start_s: ClassVar[float] = 5.0
    typical_work_factor: ClassVar[float] = 10.0
    run_in_ms: ClassVar[int] = 100  # the VMM's or UML's own threads beside the agent
    capabilities: ClassVar[frozenset[Capability]] = frozenset(Capability)
    guest_class: ClassVar[type[ConsoleGuest]] = ConsoleGuest
    disk_format: str = "raw"  # of the scratch disk; qemu's spec may say qcow2
    # The VMM's threads by name (process/threads.py); a kind whose guest has no VMM threads
    # apart says why instead (UML's guest is its processes, Xen's vCPUs are the hypervisor's)
    vcpu_threads: ClassVar[str] = threads.DEFAULT_VCPU
    io_threads: ClassVar[str] = threads.DEFAULT_IO
    no_vmm_threads: ClassVar[str | None] = None

    def __init__(self, spec: FullSystemSpec) -> None:
        super().__init__(spec)
        self.image: images.Image | None = None
        self.vmm_version: str | None = None
        self.machine: nested.Machine | None = None  # the L1 machine, inside a VM
        self.boot_kernel: Path | None = None  # the extracted vmlinux, kernel_format vmlinux

    @property
    def inside(self) -> str | None:
        """The L1 machine's accelerator where the VMM runs inside a VM; None on the host."""
        inside = getattr(self.spec, "inside", "none")
        return None if inside == "none" else inside

    # -- what a VMM kind supplies ------------------------------------------------------
    @abstractmethod
    def vmm_probe(self) -> Availability:
        """Whether the VMM can start here, from files and programs alone (fast, no boot)."""

    @abstractmethod
    def kernel(self) -> Path:
        """The guest kernel file the image is built for (images.ImageError if none)."""

    @abstractmethod
    def command_line(self, kernel_args: list[str], workdir: Path,
                     devices: GuestDevices) -> list[str]:
        """The VMM's argv booting self.image with the job's kernel arguments and devices."""

    def version_argv(self) -> list[str] | None:
        """The command that prints the VMM's version (first line kept), or None."""
        return None

    def image_modules(self) -> tuple[str, ...]:
        """Guest kernel modules the plan's workloads need (disk and channel drivers)."""
        return ()

    def attach_disk(self, index: int, path: Path, fmt: str) -> AttachedDisk:
        """Disk number index (0 first) backed by path, in format fmt (raw or qcow2)."""
        raise GuestStartError(f"{self.kind} attaches no disks")

    def network_path(self) -> str:
        return "tap"

    def thread_reader(self, guest: Guest) -> "tuple[Callable[[], tuple[str, int | None]], threads.Classify] | None":
        """How to read the VMM's threads of this guest, and which is which; None: not read
        (the kind has none apart, or thread_cpu is off)."""
        if self.threads_not_read():
            return None
        return guest.thread_text, threads.classifier(self.vcpu_threads, self.io_threads)

    def lingers(self, job: Job) -> bool:
        """Whether the guest waits LINGER_MS after its agent's end: inside an L1 machine,
        where the last reading of the VMM's threads starts a while after the end arrives
        and would otherwise find them gone with the guest."""
        return bool(job.read_threads and self.inside and not self.threads_not_read())

    def threads_not_read(self) -> str | None:
        """Why the VMM's threads are not read over its runs; None: they are."""
        if self.no_vmm_threads:
            return self.no_vmm_threads
        if self.spec.thread_cpu is False:
            return "thread_cpu = false"
        if self.spec.thread_cpu is None and self.inside:
            return ("inside an L1 machine each reading is a process there, beside the "
                    "workload (thread_cpu = true reads them)")
        return None

    def attach_network(self, path: NetPath) -> list[str]:
        """The VMM's arguments for a NIC on the path made for the run (network/paths.py)."""
        raise GuestStartError(f"{self.kind} attaches no network device")

    def attach_vsock(self, workdir: Path, devices: GuestDevices, agent: Path, port: int) -> None:
        """A virtio-vsock device whose host end is the peer for `port` (fullsystem/vsock.py):
        the kind adds its VMM's arguments (or devices.vsock) and the peer to devices.beside."""
        raise GuestStartError(f"{self.kind} attaches no vsock device")

    def needs_vsock(self) -> bool:
        return Capability.VSOCK in self.plan_needs.capabilities

    def channel(self, name: str, source: Path, workdir: Path) -> channels.ChannelSetup:
        """The upload channel `name` feeding source's bytes into the guest."""
        raise channels.ChannelError(self.channel_refusal(name))

    def ready(self, host: Host) -> Availability:
        """A check that needs the built image (a test boot); default: none."""
        return Availability.yes()

    def instance_mib(self) -> int | None:
        return self.spec.memory_mib

    def guest_ram(self) -> memory.GuestRam | None:
        """The instance's RAM among the mappings of the process tree footprint reads: inside
        a VM, the L1 machine's QEMU (its RAM block, the machine's size); else the guest's."""
        if self.machine is not None:
            return memory.sized(self.machine.shape.memory_mib)
        return self.own_guest_ram()

    def own_guest_ram(self) -> memory.GuestRam | None:
        """The guest's RAM among its VMM's mappings (a kind whose VMM maps it otherwise says)."""
        return memory.sized(self.spec.memory_mib)

    def footprint_counts(self) -> str | None:
        """What footprint counts of an instance inside a VM, in a sentence; None on the host."""
        if self.machine is None:
            return None
        return INSIDE_FOOTPRINT.format(machine="L1 machine", mib=self.machine.shape.memory_mib,
                                       held="its kernel and page cache, the VMM and its guest")

    def one_at_a_time(self) -> str | None:
        if self.inside:
            return ("inside a VM the L1 machine runs one inner guest at a time (on the host, "
                    "inside = \"none\", several run)")
        return None

    def memory_limit_mib(self) -> int:
        """The most memory a workload can touch in this guest (a run needing more is sure
        to fail, so it is refused before it starts)."""
        return self.spec.memory_mib

    def memory_refusal(self, needed_mib: int) -> str:
        return (f"the workload touches {needed_mib} MiB and the guest has memory_mib = "
                f"{self.spec.memory_mib} (fix: a larger memory_mib, or a smaller array_mib)")

    def console_kind(self) -> str:
        """Where the VMM puts the guest's console (consoles.CONSOLES); default its stdout."""
        return "stdio"

    # -- the shared part ---------------------------------------------------------------
    @property
    def disk_mib(self) -> int:
        return getattr(self.spec, "disk_mib", 1024)

    def probe(self, host: Host) -> Availability:
        answer = self.vmm_probe()
        if not answer.available:
            return answer
        if self.inside:
            l1 = self.machine_probe()
            if not l1.available:
                return l1
            answer = Availability.yes(f"{answer.reason}; {l1.reason}".lstrip("; "))
        try:
            kernel = self.kernel()
            images.check_readable(kernel)
        except images.ImageError as error:
            return Availability.no(f"guest kernel: {error}")
        return Availability.yes(f"{answer.reason}; kernel {kernel}".lstrip("; "))

    def prepare(self, host: Host) -> Availability:
        """Builds (or finds in the cache) the guest image, then the kind's own check; with
        kernel_format = "vmlinux" (a kind's option), first the kernel's uncompressed vmlinux,
        which the VMM boots instead (cached: no decompression in an emulated guest)."""
        if getattr(self.spec, "kernel_format", "bzImage") == "vmlinux":
            try:
                self.boot_kernel = vmlinux.extract(self.kernel())
            except (images.ImageError, OSError) as error:
                return Availability.no(f"vmlinux of the guest kernel: {error}")
        tools = tuple(dict.fromkeys((*self.spec.tools, *self.plan_needs.tools)))
        try:
            self.image = images.build(self.kernel(), modules=self.image_modules(), tools=tools)
        except images.ImageError as error:
            return Availability.no(f"guest image: {error}")
        try:
            self.vmm_version = self._version()
        except VersionHangs as error:
            return Availability.no(str(error))
        if self.inside:
            l1 = self.start_machine()
            if not l1.available:
                return l1
        answer = self.ready(host)
        if not answer.available:
            return answer
        detail = f"image {self.image.id}; kernel {self.image.kernel_version}"
        return Availability.yes(f"{answer.reason}; {detail}" if answer.reason else detail)

    def machine_probe(self) -> Availability:
        """Whether the machine the VMM runs in (inside a VM) could start, from files alone."""
        return nested.probe(self.inside)

    def start_machine(self) -> Availability:
        """Boot (or share) the L1 machine this environment's VMM runs in."""
        shape = nested.Shape(self.inside, self.spec.memory_mib + nested.L1_EXTRA_MIB,
                             max(1, self.spec.cpu_count(1)))
        try:
            self.machine = nested.acquire(shape)
        except nested.L1Error as error:
            return Availability.no(f"inside = \"{self.inside}\": {error}")
        return Availability.yes(f"L1 machine ready in {self.machine.boot_s:.1f} s")

    def close(self) -> None:
        if self.machine is not None:
            nested.release(self.machine)
            self.machine = None

    def provides(self) -> frozenset[Capability]:
        has = super().provides()
        return has - NOT_INSIDE.keys() if self.inside else has

    def peer_route(self, path: NetPath) -> tuple[str, str | None]:
        if self.inside:  # the host is beyond the L1 machine's own user network
            return nested.L1_HOST, path.dial
        return super().peer_route(path)

    def network_refusal(self) -> str | None:
        if self.inside and self.network_path() != "user":
            return (f"inside a VM a {self.network_path()} path's host device cannot be handed "
                    "into the L1 machine; only QEMU's user network (net = \"user\") reaches "
                    "the host from there, through the L1 machine's own (fix: inside = \"none\")")
        return super().network_refusal()

    def facts(self) -> dict[str, Any]:
        facts: dict[str, Any] = {}
        if self.machine is not None:
            facts.update(self.machine.facts())
        counts = self.footprint_counts()
        if counts:
            facts["footprint_counts"] = counts
        if self.inside == "tcg":  # reports mark it and keep it out of means (FUNCTIONAL)
            facts[FUNCTIONAL] = ("nested in an L1 guest under TCG: its figures show that it "
                                 "runs and where its time goes, not its speed on hardware")
        if self.vmm_version:
            facts["vmm_version"] = self.vmm_version
        if self.threads_not_read():  # why threads_cpu_* are missing from its runs
            facts["vmm_threads"] = f"not read: {self.threads_not_read()}"
        if self.image is not None:
            facts["guest_kernel"] = self.image.kernel_version
            facts["image"] = self.image.id
        return facts

    def _version(self) -> str | None:
        """The VMM's version line; None where it has no version_argv, or the program
        failed or printed nothing. A version command that does not end within
        VERSION_TIMEOUT_S raises VersionHangs: a VMM that cannot say its version in 5 s
        is not one to measure (prepare makes the environment unavailable with it)."""
        argv = self.version_argv()
        if not argv:
            return None
        try:
            result = proc.run(argv, timeout_s=VERSION_TIMEOUT_S)
        except proc.DeadlineExceeded:
            raise VersionHangs(
                f"the version command '{' '.join(argv)}' did not end within "
                f"{VERSION_TIMEOUT_S:g} s (fix: give a version_argv that prints one line and "
                "exits, e.g. [\"firecracker\", \"--version\"], or none)") from None
        except proc.ProcessError:
            return None
        lines = (result.stdout.strip() or result.stderr.strip()).splitlines()
        return lines[0][:200] if lines else None

    def needs_disk(self) -> bool:
        return bool(self.plan_needs.capabilities & {
            Capability.FILESYSTEM, Capability.BLOCK_DEVICE, Capability.TRACED_DISK})

    def needs_channels(self) -> bool:
        return Capability.UPLOAD in self.plan_needs.capabilities

    def refusal(self, needed: frozenset[Capability], needs: JobNeeds = JobNeeds()) -> str | None:
        blocked = sorted((needed | needs.capabilities()) & NOT_INSIDE.keys(),
                         key=lambda capability: capability.value) if self.inside else []
        if blocked:
            return NOT_INSIDE[blocked[0]]
        refused = super().refusal(needed, needs) or placement.refusal(
            getattr(self.spec, "placement", "none"), getattr(self.spec, "vcpus", 1),
            len(os.sched_getaffinity(0)))
        if refused is None and needs.memory_mib > self.memory_limit_mib():
            return self.memory_refusal(needs.memory_mib)
        if refused is None and needs.traced_disk:
            reason = tracedisk.unavailable_reason()
            if reason:
                return f"no traced disk here: {reason}"
        return refused

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        return self.start_guest(job, logdir, deadline_ns)

    def start_guest(self, job: Job, logdir: Path, deadline_ns: int,
                    vmm_args: tuple[str, ...] = (), **options: Any) -> Guest:
        """start(), with arguments for the VMM after the kind's own, and options for the
        guest class beyond the kind's (stdin=True: the host writes to its console)."""
        # the VMM's sockets, disks and state live in a short private folder (inside a VM: in
        # the folder the L1 machine shares, at the same path there)
        if self.inside and self.machine is None:
            raise GuestStartError("inside a VM, but the L1 machine was not started (prepare())")
        if self.machine is not None and not self.machine.alive:  # it died: a new one
            said = self.machine.said()
            self.close()
            booted = self.start_machine()
            if not booted.available:
                raise GuestStartError(f"the L1 machine died ({said}), and a new one did not "
                                      f"start: {booted.reason}")
        machine = self.machine
        workdir = (machine.workdir() if machine is not None
                   else scratch.socket_folder(f"guestbench-{self.kind}-"))
        devices = GuestDevices()
        try:
            if self.console_kind() != "stdio":
                devices.open_console(CONSOLES[self.console_kind()](workdir, logdir))
            job = self.attach(job, workdir, logdir, devices)
            linger = [f"gb.linger={LINGER_MS}"] if self.lingers(job) else []
            argv = [*self.command_line([*linger, *kernel_arguments(job)], workdir, devices),
                    *vmm_args]
            if devices.beside:  # the vsock's peer, where the VMM runs (inside a VM: there)
                argv = vsock.beside(argv, devices.beside, workdir / "beside.log",
                                    devices.leftovers)
            return self.guest_class(argv, logdir, deadline_ns, scratch=[workdir],
                                    finalizers=devices.finalizers, collected=devices.collected,
                                    pass_fds=devices.pass_fds,
                                    boot_timeout_s=self.spec.boot_timeout_s,
                                    console=devices.console,
                                    **{**self.guest_options(workdir), **options},
                                    **({"launcher": machine.launcher(workdir)} if machine else {}))
        except BaseException:  # no guest owns the folder and the devices yet
            devices.finish()
            shutil.rmtree(workdir, ignore_errors=True)
            raise

    def inside_channel(self, setup: channels.ChannelSetup,
                       workdir: Path) -> channels.ChannelSetup:
        """The channel as the VMM gets it: inside a VM, its feeder runs there too."""
        return nested.relocated(setup, workdir) if self.machine is not None else setup

    def guest_options(self, workdir: Path) -> dict[str, Any]:
        """Keyword arguments the kind's guest class takes beyond ConsoleGuest's."""
        return {}

    def attach(self, job: Job, workdir: Path, logdir: Path, devices: GuestDevices) -> Job:
        """Gives the guest what the job needs (a scratch disk, a traced disk, an upload
        channel) through the kind's mapping; returns the job told where they are."""
        needs = job.needs
        mounts: list[str] = []
        options: list[str] = []
        index = 0
        if needs.scratch or needs.scratch_files is not None:
            image = guestdisk.make_scratch_disk(workdir, needs, self.disk_mib, self.disk_format)
            disk = self.attach_disk(index, image, self.disk_format)
            devices.disks.append(image)
            devices.args += disk.vmm_args
            mounts.append(f"gb.mount=ext4:{disk.guest_device}:{guestdisk.GUEST_SCRATCH}:")
            index += 1
        if needs.traced_disk:
            traced = devices.traced_disk(workdir, logdir)
            disk = self.attach_disk(index, Path(traced.device), "raw")
            devices.disks.append(Path(traced.device))
            devices.args += disk.vmm_args
            options += ["--device", disk.guest_device]
        if job.network is not None:
            devices.nic = job.network
            devices.args += self.attach_network(job.network)
        if needs.upload is not None:
            setup = devices.channel(lambda: self.inside_channel(self.channel(
                needs.upload.channel, needs.upload.source, workdir), workdir))
            devices.args += setup.vmm_args
            mounts += setup.kernel_args
            options += channels.agent_options(setup, guestdisk.GUEST_SCRATCH)
        if job.vsock_port is not None:
            self.attach_vsock(workdir, devices, job.agent_path, job.vsock_port)
        return guest_job(job, needs, mounts=mounts, options=options)
