"""Xen with the agent in dom0: QEMU boots the Xen hypervisor (multiboot) with the guest
image's kernel as a PV dom0 and its initramfs, so the agent runs on Xen's paravirtual
interface. Under TCG, as here, it proves Xen's path and shows where its time goes; its
figures are not Xen's speed on hardware (docs/environments.md, "Xen").

What it took (measured with Debian 12's Xen 4.17 and QEMU 7.2): the hypervisor
decompressed (QEMU's multiboot loader reads no gzip); machine pc (microvm's firmware
triple-faults at once, or Xen finds no platform timer); -cpu max with Xen's smap=0 (else
dom0 dies with a #PF in create_bounce_frame); Xen's own console on the second serial port
(a file kept with the run's logs), so that dom0 drives ttyS0 itself and its lines, the
agent's records, arrive whole; gb.shutdown=reboot, which ends QEMU 40 ms after the agent
where a power-off waits up to a second for Xen's ACPI S5.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, model_validator

from guestbench import images
from guestbench.environments.base import Availability, Capability, Job
from guestbench.environments.fullsystem.base import FUNCTIONAL, check_kernel_args
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.kinds.qemu import KERNEL_ARGS, Qemu, QemuSpec, tcg_kernel_args
from guestbench.images import vmlinux

HYPERVISORS = "/boot/xen-*.gz"
XEN_LOG = "xen-console.log"
# the package's version string inside the binary (the banner's "Xen version %d.%d%s" is
# filled in at boot): "4.17.7+13-g2445b30a44-0+deb12u1" in Debian's
VERSION = re.compile(rb"\b([1-9]\.[0-9]{1,2}\.[0-9]{1,3})(\+[0-9A-Za-z.+~-]*|-[0-9A-Za-z.+~-]*)?\x00")
XEN_OVERHEAD_MIB = 256  # the machine's memory beyond dom0's: Xen's own, its heap


class XenSpec(QemuSpec):
    """Xen booted by QEMU, the agent in its dom0."""

    kind: Literal["xen"] = "xen"
    machine: Literal["pc", "q35"] = Field("pc", description="QEMU machine type (microvm's "
                                                            "firmware cannot start Xen)")
    cpu: str | None = Field("max", description="QEMU -cpu model (TCG: max, with smap=0)")
    hypervisor: str | None = Field(None, min_length=1, description=(
        "Xen's image (gzip or ELF); None = the newest /boot/xen-*.gz (apt-get install "
        "xen-hypervisor-4.17-amd64)"))
    xen_args: Annotated[tuple[str, ...], AfterValidator(check_kernel_args)] = Field(("smap=0",), description=(
        "Xen's command line besides its console and dom0_mem (smap=0: TCG's SMAP and Xen's "
        "PV dom0 do not agree)"))

    @model_validator(mode="after")
    def _runs_on_the_host(self) -> "XenSpec":
        if self.inside != "none":
            raise ValueError("xen runs under QEMU already; inside a VM it would be emulation "
                             "inside emulation (fix: inside = \"none\")")
        return self


def default_hypervisor() -> Path:
    found = sorted(Path("/").glob(HYPERVISORS.lstrip("/")))
    if not found:
        raise images.ImageError(f"no Xen hypervisor at {HYPERVISORS} (apt-get install "
                                "xen-hypervisor-4.17-amd64, or set hypervisor)")
    return found[-1]


def xen_version(elf: Path) -> str | None:
    """Xen's version from its binary: '4.17.7 (4.17.7+13-g2445b30a44-0+deb12u1)'."""
    try:
        match = VERSION.search(elf.read_bytes())
    except OSError:
        return None
    if match is None:
        return None
    upstream, suffix = match.group(1).decode(), (match.group(2) or b"").decode()
    return f"{upstream} ({upstream}{suffix})" if suffix else upstream


def multiboot_arg(text: str) -> str:
    """A word of -initrd's list, where a comma separates modules: commas doubled."""
    return text.replace(",", ",,")


