"""The burst workload's run: N instances of one environment started together, staggered or one
after another, each timed from its launch to its agent's hello on the host's clock; the
burst's percentiles, its success rate, and the time to its first and last ready instance
(docs/workloads-startup.md).

An instance that cannot start, ends before its hello, or is not ready within the burst's
ready timeout is a failure: it counts against the success rate and its reason is kept, in
the run's reason and in burst.json in the run's folder, beside each instance's launch
offset and time to ready. The run fails only when no instance became ready."""

from __future__ import annotations

import json
import threading
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from guestbench.analysis.tails import QUANTILES, least_values, quantile
from guestbench.environments.base import Environment, Guest, GuestCrashed, GuestStartError, Job
from guestbench.process import proc
from guestbench.protocol import ProtocolError
from guestbench.runner.outcomes import Outcome, Status

REASONS_SHOWN = 3  # failures named in the run's reason; burst.json has every one


@dataclass
class _Instance:
    index: int  # 1-based, in launch order
    deadline_ns: int
    launched_ns: int = 0
    ready_ns: int | None = None
    problem: str = ""
    guest: Guest | None = None

    def ready_ms(self) -> float | None:
        return None if self.ready_ns is None else (self.ready_ns - self.launched_ns) / 1e6


def alive_at_once(mode: str, count: int) -> int:
    """How many instances live at once (what the host's memory must hold)."""
    return 1 if mode == "serial" else count


def _launch(environment: Environment, job: Job, instance: _Instance, logdir: Path,
            ready_timeout_ns: int) -> None:
    """Starts the instance and reads its records to its agent's hello (its ready moment)."""
    instance.launched_ns = proc.now_ns()
    deadline_ns = min(instance.deadline_ns, instance.launched_ns + ready_timeout_ns)
    try:
        instance.guest = environment.start(job, logdir / f"instance{instance.index}", deadline_ns)
    except GuestStartError as error:
        instance.problem = f"could not start: {error}"
        return
    records = 0
    try:
        for record in instance.guest.records():
            records += 1
            if record.type == "hello":
                instance.ready_ns = record.host_arrival_ns
                return
            if record.type in ("error", "end"):
                break
        instance.problem = _ended(instance.guest)
    except proc.ExitTimeout:
        instance.problem = _ended(instance.guest)
    except proc.DeadlineExceeded:
        instance.problem = (f"not ready within {ready_timeout_ns / 1e9:g} s"
                            if deadline_ns < instance.deadline_ns
                            else "not ready within the run timeout")
    except GuestCrashed as error:
        instance.problem = f"crashed: {error}" if str(error) else "crashed"
    except ProtocolError as error:
        # an agent that never ran gives no records at all: its log says why
        instance.problem = (_ended(instance.guest) if records == 0
                            else f"its records were not well formed: {error}")


def _ended(guest: Guest) -> str:
    """Why an instance's stream ended before its hello, with the last words of its log
    (read once it is stopped: its log's pumps have then written everything)."""
    guest.stop()
    said = guest.diagnostics()
    return "it ended before its agent's hello" + (f" ({said})" if said else "")


def run_burst(environment: Environment, job: Job, params, logdir: Path,
              timeout_s: float) -> Outcome:
    """The burst (see the module's text); every instance is stopped before it returns."""
    count, mode = params.instances, params.mode
    ready_timeout_ns = int(params.ready_timeout_s * 1e9)
    started_ns = proc.now_ns()
    deadline_ns = started_ns + int(timeout_s * 1e9)
    instances = [_Instance(index + 1, deadline_ns) for index in range(count)]
    begun: list[int] = []  # when the launchers were let go (together, staggered)
    with ExitStack() as alive:
        for instance in instances:  # stopped however the burst ends (Ctrl-C while it runs)
            alive.callback(_stop, instance)
        if mode == "serial":
            for instance in instances:
                _launch(environment, job, instance, logdir, ready_timeout_ns)
                _stop(instance)
        else:
            # every thread made first, then all let go: together means at one moment
            gap_ns = int(params.stagger_ms * 1e6) if mode == "staggered" else 0
            go = threading.Event()
            launchers = [threading.Thread(target=_staggered, daemon=True, args=(
                environment, job, instance, logdir, ready_timeout_ns, go, begun,
                position * gap_ns)) for position, instance in enumerate(instances)]
            for launcher in launchers:
                launcher.start()
            begun.append(proc.now_ns())
            go.set()
            for launcher in launchers:
                launcher.join()
    # the burst's zero: the moment its instances were let go, from which a staggered one's
    # schedule counts (a first launch may come a little later, its thread not yet running);
    # in turn, the first launch
    first_ns = begun[0] if mode != "serial" else min(
        (instance.launched_ns for instance in instances if instance.launched_ns),
        default=started_ns)
    _keep(instances, first_ns, mode, logdir)
    return _outcome(instances, first_ns)


def _staggered(environment: Environment, job: Job, instance: _Instance, logdir: Path,
               ready_timeout_ns: int, go: threading.Event, begun: list[int],
               after_ns: int) -> None:
    go.wait()
    due_ns = begun[0] + after_ns
    while (wait_ns := due_ns - proc.now_ns()) > 0:  # never before its turn
        threading.Event().wait(wait_ns / 1e9)
    try:
        _launch(environment, job, instance, logdir, ready_timeout_ns)
    except Exception as error:  # noqa: BLE001 - one instance's failure is a measured failure
        instance.problem = instance.problem or f"{type(error).__name__}: {error}"


def _stop(instance: _Instance) -> None:
    if instance.guest is not None:
        instance.guest.stop()


def _keep(instances: list[_Instance], started_ns: int, mode: str, logdir: Path) -> None:
    """burst.json: each instance's launch offset, time to ready or why it failed."""
    logdir.mkdir(parents=True, exist_ok=True)
    (logdir / "burst.json").write_text(json.dumps({"mode": mode, "instances": [
        {"index": instance.index,
         "launched_ms": round((instance.launched_ns - started_ns) / 1e6, 3)
         if instance.launched_ns else None,
         "ready_ms": instance.ready_ms(), "failure": instance.problem or None}
        for instance in instances]}, indent=1) + "\n")


def _outcome(instances: list[_Instance], started_ns: int) -> Outcome:
    count = len(instances)
    ready = [instance for instance in instances if instance.ready_ns is not None]
    failed = [instance for instance in instances if instance.ready_ns is None]
    named = "; ".join(f"instance {instance.index}: {instance.problem}"
                      for instance in failed[:REASONS_SHOWN])
    more = f"; {len(failed) - REASONS_SHOWN} more in burst.json" if len(failed) > REASONS_SHOWN else ""
    if not ready:
        return Outcome(Status.FAILED, f"none of {count} instances became ready: {named}{more}")
    values = sorted(instance.ready_ms() for instance in ready)
    samples = [("burst_ready", "ms", value) for value in values]
    samples += [(f"burst_p{q * 100:g}", "ms", quantile(values, q))
                for q in QUANTILES if len(values) >= least_values(q)]
    samples += [("burst_max", "ms", values[-1]),
                ("burst_success", "%", 100.0 * len(ready) / count),
                ("burst_first", "ms", (min(i.ready_ns for i in ready) - started_ns) / 1e6),
                ("burst_last", "ms", (max(i.ready_ns for i in ready) - started_ns) / 1e6)]
    reason = f"{len(failed)} of {count} instances failed: {named}{more}" if failed else ""
    return Outcome(Status.OK, reason, samples)
