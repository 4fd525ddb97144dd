"""QEMU full-system guests, TCG or KVM: its command line from small typed pieces, its disk
buses and upload channels, QMP, placement."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from guestbench import agent, images
from guestbench.environments.fullsystem import channels, guestdisk, kvm, vsock
from guestbench.environments.base import Availability, Capability, GuestStartError
from guestbench.environments.fullsystem.console import ConsoleGuest
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.fullsystem.base import AttachedDisk, FullSystem, FullSystemSpec, Names
from guestbench.environments.fullsystem.placement import Pinned, pin_threads
from guestbench.environments.fullsystem.qmp import QMP_CONNECT_S, QMP_QUIT_S, qmp_execute
from guestbench.host import Host, which
from guestbench.network.paths import NetPath

# reboot=t: microvm has no reset device, so only a triple-fault reboot ends QEMU after a panic
KERNEL_ARGS = ("console=ttyS0", "quiet", "panic=-1", "reboot=t")
CHANNELS = ("serial", "virtio-serial", "9p")


@dataclass(frozen=True)
class Bus:
    """How a disk bus is attached on a machine type, and the guest's name for its disks."""

    device: str              # QEMU -device model
    modules: tuple[str, ...]  # guest kernel modules (dependencies follow from modprobe)
    guest_prefix: str        # /dev/vda, /dev/sda, ...
    controller: str | None = None  # a -device that must exist once (SCSI host adapter)


# Per machine type: microvm has only virtio-mmio transports and no IDE.
BUSES: dict[tuple[str, str], Bus] = {
    ("microvm", "virtio-blk"): Bus("virtio-blk-device", ("virtio_mmio", "virtio_blk"), "/dev/vd"),
    ("microvm", "virtio-scsi"): Bus("scsi-hd", ("virtio_mmio", "virtio_scsi", "sd_mod"), "/dev/sd",
                                    "virtio-scsi-device,id=scsi0"),
    ("pc", "virtio-blk"): Bus("virtio-blk-pci", ("virtio_pci", "virtio_blk"), "/dev/vd"),
    ("pc", "virtio-scsi"): Bus("scsi-hd", ("virtio_pci", "virtio_scsi", "sd_mod"), "/dev/sd",
                               "virtio-scsi-pci,id=scsi0"),
    ("pc", "ide"): Bus("ide-hd", ("ata_piix", "sd_mod"), "/dev/sd"),
    ("q35", "virtio-blk"): Bus("virtio-blk-pci", ("virtio_pci", "virtio_blk"), "/dev/vd"),
    ("q35", "virtio-scsi"): Bus("scsi-hd", ("virtio_pci", "virtio_scsi", "sd_mod"), "/dev/sd",
                                "virtio-scsi-pci,id=scsi0"),
    ("q35", "ide"): Bus("ide-hd", ("ahci", "sd_mod"), "/dev/sd"),
}
FILESYSTEM_MODULES = guestdisk.FILESYSTEM_MODULES


def bus(machine: str, name: str) -> Bus:
    try:
        return BUSES[(machine, name)]
    except KeyError:
        have = sorted(b for m, b in BUSES if m == machine)
        raise ValueError(f"disk_bus {name} does not exist on machine {machine} (it has: "
                         f"{', '.join(have)}; ide needs machine = \"pc\" or \"q35\")") from None


def disk_args(spec_bus: Bus, index: int, path: Path, fmt: str, cache: str) -> list[str]:
    """-drive and -device for disk number index (0 = the scratch disk) on the bus."""
    drive = f"if=none,id=disk{index},file={path},format={fmt},cache={cache}"
    device = f"{spec_bus.device},drive=disk{index}"
    if spec_bus.device == "scsi-hd":
        device += f",bus=scsi0.0,channel=0,scsi-id={index},lun=0"
    elif spec_bus.device == "ide-hd":
        device += f",bus=ide.{index}"
    args = ["-drive", drive, "-device", device]
    if spec_bus.controller and index == 0:
        args = ["-device", spec_bus.controller, *args]
    return args


def guest_device(spec_bus: Bus, index: int) -> str:
    return f"{spec_bus.guest_prefix}{'abcdefgh'[index]}"


VHOST_NET = Path("/dev/vhost-net")
# the NIC's drivers: virtio-net on PCI (pc, q35) or on virtio-mmio (microvm)
NET_MODULES = {False: ("virtio_pci", "virtio_net"), True: ("virtio_mmio", "virtio_net")}
VHOST_VSOCK = "/dev/vhost-vsock"


