"""QEMU (TCG, KVM probe) and User-Mode Linux guests for real: boots, phases, faults, leftovers."""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

import pytest

from guestbench import environments
from guestbench.process import proc
from guestbench.environments.base import Job
from guestbench.runner import Status

from tests.support.real_environments import FULL_SYSTEM_PRESETS, environment, tcg_kernel
from tests.support.guests import leftovers, run

pytestmark = pytest.mark.integration


# The suite's nothing_left_behind (tests/integration/conftest.py) is kept in the tests'
# signatures for readability; run() (tests/support/guests.py) checks each guest it started.
GUESTS_CHECKED_BY_RUN = True
# guests whose kernel runs at TCG's speed: booted from the vmlinux where the test is not
# about the default kernel (real_environments.tcg_kernel)
TCG_BOOTS = ("qemu-tcg", "qemu-kvm-nested", "xen-tcg")
# a PV domU's agent, boot phases and panic: tests/integration/test_xen_pv_real.py's campaign,
# where one dom0 (16 s to boot here, and its toolstack) serves them all
GUEST_PRESETS = [name for name in FULL_SYSTEM_PRESETS if name != "xen-pv-tcg"]


# (a nested guest's agent, boot phases and console: tests/integration/test_nested_real.py's
# campaign and test_api_vmms_real.py's, which its L1 machine makes the costlier place to
# run them twice)
@pytest.mark.parametrize("preset", [name for name in GUEST_PRESETS
                                    if not name.endswith("-nested")])
def test_agent_runs_in_the_guest(preset, host_facts, agent_path, tmp_path, nothing_left_behind):
    env = environment(host_facts, preset)
    outcome, guest = run(env, agent_path, tmp_path, ["--min-time", "0.05", "getpid"])
    assert outcome.status == Status.OK, outcome.reason
    assert {m for m, _, _ in outcome.samples} >= {"time_per_op", "tsc_per_op"}
    phases = guest.boot_phases()
    assert 0 < phases["first_byte"] <= phases["userspace"] <= phases["agent_ready"] <= phases["powered_off"]
    # the guest's clock starts after its VMM does and before its userspace (UML's too)
    assert 0 < phases["clock_zero"] < phases["userspace"]
    console = (tmp_path / "logs" / "stdout.log").read_text()
    assert "guestbench-init: userspace" in console and "agent exited with status 0" in console


@pytest.mark.parametrize("preset", GUEST_PRESETS)
def test_guest_that_hangs_after_boot_is_killed(preset, host_facts, agent_path, tmp_path,
                                               nothing_left_behind):
    fast = {"kernel": tcg_kernel()} if preset in TCG_BOOTS else {}
    env = environment(host_facts, preset, **fast)
    # the agent starts and hangs well within it: a TCG guest from its vmlinux reaches
    # userspace in ~2 s here, a UML guest in under 1 s, a Xen dom0 in ~5 s, a nested KVM
    # guest in ~9 s on a quiet host (before its guest had an RTC and the host's CPU model,
    # its hello came at 21.4 s in the parallel suite); three times that and more on the
    # suite's three workers over 2 CPUs (Xen's dom0 missed 15 s there once)
    timeout_s = {"qemu-tcg": 15.0, "qemu-kvm-nested": 40.0, "xen-tcg": 30.0,
                 "firecracker-nested": 40.0, "cloud-hypervisor-nested": 40.0}.get(preset, 10.0)
    outcome, guest = run(env, agent_path, tmp_path, ["hang"], timeout_s=timeout_s)
    assert outcome.status == Status.TIMEOUT and f"{timeout_s:g} s run timeout" in outcome.reason
    assert "userspace" in guest.boot_phases()  # it did boot; the agent hung


@pytest.mark.parametrize("preset", GUEST_PRESETS)
def test_guest_kernel_panic_is_crashed_with_the_console(preset, host_facts, agent_path,
                                                        tmp_path, nothing_left_behind):
    fast = {"kernel": tcg_kernel()} if preset in TCG_BOOTS else {}
    env = environment(host_facts, preset, kernel_args=["gb.fault=exit-init"], **fast)
    outcome, _ = run(env, agent_path, tmp_path, ["getpid"], timeout_s=60.0)
    assert outcome.status == Status.CRASHED, outcome.reason
    assert "Kernel panic" in outcome.reason and "Attempted to kill init" in outcome.reason


def test_boot_timeout_is_apart_from_the_run_timeout(host_facts, agent_path, tmp_path,
                                                     nothing_left_behind):
    env = environment(host_facts, "qemu-tcg", boot_timeout_s=0.5)
    outcome, _ = run(env, agent_path, tmp_path, ["getpid"], timeout_s=60.0)
    assert outcome.status == Status.TIMEOUT
    assert "did not reach userspace within its 0.5 s boot timeout" in outcome.reason


def test_wrong_kernel_path_is_unavailable(host_facts):
    env = environments.create(environments.spec_model("qemu")(
        name="q", kind="qemu", kernel="/nonexistent/vmlinuz"))
    answer = env.probe(host_facts)
    assert not answer.available and "/nonexistent/vmlinuz" in answer.reason


