"""The one way guestbench starts processes: argv lists, deadlines, process-group kill, logs."""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import selectors
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from guestbench.process import gate, logcap, reaper
from guestbench.process.identity import identity, still_running  # noqa: F401 - callers use proc.*


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

    def said(self, limit: int = 200) -> str:
        """The line of stderr that says what went wrong (decisive())."""
        return decisive(self.stderr, limit)


# Words of a line that says what went wrong, as programs print it before their usage text
# or after their log's prefix ("flag provided but not defined: -bogus-flag", then runsc's
# usage, which ends 'Use "runsc flags" for a list of top-level flags').
_DECISIVE = re.compile(r"error|fatal|fail|not defined|not supported|cannot|can't|invalid|"
                       r"unknown|denied|no such|not permitted|refus", re.IGNORECASE)


def decisive(text: str, limit: int = 200) -> str:
    """The first line of a program's message that says what went wrong, else its last line;
    at most limit characters."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no message"
    return next((line for line in lines if _DECISIVE.search(line)), lines[-1])[:limit]


# Every process group started through this module and not yet reaped, so that
# an interrupted campaign can end them all (by id, never by name).
_live: dict[int, "Process"] = {}


# Each run's stdout and stderr logs keep at most this much (head and tail; logcap.py).
LOG_CAP_BYTES = logcap.DEFAULT_CAP_MIB << 20
PUMP_JOIN_S = 5.0  # how long kill() waits for a log's pipe to end once the group is dead
MAX_LINE_BYTES = 1 << 20  # a record is a short line; a longer one is cut here


def _cannot_exec(program: str, env: dict[str, str] | None, cwd: Path | None) -> str | None:
    """Why execvp could not start program, or None if it could."""
    if "/" in program:
        path = Path(cwd or ".", program) if not program.startswith("/") else Path(program)
        if not path.exists():
            return os.strerror(2)
        return None if os.access(path, os.X_OK) and path.is_file() else os.strerror(13)
    search = (env or os.environ).get("PATH", os.defpath)
    return None if shutil.which(program, path=search) else os.strerror(2)


def _spawn(argv: list[str], cwd: Path | None, env: dict[str, str] | None, gated: bool,
           stdin_pipe: bool = False, **popen: object) -> subprocess.Popen:
    """Popen in a session of its own, stdout and stderr piped; gated (for a child that
    lives on): behind the gate (gate.py), which gate.open_gate() opens. ProcessError, in
    Popen's words, when argv[0] cannot start."""
    prefix = gate.prefix(stdin_pipe) if gated else []
    missing = _cannot_exec(argv[0], env, cwd) if prefix else None
    if missing:  # the gate would start, then fail to exec it: say so as Popen would
        raise ProcessError(f"cannot start {argv[0]}: {missing}")
    stdin = subprocess.PIPE if gated or stdin_pipe else subprocess.DEVNULL
    try:
        return subprocess.Popen([*prefix, *argv], cwd=cwd, env=env, stdin=stdin,
                                start_new_session=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, **popen)
    except OSError as error:
        raise ProcessError(f"cannot start {argv[0]}: {error.strerror}") from error


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

    Each of stdout and stderr keeps at most LOG_CAP_BYTES, head and tail with the run
    logs' marker between them (logcap.py): a program that prints without end (a probe's
    `--version` of the wrong binary) costs its timeout, not the host's memory. Output
    that is not UTF-8 is kept with replacement characters. Raises ProcessError if it
    cannot start and DeadlineExceeded (after killing its whole process group) if it
    outlives timeout_s.

    Once it has exited, its process group is killed too: whatever it started and left
    behind (a version command's `sleep 300 &`) ends with it, rather than outlive
    guestbench, whose reaper forgets the group here. No caller runs a command here that
    must leave a process running: what lives on (a guest, `runc create`'s container) is a
    Process, whose group lives until its kill(). A process that left the group (setsid)
    is beyond this.
    """
    start = time.monotonic()
    child = None
    pumps: list[threading.Thread] = []
    out, err = logcap.CappedLog(None, LOG_CAP_BYTES), logcap.CappedLog(None, LOG_CAP_BYTES)
    try:
        with _starting_child():
            child = _spawn(argv, cwd, env, gated=False, stdin_pipe=stdin_data is not None)
            reaper.KEEPER.group(child.pid)  # a kill -9 of guestbench ends its whole group
        pumps = [logcap.pump(child.stdout, out), logcap.pump(child.stderr, err)]
        if stdin_data is not None:
            pumps.append(_feed(child.stdin, stdin_data.encode()))
        _exited(child, timeout_s)
        _kill_group(child.pid)  # its number is still its own: its zombie holds it
        child.wait()
        for pump in pumps:  # the pipes end with the group; a daemon keeping them is a hang
            pump.join(max(start + timeout_s - time.monotonic(), 0))
            if pump.is_alive():
                raise subprocess.TimeoutExpired(argv, timeout_s)
    except subprocess.TimeoutExpired:
        _kill_group(child.pid)
        child.wait()
        raise DeadlineExceeded(f"{argv[0]} did not finish within {timeout_s:g} s") from None
    except BaseException:
        if child is not None:
            _kill_group(child.pid)
            child.wait()
        raise
    finally:
        if child is not None:  # a pipe still being read (held by a daemon) is left to it
            for pipe, pump in zip((child.stdout, child.stderr), pumps):
                if not pump.is_alive():
                    pipe.close()
            if child.returncode is not None:  # reaped: its group number is free again
                reaper.KEEPER.group_ended(child.pid)
    out.close()
    err.close()
    return Completed(tuple(argv), child.returncode, _text(out.value()), _text(err.value()),
                     time.monotonic() - start)


def _exited(child: subprocess.Popen, timeout_s: float) -> None:
    """Wait until child has exited, leaving it unreaped (a zombie): until child.wait() reaps
    it, its pid, and with it its process group's number, cannot be given to another
    process, so that a kill of the group reaches only what it started.
    subprocess.TimeoutExpired after timeout_s."""
    deadline = time.monotonic() + timeout_s
    pause_s = 0.0005  # as Popen.wait polls
    while True:
        try:
            if os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT):
                return
        except ChildProcessError:  # reaped already
            return
        left_s = deadline - time.monotonic()
        if left_s <= 0:
            raise subprocess.TimeoutExpired(child.args, timeout_s)
        time.sleep(min(pause_s, left_s))
        pause_s = min(pause_s * 2, 0.05)


def _feed(pipe, data: bytes) -> threading.Thread:
    """Write data to a child's stdin and close it, on a thread: a child that does not read
    it blocks the thread, not the deadline."""
    def write() -> None:
        try:
            pipe.write(data)
            pipe.close()
        except (OSError, ValueError):  # it exited or closed its stdin first
            pass
    thread = threading.Thread(target=write, name="stdin", daemon=True)
    thread.start()
    return thread


def _text(data: bytes) -> str:
    """Captured output as text mode gave it: decoded, line ends made \\n."""
    return data.decode(errors="replace").replace("\r\n", "\n").replace("\r", "\n")


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

    Its stdout and stderr go to ``stdout_log`` and ``stderr_log`` as they arrive (stderr,
    and stdout when nobody reads it, through a thread each), so a run's logs survive a
    crash; each log keeps at most LOG_CAP_BYTES, its head as it comes and its tail at
    the end (logcap.py).
    """

    def __init__(self, argv: list[str], stdout_log: Path, stderr_log: Path,
                 cwd: Path | None = None, env: dict[str, str] | None = None,
                 pass_fds: tuple[int, ...] = (), stdout_to_log: bool = False,
                 stdin_pipe: bool = False) -> None:
        """stdout_to_log: stdout goes straight to its log, unread (a VMM whose console is
        elsewhere); lines() then has nothing to give. stdin_pipe: its stdin is a pipe that
        send() writes to (else /dev/null)."""
        self.argv = argv
        # "x": a run's logs are its own; an existing file means two runs share a folder
        self._stdout_log = logcap.CappedLog(stdout_log, LOG_CAP_BYTES)
        self._stderr_log = logcap.CappedLog(stderr_log, LOG_CAP_BYTES)
        self._pumps: list = []
        self.first_byte_ns: int | None = None
        with _starting_child():  # a Ctrl-C now waits until the child is in _live
            try:
                self._child = _spawn(argv, cwd, env, gated=True, stdin_pipe=stdin_pipe,
                                     pass_fds=pass_fds)
            except ProcessError:
                self._close_logs()
                raise
            self.pid = self._child.pid
            _live[self.pid] = self
            try:
                reaper.KEEPER.group(self.pid)  # its process group ends with us, however we end
            except BaseException:
                gate.close_gate(self._child.stdin)
                raise
            self.started_ns = now_ns()  # the program starts now, past the gate
            gate.open_gate(self._child.stdin, stdin_pipe)
            if not stdin_pipe:
                self._child.stdin = None
            self._pumps.append(logcap.pump(self._child.stderr, self._stderr_log))
            if stdout_to_log:  # nobody reads it: it goes to its log as it comes
                self._pumps.append(logcap.pump(self._child.stdout, self._stdout_log))

    def lines(self, deadline_ns: int | Callable[[], int]) -> Iterator[tuple[int, bytes]]:
        """Yield (host_arrival_ns, line) for each stdout line until EOF.

        The deadline may be a function, asked again after every read, so a
        caller can move it (a boot deadline that gives way to the run's).
        Raises DeadlineExceeded when the deadline passes first.
        """
        deadline = deadline_ns if callable(deadline_ns) else (lambda: deadline_ns)
        fd = self._child.stdout.fileno()
        os.set_blocking(fd, False)
        pending = bytearray()  # a line's start; scanned once, however long (linear time)
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
                start = 0
                while (end := chunk.find(b"\n", start)) >= 0:
                    if pending:
                        pending += chunk[start:end]
                        line = bytes(pending)
                        pending.clear()
                    else:
                        line = chunk[start:end]
                    yield arrival_ns, line
                    start = end + 1
                if len(pending) < MAX_LINE_BYTES:  # beyond, a line is no record: cut short
                    pending += chunk[start:start + MAX_LINE_BYTES - len(pending)]
        if pending:
            yield now_ns(), bytes(pending)

    def wait(self, timeout_s: float) -> int | None:
        """The exit status, or None if it is still running after timeout_s."""
        try:
            return self._child.wait(timeout=max(timeout_s, 0.0))
        except subprocess.TimeoutExpired:
            return None

    def send(self, data: bytes) -> None:
        """Writes data to its stdin (made with stdin_pipe); OSError if it has closed it."""
        if self._child.stdin is None:
            raise OSError("its standard input is not a pipe")
        self._child.stdin.write(data)
        self._child.stdin.flush()

    def kill(self) -> None:
        """Kill the whole process group and reap the child; safe to call twice."""
        _kill_group(self.pid)
        try:
            self._child.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process in D state
            pass
        for pump in self._pumps:  # the group is dead: its pipes end
            pump.join(PUMP_JOIN_S)
        # A pipe whose pump still reads is held open by a process outside the group (a
        # container's init that outlived a runc cut short, which the kind's teardown ends
        # next): closing it here would wait for that read forever (a buffered reader's
        # close takes the lock its read holds). Its pump closes it when the read ends.
        reading = {pump.source for pump in self._pumps if pump.is_alive()}
        for pipe in (self._child.stdin, self._child.stdout, self._child.stderr):
            if pipe is not None and pipe not in reading:
                try:
                    pipe.close()
                except OSError:  # stdin: the reader went first, with bytes unflushed
                    pass
        self._close_logs()
        if _live.pop(self.pid, None) is not None:
            reaper.KEEPER.group_ended(self.pid)

    @property
    def returncode(self) -> int | None:
        return self._child.returncode

    def poll(self) -> int | None:
        """The exit status if it has exited by now (reaps it), else None."""
        return self._child.poll()

    def _close_logs(self) -> None:
        self._stdout_log.close()
        self._stderr_log.close()

    @property
    def log_overflow(self) -> int:
        """Bytes of output dropped from the middle of the logs (logcap.py); 0 if none."""
        return self._stdout_log.dropped + self._stderr_log.dropped


PARENT_ENV = "GUESTBENCH_PARENT_PID"  # set by a pool worker for the guestbench it starts


def die_with_parent() -> None:
    """In a guestbench that a pool worker started (PARENT_ENV names the worker): SIGTERM
    when the worker dies, however it dies, so that the campaign is interrupted cleanly
    (its guests stopped, the campaign marked) and can be resumed. The worker's thread that
    started this process waits for it, so the signal never comes while the worker lives."""
    parent = os.environ.pop(PARENT_ENV, None)
    if not parent:
        return
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() != int(parent):  # the worker died before the line above
        os.kill(os.getpid(), signal.SIGTERM)