class QemuSpec(FullSystemSpec):
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
    kernel_format: Literal["bzImage", "vmlinux"] = Field(
        "bzImage", description="vmlinux: boot the kernel's uncompressed ELF (extracted once, "
                               "cached), through PVH, without decompressing it in the guest: "
                               "3-4 s less a boot under TCG here")
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
    net: Literal["user", "tap"] = Field(
        "user", description="the NIC's backend in network workloads: user (QEMU's own TCP/IP "
                            "stack, slirp) or tap (a tap device on the host)")
    vhost: bool = Field(False, strict=True, description=(
        "net = \"tap\": the host kernel's vhost-net moves the packets instead of QEMU"))

    @model_validator(mode="after")
    def _bus_exists_on_machine(self) -> "QemuSpec":
        bus(self.machine, self.disk_bus)  # ValueError names the fix
        if self.vhost and self.net != "tap":
            raise ValueError("vhost needs net = \"tap\" (QEMU's user network has no vhost) "
                             "(fix: net = \"tap\", or remove vhost)")
        if self.inside != "none" and self.placement != "none":
            raise ValueError(f"placement {self.placement} pins QEMU's threads to host CPUs, "
                             "which a VMM inside a VM does not have (fix: placement = "
                             "\"none\", or inside = \"none\")")
        return self


@dataclass
class QemuGuest(Pinned, ConsoleGuest):
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
        self.keep_placement(applied)

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


