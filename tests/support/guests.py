"""Running a job in a real environment's guest, reading the agent's records, and what a guest
or a campaign leaves behind (processes, scratch folders)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from guestbench.environments.base import Job
from guestbench.process import proc
from guestbench.protocol import RecordStream
from guestbench.runner import Outcome
from guestbench.runner.outcomes import watch


def run_job(environment, agent_path, logs, args, timeout_s=60.0) -> Outcome:
    workload = args[-1]
    job = Job(workload, agent_path, tuple(args))
    guest = environment.start(job, logs, proc.now_ns() + int(timeout_s * 1e9))
    with guest:
        return watch(guest, timeout_s, workload, expect_samples=workload != "hang")


def run(env, agent_path, tmp_path, args, timeout_s=120.0, workload=None):
    workload = workload or args[-1]
    guest = env.start(Job(workload, agent_path, tuple(args)), tmp_path / "logs",
                      proc.now_ns() + int(timeout_s * 1e9))
    with guest:
        outcome = watch(guest, timeout_s, workload, expect_samples=workload != "hang")
    assert_gone(guest)
    return outcome, guest


def assert_gone(guest) -> None:
    """Nothing of this guest is left: no process of its process group, no scratch folder
    (inside a VM: its L1 machine said the run ended, and its folder is gone; the L1 machine
    itself is shared and ends at the end of the session, tests/conftest.py)."""
    if guest.launcher is not None:
        assert guest._process.returncode is not None, "the L1 machine did not end the run"
        assert not [path for path in guest.scratch if path.exists()], guest.scratch
        return
    group = guest._process.pid
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        alive = _group_members(group)
        scratch = [path for path in guest.scratch if path.exists()]
        if not alive and not scratch:
            return
        time.sleep(0.1)
    raise AssertionError(f"left behind: processes {alive}, folders {scratch}")


def _group_members(group: int) -> list[int]:
    members = []
    for pid in _live_pids():
        try:
            if os.getpgid(pid) == group:
                members.append(pid)
        except ProcessLookupError:
            pass
    return members


def _live_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            pids.append(int(entry.name))
    return pids


def leftovers(scratch_root: Path) -> set:
    """What a campaign whose TMPDIR was scratch_root left: folders there, processes naming it.
    The reapers' journal folder stays (it is shared by every guestbench), but empty: each
    reaper removes its journal once it has done (within moments of its guestbench's end)."""
    journals = scratch_root / "guestbench-reaper"
    deadline = time.monotonic() + 5
    while journals.is_dir() and any(journals.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.1)
    folders = {p.name for p in scratch_root.glob("guestbench-*") if p != journals}
    folders |= {f"guestbench-reaper/{p.name}" for p in journals.glob("*")}
    vmms = set()
    for pid in _live_pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if str(scratch_root).encode() in cmdline:  # the QMP socket, UML's uml_dir
            vmms.add(pid)
    return folders | vmms


def agent_processes(agent_path: Path) -> list[int]:
    """Live processes a run may leave behind: the agent, or anything (a runtime's sandbox,
    gofer or shim, qemu-user) whose command line names the agent or an OCI bundle; only
    this test process's own (tests/support/leaks.py tells them): another worker's agents
    run beside it."""
    from tests.support import leaks
    ours = leaks.Ownership(leaks.temporary_folder()) if leaks._claimed is not None else None
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            exe = os.readlink(entry / "exe")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if state in ("Z", "X"):
            continue
        if (exe == str(agent_path) or exe.endswith("/gbagent") or b"gbagent" in cmdline
                or b"guestbench-oci-" in cmdline) and (ours is None
                                                       or ours.counts(int(entry.name))):
            pids.append(int(entry.name))
    return pids


def records_of(output: str):
    stream = RecordStream()
    records = list(stream.feed((0, line.encode()) for line in output.splitlines()))
    stream.finish()
    return records


def alive(guest) -> bool:
    """Whether a ProcessGuest's process still runs."""
    try:
        os.kill(guest.root_pid(), 0)
    except ProcessLookupError:
        return False
    return guest.returncode is None
