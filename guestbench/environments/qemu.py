"""QEMU full-system guests, TCG or KVM: a command line from small typed pieces, QMP, placement."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field, model_validator

from guestbench import agent, images, proc
from guestbench.environments import channels, guestdisk, tracedisk
from guestbench.environments.devices import GuestDevices
from guestbench.environments.base import (
    Availability, Capability, Environment, Guest, GuestStartError, Job, JobNeeds,
    needs_beyond_agent)
from guestbench.environments.console import (
    ConsoleGuest, GuestKernelSpec, Names, guest_job, kernel_arguments)
from guestbench.host import Host, which
from guestbench.protocol import parse_line

# A KVM guest of this image reaches its agent in well under a second where KVM
# works; where /dev/kvm exists but guests hang (nested PVM hosts), we give up here.
KVM_PROBE_S = 8.0
QMP_CONNECT_S = 5.0
QMP_QUIT_S = 2.0
# reboot=t: microvm has no reset device, so only a triple-fault reboot ends QEMU after a panic
KERNEL_ARGS = ("console=ttyS0", "quiet", "panic=-1", "reboot=t")


class QemuSpec(GuestKernelSpec):
    """A qemu-system guest booting the guest image's kernel and initramfs."""

    kind: Literal["qemu"] = "qemu"
    accel: Literal["tcg", "kvm", "auto"] = Field(
        "tcg", description="tcg: emulation; kvm: hardware; auto: kvm where it boots, else tcg")
    machine: Literal["microvm", "pc", "q35"] = Field("microvm", description="QEMU machine type")
    cpu: str | None = Field(None, description="QEMU -cpu model; None = QEMU's default")
    vcpus: int = Field(1, ge=1, le=256, strict=True, description="virtual CPUs (-smp)")
    placement: Literal["none", "same", "disjoint"] = Field(
        "none", description="VMM main and I/O threads on vCPU 0's host CPU (same), on another "
                            "(disjoint), or left to the scheduler (none)")
    kernel: str | None = Field(None, min_length=1,
                               description="kernel image; None = the host's newest /boot/vmlinuz-*")
    modules: Names = Field((), description="kernel modules loaded at boot")
    binary: str = Field("qemu-system-x86_64", description="the QEMU program")
    disk_bus: Literal["virtio-blk", "virtio-scsi", "ide"] = Field(
        "virtio-blk", description="bus of the scratch disk (ide: machine pc or q35 only)")
    disk_cache: Literal["none", "writeback", "writethrough", "directsync", "unsafe"] = Field(
        "writeback", description="QEMU's host cache mode for the guest's disks (QEMU's default "
                                 "is writeback)")
    disk_format: Literal["raw", "qcow2"] = Field("raw", description="image format of the disks")
    disk_mib: int = Field(1024, ge=64, le=1 << 22, strict=True,
                          description="size of the scratch disk, MiB (grown to fit a "
                                      "workload's files)")

    @model_validator(mode="after")
    def _bus_exists_on_machine(self) -> "QemuSpec":
        guestdisk.bus(self.machine, self.disk_bus)  # ValueError names the fix
        return self


