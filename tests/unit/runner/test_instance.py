"""What an instance costs: start (its start to the agent's first record and its teardown, on
the host's clock) and footprint (its process tree's memory at rest), both made by the runner."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench.runner.batching import part_of
from guestbench.environments.base import JobNeeds
from guestbench.plan.schema import WorkloadCase
from guestbench.protocol import Record
from guestbench.runner import host_parts
from guestbench.runner.host_parts import start_samples
from guestbench.runner.outcomes import Outcome, Seen, Status
from guestbench.workloads import CATALOGUE

START = CATALOGUE["start"]
FOOTPRINT = CATALOGUE["footprint"]


class _Guest:
    def __init__(self, pid):
        self.pid = pid

    def root_pid(self):
        return self.pid

    def start_phases(self):
        return {}


class _Environment:
    def guest_ram(self):
        return None

    def instance_mib(self):
        return None


def _seen(hello_ns: int | None, end_ns: int | None) -> Seen:
    seen = Seen()
    if hello_ns is not None:
        seen.add(Record(0, "hello", {"type": "hello", "t_ns": 5}, hello_ns))
    if end_ns is not None:
        seen.add(Record(1, "end", {"type": "end", "t_ns": 9, "status": "ok"}, end_ns))
    return seen


def test_ready_and_teardown_are_host_clock_spans_in_ms():
    samples = start_samples(_seen(3_000_000, 8_000_000), launched_ns=1_000_000,
                            stopped_ns=10_500_000, own_phases={"delete": 1.5})
    assert samples == [("start_ready", "ms", 2.0), ("start_teardown", "ms", 2.5),
                       ("start_delete", "ms", 1.5)]


@pytest.mark.parametrize("hello, end", [(None, 8_000_000), (3_000_000, None)])
def test_no_figure_without_both_records(hello, end):
    assert start_samples(_seen(hello, end), 1_000_000, 10_000_000, {}) == []
    part = host_parts.part("start", _Environment(), START.resolve({}, None))
    failed = part.finish(Outcome(Status.OK), _seen(hello, end), _Guest(1), 1_000_000, 10_000_000)
    assert failed.status == Status.FAILED and "hello or end record is missing" in failed.reason


def test_start_runs_alone_and_has_no_parameters(host):
    assert START.host_part == "start" and START.primary_metric == "start_ready"
    assert START.agent_args(START.resolve({}, host)) == ["start"]
    case = WorkloadCase("start", START.resolve({}, host), "start")
    assert part_of(case, JobNeeds()) is None  # its own instance every run, never a shared one
    with pytest.raises(ValidationError) as error:
        START.resolve({"count": 3}, host)
    assert "count" in str(error.value)


def test_start_takes_a_runtime_s_steps_apart_unless_told(host, tmp_path):
    separate, one = START.resolve({}, host), START.resolve({"steps": "one"}, host)
    assert START.job_needs(separate, tmp_path).start_steps
    assert not START.job_needs(one, tmp_path).start_steps
    with pytest.raises(ValidationError) as error:
        START.resolve({"steps": "two"}, host)
    assert "steps" in str(error.value)


def test_every_run_of_start_stores_its_phases(build_plan, run_plan, store):
    plan = build_plan([{"name": "env", "kind": "fake"}], [{"name": "start"}], repeat=3)
    campaign_id = run_plan(plan)
    runs = {run.id: run for run in store.runs(campaign_id)}
    assert len(runs) == 3 and all(run.status == "ok" for run in runs.values())
    for run_id, run in runs.items():
        ms = {s.metric: s.value for s in store.samples(campaign_id)
              if s.run_id == run_id and s.unit == "ms"}
        assert set(ms) == {"start_ready", "start_teardown"}
        assert 0 <= ms["start_ready"] <= run.host_seconds * 1000
        assert 0 <= ms["start_teardown"] <= run.host_seconds * 1000


@pytest.mark.parametrize("given", [{"settle_s": -1}, {"settle_s": 61}, {"settle_s": "1"},
                                   {"settle": 1}])
def test_footprint_rejects_nonsense_naming_the_field(host, given):
    with pytest.raises(ValidationError) as error:
        FOOTPRINT.resolve(given, host)
    assert next(iter(given)) in str(error.value)


def test_footprint_idles_the_agent_past_the_settling_and_runs_alone(host):
    params = FOOTPRINT.resolve({"settle_s": 2.0}, host)
    assert FOOTPRINT.agent_args(params) == ["--seconds", "3.0", "idle"]
    assert part_of(WorkloadCase("footprint", params, "footprint"), JobNeeds()) is None


def _footprint(host):
    return host_parts.part("footprint", _Environment(), FOOTPRINT.resolve({"settle_s": 0.0}, host))


def test_footprint_reads_the_tree_once_the_agent_says_it_is_ready(host):
    part, guest = _footprint(host), _Guest(os.getpid())
    part.on_record(guest, Record(0, "hello", {"type": "hello"}, 1))
    assert part.at_rest == []  # not ready yet
    part.on_record(guest, Record(1, "workload", {"type": "workload", "workload": "idle"}, 2))
    metrics = {metric for metric, _, _ in part.at_rest}
    by_process = {metric for metric in metrics if metric.startswith("footprint_process_pss:")}
    assert {"footprint_pss", "footprint_uss", "footprint_rss", "footprint_processes"} == \
        metrics - by_process
    argv0 = Path("/proc/self/cmdline").read_bytes().split(b"\0")[0].decode()
    name = Path(argv0).name  # this process, by its command name
    assert f"footprint_process_pss:{name}" in by_process
    pss = {metric: value for metric, _, value in part.at_rest}
    assert sum(pss[metric] for metric in by_process) == pytest.approx(pss["footprint_pss"])
    part.on_record(guest, Record(2, "workload", {"type": "workload", "workload": "idle"}, 3))
    assert len(part.at_rest) == len(metrics)  # once
    ok = part.finish(Outcome(Status.OK, "", [("in_agent", "s", 1.0)]), Seen(), guest, 0, 1)
    assert ok.status == Status.OK and len(ok.samples) == 1 + len(metrics)


def test_an_instance_without_a_process_tree_fails_footprint_saying_so(host):
    part, guest = _footprint(host), _Guest(None)
    part.on_record(guest, Record(1, "workload", {}, 2))
    failed = part.finish(Outcome(Status.OK), Seen(), guest, 0, 1)
    assert failed.status == Status.FAILED and "memory was not read" in failed.reason


def _records_after(marker) -> str:
    """A shell line that waits for `marker`, then prints an agent's hello and end."""
    from guestbench.protocol import encode
    lines = [encode(0, {"type": "hello", "t_ns": 1, "agent": "stub", "version": "0",
                        "protocol": 1, "tsc": True, "argv": []}),
             encode(1, {"type": "end", "t_ns": 2, "status": "ok", "records": 1})]
    printed = "; ".join(f"printf '%s\\n' '{line.decode()}'" for line in lines)
    return f"while [ ! -e {marker} ]; do sleep 0.01; done; {printed}"


