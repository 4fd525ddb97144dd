"""A placement is kept or refused: placement disjoint with 2 vCPUs on this 2-CPU host put
vCPU 1 and the VMM's other threads on one host CPU (2026-11-27), under a label that said
"each on its own". Now each vCPU needs a host CPU of its own, and disjoint one more."""

from __future__ import annotations

import os

import pytest

from guestbench import environments
from guestbench.environments.fullsystem import placement


@pytest.mark.parametrize("how, vcpus, cpus, refused", [
    ("disjoint", 1, 2, False), ("disjoint", 2, 2, True), ("disjoint", 2, 3, False),
    ("same", 2, 2, False), ("same", 3, 2, True), ("none", 8, 1, False)])
def test_each_vcpu_needs_a_cpu_and_disjoint_one_more(how, vcpus, cpus, refused) -> None:
    assert bool(placement.refusal(how, vcpus, cpus)) == refused


def test_the_reason_says_what_is_needed_and_the_fix() -> None:
    said = placement.refusal("disjoint", 2, 2)
    assert said.startswith("placement disjoint with 2 vCPUs needs 3 host CPUs (one for each "
                           "vCPU and one more for the VMM's other threads); guestbench may "
                           "use 2 here")
    assert "fix: fewer vCPUs, placement none, or a host with more CPUs" in said


@pytest.mark.parametrize("kind", ["qemu", "command"])
def test_a_cell_that_cannot_keep_its_placement_is_unsupported(kind, monkeypatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    extra = {"argv": ["vmm", "{kernel}", "{initrd}", "{cmdline}"],
             "vcpu_threads": r"vcpu(\d+)"} if kind == "command" \
        else {}
    for vcpus, kept in ((1, True), (2, False)):
        spec = environments.spec_model(kind)(name="vm", kind=kind, vcpus=vcpus,
                                             placement="disjoint", **extra)
        reason = environments.create(spec).refusal(frozenset())
        assert (reason is None) == kept, reason
        if not kept:
            assert "needs 3 host CPUs" in reason


def test_pinning_puts_each_vcpu_on_a_cpu_of_its_own(monkeypatch) -> None:
    pinned = {}
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2})
    monkeypatch.setattr(os, "sched_setaffinity", lambda tid, cpus: pinned.__setitem__(tid, cpus))
    monkeypatch.setattr(os, "listdir", lambda path: ["100", "101", "102", "103"])
    applied = placement.pin_threads(100, {0: 101, 1: 102}, "disjoint")
    assert pinned == {101: {0}, 102: {1}, 100: {2}, 103: {2}}
    assert applied["other_threads"] == {"threads": [100, 103], "host_cpu": 2}
    with pytest.raises(environments.base.GuestStartError, match="needs 3 host CPUs"):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
        placement.pin_threads(100, {0: 101, 1: 102}, "disjoint")


def test_the_pinning_is_checked_when_the_agent_ends_and_a_drift_flags_the_run(
        tmp_path, monkeypatch) -> None:
    applied = {"placement": "disjoint", "vcpu_threads": {"0": {"thread": 101, "host_cpu": 0}},
               "other_threads": {"threads": [100, 103], "host_cpu": 1}}
    now = {101: {0}, 100: {1}, 103: {1}}

    def affinity(tid):
        if tid not in now:
            raise ProcessLookupError(tid)
        return now[tid]
    monkeypatch.setattr(os, "sched_getaffinity", affinity)

    class Guest(placement.Pinned):
        logdir = tmp_path
    kept = Guest()
    kept.keep_placement(dict(applied))
    kept._at_end()
    assert kept.flags() == []
    del now[103]  # a thread that ended is no drift
    now[101] = {0, 1}  # something moved vCPU 0's thread
    moved = Guest()
    moved.keep_placement(dict(applied))
    moved._at_end()
    assert moved.flags() == ["placement-drift"]
    import json
    stored = json.loads((tmp_path / "placement.json").read_text())
    assert stored["after_run"] == {"kept": False, "moved": [
        {"thread": 101, "pinned": 0, "now": [0, 1]}]}
