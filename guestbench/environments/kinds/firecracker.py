"""Firecracker microVMs, configured and started through Firecracker's API socket.

Each run starts `firecracker --api-sock`, then asks its API for the boot source (the
guest image's vmlinux and initramfs, the job on the command line), the machine (vCPUs,
memory), the run's scratch disk as a virtio-mmio drive, and InstanceStart
(fullsystem/api_vmm.py times the two steps). The guest's console is Firecracker's serial
port on its stdout. Firecracker has no power-off device: the image ends the guest with a
reset (reboot=k), on which Firecracker exits. Snapshots are /snapshot/create of a paused
guest (full, or diff: only the pages written since the guest started, which needs
dirty-page tracking from the start) and /snapshot/load into a new Firecracker.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from guestbench.environments.base import Capability
from guestbench.environments.fullsystem import vsock
from guestbench.environments.fullsystem.api_vmm import SLOW_CALL_S, ApiVmm, ApiVmmSpec, timed
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.fullsystem.vmm_api import Api

# pci=off: its devices are virtio-mmio (ACPI says where); the i8042 words skip probing a
# keyboard controller that Firecracker emulates only for the reset; gb.shutdown=reboot:
# the image resets instead of powering off
KERNEL_ARGS = ("console=ttyS0", "quiet", "panic=-1", "reboot=k", "pci=off", "i8042.noaux",
               "i8042.nomux", "i8042.nopnp", "i8042.dumbkbd", "gb.shutdown=reboot")
STATE, MEMORY = "vmstate", "memory"


class FirecrackerSpec(ApiVmmSpec):
    """A Firecracker microVM booting the guest image's kernel and initramfs."""

    kind: Literal["firecracker"] = "firecracker"
    binary: str = Field("firecracker", min_length=1, description=(
        "Firecracker's program: a path, or a name found on PATH"))
    snapshot_type: Literal["Full", "Diff"] = Field(
        "Full", description="what /snapshot/create writes: every page (Full) or only those "
                            "written since the guest started (Diff, with dirty-page "
                            "tracking from its start)")
    seccomp: bool = Field(True, strict=True, description=(
        "false passes --no-seccomp (Firecracker's filters are built for its musl binary; a "
        "gnu build has an empty one anyway)"))


class Firecracker(ApiVmm):
    kind: ClassVar[str] = "firecracker"
    spec_model = FirecrackerSpec
    vmm_name = "Firecracker"
    ready_path = "/version"
    bus_modules = ("virtio_mmio",)
    disk_modules = ("virtio_blk",)
    lacking = {
        Capability.UPLOAD: "firecracker: upload channels are not mapped for Firecracker",
        Capability.TRACED_DISK: "firecracker: traced disks are not mapped for Firecracker",
    }

    def vmm_argv(self, socket: str, workdir: Path, kernel_args: list[str],
                 devices: GuestDevices) -> list[str]:
        return [*self.restore_argv(socket), *self.spec.extra_args]

    def restore_argv(self, socket: str) -> list[str]:
        """Its API only. --level warning: Firecracker logs to its stdout, the guest's
        console, by default at info (a line per request): its warnings stay there, and the
        console's first byte is the guest's."""
        return [self.binary() or self.spec.binary, "--api-sock", socket, "--level", "warning",
                *([] if self.spec.seccomp else ["--no-seccomp"])]

    def configure(self, kernel_args: list[str], devices: GuestDevices):
        spec, image = self.spec, self.image
        boot = {"kernel_image_path": str(self.boot_kernel or image.kernel),
                "initrd_path": str(image.initramfs),
                "boot_args": " ".join([*KERNEL_ARGS, *spec.kernel_args, *kernel_args])}
        machine = {"vcpu_count": spec.vcpus, "mem_size_mib": spec.memory_mib,
                   "track_dirty_pages": spec.snapshot_type == "Diff"}
        disks = list(devices.args)
        nic = None if devices.nic is None else {
            "iface_id": "eth0", "host_dev_name": devices.nic.host_if, "guest_mac": devices.nic.mac}
        vsock_device = None if devices.vsock is None else {
            "guest_cid": vsock.GUEST_CID, "uds_path": str(devices.vsock)}

        def requests(api: Api) -> None:
            api.call("PUT", "/boot-source", boot)
            api.call("PUT", "/machine-config", machine)
            for index, path in enumerate(disks):
                api.call("PUT", f"/drives/disk{index}", {
                    "drive_id": f"disk{index}", "path_on_host": path,
                    "is_root_device": False, "is_read_only": False})
            if nic is not None:
                api.call("PUT", "/network-interfaces/eth0", nic)
            if vsock_device is not None:
                api.call("PUT", "/vsock", vsock_device)
            api.call("PUT", "/actions", {"action_type": "InstanceStart"})
        return requests

    def save_requests(self, api: Api, image: Path) -> dict[str, float]:
        steps: dict[str, float] = {}
        timed(steps, "pause", lambda: api.call("PATCH", "/vm", {"state": "Paused"}))
        timed(steps, "write", lambda: api.call("PUT", "/snapshot/create", {
            "snapshot_type": self.spec.snapshot_type, "snapshot_path": str(image / STATE),
            "mem_file_path": str(image / MEMORY)}, timeout_s=SLOW_CALL_S))
        return steps

    def restore_requests(self, api: Api, image: Path) -> dict[str, float]:
        steps: dict[str, float] = {}
        timed(steps, "load", lambda: api.call("PUT", "/snapshot/load", {
            "snapshot_path": str(image / STATE),
            "mem_backend": {"backend_type": "File", "backend_path": str(image / MEMORY)},
            "resume_vm": True}, timeout_s=SLOW_CALL_S))
        return steps