def test_missing_qemu_is_unavailable(host_facts):
    env = environments.create(environments.spec_model("qemu")(
        name="q", kind="qemu", binary="qemu-system-nonexistent"))
    answer = env.probe(host_facts)
    assert not answer.available and "qemu-system-nonexistent not found" in answer.reason


def test_kvm_prepare_answers_within_10_s(host_facts, agent_path):
    """Where /dev/kvm exists, preparing qemu-kvm test-boots a guest: bounded, with a reason."""
    env = environments.create(environments.preset_spec("qemu-kvm"))
    if not env.probe(host_facts).available:
        pytest.skip(f"qemu-kvm: {env.probe(host_facts).reason}")
    began = time.monotonic()
    answer = env.prepare(host_facts)
    assert time.monotonic() - began < 10.0 + 5.0  # the test boot's limit, plus the image
    assert answer.reason


@pytest.mark.parametrize("placement", ["same", "disjoint"])
def test_placement_is_applied_and_recorded(placement, host_facts, agent_path, tmp_path,
                                           nothing_left_behind):
    env = environment(host_facts, "qemu-tcg", placement=placement, kernel=tcg_kernel())
    outcome, _ = run(env, agent_path, tmp_path, ["--min-time", "0.02", "getpid"])
    assert outcome.status == Status.OK, outcome.reason
    applied = json.loads((tmp_path / "logs" / "placement.json").read_text())
    vcpu0_cpu = applied["vcpu_threads"]["0"]["host_cpu"]
    others_cpu = applied["other_threads"]["host_cpu"]
    assert (others_cpu == vcpu0_cpu) == (placement == "same")
    # checked again as the agent ended, the VMM still running: every thread stayed
    assert applied["after_run"] == {"kept": True, "moved": []}
    assert "placement-drift" not in outcome.flags


# The hanging guest takes the whole run timeout (it was 25 s): 12 s is still well above the
# 5 s a TCG guest took here to boot into its fault or its panic (the hang test above gives
# the same boot 10 s).
FAULTS_PLAN = """
[campaign]
name = "faults"
repeat = 1
timeout_s = 8

[[environment]]
preset = "native"

[[environment]]
name = "panics"
kind = "qemu"
kernel = "{kernel}"
kernel_args = ["gb.fault=exit-init"]

[[environment]]
name = "hangs"
kind = "qemu"
kernel = "{kernel}"
kernel_args = ["gb.fault=hang"]

[[environment]]
name = "nokernel"
kind = "qemu"
kernel = "/nonexistent/vmlinuz"

[[environment]]
name = "noqemu"
kind = "qemu"
binary = "qemu-system-nonexistent"

[[workload]]
name = "getpid"
min_time_s = 0.02
"""


def test_faults_in_one_campaign_each_get_their_status_and_the_campaign_goes_on(
        host_facts, agent_path, tmp_path, nothing_left_behind):
    environment(host_facts, "qemu-tcg")  # skips where QEMU cannot boot at all
    import subprocess
    import sys
    (tmp_path / "faults.toml").write_text(FAULTS_PLAN.replace("{kernel}", tcg_kernel()))
    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    run = subprocess.run([sys.executable, "-m", "guestbench", "run", "faults.toml", "--quiet"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "TMPDIR": str(scratch_root)})
    assert not leftovers(scratch_root), "the campaign left a VMM process or a scratch folder"
    assert run.returncode == 1, run.stderr  # a run crashed, one timed out: stored, then 1
    assert run.stderr.strip().splitlines()[-1] == (
        "guestbench: 2 of 5 runs did not end ok (1 crashed, 1 timeout): exit 1"), run.stderr
    report = subprocess.run([sys.executable, "-m", "guestbench", "report", "--format", "json"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    document = json.loads(report.stdout)
    outcome = {r["environment"]: (r["status"], r["reason"]) for r in document["runs"]}
    logs = {r["environment"]: r["log_path"] for r in document["runs"]}
    assert document["campaign"]["status"] == "finished"
    assert outcome["native"][0] == "ok"
    assert outcome["panics"][0] == "crashed" and "Attempted to kill init" in outcome["panics"][1]
    assert outcome["hangs"][0] == "timeout" and "8 s run timeout" in outcome["hangs"][1]
    assert "guestbench-init: fault hang" in Path(logs["hangs"], "stdout.log").read_text()
    assert outcome["nokernel"][0] == "unavailable" and "/nonexistent/vmlinuz" in outcome["nokernel"][1]
    assert outcome["noqemu"][0] == "unavailable" and "not found" in outcome["noqemu"][1]


def test_qemu_failing_at_start_under_a_placement_is_a_start_error(host_facts, agent_path, tmp_path):
    from guestbench.environments.base import GuestStartError
    env = environment(host_facts, "qemu-tcg", placement="same", cpu="nosuchcpu")
    before = set(Path(tempfile.gettempdir()).glob("guestbench-qemu-*"))
    with pytest.raises(GuestStartError, match="placement same: .*unable to find CPU model .nosuchcpu."):
        env.start(Job("getpid", agent_path, ("getpid",)), tmp_path / "logs",
                  proc.now_ns() + int(30e9))
    assert not set(Path(tempfile.gettempdir()).glob("guestbench-qemu-*")) - before