class Qemu(FullSystem):
    kind: ClassVar[str] = "qemu"
    spec_model = QemuSpec
    guest_class = QemuGuest

    def __init__(self, spec: QemuSpec) -> None:
        super().__init__(spec)
        self.accel = spec.accel
        self.disk_format = spec.disk_format
        self.bus = bus(spec.machine, spec.disk_bus)

    def typical_cost(self) -> tuple[float, float]:
        if self.spec.accel == "kvm" and self.spec.inside == "none":
            return 1.0, 1.05  # a KVM guest boots in about a second and runs at native speed
        return super().typical_cost()

    def facts(self) -> dict[str, Any]:
        """The accelerator the guests ran under (accel auto resolves to kvm or tcg)."""
        return {**super().facts(), "accel": self.accel}

    def vmm_probe(self) -> Availability:
        spec = self.spec
        if which(spec.binary) is None:
            return Availability.no(f"{spec.binary} not found (apt-get install qemu-system-x86)")
        if spec.accel == "kvm" and spec.inside != "none":
            return Availability.yes("accel kvm in the L1 machine")
        if spec.accel == "kvm":
            found = kvm.device()
            return found if not found.available else Availability.yes(
                "/dev/kvm; a test boot when a campaign prepares it tells whether guests boot")
        return Availability.yes(f"accel {spec.accel}")

    def kernel(self) -> Path:
        return Path(self.spec.kernel) if self.spec.kernel else images.default_kernel()

    def version_argv(self) -> list[str]:
        return [self.spec.binary, "--version"]

    def image_modules(self) -> tuple[str, ...]:
        """The plan's modules; the disk bus's drivers when a workload uses a disk; every
        upload channel's when one uploads."""
        modules = list(self.spec.modules)
        if self.needs_disk():
            modules += [*self.bus.modules, *FILESYSTEM_MODULES]
        if self.needs_channels():
            for channel in CHANNELS:
                modules += channel_modules(channel, self.spec.machine)
        if Capability.NETWORK in self.plan_needs.capabilities:
            modules += [*NET_MODULES[self.spec.machine == "microvm"]]
        if self.needs_vsock():
            bus = "virtio_mmio" if self.spec.machine == "microvm" else "virtio_pci"
            modules += [bus, *vsock.MODULES]
        return tuple(dict.fromkeys(modules))

    def network_path(self) -> str:
        return self.spec.net

    def network_refusal(self) -> str | None:
        refused = super().network_refusal()
        if refused:
            return refused
        if self.spec.vhost and not VHOST_NET.exists():
            return (f"vhost = true needs {VHOST_NET}, which this host lacks (its kernel has "
                    "no vhost-net, or the vhost_net module is not loaded: modprobe vhost_net)")
        return None

    def attach_network(self, path: NetPath) -> list[str]:
        if path.kind == "user":
            netdev = "user,id=gbnet"
        else:
            netdev = (f"tap,id=gbnet,ifname={path.host_if},script=no,downscript=no,"
                      f"vhost={'on' if self.spec.vhost else 'off'}")
        nic = "virtio-net-device" if self.spec.machine == "microvm" else "virtio-net-pci"
        return ["-netdev", netdev, "-device", f"{nic},netdev=gbnet,mac={path.mac}"]

    def attach_vsock(self, workdir: Path, devices: GuestDevices, agent: Path, port: int) -> None:
        """vhost-vsock: the host kernel's vsock, where the peer listens on the port (inside
        a VM: the L1 machine's kernel, which loads vhost_vsock)."""
        cid = vsock.GUEST_CID if self.inside else vsock.host_cid()
        device = "vhost-vsock-device" if self.spec.machine == "microvm" else "vhost-vsock-pci"
        devices.args += ["-device", f"{device},guest-cid={cid}"]
        devices.beside.append(vsock.vsock_peer(agent, port))

    def vsock_refusal(self) -> str | None:
        if not self.inside and not Path(VHOST_VSOCK).exists():
            return (f"qemu: no {VHOST_VSOCK} on this host, which vhost-vsock needs (fix: "
                    "modprobe vhost_vsock, as root)")
        return None

    def attach_disk(self, index: int, path: Path, fmt: str) -> AttachedDisk:
        return AttachedDisk(tuple(disk_args(self.bus, index, path, fmt, self.spec.disk_cache)),
                            guest_device(self.bus, index))

    def upload_channels(self) -> tuple[str, ...]:
        return CHANNELS

    def channel_refusal(self, channel: str) -> str:
        if channel == "hostfs":
            return ("channel hostfs is User-Mode Linux's; under QEMU use 9p (the same idea: a "
                    "host folder mounted in the guest)")
        return f"unknown upload channel {channel!r} (QEMU has {', '.join(CHANNELS)})"

    def channel(self, name: str, source: Path, workdir: Path) -> channels.ChannelSetup:
        if name not in CHANNELS:
            raise channels.ChannelError(self.channel_refusal(name))
        return qemu_channel(name, source, self.spec.machine, workdir)

    def ready(self, host: Host) -> Availability:
        if self.spec.accel == "tcg":
            return Availability.yes("emulation")
        if self.machine is not None:  # inside a VM: KVM is the L1 machine's, if it loaded
            if self.machine.kvm:
                self.accel = "kvm"
                return Availability.yes("KVM in the L1 machine")
            if self.spec.accel == "auto":
                self.accel = "tcg"
                return Availability.yes("auto chose tcg: the L1 machine has no /dev/kvm")
            return Availability.no(f"the L1 machine has no /dev/kvm: its KVM module did not "
                                   f"load (its CPU model lacks SVM or VMX?); "
                                   f"{self.machine.said()}")
        kvm = _kvm_boots(self)
        if kvm.available:
            self.accel = "kvm"
            return kvm
        if self.spec.accel == "auto":
            self.accel = "tcg"
            return Availability.yes(f"auto chose tcg: {kvm.reason}")
        return kvm

    def command_line(self, kernel_args: list[str], workdir: Path | None,
                     devices: GuestDevices = GuestDevices(), accel: str | None = None,
                     paused: bool | None = None) -> list[str]:
        spec, image, accel = self.spec, self.image, accel or self.accel
        qmp_socket = workdir / "qmp.sock" if workdir and not self.inside else None
        paused = spec.placement != "none" if paused is None else paused
        if accel == "tcg":
            kernel_args = [*tcg_kernel_args(), *kernel_args]
        return [
            spec.binary, "-M", machine_option(spec.machine, bool(self.inside)), "-accel", accel,
            *(["-cpu", spec.cpu] if spec.cpu else []),
            "-smp", str(spec.vcpus), "-m", str(spec.memory_mib),
            "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
            "-no-reboot",
            # the threads named ("CPU 0/KVM", "IO iothread0"): the VMM threads' CPU by kind
            "-name", "guestbench,debug-threads=on",
            "-kernel", str(self.boot_kernel or image.kernel), "-initrd", str(image.initramfs),
            "-append", " ".join([*KERNEL_ARGS, *spec.kernel_args, *kernel_args]),
            *(["-qmp", f"unix:{qmp_socket},server=on,wait=off"] if qmp_socket else []),
            *(["-S"] if paused else []),
            *devices.args,
            *spec.extra_args,
        ]

    def snapshots(self, job, folder: Path):
        """Saved and restored through QMP (fullsystem/qemu_snapshots.py)."""
        from guestbench.environments.fullsystem.qemu_snapshots import (  # deferred: asyncio
            QemuSnapshots)  # and QMP's client, which only a snapshot run needs
        return QemuSnapshots(self, job)

    def guest_options(self, workdir: Path) -> dict:
        return {"qmp_socket": None if self.inside else workdir / "qmp.sock",
                "placement": self.spec.placement}


def channel_modules(channel: str, machine: str) -> tuple[str, ...]:
    """The guest kernel modules the channel needs (modprobe names; dependencies follow), for
    an image built before any job: the same as qemu_channel(...).modules."""
    transport = "virtio_mmio" if machine == "microvm" else "virtio_pci"
    return {"serial": (), "virtio-serial": (transport, "virtio_console"),
            "9p": (transport, "9pnet_virtio", "9p")}.get(channel, ())


