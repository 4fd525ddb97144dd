"""The built agent on its own: static, every workload verifies, bad arguments exit 2."""

from __future__ import annotations

import pytest

from guestbench import workloads
from guestbench.process import proc
from tests.support.guests import records_of

pytestmark = pytest.mark.integration


def test_agent_is_static(agent_path):
    headers = proc.run(["readelf", "--program-headers", str(agent_path)], timeout_s=10).stdout
    assert "INTERP" not in headers and "DYNAMIC" not in headers


def test_agent_knows_every_catalogued_workload(agent_path):
    listed = proc.run([str(agent_path), "--list"], timeout_s=10).stdout.split()
    # tools (fio, dbench, make) run through the agent's exec; fsync_honoured is fsync_records
    # guest_program runs no agent: it reads a guest's own program through its console
    assert {w.agent_workload for w in workloads.CATALOGUE.values() if w.uses_agent} <= set(listed)
    assert not workloads.CATALOGUE["guest_program"].uses_agent
    assert {"exec", "fsync_records", "upload"} <= set(listed)


def test_every_quick_workload_runs_and_verifies(agent_path):
    args = ["--min-time", "0.005", "--array-mib", "4", "--ntimes", "2", *workloads.QUICK_SUITE]
    result = proc.run([str(agent_path), *args], timeout_s=120)
    assert result.returncode == 0, result.stderr
    records = records_of(result.stdout)
    assert records[-1].body["status"] == "ok"
    measured = {r.body["workload"] for r in records if r.type == "sample"}
    assert measured == set(workloads.QUICK_SUITE)
    # each says how long it spent inside its timed regions: the campaign's efficiency
    samples = {(r.body["workload"], r.body["metric"]): r.body["value"] for r in records
               if r.type == "sample"}
    for workload in workloads.QUICK_SUITE:
        assert samples[(workload, "timed")] > 0, workload
    # a micro workload's timed time is its values' batches: values x iterations x time per op
    getpid = samples[("getpid", "time_per_op")] * samples[("getpid", "iterations")] / 1e9
    assert samples[("getpid", "timed")] == pytest.approx(getpid, rel=0.01)


def _stream_samples(agent_path, *args) -> dict[str, float]:
    result = proc.run([str(agent_path), "--array-mib", "1", *args, "stream"], timeout_s=60)
    assert result.returncode == 0, result.stderr
    return {r.body["metric"]: r.body["value"] for r in records_of(result.stdout)
            if r.type == "sample"}


def test_stream_passes_stop_once_the_counted_ones_lasted_enough(agent_path):
    # any pass lasts more than a nanosecond: three counted passes after the first, then stop
    assert _stream_samples(agent_path, "--ntimes", "40", "--enough", "1e-9")["passes"] == 4
    # 0 (the agent's default): every pass asked for, as the reference STREAM
    assert _stream_samples(agent_path, "--ntimes", "12", "--enough", "0")["passes"] == 12
    assert _stream_samples(agent_path, "--ntimes", "5")["passes"] == 5
    # fewer passes than the minimum counted: all of them
    assert _stream_samples(agent_path, "--ntimes", "3", "--enough", "1e-9")["passes"] == 3


def test_the_run_in_lengthens_the_first_timing_workload_s_warm_up_only(agent_path):
    args = ["--run-in-ms", "60", "--min-time", "0.002", "--values", "1", "getpid", "getppid"]
    result = proc.run([str(agent_path), *args], timeout_s=60)
    assert result.returncode == 0, result.stderr
    run_in = [(r.body["workload"], r.body["value"]) for r in records_of(result.stdout)
              if r.type == "sample" and r.body["metric"] == "run_in"]
    # the warm-up ran at least as long as asked, and only before the process's first workload
    assert [workload for workload, _ in run_in] == ["getpid"]
    assert run_in[0][1] >= 0.06
    without = proc.run([str(agent_path), *args[2:]], timeout_s=60)
    assert '"run_in"' not in without.stdout


@pytest.mark.parametrize("args", [
    ["--run-in-ms", "-5", "getpid"], ["--run-in-ms", "20000", "getpid"],
    ["--enough", "-1", "stream"], ["--enough", "x", "stream"],
    ["--min-time", "abc", "getpid"], ["--min-time", "0", "getpid"], ["--min-time", "-1", "getpid"],
    ["--array-mib", "0", "stream"], ["--ntimes", "1", "stream"], ["nosuchworkload"], [],
    ["--bogus", "getpid"],
])
def test_bad_arguments_exit_2_with_one_line(agent_path, args):
    result = proc.run([str(agent_path), *args], timeout_s=10)
    assert result.returncode == 2
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("gbagent:")
