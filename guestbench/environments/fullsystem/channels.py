"""Upload channels: what the VMM, the guest image and the host each do to move a host file
into a full-system guest (the upload workload, guestbench/workloads/transfer.py).

    channel        qemu (microvm, pc, q35)              uml
    serial         a second 16550 UART (ttyS1) fed      serial line 1 (ttyS1) on two host
                   from a host socket                   pipes the UML process inherits
    virtio-serial  a virtserialport fed from a host     -
                   socket
    9p             a virtio-9p share of the file's      -
                   folder, mounted at /upload
    hostfs         -                                    UML's hostfs: the file's folder,
                                                        mounted at /upload

This module is the mechanism every VMM shares; each kind's own module maps a channel onto
its VMM (qemu_channel in qemu.py, uml_channel in uml.py; a kind's channel() method). The
full-system base (fullsystem.py) adds the setup's VMM and kernel arguments, lets the VMM
process inherit its pass_fds, adds agent_options(setup) (``--source`` and ``--dest``) to
the agent's options, and runs the guest between ``feeder.start()`` and ``feeder.stop()``:
start before the VMM (the socket must listen when QEMU connects), stop after the guest is
gone, and stop also when the guest could not be started.

Stream channels (serial, virtio-serial) speak one rule: the agent makes its end raw and
writes READY_TOKEN; the host then sends the file's bytes, exactly, and keeps the line
open until stop(). File channels (9p, hostfs) have nothing to feed: the guest reads the
shared file itself.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import select
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

READY_TOKEN = b"gb-upload-ready\n"    # the agent writes it once its end is raw (agent/upload.c)
CHARDEV_ID = "gbupload"               # QEMU's chardev for the stream channels
PORT_NAME = "org.guestbench.upload"   # the virtserialport's name (/sys/class/virtio-ports/*/name)
NINEP_TAG = "gbupload"                # the 9p share's mount tag
MOUNTPOINT = "/upload"                # where file channels appear in the guest
NINEP_MSIZE = 512000                  # 9p bytes per request: the most its virtio transport takes
SERIAL_INDEX = 1                      # ttyS1: COM2 at 0x2f8, IRQ 3; ttyS0 is the console
UML_SERIAL_LINE = 1                   # UML's ssl1, the guest's ttyS1


DEST_NAME = "upload.out"              # the file written on the guest's scratch filesystem
HIGH_FD = 100                         # the VMM's pipe descriptors start here (see PipeFeeder)
SUN_PATH_MAX = 108                    # sizeof(sockaddr_un.sun_path) on Linux

_POLL_S = 0.2  # how often a feeder thread looks whether it was asked to stop


class ChannelError(Exception):
    """This channel cannot be set up for this environment (the run is unsupported or infra)."""


@dataclass(frozen=True)
class GuestMount:
    """A mount the guest's /init makes before it starts the agent.

    On the kernel command line it is one word, ``gb.mount=FSTYPE:SOURCE:MOUNTPOINT:OPTIONS``
    (kernel_word); the /init does ``mkdir -p MOUNTPOINT; mount -t FSTYPE -o OPTIONS SOURCE
    MOUNTPOINT`` (init_command). No field may hold a colon or a space.
    """

    fstype: str
    source: str
    mountpoint: str
    options: str

    def __post_init__(self) -> None:
        for name in ("fstype", "source", "mountpoint", "options"):
            value = getattr(self, name)
            if (not value and name != "options") or any(bad in value for bad in ":\" \n\t"):
                raise ChannelError(f"guest mount {name} {value!r} cannot travel in a gb.mount= "
                                   "word (no colons, spaces or quotes; only options may be empty)")

    def kernel_word(self) -> str:
        return f"gb.mount={self.fstype}:{self.source}:{self.mountpoint}:{self.options}"

    def init_command(self) -> str:
        options = f" -o {self.options}" if self.options else ""
        return (f"/bin/busybox mkdir -p {self.mountpoint} && /bin/busybox mount -t {self.fstype}"
                f"{options} {self.source} {self.mountpoint}")


class Feeder:
    """Pushes the source file into the channel once the guest asks. This one does nothing
    (file channels); start() and stop() may be called in any number and order."""

    def __init__(self) -> None:
        self.sent = 0              # bytes the guest was sent
        self.error: str | None = None
        self.asked = False         # the guest said it was ready

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def describe(self) -> str:
        """One line for a failed run's reason."""
        return "nothing to feed (the guest reads a shared file)"

    def __enter__(self) -> "Feeder":
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


