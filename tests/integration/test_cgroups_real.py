"""Containers cut short by the run timeout leave no cgroup: 20 runc and runsc starts killed
at 20 ms, then no empty `guestbench-*` cgroup folder in any hierarchy of this host (runc's
create, cut short before runc had recorded the container, left 8 in 20 before the
teardown removed them, 2026-11-29), and no `runc init` (one left holding the run's stderr
hung guestbench for good). The layouts this host lacks (cgroup v1 hybrid or v2) are rebuilt
in tests/unit/environments/test_oci_cgroups.py."""

from __future__ import annotations

import time

import pytest

from tests.support.cli import guestbench
from tests.support.leaks import guest_cgroups

pytestmark = pytest.mark.integration

RUNS = 20


def _new_cgroups(before: set[str], wait_s: float = 5.0) -> set[str]:
    """The empty guestbench cgroups now that were not there before, after up to wait_s for
    another test's container (a worker beside this one) to fill or remove its own."""
    deadline = time.monotonic() + wait_s
    while (new := guest_cgroups() - before) and time.monotonic() < deadline:
        time.sleep(0.1)
    return new


@pytest.mark.parametrize("preset", ["runc", "runsc"])
def test_starts_killed_by_the_run_timeout_leave_no_cgroup(preset, available, tmp_path):
    available(preset)
    before = guest_cgroups()
    done = guestbench("run", "--env", preset, "--workload", "start", "--repeat", str(RUNS),
                      "--timeout", "0.02", "--quiet", cwd=tmp_path)
    assert done.returncode == 1, done.stderr  # runs that timed out
    assert f"{RUNS} of {RUNS} runs did not end ok ({RUNS} timeout)" in done.stderr, done.stderr
    assert not _new_cgroups(before)
