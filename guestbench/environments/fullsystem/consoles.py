"""Where a VMM puts its guest's console, and how the host reads it line by line.

    stdio  the VMM's standard output (QEMU -serial stdio, Firecracker, kvmtool, xl create -c)
    file   a file the VMM writes at {console_path} (Cloud Hypervisor --serial file=...)
    unix   a Unix socket the VMM listens on at {console_path} (QEMU -serial unix:...,server)
    pty    a pseudo-terminal guestbench opens; the VMM is given its path as {console_path}

Every line is timestamped on arrival, as stdio lines are (proc.Process), and every byte is
kept in the run's console.log (stdio's stay in stdout.log).
"""

from __future__ import annotations

import errno
import os
import socket
import time
import tty
from collections.abc import Callable, Iterator
from pathlib import Path

from guestbench.process import proc

POLL_S = 0.01  # how often a file or a not-yet-open console is looked at
CONSOLE_LOG = "console.log"


class Console:
    """stdio: the VMM's standard output is the console."""

    kind = "stdio"
    stdout_to_log = False  # the VMM's stdout is read here, not only logged

    def __init__(self, workdir: Path, logdir: Path) -> None:
        self.workdir, self.logdir = workdir, logdir
        self.path: Path | None = None  # what {console_path} becomes
        self.first_byte_ns: int | None = None

    def lines(self, process: proc.Process, deadline: Callable[[], int]
              ) -> Iterator[tuple[int, bytes]]:
        for arrival_ns, line in process.lines(deadline):
            if self.first_byte_ns is None:
                self.first_byte_ns = process.first_byte_ns
            yield arrival_ns, line

    def close(self) -> None:
        pass


class _ReadConsole(Console):
    """A console read from a descriptor the VMM's output reaches; ends when the VMM exits."""

    stdout_to_log = True

    def __init__(self, workdir: Path, logdir: Path) -> None:
        super().__init__(workdir, logdir)
        self.fd: int | None = None
        logdir.mkdir(parents=True, exist_ok=True)
        self._log = open(logdir / CONSOLE_LOG, "ab")

    def _open(self) -> int | None:
        """The descriptor to read, or None while the VMM has not made it yet."""
        raise NotImplementedError

    def _read(self) -> bytes | None:
        """Bytes now; b"" at the end; None when there is nothing yet."""
        try:
            chunk = os.read(self.fd, 65536)
        except BlockingIOError:
            return None
        return chunk

    def lines(self, process, deadline):
        pending = b""
        while True:
            if proc.now_ns() >= deadline():
                raise proc.DeadlineExceeded("deadline passed")
            exited = process.poll() is not None
            if self.fd is None:
                self.fd = self._open()
            chunk = self._read() if self.fd is not None else None
            if not chunk:
                if chunk == b"" or exited:
                    break  # the end of the console, or a VMM gone with nothing more to say
                time.sleep(POLL_S)
                continue
            arrival_ns = proc.now_ns()
            if self.first_byte_ns is None:
                self.first_byte_ns = arrival_ns
            self._log.write(chunk)
            self._log.flush()
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                yield arrival_ns, line.rstrip(b"\r")
        if pending:
            yield proc.now_ns(), pending

    def close(self) -> None:
        """Safe to call again."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self._log.close()


class FileConsole(_ReadConsole):
    """A file the VMM writes; read as it grows, ended when the VMM has exited."""

    kind = "file"

    def __init__(self, workdir: Path, logdir: Path) -> None:
        super().__init__(workdir, logdir)
        self.path = workdir / "console.out"

    def _open(self) -> int | None:
        try:
            return os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            return None

    def _read(self) -> bytes | None:
        return os.read(self.fd, 65536) or None  # a file's end is no end while the VMM lives


class UnixConsole(_ReadConsole):
    """A Unix socket the VMM listens on; guestbench connects once it is there."""

    kind = "unix"

    def __init__(self, workdir: Path, logdir: Path) -> None:
        super().__init__(workdir, logdir)
        self.path = workdir / "console.sock"
        self._socket: socket.socket | None = None

    def _open(self) -> int | None:
        if not self.path.exists():
            return None
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            connection.connect(str(self.path))
        except OSError:
            connection.close()
            return None
        connection.setblocking(False)
        self._socket = connection
        return connection.fileno()

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None
            self.fd = None
        super().close()


class PtyConsole(_ReadConsole):
    """A pseudo-terminal made here, raw; the VMM opens its other end by path."""

    kind = "pty"

    def __init__(self, workdir: Path, logdir: Path) -> None:
        super().__init__(workdir, logdir)
        master, follower = os.openpty()
        tty.setraw(follower)  # no echo, no CR-LF translation: the bytes as the guest sent them
        self.path = Path(os.ttyname(follower))
        os.set_blocking(master, False)
        self._master, self._follower = master, follower

    def _open(self) -> int | None:
        return self._master

    def _read(self) -> bytes | None:
        if self._follower is not None:  # the VMM is started: its own open end is what counts
            os.close(self._follower)
            self._follower = None
        try:
            return os.read(self._master, 65536) or None
        except BlockingIOError:
            return None
        except OSError as error:
            if error.errno == errno.EIO:  # no process holds the other end (yet, or any more)
                return None
            raise

    def close(self) -> None:
        if self._follower is not None:
            os.close(self._follower)
            self._follower = None
        super().close()


CONSOLES: dict[str, type[Console]] = {
    c.kind: c for c in (Console, FileConsole, UnixConsole, PtyConsole)}
