"""density's run: N instances started together, each timed to its agent's first record, their
memory read once all idle, every one stopped after; a refusal where the host's memory cannot
hold the guests, and the count that started where one did not."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench.environments.base import Job, ProcessGuest
from guestbench.protocol import encode
from guestbench.runner import density
from guestbench.runner.outcomes import Status
from guestbench.workloads import CATALOGUE
from tests.support.guests import alive


class _Stub:
    """An environment whose instances are shell processes printing an agent's records."""

    full_system = False
    spec = None

    def __init__(self, ends_early: set[int] = frozenset()):
        self.ends_early, self.started = ends_early, []

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> ProcessGuest:
        number = len(self.started) + 1
        lines = [encode(0, {"type": "hello", "t_ns": 1, "agent": "stub", "version": "0",
                            "protocol": 1, "tsc": True, "argv": []})]
        if number not in self.ends_early:
            lines.append(encode(1, {"type": "workload", "t_ns": 2, "workload": "idle",
                                    "params": {}}))
        script = "".join(f"printf '%s\\n' {shlex.quote(line.decode())}; " for line in lines)
        guest = ProcessGuest(["sh", "-c", script + ("" if number in self.ends_early
                                                     else "sleep 30")], logdir, deadline_ns)
        self.started.append(guest)
        return guest

    def guest_ram(self):
        return None

    def instance_mib(self):
        return None


def test_every_instance_is_timed_and_weighed_then_stopped(tmp_path):
    stub = _Stub()
    outcome = density.run_density(stub, Job("density", Path("/bin/true"), ()), 3, tmp_path,
                                  timeout_s=20, settle_s=0.0)
    assert outcome.status == Status.OK, outcome.reason
    starts = [value for metric, unit, value in outcome.samples if metric == "density_start"]
    assert len(starts) == 3 and all(0 < ms < 20_000 for ms in starts)
    samples = {metric: (unit, value) for metric, unit, value in outcome.samples}
    assert samples["density_started"] == ("count", 3.0)
    assert samples["density_pss"][0] == "MiB" and samples["density_pss"][1] > 0
    assert not any(alive(guest) for guest in stub.started)  # nothing outlives the run
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "instance1", "instance2", "instance3"]


def test_an_instance_that_never_gets_ready_fails_the_run_saying_how_many_did(tmp_path):
    stub = _Stub(ends_early={2})
    outcome = density.run_density(stub, Job("density", Path("/bin/true"), ()), 3, tmp_path,
                                  timeout_s=20, settle_s=0.0)
    assert outcome.status == Status.FAILED
    # its output ended after the hello: the record stream says what was missing
    assert outcome.reason.startswith("2 of 3 instances started; instance 2: agent output "
                                     "truncated"), outcome.reason
    assert not any(alive(guest) for guest in stub.started)


def test_guests_the_host_cannot_hold_are_refused_before_any_starts(monkeypatch):
    monkeypatch.setattr(density, "available_mib", lambda: 1000)
    guest = type("Guests", (), {"instance_mib": lambda self: 512})()
    assert density.memory_refusal(guest, 1) is None
    reason = density.memory_refusal(guest, 2)
    assert reason.startswith("2 guests of 512 MiB need more than this host's available memory "
                             "(1000 MiB)")
    assert density.memory_refusal(_Stub(), 64) is None  # a process kind: no guest RAM to size


@pytest.mark.parametrize("given, field", [({"instances": 0}, "instances"),
                                          ({"instances": 65}, "instances"),
                                          ({"instances": "4"}, "instances"),
                                          ({"settle_s": -1}, "settle_s"),
                                          ({"count": 4}, "count")])
def test_density_rejects_nonsense_naming_the_field(host, given, field):
    with pytest.raises(ValidationError) as error:
        CATALOGUE["density"].resolve(given, host)
    assert field in str(error.value)
