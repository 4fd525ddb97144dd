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
    """Never clock-drift. A host too busy to timestamp the console evenly makes the check
    abstain (console-latency: the fresh-clone suite, three workers on two CPUs, once for
    qemu-tcg): then it is tried again, and one of three tries must judge the clock right."""
    env = environment(host_facts, preset)
    judged = []
    for attempt in range(3):
        outcome, _ = run(env, agent_path, tmp_path / f"try{attempt}",
                         ["--min-time", "0.01", "getpid"])
        assert outcome.status == Status.OK, outcome.reason
        assert "clock-drift" not in outcome.flags, outcome.samples
        if outcome.flags == []:
            judged.append(clock_of(outcome))
            break
        assert outcome.flags == ["console-latency"], outcome.flags
    assert judged and abs(judged[0] - 1) < 0.05, (judged, outcome.samples)