class _StreamFeeder(Feeder):
    """A thread that waits for READY_TOKEN from the guest, then writes the file to it."""

    what = "stream"

    def __init__(self, source: Path) -> None:
        super().__init__()
        self.source = source
        self.size = source.stat().st_size
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        try:
            self._open()
        except OSError as error:
            raise ChannelError(f"host {self.what} feeder: {error.strerror or error}") from None
        self._thread = threading.Thread(target=self._run, name=f"gb-upload-{self.what}",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            if self._thread.is_alive():  # pragma: no cover - every wait in it is bounded
                self.error = self.error or "the feeder thread did not end"
            self._thread = None
        self._close()

    def describe(self) -> str:
        if self.error:
            return f"host {self.what} feeder: {self.error}"
        if not self.asked:
            return f"host {self.what} feeder: the guest never said it was ready"
        return f"host {self.what} feeder: sent {self.sent} of {self.size} bytes"

    # -- for subclasses
    def _open(self) -> None:
        """Makes what the thread needs (called by start(), before the VMM starts)."""

    def _connect(self) -> tuple[int, int] | None:
        """The descriptors to read the guest from and write to it (non-blocking), waiting as
        needed; None once stop() was asked."""
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError

    # -- the thread
    def _run(self) -> None:
        try:
            fds = self._connect()
            if fds is None or not self._await_ready(fds[0]):
                return
            self.asked = True
            self._send(fds[1])
        except OSError as error:
            if not self._stop.is_set():
                self.error = f"{error.strerror or error}"

    def _await_ready(self, fd: int) -> bool:
        seen = b""
        while not self._stop.is_set():
            readable, _, _ = select.select([fd], [], [], _POLL_S)
            if not readable:
                continue
            chunk = os.read(fd, 256)
            if not chunk:  # the VMM ended (or a no_upload run never opened the channel)
                return False
            seen = (seen + chunk)[-4 * len(READY_TOKEN):]
            if READY_TOKEN in seen:
                return True
        return False

    def _send(self, fd: int) -> None:
        with open(self.source, "rb") as file:
            copy = _sendfile
            offset = 0
            while offset < self.size and not self._stop.is_set():
                _, writable, _ = select.select([], [fd], [], _POLL_S)
                if not writable:
                    continue
                try:
                    done = copy(fd, file.fileno(), offset, self.size - offset)
                except BlockingIOError:
                    continue
                except OSError as error:
                    if copy is _sendfile and error.errno in (errno.EINVAL, errno.ENOSYS):
                        copy = _read_write  # a host kernel without sendfile to this kind of file
                        continue
                    raise
                if done == 0:
                    self.error = f"{self.source} ended early"
                    return
                offset += done
                self.sent = offset


def _sendfile(out_fd: int, in_fd: int, offset: int, count: int) -> int:
    return os.sendfile(out_fd, in_fd, offset, count)


def _read_write(out_fd: int, in_fd: int, offset: int, count: int) -> int:
    return os.write(out_fd, os.pread(in_fd, min(count, 1 << 20), offset))


class SocketFeeder(_StreamFeeder):
    """A Unix socket QEMU connects to as a chardev client (``-chardev socket,path=...``).

    It listens from start(), so QEMU, started after, connects at once.
    """

    what = "socket"

    def __init__(self, source: Path, path: Path) -> None:
        super().__init__(source)
        self.path = path
        self._listener: socket.socket | None = None
        self._peer: socket.socket | None = None

    def _open(self) -> None:
        self.path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(str(self.path))
            listener.listen(1)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        self._listener = listener

    def _connect(self) -> tuple[int, int] | None:
        while not self._stop.is_set():
            readable, _, _ = select.select([self._listener], [], [], _POLL_S)
            if readable:
                peer, _ = self._listener.accept()
                peer.setblocking(False)
                self._peer = peer
                return peer.fileno(), peer.fileno()
        return None

    def _close(self) -> None:
        for sock in (self._peer, self._listener):
            if sock is not None:
                sock.close()
        self._peer = self._listener = None
        self.path.unlink(missing_ok=True)


class PipeFeeder(_StreamFeeder):
    """Two host pipes the VMM inherits (UML's ``ssl1=fd:IN,fd:OUT``): the host writes the file
    into one and reads the guest's ready token from the other.

    The pipes exist from construction, since their numbers are on the VMM's command line:
    the VMM must inherit ``pass_fds`` (subprocess's pass_fds), and stop() closes them all,
    also when the guest never started. The inbound pipe is made as large as the host allows
    (1 MiB): UML's line driver stops watching its input once the guest's tty throttles it and
    only reads again when unthrottled, so an input that runs dry mid-transfer stalls the line
    for good (with a host pseudo-terminal, 8 KiB deep, 5 of 6 runs of 16 MiB stalled).
    """

    what = "pipe"

    def __init__(self, source: Path) -> None:
        super().__init__(source)
        self.guest_in, self._host_in = os.pipe()    # the host writes, the VMM reads
        self._host_out, self.guest_out = os.pipe()  # the VMM writes, the host reads
        # High numbers: a VMM that was not given them finds nothing there, rather than one of
        # its own descriptors (UML's ubd pipe is fd 4; writing into it panics UML).
        self.guest_in, self.guest_out = _high_fd(self.guest_in), _high_fd(self.guest_out)
        self._fds: tuple[int, ...] = (self.guest_in, self._host_in, self._host_out,
                                      self.guest_out)
        try:
            fcntl.fcntl(self._host_in, fcntl.F_SETPIPE_SZ, _pipe_max())
        except OSError:  # the user's pipe-user-pages-soft is used up: 64 KiB it is
            pass
        for fd in (self._host_in, self._host_out):
            os.set_blocking(fd, False)

    @property
    def pass_fds(self) -> tuple[int, int]:
        return self.guest_in, self.guest_out

    @property
    def pipe_size(self) -> int:
        return fcntl.fcntl(self._host_in, fcntl.F_GETPIPE_SZ)

    def _open(self) -> None:
        if not self._fds:
            raise OSError(errno.EBADF, "the pipes were closed by an earlier stop()")

    def _connect(self) -> tuple[int, int] | None:
        return self._host_out, self._host_in

    def _close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = ()


class FifoFeeder(_StreamFeeder):
    """Two named pipes the VMM holds open (its descriptors given by the shell that starts it):
    PipeFeeder's rule where the feeder cannot give the VMM a descriptor itself, as inside
    an L1 machine (nested.py). Both are opened read-write, so neither open waits."""

    what = "fifo"

    def __init__(self, source: Path, into_guest: Path, from_guest: Path) -> None:
        super().__init__(source)
        self.paths = (into_guest, from_guest)
        self._fds: tuple[int, ...] = ()

    def _open(self) -> None:
        self._fds = tuple(os.open(path, os.O_RDWR | os.O_NONBLOCK) for path in self.paths)
        try:
            fcntl.fcntl(self._fds[0], fcntl.F_SETPIPE_SZ, _pipe_max())
        except OSError:
            pass

    def _connect(self) -> tuple[int, int] | None:
        return self._fds[1], self._fds[0]

    def _close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = ()


def _high_fd(fd: int) -> int:
    """fd moved to the lowest free number from HIGH_FD up (still close-on-exec)."""
    try:
        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, HIGH_FD)
    except OSError:  # a descriptor limit below HIGH_FD: keep the number it has
        return os.dup(fd)
    finally:
        os.close(fd)


