"""The VMM's threads' host CPU over each agent workload of a run: read when the agent's
record says a workload starts, and again when the next one starts or the agent ends; the
difference, per kind of thread, is that workload's threads_cpu_vcpus, _vmm and _io (percent
of one host CPU: process/threads.py).

The readings run on a thread of their own, in order: inside an L1 machine one takes tens of
milliseconds there, and the record loop must stamp each record as it arrives. Each window's
threads, with the class each was counted in, go to the run's vmm-threads.txt."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from pathlib import Path

from guestbench.process import threads
from guestbench.protocol import Record

# a reading's text, and the session whose threads are the VMM's (None: all of them)
Read = Callable[[], tuple[str, int | None]]
JOIN_TIMEOUT_S = 30
LOG = "vmm-threads.txt"


class ThreadWatch:
    def __init__(self, read: Read, classify: threads.Classify, log: Path | None = None) -> None:
        self.read = read
        self.classify = classify
        self.log = log
        self._lines: list[str] = []
        self.by_workload: dict[str, list[tuple[str, str, float]]] = {}
        self.problems: list[str] = []
        self._open: tuple[str, threads.Reading | None] | None = None
        self._queue: queue.Queue[tuple[str, str | None] | None] = queue.Queue()
        self._worker = threading.Thread(target=self._serve, daemon=True,
                                        name="guestbench-thread-cpu")
        self._worker.start()

    def on_record(self, record: Record) -> None:
        if record.type == "workload":
            self._queue.put(("edge", record.body["workload"]))
        elif record.type == "end":
            self._queue.put(("edge", None))

    def finish(self) -> dict[str, list[tuple[str, str, float]]]:
        """Every closed window's samples, by workload, once the readings queued are done."""
        self._queue.put(None)
        self._worker.join(JOIN_TIMEOUT_S)
        if self.log is not None and self.log.parent.exists():
            self.log.write_text("".join(self._lines) + "".join(
                f"a reading failed: {problem}\n" for problem in self.problems))
        return self.by_workload

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            _, workload = item
            reading = self._reading()
            if self._open is not None:
                name, before = self._open
                if before is not None and reading is not None:
                    self._note(name, before, reading)
                    shares = threads.usage(before, reading, self.classify)
                    if shares:
                        self.by_workload[name] = threads.samples(shares)
            self._open = (workload, reading) if workload is not None else None

    def _note(self, name: str, before: threads.Reading, after: threads.Reading) -> None:
        span_ms = (after.at_ns - before.at_ns) / 1e6
        self._lines.append(f"{name}: {span_ms:.1f} ms\n")
        gone = threads.vcpus_gone(before, after, self.classify)
        if gone:
            self._lines.append(f"  no figures: {', '.join(gone)} ended before the window's "
                               "last reading (the VMM was ending)\n")
        self._lines += [f"  {tid:>7} {kind:<5} {ns / 1e6:10.1f} ms  {thread}\n"
                        for tid, thread, kind, ns in threads.used(before, after, self.classify)]

    def _reading(self) -> threads.Reading | None:
        try:
            text, session = self.read()
            return threads.parse(text, session)
        except Exception as error:  # noqa: BLE001 - a reading that failed only loses its figure
            self.problems.append(f"{type(error).__name__}: {error}")
            return None


def watching(environment, guest, job, logdir: Path) -> ThreadWatch | None:
    """A watch over the guest's VMM threads, where the job asks it and its environment
    reads them."""
    reader = environment.thread_reader(guest) if job.read_threads else None
    return ThreadWatch(*reader, logdir / LOG) if reader is not None else None


def add(outcome, by_workload: dict[str, list[tuple[str, str, float]]], name: str) -> None:
    """An ok outcome gets its workload's window's figures (none if it was never closed)."""
    if outcome.status == "ok":
        outcome.samples += by_workload.get(name, [])
