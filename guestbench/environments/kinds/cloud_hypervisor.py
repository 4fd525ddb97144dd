"""Cloud Hypervisor guests: its command line boots the guest, its API socket saves and
restores it.

Each run starts `cloud-hypervisor --api-socket ... --kernel VMLINUX --initramfs ...
--cmdline ...` with the guest's serial port on its stdout (--serial tty, --console off)
and the run's scratch disk as a virtio-blk PCI disk; fullsystem/api_vmm.py waits for its
API (/vmm.ping) as the start's first step. The image powers the guest off (ACPI), on
which Cloud Hypervisor exits. Snapshots are vm.pause and vm.snapshot into a folder (its
config, state and memory), vm.restore of that folder into a new Cloud Hypervisor, and
vm.resume: the requests `ch-remote` sends, sent by guestbench itself.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from guestbench.environments.base import Capability
from guestbench.environments.fullsystem import vsock
from guestbench.environments.fullsystem.api_vmm import SLOW_CALL_S, ApiVmm, ApiVmmSpec, timed
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.fullsystem.vmm_api import Api

KERNEL_ARGS = ("console=ttyS0", "quiet", "panic=-1")
API = "/api/v1"


class CloudHypervisorSpec(ApiVmmSpec):
    """A Cloud Hypervisor guest booting the guest image's kernel and initramfs."""

    kind: Literal["cloud-hypervisor"] = "cloud-hypervisor"
    binary: str = Field("cloud-hypervisor", min_length=1, description=(
        "Cloud Hypervisor's program: a path, or a name found on PATH"))
    memory_restore_mode: Literal["Copy", "OnDemand"] = Field(
        "Copy", description="vm.restore's memory: copied in whole before the guest runs "
                            "(Copy) or faulted in as the guest touches it (OnDemand, "
                            "userfaultfd)")


class CloudHypervisor(ApiVmm):
    kind: ClassVar[str] = "cloud-hypervisor"
    spec_model = CloudHypervisorSpec
    vmm_name = "Cloud Hypervisor"
    ready_path = f"{API}/vmm.ping"
    bus_modules = ("virtio_pci",)
    disk_modules = ("virtio_blk",)
    lacking = {
        Capability.UPLOAD: "cloud-hypervisor: upload channels are not mapped for it",
        Capability.TRACED_DISK: "cloud-hypervisor: traced disks are not mapped for it",
    }

    def vmm_argv(self, socket: str, workdir: Path, kernel_args: list[str],
                 devices: GuestDevices) -> list[str]:
        spec, image = self.spec, self.image
        attached = [arg for path in devices.args for arg in ("--disk", f"path={path}")]
        if devices.vsock is not None:
            attached += ["--vsock", f"cid={vsock.GUEST_CID},socket={devices.vsock}"]
        if devices.nic is not None:
            attached += ["--net", f"tap={devices.nic.host_if},mac={devices.nic.mac}"]
        return [*self._argv(socket),
                "--kernel", str(self.boot_kernel or image.kernel),
                "--initramfs", str(image.initramfs),
                "--cmdline", " ".join([*KERNEL_ARGS, *spec.kernel_args, *kernel_args]),
                "--cpus", f"boot={spec.vcpus}", "--memory", f"size={spec.memory_mib}M",
                "--serial", "tty", "--console", "off", *attached, *spec.extra_args]

    def restore_argv(self, socket: str) -> list[str]:
        """A restored guest's serial port is Cloud Hypervisor's stdout again, but it takes
        input only from a terminal (its serial manager reads stdin where isatty says so),
        and the agent waits for the host's line: script(1) gives it one, whose input is
        the run's stdin."""
        return ["script", "-qfec", shlex.join(self._argv(socket)), "/dev/null"]

    def _argv(self, socket: str) -> list[str]:
        return [self.binary() or self.spec.binary, "--api-socket", f"path={socket}"]

    def save_requests(self, api: Api, image: Path) -> dict[str, float]:
        steps: dict[str, float] = {}
        timed(steps, "pause", lambda: api.call("PUT", f"{API}/vm.pause"))
        timed(steps, "write", lambda: api.call("PUT", f"{API}/vm.snapshot", {
            "destination_url": f"file://{image}"}, timeout_s=SLOW_CALL_S))
        return steps

    def restore_requests(self, api: Api, image: Path) -> dict[str, float]:
        steps: dict[str, float] = {}
        timed(steps, "load", lambda: api.call("PUT", f"{API}/vm.restore", {
            "source_url": f"file://{image}",
            "memory_restore_mode": self.spec.memory_restore_mode}, timeout_s=SLOW_CALL_S))
        timed(steps, "resume", lambda: api.call("PUT", f"{API}/vm.resume"))
        return steps