class Qemu(Environment):
    kind: ClassVar[str] = "qemu"
    capabilities = frozenset(Capability)
    spec_model = QemuSpec

    def __init__(self, spec: QemuSpec) -> None:
        super().__init__(spec)
        self.image: images.Image | None = None
        self.accel = spec.accel

    def probe(self, host: Host) -> Availability:
        spec = self.spec
        if which(spec.binary) is None:
            return Availability.no(f"{spec.binary} not found (apt-get install qemu-system-x86)")
        try:
            kernel = Path(spec.kernel) if spec.kernel else images.default_kernel()
            if not kernel.is_file():
                return Availability.no(f"kernel {kernel} not found (fix: kernel = an existing "
                                       "file, or apt-get install linux-image-amd64)")
            self.image = images.build(kernel, modules=self._modules(),
                                      tools=tuple(dict.fromkeys((*spec.tools, *self.workload_tools))))
        except images.ImageError as error:
            return Availability.no(f"guest image: {error}")
        if spec.placement == "disjoint" and len(os.sched_getaffinity(0)) < 2:
            return Availability.no("placement disjoint needs 2 host CPUs")
        accel_answer = self._resolve_accel()
        if not accel_answer.available:
            return accel_answer
        return Availability.yes(f"accel {self.accel}; image {self.image.id}; "
                                f"kernel {self.image.kernel_version}; {accel_answer.reason}")

    def _modules(self) -> tuple[str, ...]:
        """The plan's modules; the disk bus's drivers when a workload uses a disk; every
        upload channel's when one uploads."""
        modules = list(self.spec.modules)
        if self.workload_needs_disk:
            modules += [*guestdisk.bus(self.spec.machine, self.spec.disk_bus).modules,
                        *guestdisk.FILESYSTEM_MODULES]
        if self.workload_needs_channels:
            for channel in channels.QEMU_CHANNELS:
                modules += channels.qemu_modules(channel, self.spec.machine)
        return tuple(dict.fromkeys(modules))

    def refusal(self, needs: JobNeeds) -> str | None:
        if needs.traced_disk and tracedisk.unavailable_reason():
            return f"no traced disk here: {tracedisk.unavailable_reason()}"
        if needs.upload is not None:
            refused = channels.qemu_refusal(needs.upload.channel, self.spec.machine)
            if refused:
                return refused
        return needs_beyond_agent(needs, self.kind, frozenset(
            {"scratch", "drop_caches", "exec_children", "traced_disk", "upload"}))

    def _resolve_accel(self) -> Availability:
        if self.spec.accel == "tcg":
            return Availability.yes("emulation")
        kvm = _kvm_boots(self)
        if kvm.available:
            self.accel = "kvm"
            return kvm
        if self.spec.accel == "auto":
            self.accel = "tcg"
            return Availability.yes(f"auto chose tcg: {kvm.reason}")
        return kvm

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        scratch = Path(tempfile.mkdtemp(prefix="guestbench-qemu-"))
        devices = GuestDevices()
        try:
            job = self._devices(job, scratch, logdir, devices)
            job_args = kernel_arguments(job)
            qmp_socket = scratch / "qmp.sock"
            paused = self.spec.placement != "none"
            argv = self.command_line(self.accel, job_args, qmp_socket, paused, devices.args)
            return QemuGuest(argv, logdir, deadline_ns, scratch=[scratch],
                             finalizers=devices.finalizers, collected=devices.collected,
                             pass_fds=devices.pass_fds, boot_timeout_s=self.spec.boot_timeout_s, qmp_socket=qmp_socket,
                             placement=self.spec.placement)
        except BaseException:  # no guest owns the scratch folder and devices yet
            devices.finish()
            shutil.rmtree(scratch, ignore_errors=True)
            raise

    def _devices(self, job: Job, scratch: Path, logdir: Path, devices: "GuestDevices") -> Job:
        """Attach what the job needs (scratch disk, traced disk, upload channel) to devices;
        returns the job told where they are in the guest."""
        needs, spec = job.needs, self.spec
        bus = guestdisk.bus(spec.machine, spec.disk_bus)
        mounts: list[str] = []
        options: list[str] = []
        index = 0
        if needs.scratch or needs.scratch_files is not None:
            image = guestdisk.make_scratch_disk(scratch, needs, spec.disk_mib, spec.disk_format)
            devices.args += guestdisk.qemu_disk_args(bus, index, image, spec.disk_format,
                                                     spec.disk_cache)
            mounts.append(f"gb.mount=ext4:{guestdisk.guest_device(bus, index)}:"
                          f"{guestdisk.GUEST_SCRATCH}:")
            index += 1
        if needs.traced_disk:
            disk = devices.traced_disk(scratch, logdir)
            # the loop device is the raw disk; the cache mode under test is the spec's
            devices.args += guestdisk.qemu_disk_args(bus, index, Path(disk.device), "raw",
                                                     spec.disk_cache)
            options += ["--device", guestdisk.guest_device(bus, index)]
        if needs.upload is not None:
            setup = devices.channel(lambda: channels.qemu_channel(
                needs.upload.channel, needs.upload.source, spec.machine, scratch))
            devices.args += setup.vmm_args
            mounts += setup.kernel_args
            options += channels.agent_options(setup, guestdisk.GUEST_SCRATCH)
        return guest_job(job, needs, mounts=mounts, options=options)

    def command_line(self, accel: str, kernel_args: list[str], qmp_socket: Path | None,
                     paused: bool, device_args: list[str] = ()) -> list[str]:
        spec, image = self.spec, self.image
        if accel == "tcg":
            kernel_args = [*_tcg_kernel_args(), *kernel_args]
        return [
            spec.binary, "-M", spec.machine, "-accel", accel,
            *(["-cpu", spec.cpu] if spec.cpu else []),
            "-smp", str(spec.vcpus), "-m", str(spec.memory_mib),
            "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
            "-no-reboot",
            "-kernel", str(image.kernel), "-initrd", str(image.initramfs),
            "-append", " ".join([*KERNEL_ARGS, *spec.kernel_args, *kernel_args]),
            *(["-qmp", f"unix:{qmp_socket},server=on,wait=off"] if qmp_socket else []),
            *(["-S"] if paused else []),
            *device_args,
            *spec.extra_args,
        ]