def test_a_container_s_create_and_start_are_timed_apart(tmp_path):
    """create returns while the container holds its output; start lets the agent run."""
    from guestbench.process import proc
    from guestbench.environments.kinds.oci import OciGuest
    marker = tmp_path / "started"
    guest = OciGuest(["sh", "-c", f"({_records_after(marker)}) & sleep 0.1"], tmp_path / "log",
                     proc.now_ns() + 20 * 10**9, start_argv=["touch", str(marker)])
    with guest:
        types = [record.type for record in guest.records()]
    assert types == ["hello", "end"]
    phases = guest.start_phases()
    assert set(phases) == {"create", "start"} and phases["create"] >= 100


def test_a_start_that_fails_ends_the_run_at_once_saying_so(tmp_path):
    from guestbench.process import proc
    from guestbench.environments.kinds.oci import OciGuest, StartFailed
    guest = OciGuest(["sh", "-c", "(sleep 30) & true"], tmp_path / "log",
                     proc.now_ns() + 20 * 10**9,
                     start_argv=["sh", "-c", "echo no such container >&2; exit 1"])
    with guest, pytest.raises(StartFailed, match="start exited with status 1: no such container"):
        list(guest.records())


def test_footprint_under_a_load_keeps_the_peak_and_drops_the_load_s_own_figures(host):
    import time
    part = host_parts.part("footprint", _Environment(),
                           FOOTPRINT.resolve({"settle_s": 0.0, "load": "stream"}, host))
    guest = _Guest(os.getpid())
    part.on_record(guest, Record(1, "workload", {"type": "workload", "workload": "idle"}, 2))
    part.on_record(guest, Record(2, "workload", {"type": "workload", "workload": "stream"}, 3))
    grown = bytearray(64 << 20)  # the load: 64 MiB touched while the host samples
    time.sleep(0.3)
    part.on_record(guest, Record(3, "end", {"type": "end"}, 4))
    del grown
    ok = part.finish(Outcome(Status.OK, "", [("copy_bandwidth", "MB/s", 9000.0),
                                             ("clock_ratio", "ratio", 1.0)]), Seen(), guest, 0, 1)
    got = {metric: value for metric, _, value in ok.samples}
    assert "copy_bandwidth" not in got and got["clock_ratio"] == 1.0
    assert got["footprint_peak_pss"] >= got["footprint_pss"] + 60, got
    assert "footprint_peak_processes" not in got


def test_footprint_s_load_runs_after_the_idle_reading(host):
    assert FOOTPRINT.agent_args(FOOTPRINT.resolve({"settle_s": 0.5, "load": "stream"}, host)) == [
        "--array-mib", "80", "--enough", "1", "--seconds", "1.5", "idle", "stream"]
    with pytest.raises(ValidationError) as error:
        FOOTPRINT.resolve({"load": "fio"}, host)
    assert "load" in str(error.value)
