"""Any VMM started from a command line the plan writes (kind = "command").

The plan gives the VMM's argv with placeholders guestbench fills per run; it is never
passed through a shell, and {cmdline} stays one argument. Everything else (the image,
the job on the kernel command line, the console, boot phases, panics, the clock check,
teardown) is the full-system base's. With image = "none" the guest is the plan's own
kernel or unikernel running its own benchmark; a workload reads its console.
"""

from __future__ import annotations

import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from guestbench import images
from guestbench.process import proc
from guestbench.environments.fullsystem import kvm
from guestbench.environments.base import Availability, Capability, GuestStartError
from guestbench.environments.fullsystem.console import ConsoleGuest
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.fullsystem.base import (
    AttachedDisk, FullSystem, FullSystemSpec, Names, VersionHangs, check_kernel_args)
from guestbench.environments.fullsystem.placement import (Pinned, pin_threads,
                                                          vcpu_threads_by_name)
from guestbench.host import which
from guestbench.network.paths import NetPath

PLACEHOLDERS = ("kernel", "initrd", "cmdline", "vcpus", "memory_mib", "disk", "workdir",
                "console_path", "name", "tap", "mac")
# {word}: a placeholder; any other brace (JSON in a config file) is left as it is
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
# on every {cmdline} of guestbench's image: a panic ends the guest (the VMM then exits,
# given its own no-reboot option); the console is the plan's kernel_args (default ttyS0)
KERNEL_ARGS = ("quiet", "panic=-1")
STOP_GRACE_S = 2.0
THREADS_WAIT_S = 5.0


def _bad(message: str, fix: str) -> PydanticCustomError:
    """A plan error whose message and fix the plan loader shows as they are."""
    return PydanticCustomError("command_template", message, {"fix": fix})


def placeholders_in(text: str) -> list[str]:
    """The {names} in an argument or a file's text."""
    return PLACEHOLDER.findall(text)


def fill(text: str, values: dict[str, str]) -> str:
    """text with each known {name} replaced by its value (one pass: values are not searched)."""
    return PLACEHOLDER.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def _check_placeholders(text: str) -> None:
    for name in placeholders_in(text):
        if name not in (*PLACEHOLDERS, "pid"):
            shown = text if len(text) < 80 else text[:77] + "..."
            raise _bad(f"unknown placeholder {{{name}}} in {shown!r}",
                       f"use one of {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")


def _regex(value: str | None, field: str) -> str | None:
    if value is None:
        return None
    try:
        re.compile(value)
    except re.error as error:
        raise _bad(f"{field} {value!r} is not a regular expression: {error}",
                   "correct the pattern (Python's re syntax)") from None
    return value


