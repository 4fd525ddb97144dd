"""User-Mode Linux guests: linux.uml booting the guest image's initramfs, console on stdout."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from guestbench import images
from guestbench.environments import channels, guestdisk, tracedisk
from guestbench.environments.devices import GuestDevices
from guestbench.environments.base import (
    Availability, Capability, Environment, Guest, Job, JobNeeds, needs_beyond_agent)
from guestbench.environments.console import (
    ConsoleGuest, GuestKernelSpec, guest_job, kernel_arguments)
from guestbench.host import Host, which


MAP_COUNT_FILE = Path("/proc/sys/vm/max_map_count")
PAGE_MIB = 4096 / 2**20


def _map_count_warning() -> str:
    """UML maps guest memory page by page on the host: vm.max_map_count bounds what it can touch."""
    try:
        limit = int(MAP_COUNT_FILE.read_text())
    except (OSError, ValueError):
        return ""
    usable_mib = int(limit * PAGE_MIB)
    if usable_mib >= 1024:
        return ""
    return (f"; note: vm.max_map_count={limit} lets a UML guest touch only ~{usable_mib} MiB "
            "(STREAM's default arrays need ~400: sysctl -w vm.max_map_count=262144)")


class UmlSpec(GuestKernelSpec):
    """A User-Mode Linux kernel run as a host process."""

    kind: Literal["uml"] = "uml"
    binary: str = Field("linux.uml", description="the UML kernel program")
    disk_cache: Literal["writeback", "sync"] = Field(
        "writeback", description="ubd's host I/O: writeback (ubd0=, the host's page cache) or "
                                 "sync (ubd0s=, the image opened O_SYNC: every write synchronous)")
    disk_mib: int = Field(1024, ge=64, le=1 << 22, strict=True,
                          description="size of the scratch disk, MiB (grown to fit a "
                                      "workload's files)")


UML_DISKS = "/dev/ubd"  # ubd0 is /dev/ubda, ubd1 /dev/ubdb


class Uml(Environment):
    kind: ClassVar[str] = "uml"
    # a UML guest's instructions run as a host process: an in/out instruction faults there
    capabilities = frozenset(Capability) - {Capability.PORT_IO}
    spec_model = UmlSpec

    def __init__(self, spec: UmlSpec) -> None:
        super().__init__(spec)
        self.image: images.Image | None = None

    def probe(self, host: Host) -> Availability:
        program = which(self.spec.binary)
        if program is None:
            return Availability.no(f"{self.spec.binary} not found (apt-get install user-mode-linux)")
        try:
            self.image = images.build(
                Path(program), tools=tuple(dict.fromkeys((*self.spec.tools, *self.workload_tools))))
        except images.ImageError as error:
            return Availability.no(f"guest image: {error}")
        return Availability.yes(f"{program}; image {self.image.id}{_map_count_warning()}")

    def refusal(self, needs: JobNeeds) -> str | None:
        if needs.traced_disk and tracedisk.unavailable_reason():
            return f"no traced disk here: {tracedisk.unavailable_reason()}"
        if needs.upload is not None:
            refused = channels.uml_refusal(needs.upload.channel)
            if refused:
                return refused
        return needs_beyond_agent(needs, self.kind, frozenset(
            {"scratch", "drop_caches", "exec_children", "traced_disk", "upload"}))

    def _devices(self, job: Job, scratch: Path, logdir: Path, devices: GuestDevices) -> Job:
        """ubd0 the scratch disk, the next ubd the traced disk (a loop device), and the
        upload channel; returns the job told where they are in the guest."""
        needs = job.needs
        flag = "s" if self.spec.disk_cache == "sync" else ""
        mounts: list[str] = []
        options: list[str] = []
        index = 0
        if needs.scratch or needs.scratch_files is not None:
            image = guestdisk.make_scratch_disk(scratch, needs, self.spec.disk_mib)
            devices.args.append(f"ubd{index}{flag}={image}")
            mounts.append(f"gb.mount=ext4:{UML_DISKS}{'ab'[index]}:{guestdisk.GUEST_SCRATCH}:")
            index += 1
        if needs.traced_disk:
            disk = devices.traced_disk(scratch, logdir)
            devices.args.append(f"ubd{index}{flag}={disk.device}")
            options += ["--device", f"{UML_DISKS}{'ab'[index]}"]
        if needs.upload is not None:
            setup = devices.channel(lambda: channels.uml_channel(
                needs.upload.channel, needs.upload.source, scratch))
            devices.args += setup.vmm_args
            mounts += setup.kernel_args
            options += channels.agent_options(setup, guestdisk.GUEST_SCRATCH)
        return guest_job(job, needs, mounts=mounts, options=options)

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        # UML keeps its pid file and management socket under uml_dir/umid: a scratch folder
        scratch = Path(tempfile.mkdtemp(prefix="guestbench-uml-"))
        devices = GuestDevices()
        try:
            job = self._devices(job, scratch, logdir, devices)
            job_args = kernel_arguments(job)
        except BaseException:
            devices.finish()
            shutil.rmtree(scratch, ignore_errors=True)
            raise
        disk_args = devices.args
        argv = [
            str(self.image.kernel), f"mem={self.spec.memory_mib}M",
            f"initrd={self.image.initramfs}", f"umid=gb-{uuid.uuid4().hex[:8]}",
            f"uml_dir={scratch}", *disk_args, "con=null", "con0=fd:0,fd:1", "console=tty0",
            "quiet", "panic=-1", *self.spec.kernel_args, *job_args, *self.spec.extra_args,
        ]
        try:
            return ConsoleGuest(argv, logdir, deadline_ns, scratch=[scratch],
                                finalizers=devices.finalizers, collected=devices.collected,
                                pass_fds=devices.pass_fds, boot_timeout_s=self.spec.boot_timeout_s)
        except BaseException:  # no guest owns the scratch folder yet
            devices.finish()
            shutil.rmtree(scratch, ignore_errors=True)
            raise
