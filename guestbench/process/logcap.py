"""A run's log file with a bound: the first half of the cap is written as it arrives, the
last half is kept in memory and written at the end, after a line that says how many bytes
were dropped between them. A program that writes without end fills neither the disk nor
the memory, and the log still shows how its output began and how it ended."""

from __future__ import annotations

import io
import threading
from collections import deque
from pathlib import Path
from typing import BinaryIO

DEFAULT_CAP_MIB = 64
MARKER = "\n[guestbench: {dropped} bytes dropped here: the log keeps its first and last {half}]\n"


class CappedLog:
    """A run's log file (path), or, with path None, the same bound in memory: a short
    command's captured output (proc.run), read back with value() once closed."""

    def __init__(self, path: Path | None, cap_bytes: int) -> None:
        self.path = path
        # a run's logs are its own
        self._file: BinaryIO = open(path, "xb") if path is not None else io.BytesIO()
        self._half = max(cap_bytes // 2, 1)
        self._head_left = self._half
        self._tail: deque[bytes] = deque()
        self._tail_bytes = 0
        self.dropped = 0
        self.closed = False

    def write(self, data: bytes) -> None:
        if self._head_left > 0:
            head = data[:self._head_left]
            self._file.write(head)
            self._file.flush()
            self._head_left -= len(head)
            data = data[len(head):]
        if not data:
            return
        self._tail.append(data)
        self._tail_bytes += len(data)
        while self._tail_bytes > self._half:  # drop from the tail's front, whole or in part
            excess = self._tail_bytes - self._half
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                self._tail_bytes -= len(first)
                self.dropped += len(first)
            else:
                self._tail[0] = first[excess:]
                self._tail_bytes -= excess
                self.dropped += excess

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.dropped:
            half = (f"{self._half >> 20} MiB" if self._half % (1 << 20) == 0
                    else f"{self._half} bytes")
            self._file.write(MARKER.format(dropped=self.dropped, half=half).encode())
        for chunk in self._tail:
            self._file.write(chunk)
        self._tail.clear()
        if self.path is not None:
            self._file.close()

    def value(self) -> bytes:
        """What an in-memory log kept, marker included (after close)."""
        assert isinstance(self._file, io.BytesIO) and self.closed
        return self._file.getvalue()


class Pump(threading.Thread):
    """A thread copying `source` into a log until the pipe closes; it closes `source` then
    (a pipe its owner left open because this thread still read it)."""

    source: BinaryIO


def pump(source: BinaryIO, log: CappedLog) -> Pump:
    """Copy a pipe into a capped log on a thread of its own, until the pipe closes."""
    def copy() -> None:
        try:
            while chunk := source.read1(65536):
                log.write(chunk)
        except (OSError, ValueError):  # closed under us at teardown, or the log was
            pass
        finally:
            try:
                source.close()
            except OSError:
                pass
    name = f"log {log.path.name}" if log.path is not None else "capture"
    thread = Pump(target=copy, name=name, daemon=True)
    thread.source = source
    thread.start()
    return thread
