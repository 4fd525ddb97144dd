"""User-Mode Linux guests: linux.uml booting the guest image's initramfs, console on stdout."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import Field

from guestbench import xsave
from guestbench.process import memory, proc
from guestbench.environments.fullsystem import channels
from guestbench.environments.base import Availability, Capability
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.fullsystem.base import AttachedDisk, FullSystem, FullSystemSpec
from guestbench.host import which
from guestbench.network.paths import NetPath

MAP_COUNT_FILE = Path("/proc/sys/vm/max_map_count")
PAGE_MIB = 4096 / 2**20
UML_DISKS = "/dev/ubd"  # ubd0 is /dev/ubda, ubd1 /dev/ubdb
# Debian's linux.uml has the RAID6 library built in, and it benchmarks its algorithms at every
# boot: 0.85 s of a 1.4 s boot here (measured with printk.time=1), for code that only md
# RAID6 and btrfs RAID5/6 call, which no guestbench guest uses. Skipped unless a plan says not.
SKIP_RAID6_BENCHMARK = "initcall_blacklist=raid6_select_algo"
CHANNELS = ("serial", "hostfs")
# A UML kernel sets each of its processes' FPU registers with PTRACE_SETREGSET of the host's
# XSAVE area, which the host's kernel takes only whole: a shorter buffer fails with EFAULT,
# and the guest panics at boot ("ptrace set fp regs failed, errno = 14"). Before Linux 6.13
# UML passes a fixed 2696 bytes (enough for AVX-512 and protection keys, not for AMX's 11008);
# from 6.13 on it asks the host at start-up, as does the kernel install.sh builds where
# Debian's cannot run (its release ends in XSAVE_SIZED_MARK).
FIXED_XSAVE_BYTES = 2696
SIZED_FROM_RELEASE = (6, 13)
XSAVE_SIZED_MARK = "-xsave-sized"
VERSION_TIMEOUT_S = 5.0


def map_count_limit_mib() -> int | None:
    """What a UML guest can touch at most: UML maps guest memory page by page on the host,
    and vm.max_map_count bounds the mappings (65530 by default: ~255 MiB). None if unknown."""
    try:
        return int(int(MAP_COUNT_FILE.read_text()) * PAGE_MIB)
    except (OSError, ValueError):
        return None


def _map_count_warning() -> str:
    usable_mib = map_count_limit_mib()
    if usable_mib is None or usable_mib >= 1024:
        return ""
    return (f"; note: vm.max_map_count lets a UML guest touch only ~{usable_mib} MiB "
            "(sysctl -w vm.max_map_count=262144 to raise it)")


class UmlSpec(FullSystemSpec):
    """A User-Mode Linux kernel run as a host process."""

    kind: Literal["uml"] = "uml"
    binary: str = Field("linux.uml", description="the UML kernel program")
    disk_cache: Literal["writeback", "sync"] = Field(
        "writeback", description="ubd's host I/O: writeback (ubd0=, the host's page cache) or "
                                 "sync (ubd0s=, the image opened O_SYNC: every write synchronous)")
    disk_mib: int = Field(1024, ge=64, le=1 << 22, strict=True,
                          description="size of the scratch disk, MiB (grown to fit a "
                                      "workload's files)")
    raid6_benchmark: bool = Field(
        False, strict=True,
        description="let the kernel benchmark its RAID6 algorithms at boot (0.85 s of every "
                    "boot of Debian's linux.uml; only md RAID6 and btrfs RAID5/6 use them)")

    def cpu_count(self, host_cpus: int) -> int:
        return 1  # UML runs its guest on one host thread


class Uml(FullSystem):
    kind: ClassVar[str] = "uml"
    typical_start_s: ClassVar[float] = 0.19  # a boot (1.4 s) a round, shared by its runs
    typical_work_factor: ClassVar[float] = 3.0
    # a UML guest's instructions run as a host process: an in/out instruction faults there
    capabilities = frozenset(Capability) - {Capability.PORT_IO, Capability.SNAPSHOT,
                                            Capability.VSOCK}
    lacking = {Capability.PORT_IO: "uml: the guest runs as a host process, where an I/O port "
                                   "instruction faults",
               Capability.SNAPSHOT: "uml: User-Mode Linux has no snapshot and restore of a "
                                    "running guest",
               Capability.VSOCK: "uml: User-Mode Linux has no virtio-vsock device"}
    spec_model = UmlSpec
    no_vmm_threads = ("uml: the guest's kernel and its processes are host processes; there "
                      "are no VMM threads apart from the guest")

    def vmm_probe(self) -> Availability:
        program = which(self.spec.binary)
        if program is None:
            return Availability.no(f"{self.spec.binary} not found (apt-get install user-mode-linux)")
        # inside an L1 machine the UML kernel sets the L1 kernel's FPU registers, not the host's
        refusal = "" if self.inside else xsave_refusal(program, _release(program),
                                                        xsave.host_xsave_bytes())
        if refusal:
            return Availability.no(refusal)
        return Availability.yes(f"{program}{_map_count_warning()}")

    def kernel(self) -> Path:
        # the UML kernel is the VMM itself (the probe found it)
        return Path(which(self.spec.binary) or self.spec.binary)

    def version_argv(self) -> list[str]:
        return [str(self.kernel()), "--version"]

    def facts(self) -> dict:
        facts = super().facts()
        if self.vmm_version:  # linux.uml --version prints its kernel release
            facts["guest_kernel"] = self.vmm_version
        return facts

    def own_guest_ram(self) -> memory.GuestRam | None:
        # its physical memory is an unlinked file that the kernel process and every address
        # space's process map (at an offset past the kernel image: not one sized mapping)
        return memory.shared_deleted_file

    def memory_limit_mib(self) -> int:
        by_maps = map_count_limit_mib()
        return min(self.spec.memory_mib, by_maps) if by_maps is not None else self.spec.memory_mib

    def memory_refusal(self, needed_mib: int) -> str:
        by_maps = map_count_limit_mib()
        if by_maps is not None and by_maps < self.spec.memory_mib:
            return (f"the workload touches {needed_mib} MiB and this host's vm.max_map_count "
                    f"lets a UML guest map only ~{by_maps} MiB (fix: sysctl -w "
                    "vm.max_map_count=262144, or a smaller array_mib)")
        return super().memory_refusal(needed_mib)

    def attach_disk(self, index: int, path: Path, fmt: str) -> AttachedDisk:
        flag = "s" if self.spec.disk_cache == "sync" else ""
        return AttachedDisk((f"ubd{index}{flag}={path}",), f"{UML_DISKS}{'ab'[index]}")

    def attach_network(self, path: NetPath) -> list[str]:
        # the vector driver on a tap transport: the guest's vec0 (built into linux.uml).
        # gro=1: the host's tap hands it TCP segments of up to 64 KiB (GSO); without it the
        # driver drops every one ("Incoming GSO frames and GRO disabled") and a stream to
        # the guest crawls on retransmits (1 MiB in 40 s here)
        return [f"vec0:transport=tap,ifname={path.host_if},mac={path.mac},gro=1"]

    def upload_channels(self) -> tuple[str, ...]:
        return CHANNELS

    def channel_refusal(self, channel: str) -> str:
        if channel in ("virtio-serial", "9p"):
            return (f"channel {channel} is QEMU's; User-Mode Linux has "
                    f"{' and '.join(CHANNELS)} (hostfs is its 9p)")
        return f"unknown upload channel {channel!r} (UML has {', '.join(CHANNELS)})"

    def channel(self, name: str, source: Path, workdir: Path) -> channels.ChannelSetup:
        if name not in CHANNELS:
            raise channels.ChannelError(self.channel_refusal(name))
        return uml_channel(name, source)

    def command_line(self, kernel_args: list[str], workdir: Path,
                     devices: GuestDevices) -> list[str]:
        # UML keeps its pid file and management socket under uml_dir/umid
        return [
            str(self.image.kernel), f"mem={self.spec.memory_mib}M",
            f"initrd={self.image.initramfs}", f"umid=gb-{uuid.uuid4().hex[:8]}",
            f"uml_dir={workdir}", *devices.args, "con=null", "con0=fd:0,fd:1", "console=tty0",
            "quiet", "panic=-1", *([] if self.spec.raid6_benchmark else [SKIP_RAID6_BENCHMARK]),
            *self.spec.kernel_args, *kernel_args, *self.spec.extra_args,
        ]


def _release(program: str) -> str | None:
    """The UML kernel's release ("6.1.176"), from its --version; None if it gives none."""
    try:
        result = proc.run([program, "--version"], timeout_s=VERSION_TIMEOUT_S)
    except (proc.ProcessError, proc.DeadlineExceeded):
        return None
    lines = result.stdout.strip().splitlines()
    return lines[0].strip() if result.returncode == 0 and lines else None


