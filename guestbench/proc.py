"""The one way guestbench starts processes: argv lists, deadlines, process-group kill, logs."""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path


class ProcessError(Exception):
    """A process could not be started (binary missing, permission denied)."""


class DeadlineExceeded(Exception):
    """A process did not finish before its deadline; it has been killed."""


class ExitTimeout(DeadlineExceeded):
    """A process closed its output but did not exit within the grace period."""


@dataclass(frozen=True)
class Completed:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    seconds: float


# Every process group started through this module and not yet reaped, so that
# an interrupted campaign can end them all (by id, never by name).
_live: dict[int, "Process"] = {}


def kill_all() -> None:
    """End every process group this module started that is still alive."""
    for process in list(_live.values()):
        process.kill()


# A signal handler's exception (Ctrl-C, SIGTERM) raised while Popen has forked a child but
# not yet returned, or before the child is in _live, would leave that child running with
# nobody holding its pid. interrupt() holds such an exception until the child is known.
_starting = 0
_held: list[BaseException] = []


def interrupt(error: BaseException) -> None:
    """For signal handlers: raise error now, or, while a child is being started, as soon as
    it is registered (so that kill_all() can end it)."""
    if _starting:
        _held.append(error)
        return
    raise error


@contextlib.contextmanager
def _starting_child() -> Iterator[None]:
    global _starting
    _starting += 1
    try:
        yield
    finally:
        _starting -= 1
        if not _starting and _held:
            error = _held[0]
            _held.clear()
            raise error


def now_ns() -> int:
    """The host's monotonic clock, the one every arrival timestamp uses."""
    return time.monotonic_ns()


