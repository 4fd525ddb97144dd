"""Xen PV guests: the agent in a paravirtualised domU that `xl create` starts in a dom0.

QEMU boots Xen with a dom0 that serves runs (fullsystem/dom0.py, the nested kinds' L1
machine with Xen in place of KVM) and starts Xen's toolstack from the host's packages.
Each run writes a domU's config (the guest image's kernel and initramfs, the plan's
memory and vCPUs, the job on the kernel's command line) and runs `xl create -c` in dom0:
the domU's console (hvc0, through xenconsoled, `xl`'s stdout and dom0's control port) is
the run's output, so the agent's records cross both with their checksums. The domU powers
off when the agent is done, Xen destroys it (on_poweroff), and `xl` returns. One dom0
serves every run of a campaign, one at a time; a run's boot phases are the domU's,
counted from the moment guestbench asked dom0 to start `xl`.

Under TCG, as here, the figures are functional (§): they show that Xen's PV path runs
and where its time goes, not Xen's speed on hardware (docs/environments.md, "Xen PV").
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from guestbench import images
from guestbench.environments.base import Availability, Capability, GuestStartError
from guestbench.environments.fullsystem import dom0, guestdisk, nested
from guestbench.environments.fullsystem.base import (
    FUNCTIONAL, INSIDE_FOOTPRINT, AttachedDisk, FullSystem, FullSystemSpec,
    check_kernel_args)
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.kinds.xen import default_hypervisor, xen_version
from guestbench.host import which
from guestbench.images import vmlinux

CONFIG = "domu.cfg"
SCRIPT = "domu.sh"
# the domU's console is Xen's paravirtual one; a panic ends the domain (on_crash below)
KERNEL_ARGS = ("console=hvc0", "quiet", "panic=-1")
MAX_CMDLINE = 1024  # a PV guest's command line in Xen's start info, with its final NUL


class XenPvSpec(FullSystemSpec):
    """A PV domU of Xen, which QEMU boots (with a dom0 that runs Xen's toolstack)."""

    kind: Literal["xen-pv"] = "xen-pv"
    memory_mib: int = Field(512, ge=64, le=1 << 20, strict=True,
                            description="the domU's memory, MiB, where its image is unpacked "
                                        "(dom0 has its own, 768 MiB)")
    vcpus: int = Field(1, ge=1, le=8, strict=True, description="the domU's vCPUs")
    accel: Literal["tcg", "kvm"] = Field(
        "tcg", description="how QEMU runs Xen: tcg (emulated, as here) or kvm (a host whose "
                           "KVM can run Xen)")
    binary: str = Field("qemu-system-x86_64", description="the QEMU that boots Xen")
    hypervisor: str | None = Field(None, min_length=1, description=(
        "Xen's image (gzip or ELF); None = the newest /boot/xen-*.gz (apt-get install "
        "xen-hypervisor-4.17-amd64)"))
    xen_args: Annotated[tuple[str, ...], AfterValidator(check_kernel_args)] = Field(
        ("smap=0",), description="Xen's command line besides its console and dom0's memory "
                                 "(smap=0: TCG's SMAP and Xen's PV dom0 do not agree)")
    kernel_format: Literal["vmlinux", "bzImage"] = Field(
        "vmlinux", description="the domU's kernel as xl loads it: vmlinux (uncompressed: "
                               "dom0 would decompress a bzImage under emulation) or bzImage")
    tsc_mode: Literal["default", "native", "always_emulate"] = Field(
        "native", description="the domU's TSC (xl.cfg's tsc_mode): native lets the agent read "
                              "it as on the host")
    disk_mib: int = Field(1024, ge=64, le=1 << 22, strict=True,
                          description="size of the scratch disk, MiB (grown to fit a "
                                      "workload's files)")
    boot_timeout_s: float = Field(240.0, gt=0, le=3600, strict=True,
                                  description="limit from `xl create` to the domU's userspace")

    @model_validator(mode="after")
    def _in_dom0(self) -> "XenPvSpec":
        if self.inside != "none":
            raise ValueError("a PV domU always runs in its dom0, which QEMU boots (accel says "
                             "how): inside does not apply (fix: leave inside out)")
        return self


class XenPv(FullSystem):
    kind: ClassVar[str] = "xen-pv"
    no_vmm_threads = ("xen: the domain's vCPUs run in the Xen hypervisor, not in a process: "
                      "the host sees the threads of the QEMU machine that runs Xen")
    spec_model = XenPvSpec
    typical_start_s: ClassVar[float] = 20.0  # `xl create` to the agent under TCG, here
    typical_work_factor: ClassVar[float] = 10.0
    # verified here: the agent, its boot phases, its clock, its PV disk, xl save and
    # restore; not yet its network or upload channels
    capabilities = frozenset({
        Capability.AGENT, Capability.PROCESSES, Capability.TSC, Capability.GUEST_KERNEL,
        Capability.EXEC_CHILDREN, Capability.DROP_CACHES, Capability.FILESYSTEM,
        Capability.BLOCK_DEVICE, Capability.SNAPSHOT, Capability.HOST_PROCESSES})
    lacking = {
        capability: f"xen-pv: {capability.words} in a PV domU is not driven by guestbench yet"
        for capability in (Capability.TRACED_DISK, Capability.UPLOAD, Capability.NETWORK)}
    lacking[Capability.PORT_IO] = ("xen-pv: a PV domU has no I/O ports of its own (an in or "
                                   "out instruction faults there)")

    def __init__(self, spec: XenPvSpec) -> None:
        super().__init__(spec)
        self.elf: Path | None = None
        self.xen_version: str | None = None

    @property
    def inside(self) -> str | None:
        """Always in dom0, which QEMU runs under spec.accel (nested.py's machine)."""
        return self.spec.accel

    def _hypervisor(self) -> Path:
        return Path(self.spec.hypervisor) if self.spec.hypervisor else default_hypervisor()

    def vmm_probe(self) -> Availability:
        if which(self.spec.binary) is None:
            return Availability.no(f"{self.spec.binary} not found (apt-get install "
                                   "qemu-system-x86)")
        try:
            hypervisor = self._hypervisor()
            images.check_readable(hypervisor)
        except images.ImageError as error:
            return Availability.no(f"Xen: {error}")
        return Availability.yes(f"Xen {hypervisor} under QEMU {self.spec.accel.upper()}")

    def machine_probe(self) -> Availability:
        return dom0.probe()

    def kernel(self) -> Path:
        return images.default_kernel()  # Debian's: a PV domU's kernel as well as a host's

    def prepare(self, host) -> Availability:
        try:
            self.elf = vmlinux.extract(self._hypervisor())  # gunzip, cached
        except (images.ImageError, OSError) as error:
            return Availability.no(f"Xen's image: {error}")
        self.xen_version = xen_version(self.elf)
        return super().prepare(host)

    def image_modules(self) -> tuple[str, ...]:
        return ("xen-blkfront", *guestdisk.FILESYSTEM_MODULES) if self.needs_disk() else ()

    def attach_disk(self, index: int, path: Path, fmt: str) -> AttachedDisk:
        """Disk number index as a PV block device (xvda, xvdb...): a line of the domU's
        `disk` list, backed by the run's file, which dom0's block script puts on a loop
        device for the backend (xen-blkback)."""
        if fmt != "raw":
            raise GuestStartError(f"xen-pv: a {fmt} disk needs QEMU in dom0 (qdisk); only "
                                  "raw files are attached")
        vdev = f"xvd{chr(ord('a') + index)}"
        return AttachedDisk((f'"format=raw, vdev={vdev}, access=rw, target={path}"',),
                            f"/dev/{vdev}")

    def start_machine(self) -> Availability:
        """Boot (or share) the dom0 the domUs run in: its memory is its own, Xen's, and the
        domU's."""
        spec = self.spec
        shape = nested.Shape(spec.accel, spec.memory_mib + dom0.DOM0_MIB + dom0.XEN_OVERHEAD_MIB,
                             spec.vcpus, xen=str(self.elf), xen_args=tuple(spec.xen_args))
        try:
            self.machine = nested.acquire(shape)
        except nested.L1Error as error:
            return Availability.no(f"dom0: {error}")
        return Availability.yes(f"dom0 ready in {self.machine.boot_s:.1f} s, its toolstack "
                                f"in {self.machine.toolstack_s:.1f} s more")

    def footprint_counts(self) -> str | None:
        if self.machine is None:
            return None
        return INSIDE_FOOTPRINT.format(
            machine="Xen machine", mib=self.machine.shape.memory_mib,
            held="Xen, dom0 with its kernel, page cache and toolstack, and the domU")

    def ready(self, host) -> Availability:
        return Availability.yes(f"Xen {self.xen_version or '(version unknown)'}, a PV domU")

    def facts(self) -> dict[str, Any]:
        facts = super().facts()
        facts["vmm_version"] = f"Xen {self.xen_version or '(version unknown)'}"
        if self.spec.accel == "tcg":
            facts[FUNCTIONAL] = ("a Xen PV domU, Xen under QEMU's TCG: its figures show that "
                                 "it runs and where its time goes, not Xen's speed on hardware")
        return facts

    @staticmethod
    def domain_name(workdir: Path) -> str:
        """The domU's name in Xen: the run's folder's, unique per run."""
        return f"gb-{workdir.name}"

    def snapshots(self, job, folder: Path):
        """Saved and restored with xl (fullsystem/xen_snapshots.py)."""
        from guestbench.environments.fullsystem.xen_snapshots import (  # deferred: snapshots
            XenSnapshots)
        return XenSnapshots(self, job)

    def command_line(self, kernel_args: list[str], workdir: Path,
                     devices: GuestDevices) -> list[str]:
        """`xl create -c` of this run's domU, after destroying any domU a run before left
        (one cut short by its timeout leaves its domain running in Xen)."""
        spec, image = self.spec, self.image
        name = self.domain_name(workdir)
        extra = " ".join([*KERNEL_ARGS, *spec.kernel_args, *kernel_args])
        if len(extra) >= MAX_CMDLINE:  # Xen would cut it, and the agent's arguments with it
            raise GuestStartError(f"xen-pv: the domU's kernel command line is {len(extra)} "
                                  f"characters, and Xen keeps {MAX_CMDLINE - 1} (fix: fewer "
                                  "kernel_args, or shorter workload parameters)")
        config = [f'name = "{name}"', 'type = "pv"',
                  f'kernel = "{self.boot_kernel or image.kernel}"',
                  f'ramdisk = "{image.initramfs}"', f'extra = "{extra}"',
                  f"memory = {spec.memory_mib}", f"vcpus = {spec.vcpus}",
                  'on_poweroff = "destroy"', 'on_reboot = "destroy"', 'on_crash = "destroy"',
                  f'tsc_mode = "{spec.tsc_mode}"',
                  # the devices attach() made: each disk a quoted line of xl's disk list
                  *([f"disk = [ {', '.join(devices.args)} ]"] if devices.args else [])]
        (workdir / CONFIG).write_text("\n".join(config) + "\n")
        xl = shlex.quote(str((dom0.tools_folder() or Path("/usr/sbin")) / "xl"))
        (workdir / SCRIPT).write_text(
            f"for left in $({xl} list | awk 'NR > 2 {{ print $1 }}'); do\n"
            f"    {xl} destroy \"$left\" 2>/dev/null\n"
            "done\n"
            f"exec {xl} create -c {shlex.quote(str(workdir / CONFIG))} \"$@\"\n")
        return ["/bin/sh", str(workdir / SCRIPT), *spec.extra_args]
