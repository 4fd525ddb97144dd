"""The base of the VMMs driven through their HTTP API (Firecracker, Cloud Hypervisor).

Each run starts the VMM with its API socket; the guest class waits for the API to answer
and sends the kind's requests (Firecracker's whole configuration and InstanceStart; Cloud
Hypervisor's none: its command line says it all), timing both as the run's own start
phases (start_api_ready, start_configure). A refusal ends the start with the VMM's words.
Snapshots are the kind's requests too (pause, create, load; ApiSnapshots below).

Inside an L1 machine (inside = "tcg") the VMM runs there and serves its API at the one
socket the machine forwards (l1_init.API_SOCKET, in its own tmpfs: one run at a time), from
a port of the host's loopback (nested.Machine.api_address), so the same requests go the
same way; the machine's socat, started with it, carries them.
"""

from __future__ import annotations

import shutil
import tempfile
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from guestbench import images
from guestbench.environments import scratch
from guestbench.environments.base import Availability, Capability, Guest, GuestStartError, Job
from guestbench.environments.fullsystem import guestdisk, kvm, vsock
from guestbench.environments.fullsystem.base import AttachedDisk, FullSystem, FullSystemSpec
from guestbench.environments.fullsystem.console import ConsoleGuest
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.fullsystem.l1_init import API_SOCKET
from guestbench.environments.fullsystem.vmm_api import SLOW_CALL_S, Api
from guestbench.environments.snapshots import InMachine, Restored, Saved, image_bytes
from guestbench.host import which
from guestbench.network.paths import NetPath
from guestbench.process import proc

SOCKET = "api.sock"
SOCAT = "socat"  # the L1 machine forwards its port to the API socket (apt-get install socat)


class ApiVmmSpec(FullSystemSpec):
    """Options of a VMM driven through its API: its binary, vCPUs, kernel."""

    binary: str = Field(..., min_length=1, description="the VMM's program: a path, or a name "
                                                       "found on PATH")
    vcpus: int = Field(1, ge=1, le=32, strict=True, description="the guest's vCPUs")
    kernel: str | None = Field(None, min_length=1, description=(
        "the guest's kernel (bzImage; its vmlinux is extracted and booted); None = the host's "
        "newest /boot/vmlinuz-*"))
    kernel_format: Literal["vmlinux"] = Field(
        "vmlinux", description="the VMM boots the kernel's uncompressed ELF (through PVH)")
    disk_mib: int = Field(1024, ge=64, le=1 << 22, strict=True,
                          description="size of the scratch disk, MiB")


@dataclass
class ApiGuest(ConsoleGuest):
    """A VMM process whose API is asked, once it answers, to configure and start the guest."""

    api: Api | None = None
    ready_path: str = "/"
    configure: Callable[[Api], None] | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.api is None:
            return
        self.api.log = self.logdir / "api.log"  # the requests, as one would send them by hand
        self.finalizers.append(self.api.close)
        try:
            self._phases["api_ready"] = self.api.wait_ready(
                self.ready_path, lambda: self._process.poll() is None)
            if self.configure is not None:
                began_ns = proc.now_ns()
                self.configure(self.api)
                self._phases["configure"] = (proc.now_ns() - began_ns) / 1e6
        except GuestStartError as error:  # told with the VMM's last words, its kind kept
            self.stop()  # first: its stderr's pump has written all it said once it ends
            said = self.diagnostics()
            if said:
                error.args = (f"{error} ({said})",)
            raise error from None
        except BaseException:
            self.stop()
            raise


