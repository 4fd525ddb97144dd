"""The VM-exit timing workloads (cpuid, rdtsc, rdtscp, port_read): catalogue entries, agent
arguments, capabilities, bad parameters, and port_read refused where there is no port I/O."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench import environments, workloads
from guestbench.cli import main
from guestbench.environments.base import Capability
from guestbench.plan.errors import PlanError
from guestbench.runner import Status
from guestbench.workloads.micro import TIME_PER_OP, TimingParams

VMEXIT = ("cpuid", "rdtsc", "rdtscp", "port_read")


@pytest.mark.parametrize("name", VMEXIT)
def test_catalogued_as_timing_workloads(name, host) -> None:
    workload = workloads.CATALOGUE[name]
    assert (workload.family, workload.params_model, workload.primary_metric) == (
        "micro", TimingParams, TIME_PER_OP)
    assert workload.agent_workload == name and workload.produces_samples
    params = workload.resolve({}, host)
    assert workload.agent_args(params) == ["--min-time", "0.02", "--values", "3", name]
    params = workload.resolve({"min_time_s": 0.01, "values": 1}, host)
    assert workload.agent_args(params) == ["--min-time", "0.01", "--values", "1", name]


def test_capabilities() -> None:
    for name in ("cpuid", "rdtsc", "rdtscp"):
        assert workloads.CATALOGUE[name].capabilities == {Capability.TSC}
    assert workloads.CATALOGUE["port_read"].capabilities == {Capability.TSC, Capability.PORT_IO}


def test_the_default_campaign_leaves_the_vm_exits_out_and_names_them() -> None:
    assert not {"cpuid", "rdtsc", "rdtscp", "port_read"} & set(workloads.QUICK_SUITE)
    assert list(workloads.NOT_IN_DEFAULT_CAMPAIGN) == ["cpuid,rdtsc,rdtscp"]


def test_only_full_system_qemu_claims_port_io() -> None:
    claims = {name: Capability.PORT_IO in environments.create(
        environments.preset_spec(name)).capabilities for name in environments.PRESETS}
    assert {name for name, claimed in claims.items() if claimed} == {"qemu-tcg", "qemu-kvm", "qemu-kvm-nested"}


@pytest.mark.parametrize("given, words", [
    ({"min_time_s": 0}, "greater than or equal"),
    ({"min_time_s": 4000}, "less than or equal"),
    ({"min_time_s": "0.1"}, "number"),
    ({"port": 128}, "port: unknown key"),
    ({"leaf": 1}, "leaf: unknown key"),
])
@pytest.mark.parametrize("name", ["cpuid", "port_read"])
def test_bad_parameters_are_plan_errors(build_plan, name, given, words) -> None:
    with pytest.raises(PlanError, match=words):
        build_plan([{"preset": "native"}], [{"name": name, **given}])


def test_bad_parameter_exits_2_from_the_command_line(tmp_path: Path) -> None:
    plan_file = tmp_path / "bad.toml"
    plan_file.write_text('[[environment]]\npreset = "qemu-tcg"\n'
                         '[[workload]]\nname = "port_read"\nmin_time_s = -1\n')
    agent = tmp_path / "gbagent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    result = CliRunner().invoke(main, ["run", str(plan_file), "--db",
                                       f"sqlite:///{tmp_path / 'x.sqlite'}", "--quiet"],
                                env={"GUESTBENCH_AGENT": str(agent)})
    assert result.exit_code == 2, result.output
    assert "workload[0].min_time_s" in result.stderr


def test_port_read_is_unsupported_without_port_io(build_plan, run_plan, store) -> None:
    everything_else = [c.value for c in Capability if c is not Capability.PORT_IO]
    plan = build_plan([{"name": "noports", "kind": "fake", "capabilities": everything_else},
                       {"name": "ports", "kind": "fake"}],
                      [{"name": "cpuid"}, {"name": "port_read"}], repeat=1)
    campaign_id = run_plan(plan)
    names = {env.id: env.name for env in store.environments(campaign_id)}
    runs = {(names[r.environment_id], r.label): r for r in store.runs(campaign_id)}
    assert runs["noports", "cpuid"].status == Status.OK
    refused = runs["noports", "port_read"]
    assert refused.status == Status.UNSUPPORTED
    assert refused.reason.startswith("fake lacks port_io")
    assert runs["ports", "port_read"].status == Status.OK
