"""kill -9 of guestbench while Firecracker or Cloud Hypervisor runs a guest, and while one
restores a snapshot: no VMM process (on the host; inside an L1 machine, its QEMU), no API
socket or run folder, no snapshot file is left, and the campaign stays `running` for the
next run to mark. Where the VMM is not installed the test is skipped with the reason."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.test_api_vmms_real import _preset
from tests.support.leaks import guest_folders, guest_processes, left_since

GUESTBENCH = [sys.executable, "-m", "guestbench"]


def _hang_runs(tmp_path: Path) -> bool:
    """The agent's hang record is on the guest's console."""
    for path in (tmp_path / "guestbench-logs").rglob("stdout.log"):
        try:
            if '"workload":"hang"' in path.read_text(errors="replace"):
                return True
        except OSError:
            continue
    return False


def _restoring(tmp_path: Path) -> bool:
    """A restored VMM's API answered (its run's api.log is written from its first answer)."""
    return any((tmp_path / "guestbench-logs").rglob("restore1/api.log"))


CASES = {"a run": ("hang", _hang_runs), "a restore": ("restore", _restoring)}


@pytest.mark.parametrize("when", list(CASES))
@pytest.mark.parametrize("kind", ["firecracker", "cloud-hypervisor"])
def test_sigkill_leaves_no_vmm_no_socket_and_no_snapshot(kind, when, tmp_path, host_facts):
    preset = _preset(kind, host_facts)
    workload, reached = CASES[when]
    processes, folders = guest_processes(), guest_folders()
    database = tmp_path / "store.sqlite"
    child = subprocess.Popen([*GUESTBENCH, "run", "--env", preset, "--workload", workload,
                              "--repeat", "1", "--timeout", "300", "--quiet", "--db",
                              f"sqlite:///{database}"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        while not reached(tmp_path):
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, f"not reached within 240 s: {when}"
            time.sleep(0.1)
        assert guest_processes() - processes, "no VMM (or L1 machine) was seen"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
    assert not left_since(processes, folders, wait_s=10.0)
    with sqlite3.connect(database) as connection:
        assert connection.execute("select status from campaign").fetchall() == [("running",)]

