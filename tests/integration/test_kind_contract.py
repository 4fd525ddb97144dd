"""The contract every registered environment kind keeps, run over each one: a new kind
proves itself by being registered. Kinds that cannot run here are skipped with the reason."""

from __future__ import annotations

import os
import signal
import time

import pytest

from guestbench import environments
from guestbench.process import proc
from guestbench.environments.base import Capability, Job, JobNeeds, ProcessGuest

from tests.support.real_environments import prepared

pytestmark = pytest.mark.integration

KINDS = sorted(environments.KINDS)
PROBE_LIMIT_S = 15.0
# provided or not depending on the host (tracefs, root) or the job (which channel)
DEPENDS_ON_HOST = {Capability.TRACED_DISK}


def spec_of(kind: str):
    cls = environments.KINDS[kind]
    return environments.spec_model(kind)(name=f"contract-{kind}", kind=kind,
                                         **cls.example_options())


@pytest.mark.parametrize("kind", KINDS)
def test_probe_is_bounded_and_says_why(kind, host_facts, agent_path):
    environment = environments.create(spec_of(kind))
    began = time.monotonic()
    answer = environment.probe(host_facts)
    elapsed = time.monotonic() - began
    assert elapsed < PROBE_LIMIT_S, f"probe of {kind} took {elapsed:.1f} s"
    assert answer.available or answer.reason, "an unavailable kind always says why"


@pytest.mark.parametrize("kind", KINDS)
def test_every_missing_capability_is_refused_with_a_reason(kind):
    environment = environments.create(spec_of(kind))
    provided = environment.provides()
    for capability in Capability:
        refused = environment.refusal(frozenset({capability}))
        if capability not in provided:
            assert refused and len(refused) > 10, (kind, capability)
        elif capability not in DEPENDS_ON_HOST:
            assert refused is None, (kind, capability, refused)


JOB_NEEDS = [JobNeeds(scratch=True), JobNeeds(drop_caches=True), JobNeeds(exec_children=True),
             JobNeeds(traced_disk=True)]


@pytest.mark.parametrize("kind", KINDS)
def test_a_job_need_it_lacks_is_refused_before_start(kind):
    environment = environments.create(spec_of(kind))
    for needs in JOB_NEEDS:
        (asked,) = needs.capabilities()
        refused = environment.refusal(frozenset(), needs)
        if asked not in environment.provides():
            assert refused, (kind, asked)


@pytest.mark.parametrize("kind", KINDS)
def test_stop_is_idempotent_after_the_guest_died(kind, host_facts, agent_path, tmp_path):
    environment = prepared(host_facts, environments.create(spec_of(kind)))
    if Capability.AGENT not in environment.provides():
        pytest.skip(f"{kind}'s example runs no agent")
    guest = environment.start(Job("hang", agent_path, ("hang",)), tmp_path / "logs",
                              proc.now_ns() + int(60e9))
    if isinstance(guest, ProcessGuest):
        time.sleep(0.3)
        try:
            os.killpg(guest._process.pid, signal.SIGKILL)  # dies behind guestbench's back
        except ProcessLookupError:
            pass
    first = guest.stop()
    assert guest.stop() == first
    environment.close()  # a machine its guests ran in (a Xen dom0) ends with the environment
    if isinstance(guest, ProcessGuest):
        assert guest.returncode is not None
        assert not any(path.exists() for path in guest.scratch), "a scratch folder was left"
        assert _group_ends(guest._process.pid), "a process of the guest's group lived on"


def _group_ends(pgid: int, within_s: float = 5.0) -> bool:
    """Whether the process group is gone within the time (an orphan is reaped by init)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_full_system_kinds_say_so():
    full = {kind for kind, cls in environments.KINDS.items() if cls.full_system}
    assert {"qemu", "uml"} <= full
    assert not full & {"native", "namespace", "oci", "qemu-user", "fake"}
