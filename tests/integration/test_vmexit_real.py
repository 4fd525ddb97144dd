"""The real agent's VM-exit workloads on this machine: cpuid, rdtsc and rdtscp run natively and
give the timing samples; port_read is never run natively (no environment here but QEMU claims
port I/O), only its refusal by the runner and its argument checks are."""

from __future__ import annotations

import os
import shutil

import pytest

from guestbench import environments, workloads
from guestbench.process import proc
from guestbench.environments.base import Capability

from tests.support.guests import records_of
from tests.support.guests import run_job

pytestmark = pytest.mark.integration

INSTRUCTIONS = ("cpuid", "rdtsc", "rdtscp")


def cpu_flags() -> set[str]:
    for line in open("/proc/cpuinfo", encoding="ascii", errors="replace"):
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def test_agent_lists_the_vmexit_workloads(agent_path):
    listed = proc.run([str(agent_path), "--list"], timeout_s=10).stdout.split()
    assert {*INSTRUCTIONS, "port_read"} <= set(listed)


def test_instructions_give_timing_samples_natively(agent_path):
    if "rdtscp" not in cpu_flags():
        pytest.skip("this CPU has no rdtscp")
    result = proc.run([str(agent_path), "--min-time", "0.01", *INSTRUCTIONS], timeout_s=60)
    assert result.returncode == 0, result.stderr
    records = records_of(result.stdout)
    assert records[-1].body["status"] == "ok"
    params = {r.body["workload"]: r.body["params"] for r in records if r.type == "workload"}
    assert params["cpuid"] == {"min_time_s": 0.01, "values": 1, "leaf": 0}
    samples: dict[str, dict[str, tuple[str, float]]] = {}
    for r in records:
        if r.type == "sample":
            samples.setdefault(r.body["workload"], {})[r.body["metric"]] = (
                r.body["unit"], r.body["value"])
    assert set(samples) == set(INSTRUCTIONS)
    for name, metrics in samples.items():
        assert metrics["time_per_op"][0] == "ns" and metrics["time_per_op"][1] > 0, name
        assert metrics["tsc_per_op"][0] == "cycles" and metrics["tsc_per_op"][1] > 0, name
        assert metrics["iterations"][1] >= 1, name
    # cpuid serialises (or exits); it is never cheaper than a back-to-back rdtsc
    assert samples["cpuid"]["tsc_per_op"][1] > samples["rdtsc"]["tsc_per_op"][1]


def test_native_environment_runs_cpuid_and_lacks_port_io(agent_path, tmp_path):
    environment = environments.create(environments.preset_spec("native"))
    assert Capability.PORT_IO not in environment.capabilities
    assert Capability.PORT_IO in workloads.CATALOGUE["port_read"].capabilities
    outcome = run_job(environment, agent_path, tmp_path / "logs", ["--min-time", "0.01", "cpuid"])
    assert outcome.status == "ok", outcome.reason
    assert {metric for metric, _, _ in outcome.samples} == {"time_per_op", "tsc_per_op",
                                                           "iterations", "timed"}


@pytest.mark.parametrize("args", [["--min-time", "0", "port_read"], ["port_read", "--port", "1"]])
def test_bad_arguments_exit_2_before_any_port_is_touched(agent_path, args):
    result = proc.run([str(agent_path), *args], timeout_s=10)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.startswith("gbagent:")


def test_port_read_without_privilege_fails_with_a_clear_error(agent_path):
    # unprivileged, ioperm() is refused before any port is touched (EPERM, or ENOSYS on a
    # kernel built without it); root runs the agent as nobody for that
    argv = [str(agent_path), "--min-time", "0.01", "port_read"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("setpriv (util-linux) is not installed")
        argv = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", *argv]
    result = proc.run(argv, timeout_s=30)
    if "Permission denied" in result.stderr:
        pytest.skip(f"user nobody cannot execute {agent_path}")
    assert result.returncode == 1, result.stderr
    records = records_of(result.stdout)
    errors = [r.body["message"] for r in records if r.type == "error"]
    assert [r.body.get("unsupported") for r in records if r.type == "error"] == [True]
    assert len(errors) == 1 and errors[0].startswith("ioperm(0xed) failed: ")
    assert "port_read is for full-system guests" in errors[0]
    assert records[-1].body["status"] == "failed"
    assert not [r for r in records if r.type == "sample"]