class CommandSpec(FullSystemSpec):
    """A VMM started from the plan's own argv template."""

    kind: Literal["command"] = "command"
    files: dict[str, str] = Field(
        default_factory=dict, description="files written into {workdir} before the VMM starts "
                                          "(a VMM's config: Xen's, Firecracker's), name = text "
                                          "with the same placeholders")
    argv: tuple[str, ...] = Field(
        min_length=1, description="the VMM's command line, one list item per argument; "
                                  f"placeholders {', '.join('{' + p + '}' for p in PLACEHOLDERS)}")
    console: Literal["stdio", "file", "unix", "pty"] = Field(
        "stdio", description="where the guest's console is: the VMM's stdout, a file or a Unix "
                             "socket the VMM makes at {console_path}, or a pty guestbench "
                             "opens at {console_path}")
    image: Literal["guestbench", "none"] = Field(
        "guestbench", description="guestbench: its image (kernel + initramfs with the agent); "
                                  "none: the plan's kernel runs its own program")
    kernel: str | None = Field(None, min_length=1,
                               description="the guest kernel; None = the host's newest "
                                           "/boot/vmlinuz-* (image none: required)")
    kernel_format: Literal["bzImage", "vmlinux"] = Field(
        "bzImage", description="vmlinux: an uncompressed ELF kernel extracted from the bzImage "
                               "(Firecracker, Cloud Hypervisor)")
    kernel_args: Annotated[tuple[str, ...], AfterValidator(check_kernel_args)] = Field(
        ("console=ttyS0",), description="on {cmdline} before the job: the console the guest "
                                        "writes (UML: console=tty0), and anything else")
    modules: Names = Field((), description="kernel modules loaded at boot")
    vcpus: int = Field(1, ge=1, le=256, strict=True, description="what {vcpus} becomes")
    disk_device: str = Field("/dev/vda", pattern=r"^/dev/[A-Za-z0-9/_-]+$",
                             description="the guest's name for the {disk} the VMM attaches")
    disk_mib: int = Field(1024, ge=64, le=1 << 22, strict=True,
                          description="size of the scratch disk, MiB")
    disk_modules: Names = Field(("virtio_mmio", "virtio_blk", "virtio_pci", "ext4"),
                                description="guest modules the {disk} needs: its bus and "
                                            "ext4 (UML: none, they are built in)")
    requires: tuple[str, ...] = Field(
        (), description="programs (on PATH) and files (absolute paths, e.g. /dev/kvm) that must "
                        "exist; checked by the probe")
    version_argv: tuple[str, ...] = Field(
        (), description="prints the VMM's version (first line recorded), e.g. "
                        '["firecracker", "--version"]')
    stop_signal: Literal["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGKILL"] = Field(
        "SIGTERM", description="sent to the VMM first at teardown; the process group is killed "
                               f"{STOP_GRACE_S:g} s later if it is still there")
    stop_argv: tuple[str, ...] = Field(
        (), description="a command run first at teardown instead (placeholders {workdir}, {pid})")
    shutdown: Literal["poweroff", "reboot"] = Field(
        "poweroff", description="how guestbench's image ends the guest: power off, or reset "
                                "(reboot=k) for a VMM that exits on a reset and has no "
                                "power-off device (Firecracker, kvmtool on x86)")
    disk_argv: tuple[str, ...] = Field(
        (), description="appended to argv only in runs that have a scratch disk: where "
                        "{disk} goes (e.g. [\"--disk\", \"path={disk}\"])")
    net_argv: tuple[str, ...] = Field(
        (), description="appended to argv only in network workloads' runs: a NIC on the host's "
                        "tap device {tap} with MAC {mac} (e.g. [\"--net\", "
                        "\"tap={tap},mac={mac}\"])")
    net_modules: Names = Field(("virtio_mmio", "virtio_pci", "virtio_net"),
                               description="guest modules the NIC needs (UML: none)")
    port_io: bool = Field(True, description="the guest can run the port_read workload (false "
                                            "for a VMM whose guest has no I/O ports, e.g. UML)")
    placement: Literal["none", "same", "disjoint"] = Field(
        "none", description="VMM threads placed as for qemu; needs vcpu_threads")
    vcpu_threads: str | None = Field(
        None, description="regular expression on the VMM's thread names (/proc/PID/task/*/comm) "
                          "that finds its vCPU threads; its first group is the vCPU index")
    ready: str | None = Field(None, description="image none: the console line (a regular "
                                                "expression) that ends the boot")
    done: str | None = Field(None, description="image none: the console line after which the "
                                               "guest's program has finished (else: VMM exit)")

    @field_validator("argv", "disk_argv", "net_argv", "version_argv", "stop_argv")
    @classmethod
    def _known_placeholders(cls, argv: tuple[str, ...]) -> tuple[str, ...]:
        for arg in argv:
            _check_placeholders(arg)
        return argv

    @field_validator("files")
    @classmethod
    def _plain_file_names(cls, files: dict[str, str]) -> dict[str, str]:
        for name, text in files.items():
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
                raise _bad(f"file name {name!r} is not a plain file name",
                           "use letters, digits, _ . - (it is made inside {workdir})")
            _check_placeholders(text)
        return files

    @field_validator("ready", "done", "vcpu_threads")
    @classmethod
    def _patterns(cls, value: str | None, info) -> str | None:
        return _regex(value, info.field_name)

    @model_validator(mode="after")
    def _consistent(self) -> "CommandSpec":
        used = {name for text in (*self.argv, *self.files.values())
                for name in placeholders_in(text)}
        if "pid" in used:
            raise _bad("{pid} exists only in stop_argv", "remove {pid} from argv")
        if self.inside != "none" and (self.console != "stdio" or self.stop_argv):
            raise _bad("inside a VM, the VMM's console must be its stdout and it must end with "
                       "its process (no stop_argv): the L1 machine passes on its output only",
                       "console = \"stdio\" and no stop_argv, or inside = \"none\"")
        if "disk" in used:
            raise _bad("{disk} belongs in disk_argv: runs without a scratch disk leave it out",
                       "move the disk's arguments to disk_argv = [...]")
        if used & {"tap", "mac"}:
            raise _bad("{tap} and {mac} belong in net_argv: only network workloads' runs get a "
                       "tap device", "move the NIC's arguments to net_argv = [...]")
        if self.net_argv and not any("tap" in placeholders_in(a) for a in self.net_argv):
            raise _bad("net_argv does not pass {tap}", "add {tap} where the VMM takes the "
                       "host's tap device name")
        if self.disk_argv and not any("disk" in placeholders_in(a) for a in self.disk_argv):
            raise _bad("disk_argv does not pass {disk}", "add {disk} where the VMM takes the "
                       "disk image's path")
        if self.image == "guestbench":
            for needed in ("initrd", "cmdline"):
                if needed not in used:
                    raise _bad(f"argv must pass {{{needed}}}: guestbench's image and the job "
                               "travel there", f"add {{{needed}}} where the VMM takes it, or "
                               "set image = \"none\" for a guest of your own")
        else:
            if self.kernel is None:
                raise _bad("image = \"none\" needs kernel = the guest's own kernel file",
                           "add kernel = \"/path/to/your/kernel\"")
            if "initrd" in used or self.disk_argv:
                raise _bad("image = \"none\": argv cannot use {initrd} or {disk} (guestbench "
                           "makes neither for a guest of its own)",
                           "write your own initrd or disk path into argv as it is")
        if self.console != "stdio" and "console_path" not in used:
            raise _bad(f"console = \"{self.console}\" needs {{console_path}} in argv",
                       "pass {console_path} where the VMM takes its serial console")
        if self.placement != "none" and self.vcpu_threads is None:
            raise _bad("placement needs vcpu_threads, the pattern of the VMM's vCPU thread "
                       "names", "add e.g. vcpu_threads = '^fc_vcpu (\\d+)$' (Firecracker) or "
                       "'^CPU (\\d+)/' (QEMU)")
        if self.image == "guestbench" and (self.ready or self.done):
            raise _bad("ready and done are for image = \"none\" (guestbench's image reports "
                       "its own boot phases)", "remove them, or set image = \"none\"")
        return self


