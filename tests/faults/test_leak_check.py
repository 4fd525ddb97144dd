"""The check of what a test left (tests/support/leaks.py) counts the test's own and only
that: a guest process orphaned to pid 1, as a killed guestbench leaves one, is caught when it
carries the test's mark or names its private folder, or is a container of the test's; one of
the same name started without the mark and not from the test (a person's own VM, another
test session's guest) is not; a folder in the test's private folder is, one in /tmp is not."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.faults.test_kill9 import _kill_with_its_reaper, _next_run_sweeps, hanging_runc
from tests.support.leaks import (OWNER, guest_folders, guest_processes, left_since, running,
                                 temporary_folder)

# the middle process prints its child's pid and exits: the child is orphaned at once
ORPHAN = """\
import os, sys
program, name = sys.argv[1], sys.argv[2]
child = os.fork()
if child:
    print(child, flush=True)
else:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.execv(program, [name, "300"])
"""


@pytest.fixture
def orphans(tmp_path):
    """start(env, name): a process named gbagent (a link to sleep), orphaned as a guest is
    when guestbench is killed; env None inherits the test's environment, name is its
    argv[0]. Each is killed by its pid after the test."""
    agent = tmp_path / "gbagent"
    agent.symlink_to(shutil.which("sleep"))
    started: list[int] = []

    def start(env: dict[str, str] | None = None, name: str = "gbagent") -> int:
        done = subprocess.run([sys.executable, "-c", ORPHAN, str(agent), name], env=env,
                              capture_output=True, text=True, timeout=30, check=True)
        pid = int(done.stdout)
        started.append(pid)
        deadline = time.monotonic() + 5
        while _comm(pid) != "gbagent":  # until it has exec'd sleep
            assert time.monotonic() < deadline, f"process {pid} never ran gbagent"
            time.sleep(0.01)
        assert _parent(pid) != os.getpid()  # not the test's by ancestry
        return pid

    yield start
    for pid in started:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 5
    while any(running(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)


def _parent(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def _comm(pid: int) -> str:
    return Path(f"/proc/{pid}/comm").read_text().strip()


def test_an_orphaned_guest_process_with_the_tests_mark_is_left_behind(orphans):
    processes, folders = guest_processes(), guest_folders()
    pid = orphans()
    assert f"process {pid}:" in left_since(processes, folders, wait_s=0.0)


def test_one_of_the_same_name_without_the_mark_is_not_the_tests(orphans):
    processes, folders = guest_processes(), guest_folders()
    pid = orphans(env={})  # as `env -i` starts it
    assert f"{OWNER}=".encode() not in Path(f"/proc/{pid}/environ").read_bytes()
    assert running(pid) and _comm(pid) == "gbagent"  # a guest's name: the machine's check saw it
    assert pid not in guest_processes()
    assert not left_since(processes, folders, wait_s=0.0)


def test_one_without_the_mark_that_names_the_private_folder_is_the_tests(orphans):
    """As gVisor's sandbox and gofer: they exec themselves again with an empty environment,
    and their --root is the bundle's state folder."""
    processes, folders = guest_processes(), guest_folders()
    pid = orphans(env={}, name=f"--root={temporary_folder()}/guestbench-oci-x/state")
    assert f"process {pid}:" in left_since(processes, folders, wait_s=0.0)


def test_a_child_without_the_mark_is_the_tests(tmp_path):
    agent = tmp_path / "gbagent"
    agent.symlink_to(shutil.which("sleep"))
    processes, folders = guest_processes(), guest_folders()
    child = subprocess.Popen([str(agent), "300"], env={})
    try:
        # Popen returns when exec closes its error pipe; the kernel names the process
        # after that (once seen in CI as a comm that was still python's)
        deadline = time.monotonic() + 5
        while _comm(child.pid) != "gbagent":
            assert time.monotonic() < deadline, f"process {child.pid} never ran gbagent"
            time.sleep(0.01)
        assert f"process {child.pid}:" in left_since(processes, folders, wait_s=0.0)
    finally:
        child.kill()
        child.wait()


def test_a_folder_in_the_private_folder_is_left_behind_and_one_in_tmp_is_not():
    processes, folders = guest_processes(), guest_folders()
    assert temporary_folder() != Path("/tmp")  # the session claimed a folder of its own
    mine = Path(tempfile.mkdtemp(prefix="guestbench-oci-", dir=temporary_folder()))
    theirs = Path(tempfile.mkdtemp(prefix="guestbench-oci-", dir="/tmp"))
    try:
        left = left_since(processes, folders, wait_s=0.0)
    finally:
        mine.rmdir()
        theirs.rmdir()
    assert f"folder {mine}" in left and str(theirs) not in left


@pytest.mark.sweeps_journals
def test_a_container_left_by_a_guestbench_killed_with_its_reaper_is_the_tests(tmp_path, probes):
    """runc's container outlives guestbench and its reaper: its agent is orphaned, with the
    container's own environment; its root, the bundle's rootfs in the private folder, tells
    it. The next run's sweep ends it."""
    child, processes, folders = hanging_runc(tmp_path, probes)
    _kill_with_its_reaper(child)
    agents = [pid for pid in guest_processes() - processes if _comm(pid) == "gbagent"]
    assert agents, "no container was left: the test proves nothing"
    for pid in agents:
        assert f"{OWNER}=".encode() not in Path(f"/proc/{pid}/environ").read_bytes()
        assert f"process {pid}:" in left_since(processes, folders, wait_s=0.0)
    _next_run_sweeps(tmp_path)
    assert not left_since(processes, folders, wait_s=5.0)
