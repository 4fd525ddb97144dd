"""The clock check on real guests: QEMU TCG whose guest clock runs fast (-icount without
sleep: the virtual clock jumps ahead while the guest idles) is flagged in every run, even
a short one; plain TCG and UML are not."""

from __future__ import annotations

import pytest

from guestbench.runner import Status

from tests.support.guests import run
from tests.support.real_environments import environment

pytestmark = pytest.mark.integration


def clock_of(outcome) -> float:
    return dict((metric, value) for metric, _, value in outcome.samples)["clock_ratio"]


def test_a_fast_guest_clock_is_flagged_in_every_run(host_facts, agent_path, tmp_path):
    # shift=3 (8 ns of guest time per instruction) rather than 0: the clock still jumps ahead
    # while the guest idles (sleep=off), and delays the kernel waits out while it boots cost
    # an eighth of the instructions: a boot here takes about 7 s instead of 13 s.
    fast = environment(host_facts, "qemu-tcg", extra_args=("-icount", "shift=3,sleep=off"))
    for attempt in range(2):
        outcome, _ = run(fast, agent_path, tmp_path / f"fast{attempt}",
                         ["--min-time", "0.01", "getpid"])
        assert outcome.status == Status.OK, outcome.reason
        assert "clock-drift" in outcome.flags and clock_of(outcome) > 2, outcome.samples


@pytest.mark.parametrize("preset", ["qemu-tcg", "uml"])
def test_a_guest_with_a_right_clock_is_not_flagged(preset, host_facts, agent_path, tmp_path):
    outcome, _ = run(environment(host_facts, preset), agent_path, tmp_path,
                     ["--min-time", "0.01", "getpid"])
    assert outcome.status == Status.OK, outcome.reason
    assert outcome.flags == [] and abs(clock_of(outcome) - 1) < 0.05, outcome.samples