def xsave_bytes_supported(release: str | None) -> int | None:
    """The largest host XSAVE area a UML kernel of this release can set; None: any (it sizes
    its buffer from the host), or unknown (no release: the kernel is not judged)."""
    if release is None or XSAVE_SIZED_MARK in release:
        return None
    numbers = re.match(r"(\d+)\.(\d+)", release)
    if numbers and (int(numbers[1]), int(numbers[2])) >= SIZED_FROM_RELEASE:
        return None
    return FIXED_XSAVE_BYTES


def xsave_refusal(program: str, release: str | None, host_bytes: int | None) -> str:
    """Why this UML kernel cannot run on this host ("" if it can, or if either is unknown)."""
    supported = xsave_bytes_supported(release)
    if supported is None or host_bytes is None or host_bytes <= supported:
        return ""
    return (f"the host's XSAVE area is {host_bytes} bytes and {program} (Linux {release}) "
            f"sets a process's FPU registers with {supported}: it would panic at boot "
            "(\"ptrace set fp regs failed, errno = 14\"; UML sizes it from the host only "
            "from Linux 6.13) (fix: bash install.sh builds a UML kernel that does, or set "
            "binary = a UML kernel of Linux 6.13 or later in the plan's uml environment)")


def uml_channel(channel: str, source: Path) -> channels.ChannelSetup:
    """The channel under User-Mode Linux (linux.uml: hostfs and serial lines are built in,
    it loads no modules).

    The serial channel's setup holds host pipes from now on: the VMM must inherit
    setup.pass_fds, and setup.feeder.stop() must run even if the guest never starts.
    """
    channels.check_source(source)
    if channel == "serial":
        feeder = channels.PipeFeeder(source)
        # fd:IN,fd:OUT: UML reads the line's input from one descriptor, writes its output to
        # the other (not ttys: UML leaves them as they are).
        line = f"ssl{channels.UML_SERIAL_LINE}=fd:{feeder.guest_in},fd:{feeder.guest_out}"
        return channels.ChannelSetup(
            channel, vmm_args=(line,), kernel_args=(), modules=(),
            guest_source=f"/dev/ttyS{channels.UML_SERIAL_LINE}", feeder=feeder,
            pass_fds=feeder.pass_fds)
    folder = source.parent
    if any(char.isspace() for char in str(folder)):
        raise channels.ChannelError(f"hostfs cannot share {folder}: UML reads hostfs=FOLDER "
                                    "from its command line, where a space ends it (fix: an "
                                    "inputs folder without spaces)")
    # hostfs=FOLDER roots every hostfs mount of the guest there: the guest sees only it.
    mount = channels.GuestMount("hostfs", "none", channels.MOUNTPOINT, "ro")
    return channels.ChannelSetup(
        channel, vmm_args=(f"hostfs={folder}",), kernel_args=(mount.kernel_word(),),
        modules=(), guest_source=f"{channels.MOUNTPOINT}/{source.name}", mount=mount)
