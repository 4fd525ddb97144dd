"""Firecracker and Cloud Hypervisor for real, where they are installed (built from their
sources: docs/environments.md): one campaign per VMM as a person runs it, on the host's KVM
where it runs guests, else nested in an L1 guest under TCG. The guest boots through the
VMM's API with its own phases, runs the agent, writes to its scratch disk, and is saved
and restored through the VMM's snapshot requests. Skipped, with the probe's reason, where
the VMM is not installed (CI cannot build them: their sources are not in a registry)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guestbench import environments
from tests.support.leaks import guest_folders, guest_processes, left_since

pytestmark = pytest.mark.integration

GUESTBENCH = [sys.executable, "-m", "guestbench"]
VMMS = ("firecracker", "cloud-hypervisor")


def _preset(kind: str, host_facts) -> str:
    """The host's preset where its probe and test boot say yes, else the nested one; skips
    where neither can run."""
    reasons = []
    for preset in (kind, f"{kind}-nested"):
        environment = environments.create(environments.preset_spec(preset))
        answer = environment.probe(host_facts)
        if answer.available and preset == kind:
            answer = environment.prepare(host_facts)  # the host's test boot
            environment.close()
        if answer.available:
            return preset
        reasons.append(f"{preset}: {answer.reason}")
    pytest.skip(f"{kind} unavailable here: {'; '.join(reasons)}")


@pytest.fixture(scope="module", params=VMMS)
def campaign(request, tmp_path_factory, host_facts):
    """getpid (its VMM's threads read), vsock round trips, boot, a sequential write to the
    scratch disk, a save and a restore: (the preset, the run, its JSON report, what was
    there before)."""
    preset = _preset(request.param, host_facts)
    before = guest_processes(), guest_folders()
    folder = tmp_path_factory.mktemp(request.param)
    plan = folder / "plan.toml"
    plan.write_text(f"""
[campaign]
name = "{request.param}"
repeat = 1

[[environment]]
name = "vm"
preset = "{preset}"
memory_mib = 384
disk_mib = 128
thread_cpu = true

[[workload]]
name = "getpid"

[[workload]]
name = "vsock_rr"
values = 2

[[workload]]
name = "boot"

[[workload]]
name = "fio_seq_write"
size_mib = 16

[[workload]]
name = "restore"
dirty_mib = 16
restores = 1
""")
    database = f"sqlite:///{folder / 'store.sqlite'}"
    ran = subprocess.run([*GUESTBENCH, "run", str(plan), "--db", database], cwd=folder,
                         capture_output=True, text=True, timeout=900)
    report = subprocess.run([*GUESTBENCH, "report", "--db", database, "--format", "json"],
                            cwd=folder, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    return preset, ran, json.loads(report.stdout), before


def _run(report: dict, workload: str) -> dict:
    [run] = [run for run in report["runs"] if run["workload"] == workload]
    return run


def test_every_run_is_ok_and_the_guest_booted_through_the_api(campaign):
    preset, ran, report, _ = campaign
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert {run["status"] for run in report["runs"]} == {"ok"}
    boot = _run(report, "boot")
    phases = {sample["metric"]: sample["value"] for sample in boot["samples"]}
    assert 0 < phases["boot_clock_zero"] < phases["boot_userspace"] \
        < phases["boot_agent_ready"] < phases["boot_powered_off"]
    logs = Path(boot["log_path"])
    assert "agent exited with status 0" in (logs / "stdout.log").read_text()
    api = (logs / "api.log").read_text()
    if preset.startswith("firecracker"):  # configured and started through its API
        assert "PUT /boot-source" in api and '"action_type": "InstanceStart"} -> 204' in api
    else:  # its command line says it all; the API answered its ping
        assert "GET /api/v1/vmm.ping" in api
    facts = next(env["facts"] for env in report["environments"])
    assert facts["vmm_version"] and facts["accelerator"].startswith("KVM")


def test_the_guest_writes_to_its_scratch_disk(campaign):
    run = _run(campaign[2], "fio_seq_write")
    values = {sample["metric"]: sample["value"] for sample in run["samples"]}
    assert values["bandwidth"] > 0


def test_the_guest_is_saved_and_restored_through_the_vmm_s_requests(campaign):
    """The restored agent is the one saved (the runner checks its token, pid and sequence)
    and its memory is intact (the agent checks every byte)."""
    run = _run(campaign[2], "restore")
    values = {sample["metric"]: sample["value"] for sample in run["samples"]}
    assert 0 < values["restore_spawn"] < values["restore"]
    assert 0 < values["restore_load"] < values["restore"]
    steps = [value for metric, value in values.items() if metric.startswith("restore_")]
    assert values["restore_answer"] > 0 and sum(steps) <= values["restore"] + 0.01
    saved = (Path(run["log_path"]) / "snapshot.txt").read_text()
    assert "snapshot: its state and guest memory" in saved
    assert 384 <= float(saved.split("image: ")[1].split(" MiB")[0]) < 400  # all its memory


def test_round_trips_cross_the_vmm_s_vsock_and_its_threads_are_read(campaign):
    """The guest's connection to port 5000 reaches the agent's peer on the VMM's hybrid
    vsock socket (UDS_5000) and every byte comes back; over getpid the vCPU thread worked."""
    _, _, report, _ = campaign
    run = _run(report, "vsock_rr")
    assert run["status"] == "ok", run["reason"]
    values = [s["value"] for s in run["samples"] if s["metric"] == "rr_p50"]
    assert len(values) == 2 and all(value > 0 for value in values)
    getpid = {s["metric"]: s["value"] for s in _run(report, "getpid")["samples"]}
    assert getpid["threads_cpu_vcpus"] > 10, getpid


def test_nothing_is_left(campaign):
    """No VMM, no L1 machine, no socket's folder, no snapshot file."""
    assert not left_since(*campaign[3])