def run(argv: list[str], timeout_s: float, cwd: Path | None = None,
        env: dict[str, str] | None = None, stdin_data: str | None = None) -> Completed:
    """Run a short command to completion and capture its output.

    Raises ProcessError if it cannot start and DeadlineExceeded (after killing
    its whole process group) if it outlives timeout_s.
    """
    start = time.monotonic()
    child = None
    try:
        with _starting_child():
            try:
                child = subprocess.Popen(
                    argv, cwd=cwd, env=env, text=True, start_new_session=True,
                    stdin=subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            except OSError as error:
                raise ProcessError(f"cannot start {argv[0]}: {error.strerror}") from error
        out, err = child.communicate(stdin_data, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(child.pid)
        child.communicate()
        raise DeadlineExceeded(f"{argv[0]} did not finish within {timeout_s:g} s") from None
    except BaseException:
        if child is not None:
            _kill_group(child.pid)
            child.communicate()
        raise
    return Completed(tuple(argv), child.returncode, out, err, time.monotonic() - start)


def signal_group(pgid: int, signum: int) -> None:
    """Send a signal to a process group this module started; gone already is fine."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class Process:
    """A long-running child in its own session, its stdout read line by line.

    Every stdout byte is appended to ``stdout_log`` as it arrives and stderr
    goes straight to ``stderr_log``, so a run's logs survive a crash or a kill.
    """

    def __init__(self, argv: list[str], stdout_log: Path, stderr_log: Path,
                 cwd: Path | None = None, env: dict[str, str] | None = None,
                 pass_fds: tuple[int, ...] = (), stdout_to_log: bool = False) -> None:
        """stdout_to_log: stdout goes straight to its log, unread (a VMM whose console is
        elsewhere); lines() then has nothing to give."""
        self.argv = argv
        # "x": a run's logs are its own; an existing file means two runs share a folder
        self._stdout_log = open(stdout_log, "xb")
        self._stderr_log = open(stderr_log, "xb")
        self.started_ns = now_ns()
        self.first_byte_ns: int | None = None
        with _starting_child():  # a Ctrl-C now waits until the child is in _live
            try:
                self._child = subprocess.Popen(
                    argv, cwd=cwd, env=env, start_new_session=True, pass_fds=pass_fds,
                    stdin=subprocess.DEVNULL,
                    stdout=self._stdout_log if stdout_to_log else subprocess.PIPE,
                    stderr=self._stderr_log)
            except OSError as error:
                self._close_logs()
                raise ProcessError(f"cannot start {argv[0]}: {error.strerror}") from error
            self.pid = self._child.pid
            _live[self.pid] = self

    def lines(self, deadline_ns: int | Callable[[], int]) -> Iterator[tuple[int, bytes]]:
        """Yield (host_arrival_ns, line) for each stdout line until EOF.

        The deadline may be a function, asked again after every read, so a
        caller can move it (a boot deadline that gives way to the run's).
        Raises DeadlineExceeded when the deadline passes first.
        """
        deadline = deadline_ns if callable(deadline_ns) else (lambda: deadline_ns)
        fd = self._child.stdout.fileno()
        os.set_blocking(fd, False)
        pending = b""
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while True:
                remaining_s = (deadline() - now_ns()) / 1e9
                if remaining_s <= 0:
                    raise DeadlineExceeded("deadline passed")
                if not selector.select(timeout=min(remaining_s, 1.0)):
                    continue
                chunk = os.read(fd, 65536)
                arrival_ns = now_ns()
                if not chunk:
                    break
                if self.first_byte_ns is None:
                    self.first_byte_ns = arrival_ns
                self._stdout_log.write(chunk)
                self._stdout_log.flush()
                pending += chunk
                *complete, pending = pending.split(b"\n")
                for line in complete:
                    yield arrival_ns, line
        if pending:
            yield now_ns(), pending

    def wait(self, timeout_s: float) -> int | None:
        """The exit status, or None if it is still running after timeout_s."""
        try:
            return self._child.wait(timeout=max(timeout_s, 0.0))
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """Kill the whole process group and reap the child; safe to call twice."""
        _kill_group(self.pid)
        try:
            self._child.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process in D state
            pass
        if self._child.stdout is not None:
            self._child.stdout.close()
        self._close_logs()
        _live.pop(self.pid, None)

    @property
    def returncode(self) -> int | None:
        return self._child.returncode

    def poll(self) -> int | None:
        """The exit status if it has exited by now (reaps it), else None."""
        return self._child.poll()

    def _close_logs(self) -> None:
        self._stdout_log.close()
        self._stderr_log.close()


def identity(pid: int | None = None) -> dict[str, object]:
    """Who a process is, beyond its pid (which the kernel reuses): this host's name, the pid,
    and the process's start time in clock ticks since boot (/proc/PID/stat, field 22)."""
    pid = os.getpid() if pid is None else pid
    return {"hostname": os.uname().nodename, "pid": pid, "started": _start_ticks(pid)}


def still_running(owner: dict[str, object] | None) -> bool | None:
    """Is the process an identity() names still running? None when it cannot be told from
    here (another host, or no identity recorded)."""
    if not owner or owner.get("hostname") != os.uname().nodename:
        return None
    pid = owner.get("pid")
    return isinstance(pid, int) and _start_ticks(pid) == owner.get("started") is not None


def _start_ticks(pid: int) -> int | None:
    """The process's start time, or None if there is no such process or it has exited (a
    zombie that nobody reaped: under a PID 1 that does not reap, it stays)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # after the command: field 3, the state, first
    return None if fields[0] in ("Z", "X") else int(fields[19])


PARENT_ENV = "GUESTBENCH_PARENT_PID"  # set by a pool worker for the guestbench it starts


def die_with_parent() -> None:
    """In a guestbench that a pool worker started (PARENT_ENV names the worker): SIGTERM
    when the worker dies, however it dies, so that the campaign is interrupted cleanly
    (its guests stopped, the campaign marked) and can be resumed. The worker's thread that
    started this process waits for it, so the signal never comes while the worker lives."""
    parent = os.environ.pop(PARENT_ENV, None)
    if not parent:
        return
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != int(parent):  # the worker died before the line above
        os.kill(os.getpid(), signal.SIGTERM)