_tsc_khz: list[int] = []


def _tcg_kernel_args() -> list[str]:
    """Under TCG the guest's TSC ticks at the host's rate; saying so skips the guest's PIT
    calibration, which fails on a loaded host and then can hang the boot before /init
    (3 guests on 2 CPUs: 5 of 12 boots reached the agent without it, 12 of 12 with it)."""
    if not _tsc_khz:
        _tsc_khz.append(host_tsc_khz() or 0)
    # tsc=reliable: with 2 or more vCPUs under TCG the guest otherwise finds its TSCs
    # unsynchronised and falls back to the jiffies clock, which ran 10-20% slow here (a
    # 2-vCPU build measured 140 s where the host saw 156 s; with it, they agree to 0.01 s)
    return [*([f"tsc_early_khz={_tsc_khz[0]}"] if _tsc_khz[0] else []), "tsc=reliable"]


def host_tsc_khz() -> int | None:
    """The host's TSC rate, measured by the agent: TSC ticks per op over ns per op."""
    try:
        output = proc.run([str(agent.path()), "--min-time", "0.02", "clock_gettime"],
                          timeout_s=10).stdout
    except (agent.AgentMissing, proc.ProcessError, proc.DeadlineExceeded):
        return None
    values = {}
    for text in output.splitlines():
        record = parse_line(text.encode())
        if record is not None and record.type == "sample":
            values[record.body["metric"]] = record.body["value"]
    if not values.get("time_per_op") or not values.get("tsc_per_op"):
        return None
    return round(values["tsc_per_op"] / values["time_per_op"] * 1e6)


_kvm_answers: dict[tuple, Availability] = {}


def _kvm_boots(environment: Qemu) -> Availability:
    """Whether a guest of this image really boots under KVM here, asked once per process."""
    key = (environment.spec.binary, environment.image.id, environment.spec.machine)
    if key not in _kvm_answers:
        _kvm_answers[key] = _try_kvm(environment)
    return _kvm_answers[key]