@dataclass
class CommandGuest(Pinned, ConsoleGuest):
    """The VMM of a command environment: placed by thread names, stopped as the plan says."""

    spec: CommandSpec | None = None
    workdir: Path | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.spec.placement != "none":
            self._place()

    def _place(self) -> None:
        try:
            threads = self._wait_for_vcpu_threads()
            applied = pin_threads(self._process.pid, threads, self.spec.placement)
        except (OSError, GuestStartError) as error:
            self.stop()
            raise GuestStartError(f"placement {self.spec.placement}: {error}") from None
        self.keep_placement(applied)

    def _wait_for_vcpu_threads(self) -> dict[int, int]:
        deadline = proc.now_ns() + int(THREADS_WAIT_S * 1e9)
        while proc.now_ns() < deadline:
            found = vcpu_threads_by_name(self._process.pid, self.spec.vcpu_threads)
            if len(found) >= self.spec.vcpus and 0 in found:
                return found
            if self._process.poll() is not None:
                break
            time.sleep(0.005)
        raise GuestStartError(f"no {self.spec.vcpus} threads named like "
                              f"{self.spec.vcpu_threads!r} within {THREADS_WAIT_S:g} s")

    def _teardown(self):
        if self._process.poll() is None:
            self._ask_to_stop()
        return super()._teardown()

    def _ask_to_stop(self) -> None:
        try:
            if self.spec.stop_argv:
                values = {"workdir": str(self.workdir), "pid": str(self._process.pid),
                          "name": self.workdir.name}
                argv = [fill(arg, values) for arg in self.spec.stop_argv]
                proc.run(argv, timeout_s=10)
            else:
                proc.signal_group(self._process.pid, getattr(signal, self.spec.stop_signal))
            self._process.wait(STOP_GRACE_S)
        except (proc.ProcessError, proc.DeadlineExceeded, KeyError, IndexError):
            pass  # the group kill that follows ends it anyway


