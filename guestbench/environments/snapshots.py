"""How a kind saves a running instance and restores it (Capability.SNAPSHOT): one object per
run (Environment.snapshots), which starts the instance, saves it into a folder, restores it
from there as often as asked, and ends everything it made (close). The runner's side, what
is timed and what the agent proves, is runner/snapshot.py; docs/workloads-startup.md."""

from __future__ import annotations

import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from guestbench.environments.base import Guest


@dataclass
class Saved:
    """What a save gave: the image's bytes on the host's disk and the kind's own steps, in
    ms on the host's clock (QEMU's migration; runsc's checkpoint command)."""

    bytes: int
    phases: dict[str, float] = field(default_factory=dict)
    note: str = ""  # how the image is kept, where it differs by kind ("compressed")


@dataclass
class Restored:
    """A restored instance, running, whose agent waits for its line; the kind's steps."""

    guest: Guest
    phases: dict[str, float] = field(default_factory=dict)


class Snapshots(ABC):
    """One instance of one job, saved and restored in a kind's own way."""

    @abstractmethod
    def start(self, logdir: Path, deadline_ns: int) -> Guest:
        """The instance, started as for any run, with a stdin the host writes to."""

    @abstractmethod
    def save(self, guest: Guest, image: Path) -> Saved:
        """Saves the running instance into the folder `image` (the caller stops the guest
        after: an OCI runtime's record, QEMU's process). GuestStartError if it failed."""

    @abstractmethod
    def restore(self, image: Path, logdir: Path, deadline_ns: int, first_seq: int) -> Restored:
        """A new instance restored from `image`, running; its records go on from first_seq.
        GuestStartError if the restore failed."""

    def close(self) -> None:
        """Ends and removes whatever it made; safe to call twice."""


class InMachine(Snapshots):
    """Snapshots of a guest inside an L1 machine (fullsystem/nested.py), whose image is
    written there into a folder the machine shares with the host: its size is read on the
    host, and it goes with the machine if guestbench is killed. close() removes it."""

    inside_image: Path | None = None

    def inside_folder(self, machine) -> Path:
        """The image's folder in the machine's share, made at the first call."""
        if self.inside_image is None:
            self.inside_image = machine.workdir()
        return self.inside_image

    def close(self) -> None:
        if self.inside_image is not None:
            shutil.rmtree(self.inside_image, ignore_errors=True)
            self.inside_image = None


def image_bytes(image: Path) -> int:
    """The bytes of every file under an image folder."""
    return sum(path.stat().st_size for path in image.rglob("*") if path.is_file())
