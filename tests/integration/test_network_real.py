"""net_rr and net_stream on every preset installed here, over each kind's own path (loopback,
a veth pair into the run's namespace, QEMU's user network and a tap, UML's vector device on a
tap): every run ok with its figures, and nothing of the path left after (the suite's leak
check sees veths, taps and namespaces too). A path this host cannot give is unsupported with
the reason."""

from __future__ import annotations

import json

import pytest

from guestbench import environments

from tests.support.real_environments import prepared, tcg_kernel
from tests.support.cli import guestbench
from tests.support.cli import ok_runs

pytestmark = pytest.mark.integration

PRESETS = ["native", "namespace", "runc", "crun", "runsc", "qemu-user", "qemu-tcg", "uml"]
RR = '[[workload]]\nname = "net_rr"\nmin_time_s = 0.05\nvalues = 3\n'
STREAM = '[[workload]]\nname = "net_stream"\nmin_time_s = 0.1\nvalues = 2\n'


def _plan(tmp_path, environment: str) -> str:
    """One run of each workload (each gives several values)."""
    plan = tmp_path / "net.toml"
    plan.write_text(f'[campaign]\nrepeat = 1\ntimeout_s = 120\n\n[[environment]]\n'
                    f'{environment}\n{RR}\n{STREAM}')
    return str(plan)


def _check(runs: list[dict]) -> None:
    for entry in runs:
        got = {}
        for sample in entry["samples"]:
            got.setdefault(sample["metric"], []).append(sample["value"])
        if entry["workload"] == "net_rr":
            assert len(got["rr_p50"]) == 3 and len(got["rr_p99"]) == 3, got
            assert all(0 < p50 <= p99 for p50, p99 in zip(got["rr_p50"], got["rr_p99"])), got
        else:
            assert len(got["to_guest"]) == 2 and len(got["to_host"]) == 2, got
            assert all(value > 0 for value in got["to_guest"] + got["to_host"]), got


@pytest.mark.parametrize("preset", [name for name in PRESETS if name != "runsc"])
def test_round_trips_and_streams_over_the_kind_s_own_path(preset, tmp_path, host_facts):
    prepared(host_facts, environments.create(environments.preset_spec(preset)))  # or skip: why
    kernel = f'\nkernel = "{tcg_kernel()}"' if preset == "qemu-tcg" else ""
    _check(ok_runs(tmp_path, 2, _plan(tmp_path, f'preset = "{preset}"{kernel}')))


def test_runsc_s_own_stack_or_the_reason_it_cannot_start_here(tmp_path, host_facts):
    """gVisor's netstack on a veth pair where this runsc starts it; where an old runsc
    refuses the run's namespace (its check for the host's, on a newer kernel), every run is
    unsupported with that reason."""
    prepared(host_facts, environments.create(environments.preset_spec("runsc")))
    run = guestbench("run", _plan(tmp_path, 'preset = "runsc"'), "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    runs = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)["runs"]
    if {entry["status"] for entry in runs} == {"ok"}:
        _check(runs)
        return
    assert all(entry["status"] == "unsupported" and "refuses its own network stack"
               in entry["reason"] for entry in runs), runs


def test_runsc_over_the_host_s_stack(tmp_path, host_facts):
    prepared(host_facts, environments.create(environments.preset_spec("runsc")))
    _check(ok_runs(tmp_path, 2, _plan(tmp_path, 'preset = "runsc"\nnetwork = "host"')))


@pytest.mark.parametrize("net", ["tap"])
def test_qemu_over_a_tap(net, tmp_path, host_facts):
    prepared(host_facts, environments.create(environments.preset_spec("qemu-tcg")))
    preset = f'preset = "qemu-tcg"\nnet = "{net}"\nkernel = "{tcg_kernel()}"'
    _check(ok_runs(tmp_path, 2, _plan(tmp_path, preset)))


def test_vhost_is_unsupported_with_the_reason_where_the_host_has_none(tmp_path, host_facts):
    from guestbench.environments.kinds.qemu import VHOST_NET
    if VHOST_NET.exists():
        pytest.skip(f"this host has {VHOST_NET}: the refusal cannot be seen here")
    prepared(host_facts, environments.create(environments.preset_spec("qemu-tcg")))
    run = guestbench("run", _plan(tmp_path, 'preset = "qemu-tcg"\nnet = "tap"\nvhost = true'),
                     "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    runs = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)["runs"]
    assert {entry["status"] for entry in runs} == {"unsupported"}
    assert all("vhost-net" in entry["reason"] for entry in runs), runs


def _offered() -> list[str]:
    return open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()


def test_each_end_runs_on_the_cpu_and_with_the_congestion_control_the_plan_gives(tmp_path):
    """agent_cpu, peer_cpu and congestion, natively (iperf3's -A and -C): both ends pinned,
    the agent's CPU and congestion control in its run's parameters, the peer's CPU read back
    from the kernel into network.txt."""
    import os
    cpus = sorted(os.sched_getaffinity(0))
    agent, peer = cpus[0], cpus[-1]
    congestion = _offered()[-1]
    pins = f'agent_cpu = {agent}\npeer_cpu = {peer}\ncongestion = "{congestion}"\n'
    plan = tmp_path / "net.toml"
    plan.write_text('[campaign]\nrepeat = 1\n\n[[environment]]\npreset = "native"\n\n'
                    f'{RR}{pins}\n{STREAM}{pins}')
    runs = ok_runs(tmp_path, 2, str(plan))
    _check(runs)
    assert all(entry["params"]["agent_cpu"] == agent for entry in runs), runs
    assert all(entry["params"]["congestion"] == congestion for entry in runs), runs
    facts = sorted(tmp_path.glob("guestbench-logs/*/native/*/rep0/network.txt"))
    assert len(facts) == 2 and all(f"peer's host CPUs: {peer}\n" in path.read_text()
                                   for path in facts), [path.read_text() for path in facts]


def test_a_cpu_or_congestion_control_the_host_lacks_is_unsupported_with_the_reason(tmp_path):
    plan = tmp_path / "net.toml"
    missing = next(name for name in ("vegas", "westwood", "illinois", "htcp", "nosuch")
                   if name not in _offered())
    plan.write_text('[campaign]\nrepeat = 1\n\n[[environment]]\npreset = "native"\n\n'
                    f'{RR}agent_cpu = 4095\n\n{STREAM}peer_cpu = 4095\n\n'
                    f'{STREAM}label = "other_congestion"\ncongestion = "{missing}"\n')
    run = guestbench("run", str(plan), "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    runs = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)["runs"]
    assert [entry["status"] for entry in runs] == ["unsupported"] * 3, runs
    reasons = {entry["label"]: entry["reason"] for entry in runs}
    assert reasons["net_rr"].startswith(
        "net_rr: agent_cpu 4095: the agent may run on CPUs "), reasons
    assert reasons["net_stream"].startswith(
        "peer_cpu 4095: guestbench may run on host CPUs "), reasons
    assert reasons["other_congestion"].startswith(
        f"congestion {missing}: this host's kernel offers "), reasons


def test_the_agent_refuses_a_congestion_control_its_kernel_lacks(agent_path):
    """The agent's own check, for a guest whose kernel lacks what the host's has: the run
    is unsupported, with the guest kernel's list."""
    from guestbench.process import proc
    result = proc.run([str(agent_path), "--peer", "127.0.0.1:9", "--congestion", "nosuch",
                       "net_rr"], timeout_s=30)
    assert '"unsupported":true' in result.stdout, result.stdout
    assert "congestion nosuch: " in result.stdout and "this kernel offers: " in result.stdout
