"""The snapshot workloads' run (docs/workloads-startup.md): one instance whose agent has dirtied
its memory is saved, then restored `restores` times from that image, each restore timed from
asking for it to the agent's next record, on the host's clock.

The agent proves that a restore brought back the same process with its state: its first
record after the restore carries the token it drew before the save and its pid, its
sequence number follows the last one before the save, and it checks every byte of its
memory before it ends. The snapshot's files live in the run's folder while it runs and are
removed with the run's end (the reaper removes them if guestbench is killed); their size is
kept."""

from __future__ import annotations

import shutil
from contextlib import ExitStack
from pathlib import Path

from guestbench.environments.base import (Environment, Guest, GuestCrashed, GuestStartError, Job,
                                          SnapshotUnavailable)
from guestbench.environments.snapshots import Restored
from guestbench.process import proc, reaper
from guestbench.protocol import ProtocolError, Record
from guestbench.runner.outcomes import Outcome, Status

GO_LINE = "go\n"  # what the agent waits for after the save (agent/snapshot.c)
TOUCH = ("touch_p50", "touch_p90", "touch_p99", "touch_max", "touch_total", "touch_again_p50")


class RunEnded(Exception):
    """The run ends here with this outcome."""

    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.outcome = Outcome(status, reason)


def run_snapshot(environment: Environment, job: Job, workload: str, restores: int,
                 logdir: Path, timeout_s: float) -> Outcome:
    """snapshot_create: the save's time and the image's size. restore: each restore's time
    and the kind's steps. restore_first_touch: each restore's first write to every page."""
    deadline_ns = proc.now_ns() + int(timeout_s * 1e9)
    image = logdir / "snapshot"
    try:
        with ExitStack() as stack:
            try:
                session = environment.snapshots(job, logdir)
            except SnapshotUnavailable as error:
                return Outcome(Status.UNSUPPORTED, str(error))
            stack.callback(session.close)
            image.mkdir(parents=True)
            reaper.KEEPER.folder(str(image))
            stack.callback(_remove, image)
            guest = _started(session.start(logdir / "saved", deadline_ns), stack)
            ready = _until_ready(guest)
            began_ns = proc.now_ns()
            saved = session.save(guest, image)
            save_ms = (proc.now_ns() - began_ns) / 1e6
            size_mib = saved.bytes / 2**20
            guest.stop()
            (logdir / "snapshot.txt").write_text(
                f"image: {size_mib:.1f} MiB{f' ({saved.note})' if saved.note else ''}\n"
                f"save: {save_ms:.1f} ms\n"
                + "".join(f"save {step}: {ms:.1f} ms\n" for step, ms in saved.phases.items()))
            if workload == "snapshot_create":
                return Outcome(Status.OK, "", [
                    ("snapshot_create", "ms", save_ms), ("snapshot_size", "MiB", size_mib),
                    *((f"snapshot_create_{step}", "ms", ms) for step, ms in saved.phases.items())])
            samples = []
            for number in range(1, restores + 1):
                samples += _restore_once(session, image, logdir / f"restore{number}",
                                         deadline_ns, ready, workload == "restore", stack)
            return Outcome(Status.OK, "", samples)
    except RunEnded as ended:
        return ended.outcome
    except GuestStartError as error:
        return Outcome(error.status, str(error))
    except proc.DeadlineExceeded as error:
        return Outcome(Status.TIMEOUT, f"the run timeout passed: {error}")
    except GuestCrashed as error:
        return Outcome(Status.CRASHED, str(error) or "the instance crashed")
    except ProtocolError as error:
        return Outcome(Status.FAILED, str(error))


def _started(guest: Guest, stack: ExitStack) -> Guest:
    stack.callback(guest.stop)
    return guest


def _remove(image: Path) -> None:
    shutil.rmtree(image, ignore_errors=True)
    reaper.KEEPER.folder_gone(str(image))


class _Ready:
    """The agent's state before the save: what the restored one must show again."""

    def __init__(self, token: float, pid: float, seq: int) -> None:
        self.token, self.pid, self.seq = token, pid, seq


def _until_ready(guest: Guest) -> _Ready:
    """Reads the instance's records to its agent's snapshot_ready sample."""
    params = None
    for record in guest.records():
        if record.type == "workload":
            params = record.body.get("params") or {}
        elif _sample(record) == "snapshot_ready" and params is not None:
            return _Ready(params.get("token"), params.get("pid"), record.seq)
        elif record.type in ("error", "end"):
            said = record.body.get("message") or "its agent ended"
            raise RunEnded(Status.FAILED, f"before the save: {said}")
    raise RunEnded(Status.FAILED, "the instance ended before its agent was ready to be saved")


def _sample(record: Record) -> str | None:
    return record.body.get("metric") if record.type == "sample" else None


def _restore_once(session, image: Path, logdir: Path, deadline_ns: int, ready: _Ready,
                  times: bool, stack: ExitStack) -> list[tuple[str, str, float]]:
    """One restore: its time to the agent's proof of identity and the kind's steps (times),
    or the agent's first touch of each page after it."""
    began_ns = proc.now_ns()
    restored: Restored = session.restore(image, logdir, deadline_ns, ready.seq + 1)
    returned_ns = proc.now_ns()  # the kind's steps done: from here, "go" and the agent's answer
    guest = _started(restored.guest, stack)
    try:
        guest.send(GO_LINE)
    except OSError as error:
        raise RunEnded(Status.FAILED, f"the restored instance took no input: {error}") from None
    restore_ms = None
    found: dict[str, float] = {}
    for record in guest.records():
        metric = _sample(record)
        if restore_ms is None:
            if record.type == "hello":
                raise RunEnded(Status.FAILED, "the restored instance began anew (its first "
                                              "record is a hello): not the process saved")
            if metric != "restored_token":
                raise RunEnded(Status.FAILED, f"the restored instance's first record is "
                                              f"{' '.join(filter(None, (record.type, metric)))}"
                                              ", not its agent's token")
            if record.body["value"] != ready.token:
                raise RunEnded(Status.FAILED, "the restored instance is not the one saved: "
                                              "its agent's token differs")
            restore_ms = (record.host_arrival_ns - began_ns) / 1e6
            answer_ms = (record.host_arrival_ns - returned_ns) / 1e6
        elif metric == "restored_pid" and record.body["value"] != ready.pid:
            raise RunEnded(Status.FAILED, f"the restored agent's pid is "
                                          f"{record.body['value']:g}, it was {ready.pid:g}")
        elif metric is not None:
            found[metric] = record.body["value"]
        elif record.type == "error":
            raise RunEnded(Status.FAILED, f"after the restore: {record.body.get('message')}")
    if restore_ms is None:
        raise RunEnded(Status.FAILED, "the restored instance ended before its agent spoke")
    guest.stop()
    if times:
        return [("restore", "ms", restore_ms),
                *((f"restore_{step}", "ms", ms) for step, ms in restored.phases.items()),
                ("restore_answer", "ms", answer_ms)]
    return [(f"restore_{metric}", "ms" if metric == "touch_total" else "ns", found[metric])
            for metric in TOUCH if metric in found]
