"""The progress of a campaign on stderr: a rich bar with the runner's ETA on a terminal, a
line a minute where stderr is not one (a CI log, nohup), or, when quiet, only the host's
warnings."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator

from guestbench.runner.campaign import Progress

REASON_CHARS = 400  # a reason longer than this is cut; report --detail shows it whole


class Quiet(Progress):
    """No bar; a warning that the host may make results noisy is still said."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say

    def host_warning(self, message: str) -> None:
        self.say(f"guestbench: warning: {message}")


def problem_line(environment: str, label: str, outcome) -> str:
    """A run that did not end ok, in one line, its reason whole up to REASON_CHARS."""
    reason = " ".join(outcome.reason.split())  # whole: it ends with the fix
    if len(reason) > REASON_CHARS:
        reason = reason[:REASON_CHARS] + " ... (the whole reason: report --detail)"
    return f"{environment} {label}: {outcome.status}: {reason}"


def clock(seconds: float) -> str:
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


class Lines(Progress):
    """Where stderr is no terminal: what the bar would print above itself, and a line of
    progress every LINE_EVERY_S at least, with the ETA: as a run ends once a minute has
    passed since the last line, as the last run ends, and from beat() (a ticking thread:
    ticking()) while one run lasts longer, naming the run and how long it has taken."""

    LINE_EVERY_S = 60.0

    def __init__(self, say: Callable[[str], None], now: Callable[[], float] = time.monotonic
                 ) -> None:
        self.say, self.now = say, now
        self.total = self.done = 0
        self.eta = "-:--:--"
        self.last = "-"
        self.began = self.last_line = now()
        self.said: set[tuple[str, str, str]] = set()
        self.running: tuple[str, float] | None = None  # the run under way, and since when
        self.started = False
        self._lock = threading.Lock()  # beat() comes from another thread

    def unavailable(self, environment: str, reason: str) -> None:
        self.say(f"{environment}: unavailable: {reason}")

    def preparing(self, environment: str) -> None:
        self.say(f"{environment}: preparing (guest image, checks)")

    def host_warning(self, message: str) -> None:
        self.say(f"guestbench: warning: {message}")

    def expected(self, lines: list[str]) -> None:
        for line in lines:
            self.say(line)

    def start(self, total_runs: int) -> None:
        with self._lock:
            self.total = total_runs
            self.began = self.last_line = self.now()
            self.started = True

    def total_changed(self, total_runs: int) -> None:
        self.total = total_runs

    def estimate(self, seconds_left: float) -> None:
        with self._lock:
            first = self.eta.startswith("-")
            self.eta = f"~{clock(seconds_left)}"
            if first and self.done < self.total:  # the first estimate: the campaign's length
                self._line()

    def run_started(self, environment: str, label: str, repetition: int) -> None:
        with self._lock:
            self.running = (f"{environment} {label}", self.now())

    def run_finished(self, environment: str, label: str, outcome) -> None:
        with self._lock:
            self.done += 1
            self.last = f"{environment} {label}"
            self.running = None
            said = (environment, label, outcome.status)
            if outcome.status not in ("ok", "unavailable") and said not in self.said:
                self.said.add(said)
                self.say(problem_line(environment, label, outcome))
            if self.now() - self.last_line >= self.LINE_EVERY_S or self.done == self.total:
                self._line()

    def beat(self) -> None:
        """A line if a minute has passed since the last one while the campaign runs (a run,
        or the preparing of the next, lasting longer than that)."""
        with self._lock:
            if (self.started and self.done < self.total
                    and self.now() - self.last_line >= self.LINE_EVERY_S - TICK_S):
                self._line()  # a tick early rather than late: never more than a minute apart

    def _line(self) -> None:
        now = self.last_line = self.now()
        doing = f"last {self.last}"
        if self.running is not None:
            name, since = self.running
            doing = f"running {name} ({clock(now - since)} so far)"
        self.say(f"guestbench: progress: {self.done}/{self.total} runs, {doing}, "
                 f"{clock(now - self.began)} elapsed, ETA {self.eta}")


TICK_S = 1.0  # how often the ticking thread asks Lines.beat()


@contextlib.contextmanager
def ticking(lines: Lines, every_s: float = TICK_S) -> Iterator[Lines]:
    """lines.beat() every every_s from a thread of its own while inside; the thread ends
    with the block, however it ends."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every_s):
            lines.beat()
    thread = threading.Thread(target=tick, name="guestbench-progress", daemon=True)
    thread.start()
    try:
        yield lines
    finally:
        stop.set()
        thread.join()


class Drawn(Progress):
    """Runs counted on the bar, each environment's unavailability and each run that did not
    end ok printed above it."""

    def __init__(self, bar) -> None:
        self.bar = bar
        self.task = None
        self.said: set[tuple[str, str, str]] = set()

    def _print(self, line: str) -> None:
        self.bar.console.print(line, markup=False, highlight=False)

    def unavailable(self, environment: str, reason: str) -> None:
        self._print(f"{environment}: unavailable: {reason}")

    def preparing(self, environment: str) -> None:
        self._print(f"{environment}: preparing (guest image, checks)")

    def start(self, total_runs: int) -> None:
        self.task = self.bar.add_task("starting", total=total_runs, eta="-:--:--")

    def total_changed(self, total_runs: int) -> None:
        self.bar.update(self.task, total=total_runs)  # an early stop shortens the ETA

    def estimate(self, seconds_left: float) -> None:
        self.bar.update(self.task, eta=f"~{clock(seconds_left)}")

    def host_warning(self, message: str) -> None:
        self._print(f"guestbench: warning: {message}")

    def expected(self, lines: list[str]) -> None:
        for line in lines:
            self._print(line)

    def run_started(self, environment: str, label: str, repetition: int) -> None:
        self.bar.update(self.task, description=f"{environment:>10} {label:<14} #{repetition + 1}")

    def run_finished(self, environment: str, label: str, outcome) -> None:
        self.bar.advance(self.task)
        said = (environment, label, outcome.status)
        if outcome.status in ("unsupported", "unavailable") and said in self.said:
            return  # the same every repetition: once is enough
        self.said.add(said)
        if outcome.status not in ("ok", "unavailable"):
            self._print(problem_line(environment, label, outcome))


@contextlib.contextmanager
def shown(quiet: bool, say: Callable[[str], None]) -> Iterator[Progress]:
    """The progress the runner reports to, drawn on stderr while the campaign runs."""
    if quiet:
        yield Quiet(say)
        return
    from rich.console import Console  # deferred, with rich.progress: 28 ms --quiet never pays
    console = Console(stderr=True)
    if not console.is_terminal:  # no bar can be drawn: a line a minute instead
        with ticking(Lines(say)) as lines:
            yield lines
        return
    from rich.progress import (  # deferred: with rich.console, above
        BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn)
    # the ETA is the runner's estimate in host seconds (estimate.py), not a rate of runs:
    # runs differ 20-fold in cost, and adaptive cells stop at different counts
    with Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
             TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
             console=console, transient=True) as bar:
        yield Drawn(bar)