def qemu_channel(channel: str, source: Path, machine: str, workdir: Path) -> channels.ChannelSetup:
    """The channel under qemu-system-x86_64 on this machine type; workdir (a short path, no
    commas: QEMU's option syntax) holds the stream channels' socket."""
    channels.check_source(source)
    modules = channel_modules(channel, machine)
    bus_name = "device" if machine == "microvm" else "pci"
    if channel in ("serial", "virtio-serial"):
        feeder = channels.SocketFeeder(source, channels.socket_path(workdir))
        chardev = ("-chardev", f"socket,id={channels.CHARDEV_ID},path={feeder.path}")
        if channel == "serial":
            # -device isa-serial exists on every x86 machine type with an ISA bus, microvm
            # included (its -serial makes only ttyS0); index 1 is COM2 (0x2f8, IRQ 3), which
            # the guest's 8250 driver finds by its legacy probe.
            return channels.ChannelSetup(
                channel, vmm_args=(*chardev, "-device", f"isa-serial,chardev="
                                   f"{channels.CHARDEV_ID},index={channels.SERIAL_INDEX}"),
                kernel_args=(), modules=(), guest_source=f"/dev/ttyS{channels.SERIAL_INDEX}",
                feeder=feeder)
        return channels.ChannelSetup(
            channel,
            vmm_args=(*chardev, "-device", f"virtio-serial-{bus_name},id=gbuploadbus,max_ports=2",
                      "-device", f"virtserialport,bus=gbuploadbus.0,nr=1,"
                                 f"chardev={channels.CHARDEV_ID},name={channels.PORT_NAME}"),
            kernel_args=(), modules=modules,
            # vportNpM numbers follow the probe order: the agent finds the port by its name
            # when no udev made this link
            guest_source=f"/dev/virtio-ports/{channels.PORT_NAME}", feeder=feeder)
    folder = source.parent
    channels.check_option_value(folder, "share")
    tag = channels.NINEP_TAG
    mount = channels.GuestMount("9p", tag, channels.MOUNTPOINT,
                                f"ro,trans=virtio,version=9p2000.L,msize={channels.NINEP_MSIZE}")
    return channels.ChannelSetup(
        channel,
        vmm_args=("-fsdev", f"local,id={tag},path={folder},security_model=none,readonly=on",
                  "-device", f"virtio-9p-{bus_name},fsdev={tag},mount_tag={tag}"),
        kernel_args=(mount.kernel_word(),), modules=modules,
        guest_source=f"{channels.MOUNTPOINT}/{source.name}", mount=mount)


_tsc_khz: list[int] = []


def machine_option(machine: str, inside: bool) -> str:
    """-M's value. Inside a VM, microvm gets its RTC: with none, the guest kernel's probe of
    the CMOS clock's absent ports took 10 s of a 24 s boot under nested KVM here (each access
    exits to the L1 machine's KVM and its QEMU, both under emulation: "rtc_cmos: broken or
    not accessible" came 10 s after the line before it); with it, the boot took 10 s."""
    return f"{machine},rtc=on" if inside and machine == "microvm" else machine


def tcg_kernel_args() -> list[str]:
    """Under TCG the guest's TSC ticks at the host's rate; saying so skips the guest's PIT
    calibration, which fails on a loaded host and then can hang the boot before /init
    (3 guests on 2 CPUs: 5 of 12 boots reached the agent without it, 12 of 12 with it)."""
    if not _tsc_khz:
        _tsc_khz.append(agent.host_tsc_khz() or 0)
    # tsc=reliable: with 2 or more vCPUs under TCG the guest otherwise finds its TSCs
    # unsynchronised and falls back to the jiffies clock, which ran 10-20% slow here (a
    # 2-vCPU build measured 140 s where the host saw 156 s; with it, they agree to 0.01 s)
    return [*([f"tsc_early_khz={_tsc_khz[0]}"] if _tsc_khz[0] else []), "tsc=reliable"]


_kvm_answers: dict[tuple, Availability] = {}


def _kvm_boots(environment: Qemu) -> Availability:
    """Whether a guest of this image really boots under KVM here, asked once per process:
    /dev/kvm can exist where no guest boots (a nested PVM hypervisor); only a boot tells."""
    key = (environment.spec.binary, environment.image.id, environment.spec.machine)
    if key in _kvm_answers:
        return _kvm_answers[key]
    answer = kvm.device()
    if answer.available:
        answer = kvm.remembered(list(key)) or _kvm_test_boot(environment, list(key))
    _kvm_answers[key] = answer
    return answer


def _kvm_test_boot(environment: Qemu, key: list[str]) -> Availability:
    argv = environment.command_line(["gb.args=--version"], None, accel="kvm", paused=False)
    answer = kvm.boots(argv)
    kvm.remember(key, answer)
    return answer