def _pipe_max() -> int:
    try:
        return min(int(Path("/proc/sys/fs/pipe-max-size").read_text()), 1 << 20)
    except (OSError, ValueError):
        return 1 << 20


@dataclass
class ChannelSetup:
    """What one channel needs from the VMM, the guest image, the agent and the host."""

    channel: str
    vmm_args: tuple[str, ...]           # appended to the VMM's command line
    kernel_args: tuple[str, ...]        # appended to the guest kernel's command line
    modules: tuple[str, ...]            # kernel modules the image must load (modprobe names)
    guest_source: str                   # the agent's --source
    mount: GuestMount | None = None     # made by the /init; its word is in kernel_args
    feeder: Feeder = field(default_factory=Feeder)
    pass_fds: tuple[int, ...] = ()      # host descriptors the VMM process must inherit


def agent_options(setup: ChannelSetup, scratch: str = "/scratch") -> list[str]:
    """The options the environment adds to the agent's: where the bytes come from and the
    file they go to on the scratch filesystem (absolute: the upload workload does not chdir)."""
    return ["--source", setup.guest_source, "--dest", f"{scratch}/{DEST_NAME}"]


def check_source(source: Path) -> None:
    if not source.is_file():
        raise ChannelError(f"the upload's source {source} is not a file")


def check_option_value(path: Path, what: str) -> None:
    # QEMU's option syntax: a comma in a value must be doubled; keep paths plain instead
    if "," in str(path):
        raise ChannelError(f"cannot {what} {path} with QEMU: a comma in the path would split "
                           "its option (fix: a folder without commas, e.g. TMPDIR=/tmp)")


def socket_path(workdir: Path) -> Path:
    path = workdir / "upload.sock"
    check_option_value(path, "make a socket at")
    if len(os.fsencode(path)) >= SUN_PATH_MAX:
        raise ChannelError(f"socket path {path} is longer than a Unix socket allows "
                           f"({SUN_PATH_MAX - 1} bytes; fix: a shorter TMPDIR)")
    return path



def feed(argv: list[str]) -> None:
    """A feeder as a program of its own, started beside its VMM by the VMM's shell (inside an
    L1 machine): `feed-socket PATH SOURCE` or `feed-fifo INTO FROM SOURCE`. It ends with the
    VMM (the parent-death signal), saying on stderr what it sent."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt))
    if len(argv) == 3 and argv[0] == "feed-socket":
        feeder: _StreamFeeder = SocketFeeder(Path(argv[2]), Path(argv[1]))
    elif len(argv) == 4 and argv[0] == "feed-fifo":
        feeder = FifoFeeder(Path(argv[3]), Path(argv[1]), Path(argv[2]))
    else:
        print("usage: channels.py feed-socket PATH SOURCE | feed-fifo INTO FROM SOURCE",
              file=sys.stderr)
        return
    try:
        feeder.start()
        said = ""
        while True:  # what it has done so far, should it be killed (its log is all there is)
            time.sleep(2)
            if feeder.describe() != said:
                said = feeder.describe()
                print(said, file=sys.stderr, flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        feeder.stop()
        print(feeder.describe(), file=sys.stderr)


if __name__ == "__main__":
    feed(sys.argv[1:])
