"""One piece of work done in a forked child while the parent does another.

compare reads and groups its two campaigns; each takes 0.4 s of Python (two campaigns
of 500,000 samples), most of it holding the interpreter's lock, so threads do not
overlap them but two processes do. The child:

- is forked, so it starts with the parent's memory and imports (no start-up cost);
- dies with the parent (PR_SET_PDEATHSIG), however the parent dies;
- sends back its result, or the exception it raised, pickled through a pipe;
- is killed and reaped by the parent if the parent leaves the `with` block first.

On a host with a single CPU, or where fork is not possible, the work runs in the
parent when the result is asked for.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pickle
import signal
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")
_PR_SET_PDEATHSIG = 1


class ChildFailed(Exception):
    """The child ended without a result: killed, or its result could not be sent."""


class _Pending(Generic[T]):
    def __init__(self, work: Callable[[], T]) -> None:
        self.work = work
        self.pid: int | None = None
        self.pipe: int | None = None

    def start(self) -> None:
        reader, writer = os.pipe()
        parent = os.getpid()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the parent's code
            _child(self.work, parent, reader, writer)
        os.close(writer)
        self.pid, self.pipe = pid, reader

    def result(self) -> T:
        if self.pid is None:
            return self.work()
        with os.fdopen(self.pipe, "rb") as pipe:
            self.pipe = None
            payload = pipe.read()
        _, status = os.waitpid(self.pid, 0)
        self.pid = None
        if not payload:
            raise ChildFailed(f"the child reading beside this one ended without a result "
                              f"(wait status {status})")
        ok, value = pickle.loads(payload)
        if ok:
            return value
        raise value

    def end(self) -> None:
        """Kill and reap a child whose result was never asked for."""
        if self.pipe is not None:
            os.close(self.pipe)
            self.pipe = None
        if self.pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = None


@contextlib.contextmanager
def beside(work: Callable[[], T]) -> Iterator[Callable[[], T]]:
    """Start work() in a child now; the block gets a function that waits for its result.
    work must not use the parent's open connections (dispose of an engine's pool first)."""
    pending = _Pending(work)
    if _cpus() > 1:
        with contextlib.suppress(OSError):
            pending.start()
    try:
        yield pending.result
    finally:
        pending.end()


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _child(work: Callable[[], object], parent: int, reader: int, writer: int) -> None:
    status = 1
    try:
        os.close(reader)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the line above
            return
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C ends the parent; the child too
        try:
            payload = pickle.dumps((True, work()), protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException as error:  # noqa: BLE001 - handed to the parent, which raises it
            try:
                payload = pickle.dumps((False, error), protocol=pickle.HIGHEST_PROTOCOL)
            except Exception:  # noqa: BLE001 - an exception that cannot be pickled
                payload = pickle.dumps((False, ChildFailed(f"{type(error).__name__}: {error}")))
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(payload)
        status = 0
    finally:
        os._exit(status)  # no atexit handlers, no flush of the parent's buffered output