class Xen(Qemu):
    kind: ClassVar[str] = "xen"
    no_vmm_threads = ("xen: the domain's vCPUs run in the Xen hypervisor, not in a process: "
                      "the host sees the threads of the QEMU machine that runs Xen")
    spec_model = XenSpec
    # verified here: the agent in dom0, its boot phases, its clock; dom0 owns the emulated
    # disk and NIC, which no run here has tried yet
    capabilities = frozenset({
        Capability.AGENT, Capability.PROCESSES, Capability.TSC, Capability.GUEST_KERNEL,
        Capability.EXEC_CHILDREN, Capability.DROP_CACHES, Capability.HOST_PROCESSES})
    lacking = {
        capability: f"xen: {capability.words} in dom0 has not been verified here yet"
        for capability in (Capability.FILESYSTEM, Capability.BLOCK_DEVICE,
                           Capability.TRACED_DISK, Capability.UPLOAD, Capability.NETWORK,
                           Capability.PORT_IO)}
    lacking[Capability.SNAPSHOT] = ("xen: dom0 cannot be saved (xl save and restore are for "
                                    "domUs: the xen-pv kind)")

    def __init__(self, spec: XenSpec) -> None:
        super().__init__(spec)
        self.elf: Path | None = None
        self.xen_version: str | None = None

    def vmm_probe(self) -> Availability:
        answer = super().vmm_probe()
        if not answer.available:
            return answer
        try:
            hypervisor = Path(self.spec.hypervisor) if self.spec.hypervisor else default_hypervisor()
            images.check_readable(hypervisor)
        except images.ImageError as error:
            return Availability.no(f"Xen: {error}")
        return Availability.yes(f"Xen {hypervisor} under QEMU {self.spec.accel.upper()}")

    def prepare(self, host) -> Availability:
        try:
            hypervisor = Path(self.spec.hypervisor) if self.spec.hypervisor else default_hypervisor()
            self.elf = vmlinux.extract(hypervisor)  # gunzip, cached; an ELF is used as it is
        except (images.ImageError, OSError) as error:
            return Availability.no(f"Xen's image: {error}")
        self.xen_version = xen_version(self.elf)
        return super().prepare(host)

    def ready(self, host) -> Availability:
        if self.spec.accel == "tcg":
            return Availability.yes(f"Xen {self.xen_version or '(version unknown)'} under "
                                    "emulation")
        return super().ready(host)

    def facts(self) -> dict[str, Any]:
        facts = super().facts()
        qemu = facts.pop("vmm_version", None)
        facts["vmm_version"] = f"Xen {self.xen_version or '(version unknown)'}"
        if qemu:
            facts["machine_vmm"] = qemu
        if self.accel == "tcg":
            facts[FUNCTIONAL] = ("Xen under QEMU's TCG: its figures show that it runs and "
                                 "where its time goes, not Xen's speed on hardware")
        return facts

    def image_modules(self) -> tuple[str, ...]:
        return tuple(self.spec.modules)

    def attach(self, job: Job, workdir: Path, logdir: Path, devices: GuestDevices) -> Job:
        xen_log = workdir / XEN_LOG

        def keep_xen_log() -> None:
            if xen_log.exists():
                shutil.copyfile(xen_log, logdir / XEN_LOG)
        devices.finalizers.append(keep_xen_log)
        return super().attach(job, workdir, logdir, devices)

    def command_line(self, kernel_args: list[str], workdir: Path | None,
                     devices: GuestDevices = GuestDevices(), accel: str | None = None,
                     paused: bool | None = None) -> list[str]:
        spec, image, accel = self.spec, self.image, accel or self.accel
        dom0_args = [*KERNEL_ARGS, *spec.kernel_args, "gb.shutdown=reboot", *kernel_args]
        if accel == "tcg":
            dom0_args = [*tcg_kernel_args(), *dom0_args]
        xen_log = workdir / XEN_LOG if workdir else Path("/dev/null")
        xen_args = ["console=com2", "com2=115200,8n1",
                    f"dom0_mem={spec.memory_mib}M,max:{spec.memory_mib}M", *spec.xen_args]
        dom0 = multiboot_arg(" ".join([str(self.boot_kernel or image.kernel), *dom0_args]))
        return [
            spec.binary, "-M", spec.machine, "-accel", accel,
            *(["-cpu", spec.cpu] if spec.cpu else []),
            "-smp", str(spec.vcpus), "-m", str(spec.memory_mib + XEN_OVERHEAD_MIB),
            "-nodefaults", "-no-user-config", "-display", "none",
            "-serial", "stdio", "-serial", f"file:{xen_log}", "-no-reboot",
            "-kernel", str(self.elf), "-append", " ".join(xen_args),
            "-initrd", f"{dom0},{multiboot_arg(str(image.initramfs))}",
            *devices.args, *spec.extra_args,
        ]

    def guest_options(self, workdir: Path) -> dict:
        return {"qmp_socket": None, "placement": self.spec.placement}
