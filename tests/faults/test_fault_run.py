"""A short randomized fault run (tests/support/faultrun.py; benchmarks/fault_run.py runs
the full one over every kind installed here): five campaigns of the kinds that start in
milliseconds, each hit by another fault (SIGKILL, SIGTERM, SIGINT, its PostgreSQL store's
server stopped, its disk filled) at a random moment, then resumed; and two stores damaged
at random, read by every command and given to `run`. Nothing may be lost, stored twice or
left behind; no traceback, and no exit code but 0, 2, 130 and 143."""

from __future__ import annotations

import os

import pytest

from tests.support import faultrun

# the kinds whose campaigns take seconds here (the full run takes every kind)
FAST = ["native", "namespace", "runc", "qemu-user"]


def test_a_short_randomized_fault_run_loses_nothing_and_leaves_nothing(capsys):
    if os.geteuid() != 0:
        pytest.skip("the fault run mounts a small tmpfs: it needs root")
    seed = int(os.environ.get("GUESTBENCH_FAULT_SEED", "20261126"))
    kinds = [kind for kind in faultrun.available_kinds() if kind in FAST]
    if not kinds:
        pytest.skip(f"none of {FAST} is available here")
    tally = faultrun.run(5, 2, seed, say=lambda line: None, kinds=kinds)
    with capsys.disabled():
        print(f"\nfault run, seed {seed}: {tally.row()}")
    assert tally.problems == []
    # every fault once (the server's only where PostgreSQL is installed)
    assert tally.campaigns == 5 and set(tally.faults) >= set(faultrun.FAULTS) - {"server"}
    assert tally.completed + tally.before_start == 5
    assert tally.stores == 2 and tally.commands >= 5 + 2 * 10