def _try_kvm(environment: Qemu) -> Availability:
    if not os.path.exists("/dev/kvm"):
        return Availability.no("no /dev/kvm (not a KVM host, or the kvm module is not loaded)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return Availability.no("/dev/kvm is not readable and writable (fix: join group kvm)")
    # /dev/kvm can exist where no guest boots (a nested PVM hypervisor): only a boot tells.
    argv = environment.command_line("kvm", ["gb.args=--version"], None, paused=False)
    try:
        result = proc.run(argv, timeout_s=KVM_PROBE_S)
    except proc.DeadlineExceeded:
        return Availability.no(f"/dev/kvm exists but a test guest did not boot under KVM within "
                               f"{KVM_PROBE_S:g} s (nested or paravirtual host?)")
    except proc.ProcessError as error:
        return Availability.no(str(error))
    if "agent exited with status 0" in result.stdout:
        return Availability.yes(f"KVM test guest booted in {result.seconds:.2f} s")
    said = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
    return Availability.no(f"a test guest failed under KVM: {said[0][:200]}")


@dataclass
class QemuGuest(ConsoleGuest):
    """A QEMU process; with a placement it starts paused, is pinned through QMP, then runs."""

    qmp_socket: Path | None = None
    placement: str = "none"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.placement == "none":
            return
        try:
            self._wait_for_qmp_socket()
            vcpus = {cpu["cpu-index"]: cpu["thread-id"]
                     for cpu in qmp_execute(self.qmp_socket, "query-cpus-fast")}
            applied = pin_threads(self._process.pid, vcpus, self.placement)
            qmp_execute(self.qmp_socket, "cont")
        except (OSError, GuestStartError) as error:
            said = self.diagnostics()
            self.stop()
            raise GuestStartError(f"placement {self.placement}: {error}"
                                  + (f" ({said})" if said else "")) from None
        except BaseException:
            self.stop()
            raise
        (self.logdir / "placement.json").write_text(json.dumps(applied, indent=1) + "\n")

    def _wait_for_qmp_socket(self) -> None:
        deadline = time.monotonic() + QMP_CONNECT_S
        while not self.qmp_socket.exists():
            if self._process.poll() is not None:
                raise GuestStartError(f"QEMU exited with status {self._process.returncode} "
                                      "before its QMP socket appeared")
            if time.monotonic() > deadline:
                raise GuestStartError(f"QEMU's QMP socket did not appear within {QMP_CONNECT_S:g} s")
            time.sleep(0.005)

    def _teardown(self):
        if self._process.poll() is None and self.qmp_socket and self.qmp_socket.exists():
            try:  # a clean quit first; the group kill below covers a QEMU that does not answer
                qmp_execute(self.qmp_socket, "quit", timeout_s=QMP_QUIT_S)
                self._process.wait(QMP_QUIT_S)
            except Exception:  # noqa: BLE001 - whatever the QMP client raises, the kill follows
                pass
        return super()._teardown()


def qmp_execute(socket_path: Path, command: str, timeout_s: float = QMP_CONNECT_S):
    """One QMP command in its own session (qemu.qmp's QMPClient), bounded as a whole.

    GuestStartError for any failure: QEMU gone, refusing, or not answering in time.
    """
    import asyncio

    from qemu.qmp import QMPClient, QMPError

    async def session():
        client = QMPClient("guestbench")
        await client.connect(str(socket_path))
        try:
            return await client.execute(command)
        finally:
            await client.disconnect()

    try:
        return asyncio.run(asyncio.wait_for(session(), timeout_s))
    except asyncio.TimeoutError:
        raise GuestStartError(f"QMP {command}: no answer within {timeout_s:g} s") from None
    except (QMPError, OSError, EOFError) as error:  # EOF: QEMU closed the socket (quit)
        raise GuestStartError(f"QMP {command}: {error or type(error).__name__}") from None


def pin_threads(qemu_pid: int, vcpu_threads: dict[int, int], placement: str) -> dict:
    """Pin vCPU i to host CPU i (mod n) and every other QEMU thread per the placement."""
    cpus = sorted(os.sched_getaffinity(qemu_pid))
    if placement == "disjoint" and len(cpus) < 2:
        raise GuestStartError("placement disjoint needs 2 host CPUs")
    vcpu_cpu = {index: cpus[index % len(cpus)] for index in vcpu_threads}
    others_cpu = vcpu_cpu[0] if placement == "same" else next(c for c in cpus if c != vcpu_cpu[0])
    others = [int(tid) for tid in os.listdir(f"/proc/{qemu_pid}/task")
              if int(tid) not in vcpu_threads.values()]
    for index, tid in vcpu_threads.items():
        os.sched_setaffinity(tid, {vcpu_cpu[index]})
    for tid in others:  # the main loop, I/O and RCU threads; later threads inherit the mask
        os.sched_setaffinity(tid, {others_cpu})
    return {"placement": placement,
            "vcpu_threads": {str(index): {"thread": tid, "host_cpu": vcpu_cpu[index]}
                             for index, tid in vcpu_threads.items()},
            "other_threads": {"threads": others, "host_cpu": others_cpu}}