class Command(FullSystem):
    kind: ClassVar[str] = "command"
    spec_model = CommandSpec
    guest_class = CommandGuest

    @classmethod
    def example_options(cls) -> dict[str, Any]:
        return {"argv": ["qemu-system-x86_64", "-M", "pc", "-accel", "tcg", "-m", "{memory_mib}",
                         "-smp", "{vcpus}", "-nodefaults", "-no-user-config", "-display",
                         "none", "-serial", "stdio", "-no-reboot", "-kernel", "{kernel}",
                         "-initrd", "{initrd}", "-append", "{cmdline}"]}

    def provides(self) -> frozenset[Capability]:
        spec = self.spec
        if spec.image == "none":
            return frozenset({Capability.GUEST_KERNEL, Capability.GUEST_PROGRAM})
        has = set(Capability) - {Capability.GUEST_PROGRAM, Capability.UPLOAD,
                                 Capability.TRACED_DISK}
        if not spec.disk_argv:
            has -= {Capability.FILESYSTEM, Capability.BLOCK_DEVICE}
        if not spec.net_argv:
            has.discard(Capability.NETWORK)
        if not spec.port_io:
            has.discard(Capability.PORT_IO)
        has -= {Capability.SNAPSHOT, Capability.VSOCK}
        return frozenset(has)

    lacking = {
        Capability.FILESYSTEM: "command: it has no disk_argv, so the guest gets no scratch "
                               "disk (fix: disk_argv = the VMM's arguments for {disk})",
        Capability.UPLOAD: "command: upload channels are not mapped for command VMMs",
        Capability.NETWORK: "command: it has no net_argv, so the guest gets no NIC (fix: "
                            "net_argv = the VMM's arguments for a NIC on tap {tap}, MAC {mac})",
        Capability.TRACED_DISK: "command: traced disks are not mapped for command VMMs",
        Capability.SNAPSHOT: "command: guestbench knows the VMM only by its command line, "
                             "and has no way to ask it for a snapshot",
        Capability.VSOCK: "command: a vsock device is not mapped for command VMMs (its host "
                          "end differs by VMM: vhost-vsock, or a hybrid Unix socket)",
    }

    def vmm_probe(self) -> Availability:
        missing = [need for need in (self.spec.argv[0], *self.spec.requires)
                   if not (Path(need).exists() if need.startswith("/") else which(need))]
        if missing:
            return Availability.no(f"{missing[0]} not found (fix: install it, or correct "
                                   "argv[0] / requires)")
        if "/dev/kvm" in self.spec.requires:
            return kvm.device()
        return Availability.yes(self.spec.argv[0])

    def kernel(self) -> Path:
        return Path(self.spec.kernel) if self.spec.kernel else images.default_kernel()

    def version_argv(self) -> list[str] | None:
        return list(self.spec.version_argv) or None

    def image_modules(self) -> tuple[str, ...]:
        modules = list(self.spec.modules)
        if self.needs_disk() and Capability.FILESYSTEM in self.provides():
            modules += self.spec.disk_modules
        if (Capability.NETWORK in self.plan_needs.capabilities
                and Capability.NETWORK in self.provides()):
            modules += self.spec.net_modules
        return tuple(dict.fromkeys(modules))

    def prepare(self, host) -> Availability:
        if self.spec.image == "none":  # the plan's kernel runs as it is: nothing to build
            try:
                self.vmm_version = self._version()
            except VersionHangs as error:
                return Availability.no(str(error))
            return Availability.yes("the guest's own kernel")
        return super().prepare(host)

    def facts(self) -> dict[str, Any]:
        facts = super().facts()
        if self.spec.image == "none":
            facts["guest_kernel"] = Path(self.spec.kernel).name
        return facts

    def console_kind(self) -> str:
        return self.spec.console

    def attach_disk(self, index: int, path: Path, fmt: str) -> AttachedDisk:
        if index:
            raise GuestStartError("command VMMs get one disk, {disk}")
        return AttachedDisk((), self.spec.disk_device)  # argv places it, as {disk}

    def attach_network(self, path: NetPath) -> list[str]:
        return [fill(arg, {"tap": path.host_if or "", "mac": path.mac or ""})
                for arg in self.spec.net_argv]

    def command_line(self, kernel_args: list[str], workdir: Path,
                     devices: GuestDevices) -> list[str]:
        spec = self.spec
        console = devices.console.path if devices.console else None
        values = {"vcpus": str(spec.vcpus), "memory_mib": str(spec.memory_mib),
                  "workdir": str(workdir), "console_path": str(console or ""),
                  "kernel": str(spec.kernel), "cmdline": " ".join(spec.kernel_args),
                  "initrd": "", "disk": str(devices.disks[0]) if devices.disks else ""}
        if spec.image == "guestbench":
            values["kernel"] = str(self.boot_kernel or self.image.kernel)
            values["initrd"] = str(self.image.initramfs)
            shutdown = ["gb.shutdown=reboot"] if spec.shutdown == "reboot" else []
            values["cmdline"] = " ".join([*KERNEL_ARGS, *spec.kernel_args, *shutdown,
                                          *kernel_args])
        values["name"] = workdir.name  # unique per run: a domain's, a VM's or a UML umid
        for name, text in spec.files.items():
            (workdir / name).write_text(fill(text, values))
        disk = list(spec.disk_argv) if devices.disks else []
        return ([fill(arg, values) for arg in (*spec.argv, *disk)] + devices.args
                + list(spec.extra_args))

    def guest_options(self, workdir: Path) -> dict[str, Any]:
        spec = self.spec
        return {"agent": spec.image == "guestbench",
                "ready": re.compile(spec.ready) if spec.ready else None,
                "done": re.compile(spec.done) if spec.done else None,
                "spec": spec, "workdir": workdir}