class ApiVmm(FullSystem):
    """A VMM with an HTTP API on a Unix socket; a kind supplies its argv and requests."""

    guest_class = ApiGuest
    typical_start_s: ClassVar[float] = 1.0
    typical_work_factor: ClassVar[float] = 1.05
    vmm_name: ClassVar[str]  # in reasons: "Firecracker"
    ready_path: ClassVar[str]  # a GET that answers once the API is up
    install_hint: ClassVar[str] = "cargo build --release in its source, docs/environments.md"
    bus_modules: ClassVar[tuple[str, ...]]  # the guest's virtio transport (mmio, pci)
    disk_modules: ClassVar[tuple[str, ...]]
    capabilities = frozenset({
        Capability.AGENT, Capability.PROCESSES, Capability.TSC, Capability.GUEST_KERNEL,
        Capability.EXEC_CHILDREN, Capability.DROP_CACHES, Capability.FILESYSTEM,
        Capability.BLOCK_DEVICE, Capability.SNAPSHOT, Capability.HOST_PROCESSES,
        Capability.VSOCK, Capability.NETWORK})

    def typical_cost(self) -> tuple[float, float]:
        if self.inside:  # KVM in an L1 machine under TCG, priced as qemu-kvm-nested: their
            # boots took 3.5-4.6 s on an Intel Xeon VM (2026-11-30), about twice that on an
            # AMD EPYC VM; 20 s made a 9-minute campaign's first estimate 39 minutes
            return FullSystem.typical_start_s, FullSystem.typical_work_factor
        return super().typical_cost()

    def __init__(self, spec: ApiVmmSpec) -> None:
        super().__init__(spec)
        self._configures: dict[str, Callable[[Api], None] | None] = {}

    # -- what a kind supplies ----------------------------------------------------------
    @abstractmethod
    def vmm_argv(self, socket: str, workdir: Path, kernel_args: list[str],
                 devices: GuestDevices) -> list[str]:
        """The VMM's argv with its API at socket, for a run (its disks in devices)."""

    def configure(self, kernel_args: list[str], devices: GuestDevices
                  ) -> Callable[[Api], None] | None:
        """The requests that configure and start the guest once the API answers; None
        where the command line does it all."""
        return None

    @abstractmethod
    def restore_argv(self, socket: str) -> list[str]:
        """The VMM's argv for a restore: its API, nothing else."""

    # -- the shared part ---------------------------------------------------------------
    def binary(self) -> str | None:
        """The VMM's program as a path, or None where it is not found."""
        binary = self.spec.binary
        if "/" in binary:
            return binary if Path(binary).is_file() else None
        return which(binary)

    def vmm_probe(self) -> Availability:
        binary = self.binary()
        if binary is None:
            return Availability.no(f"{self.spec.binary} not found (fix: {self.install_hint}; "
                                   "then put it on PATH or set binary)")
        if self.inside:
            if which(SOCAT) is None:
                return Availability.no("socat not found: inside a VM it carries the VMM's API "
                                       "(fix: apt-get install socat)")
            return Availability.yes(f"{binary}, on KVM in the L1 machine")
        found = kvm.device()
        if not found.available:
            return found
        # a test boot's kept answer (ready() makes one when a campaign prepares it)
        return kvm.remembered_for_vmm(binary, self.kind) or Availability.yes(
            f"{binary}; /dev/kvm (a test boot when a campaign prepares it tells whether "
            "guests boot)")

    def version_argv(self) -> list[str] | None:
        binary = self.binary()
        return [binary, "--version"] if binary else None

    def kernel(self) -> Path:
        return Path(self.spec.kernel) if self.spec.kernel else images.default_kernel()

    def image_modules(self) -> tuple[str, ...]:
        modules: list[str] = []
        if self.needs_disk():
            modules += [*self.bus_modules, *self.disk_modules, *guestdisk.FILESYSTEM_MODULES]
        if self.needs_vsock():
            modules += [*self.bus_modules, *vsock.MODULES]
        if Capability.NETWORK in self.plan_needs.capabilities:
            modules += [*self.bus_modules, "virtio_net"]
        return tuple(dict.fromkeys(modules))

    def ready(self, host) -> Availability:
        """Inside a VM: the L1 machine's KVM loaded. On the host: a test guest boots
        (/dev/kvm can exist where no guest boots), its answer kept as QEMU's is (kvm.py)."""
        if self.machine is not None and not self.machine.kvm:
            return Availability.no(f"the L1 machine has no /dev/kvm: its KVM module did not "
                                   f"load; {self.machine.said()}")
        if self.machine is None:
            key = [self.binary() or self.spec.binary, self.image.id, self.kind]
            answer = kvm.remembered(key)
            if answer is None:
                answer = self._test_boot()
                kvm.remember(key, answer)
            if not answer.available:
                return answer
        return Availability.yes(f"{self.vmm_name} {self.vmm_version or '(version unknown)'}")

    def _test_boot(self) -> Availability:
        """A guest whose agent prints its version, within kvm.KVM_PROBE_S."""
        logdir = Path(tempfile.mkdtemp(prefix=f"guestbench-{self.kind}-test-"))
        began_ns = proc.now_ns()
        deadline_ns = began_ns + int(kvm.KVM_PROBE_S * 1e9)
        guest = None
        try:
            guest = self.start_guest(Job("version", Path("/gbagent"), ("--version",)), logdir,
                                     deadline_ns)
            try:
                for _record in guest.records():
                    pass
            except Exception:  # noqa: BLE001 - the console's words below tell what happened
                pass
            console = (logdir / "stdout.log").read_text(errors="replace")
            if "agent exited with status 0" in console:
                return Availability.yes(f"KVM test guest booted in "
                                        f"{(proc.now_ns() - began_ns) / 1e9:.2f} s")
            if proc.now_ns() >= deadline_ns:
                return Availability.no(f"/dev/kvm exists but a test guest did not boot under "
                                       f"{self.vmm_name} within {kvm.KVM_PROBE_S:g} s")
            return Availability.no(f"a test guest failed under {self.vmm_name}: "
                                   f"{guest.diagnostics()[-200:] or 'no output'}")
        except GuestStartError as error:
            return Availability.no(f"a test guest failed under {self.vmm_name}: "
                                   f"{str(error)[:300]}")
        finally:
            if guest is not None:
                guest.stop()
            shutil.rmtree(logdir, ignore_errors=True)

    def facts(self) -> dict[str, Any]:
        """What ran it, in the platform table's words (its accelerator fact)."""
        return {**super().facts(), "accelerator": (
            "KVM in an L1 guest that runs under TCG" if self.inside else "KVM (hardware)")}

    def attach_disk(self, index: int, path: Path, fmt: str) -> AttachedDisk:
        if fmt != "raw":
            raise GuestStartError(f"{self.kind}: only raw disks are attached")
        return AttachedDisk((str(path),), f"/dev/vd{'abcdefgh'[index]}")

    def socket(self, workdir: Path) -> str:
        """Where the VMM serves its API: in the run's folder, or the L1 machine's forwarded
        socket."""
        return API_SOCKET if self.machine is not None else str(workdir / SOCKET)

    def attach_network(self, path: NetPath) -> list[str]:
        """A virtio-net NIC on the run's tap: the kind gives devices.nic to its VMM (an API
        request, or its command line)."""
        if path.kind != "tap":
            raise GuestStartError(f"{self.kind}: a {path.kind} path has no tap to give it")
        return []

    def attach_vsock(self, workdir: Path, devices: GuestDevices, agent: Path, port: int) -> None:
        """The VMM's hybrid vsock: a Unix socket beside its API's, where the peer listens
        for the guest's port (fullsystem/vsock.py); the kind gives it to its VMM."""
        path = self.socket(workdir).removesuffix(".sock") + ".vsock"
        devices.vsock = Path(path)
        devices.beside.append(vsock.unix_peer(agent, devices.vsock, port))
        if self.machine is not None:  # the L1 machine's tmpfs, not the run's folder
            devices.leftovers += [path, f"{path}_{port}"]

    def api(self, workdir: Path) -> Api:
        address = self.machine.api_address if self.machine is not None else Path(
            self.socket(workdir))
        return Api(self.vmm_name, address)

    def command_line(self, kernel_args: list[str], workdir: Path,
                     devices: GuestDevices) -> list[str]:
        """The run's argv; the requests that follow it wait for guest_options (the same
        run's folder names them: start_guest asks for both, in that order)."""
        socket = self.socket(workdir)
        self._configures[str(workdir)] = self.configure(kernel_args, devices)
        return self.vmm_argv(socket, workdir, kernel_args, devices)

    def guest_options(self, workdir: Path) -> dict[str, Any]:
        return {"api": self.api(workdir), "ready_path": self.ready_path,
                "configure": self._configures.pop(str(workdir), None)}

    def snapshots(self, job: Job, folder: Path) -> "ApiSnapshots":
        return ApiSnapshots(self, job)

    # -- snapshots: the kind's requests ----------------------------------------------
    @abstractmethod
    def save_requests(self, api: Api, image: Path) -> dict[str, float]:
        """Pauses the running guest and writes its snapshot into the folder image; the
        steps' ms."""

    @abstractmethod
    def restore_requests(self, api: Api, image: Path) -> dict[str, float]:
        """Loads the snapshot in image into a VMM that has just started, and resumes it."""


