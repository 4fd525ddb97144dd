"""What a full-system guest is given besides its image (a traced disk, an upload channel),
and how all of it ends: the finalizers a guest runs after its VMM is gone."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from guestbench.environments.fullsystem import channels, guestdisk, tracedisk
from guestbench.environments.base import GuestStartError
from guestbench.environments.fullsystem.consoles import Console
from guestbench.network.paths import NetPath

TRACED_DISK_MIB = 64


@dataclass
class GuestDevices:
    """What a full-system guest is given besides its image, and how to end it all."""

    args: list[str] = field(default_factory=list)
    finalizers: list = field(default_factory=list)
    collected: dict = field(default_factory=dict)
    pass_fds: tuple = ()  # descriptors the VMM inherits (UML's serial line)
    disks: list = field(default_factory=list)  # host paths of the disks attached, in order
    console: "Console | None" = None  # where the guest's console is, when not the VMM's stdout
    vsock: Path | None = None  # the VMM's hybrid vsock socket (Firecracker's, Cloud Hypervisor's)
    nic: "NetPath | None" = None  # the run's network path, for a VMM configured through its API
    beside: list = field(default_factory=list)  # argvs run beside the VMM, ended with it
    leftovers: list = field(default_factory=list)  # paths removed when those end (sockets)

    def open_console(self, console: "Console") -> "Console":
        """A console other than stdout; closed with the rest, after the VMM is gone."""
        self.console = console
        self.finalizers.append(console.close)
        return console

    def traced_disk(self, folder: Path, logdir: Path) -> "tracedisk.TracedDisk":
        try:
            disk = tracedisk.TracedDisk(folder, size_mib=TRACED_DISK_MIB)
        except tracedisk.TraceDiskError as error:
            raise GuestStartError(f"traced disk: {error}") from None
        self.finalizers.append(guestdisk.trace_collector(disk, logdir, self.collected))
        return disk

    def channel(self, make) -> "channels.ChannelSetup":
        try:
            setup = make()
        except channels.ChannelError as error:
            raise GuestStartError(f"upload channel: {error}") from None
        self.finalizers.append(setup.feeder.stop)
        self.collected["feeder"] = setup.feeder
        self.pass_fds = tuple(setup.pass_fds)
        setup.feeder.start()  # a socket feeder listens before the VMM connects
        return setup

    def finish(self) -> None:
        """End everything started, when no guest took it over."""
        for finalizer in self.finalizers:
            try:
                finalizer()
            except Exception:  # noqa: BLE001 - the start already failed; that error wins
                pass
        self.finalizers.clear()