def timed(steps: dict[str, float], name: str, call: Callable[[], Any]) -> Any:
    """Runs call, putting its ms into steps[name]."""
    began_ns = proc.now_ns()
    result = call()
    steps[name] = (proc.now_ns() - began_ns) / 1e6
    return result


class ApiSnapshots(InMachine):
    """One instance saved through the VMM's API into a folder, restored by new VMMs that
    load it. Inside a VM the folder is one the L1 machine shares with the host (so the
    image's size is read, and it goes with the machine if guestbench is killed)."""

    def __init__(self, vmm: ApiVmm, job: Job) -> None:
        self.vmm, self.job = vmm, job
        self.api: Api | None = None

    def start(self, logdir: Path, deadline_ns: int) -> Guest:
        guest = self.vmm.start_guest(self.job, logdir, deadline_ns, stdin=True)
        self.api = guest.api
        return guest

    def _folder(self, image: Path) -> Path:
        return image if self.vmm.machine is None else self.inside_folder(self.vmm.machine)

    def save(self, guest: Guest, image: Path) -> Saved:
        folder = self._folder(image)
        phases = self.vmm.save_requests(self.api, folder)
        where = " in the L1 machine's shared folder" if self.vmm.machine else ""
        return Saved(image_bytes(folder), phases,
                     note=f"{self.vmm.vmm_name}'s snapshot: its state and guest memory{where}")

    def restore(self, image: Path, logdir: Path, deadline_ns: int, first_seq: int) -> Restored:
        vmm, machine = self.vmm, self.vmm.machine
        folder = self._folder(image)
        workdir = machine.workdir() if machine else scratch.socket_folder(
            f"guestbench-{vmm.kind}-")
        socket = vmm.socket(workdir)
        began_ns = proc.now_ns()
        try:
            guest = vmm.guest_class(
                vmm.restore_argv(socket), logdir, deadline_ns,
                scratch=[workdir], stdin=True, first_seq=first_seq, resumed=True,
                boot_timeout_s=vmm.spec.boot_timeout_s, api=vmm.api(workdir),
                ready_path=vmm.ready_path, configure=None,
                **({"launcher": machine.launcher(workdir)} if machine else {}))
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)
            raise
        phases = {"spawn": (proc.now_ns() - began_ns) / 1e6}
        try:
            phases.update(vmm.restore_requests(guest.api, folder))
        except BaseException:
            guest.stop()
            raise
        return Restored(guest, phases)


__all__ = ["ApiGuest", "ApiSnapshots", "ApiVmm", "ApiVmmSpec", "SLOW_CALL_S", "timed"]
