"""Environments inside a VM, for real: QEMU with -accel kvm and User-Mode Linux inside an L1
guest that QEMU runs under TCG emulating SVM (guestbench/environments/fullsystem/nested.py),
beside a plain TCG guest, in one campaign, as a person runs it. KVM inside is real: cpuid
exits to the L1's KVM, where under TCG it is a translated instruction."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guestbench.environments.fullsystem import nested
from tests.support.real_environments import tcg_kernel

pytestmark = pytest.mark.integration

GUESTBENCH = [sys.executable, "-m", "guestbench"]
NESTED = ("kvm-nested", "uml-nested")  # and cmd-nested, which runs getpid and cpuid


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    """One campaign: kvm-nested and uml-nested booting once, cpuid in kvm-nested, in
    cmd-nested (with getpid, in the same guest) and in a plain tcg guest to compare, and
    kvm-nested a TCP round trip to the host's peer (through its VMM's user network, then
    the L1 machine's), vsock round trips (vhost-vsock in the L1 machine) and a save and
    restore; (the run's result, its JSON report, its
    store's folder). Each run inside boots a guest there, 6-16 s: what one run proves is
    not run twice (UML's agent runs inside in its boot, its micro workloads on the host)."""
    answer = nested.probe("tcg")
    if not answer.available:
        pytest.skip(f"no L1 machine here: {answer.reason}")
    folder = tmp_path_factory.mktemp("nested")
    kernel = tcg_kernel()
    plan = folder / "plan.toml"
    plan.write_text(f"""
[campaign]
name = "nested"
repeat = 1

[[environment]]
name = "tcg"
kind = "qemu"
accel = "tcg"
kernel = "{kernel}"

[[environment]]
name = "kvm-nested"
kind = "qemu"
accel = "kvm"
cpu = "host"
inside = "tcg"
kernel = "{kernel}"
thread_cpu = true          # read in the L1 machine, beside the run

[[environment]]
name = "uml-nested"
kind = "uml"
inside = "tcg"

# any VMM from a command line nests the same way
[[environment]]
name = "cmd-nested"
kind = "command"
inside = "tcg"
kernel_format = "vmlinux"
kernel_args = ["console=ttyS0", "reboot=t"]
argv = ["qemu-system-x86_64", "-M", "microvm,rtc=on", "-accel", "kvm", "-cpu", "host",
        "-m", "{{memory_mib}}", "-smp", "{{vcpus}}", "-nodefaults", "-no-user-config",
        "-display", "none", "-no-reboot", "-serial", "stdio",
        "-kernel", "{{kernel}}", "-initrd", "{{initrd}}", "-append", "{{cmdline}}"]

[[workload]]
name = "boot"
environments = ["kvm-nested", "uml-nested"]

# not in kvm-nested, whose micro path cpuid takes (and the replaced-L1 test below runs
# getpid under the nested KVM)
[[workload]]
name = "getpid"
environments = ["cmd-nested"]

[[workload]]
name = "cpuid"
environments = ["tcg", "kvm-nested", "cmd-nested"]

[[workload]]
name = "net_rr"
environments = ["kvm-nested"]

[[workload]]
name = "vsock_rr"
environments = ["kvm-nested"]
values = 2

[[workload]]
name = "restore"
environments = ["kvm-nested"]
dirty_mib = 16
restores = 1
""")
    database = f"sqlite:///{folder / 'store.sqlite'}"
    ran = subprocess.run([*GUESTBENCH, "run", str(plan), "--db", database], cwd=folder,
                         capture_output=True, text=True, timeout=600)
    report = subprocess.run([*GUESTBENCH, "report", "--db", database, "--format", "json"],
                            cwd=folder, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    return ran, json.loads(report.stdout), folder


def _median(report, environment: str, label: str, metric: str = "time_per_op") -> float:
    for cell in report["cells"]:
        if (cell["environment"], cell["label"], cell["metric"]) == (environment, label, metric):
            return cell["statistics"]["median"]
    raise AssertionError(f"no {metric} for {label} in {environment}")


def test_every_nested_run_is_ok(campaign):
    ran, report, _ = campaign
    assert ran.returncode == 0, ran.stderr[-3000:]
    statuses = {(run["environment"], run["workload"]): (run["status"], run["reason"])
                for run in report["runs"]}
    assert statuses[("kvm-nested", "net_rr")][0] == "ok", statuses[("kvm-nested", "net_rr")]
    # vhost-vsock in the L1 machine, the agent's peer beside the inner QEMU there
    assert statuses[("kvm-nested", "vsock_rr")][0] == "ok", statuses[("kvm-nested", "vsock_rr")]
    for run in ("kvm-nested", "boot"), ("kvm-nested", "cpuid"), ("uml-nested", "boot"):
        assert statuses[run][0] == "ok", (run, statuses[run])


def test_a_guest_under_nested_kvm_is_saved_and_restored(campaign):
    """Its QMP through the L1 machine's forwarded port, its state through cat into the folder
    L1 shares, its console's input through the run's FIFO: the restored agent is the one
    saved (the runner checks its token, pid and sequence) and its memory is intact (the
    agent checks every byte; the run fails if one differs)."""
    _, report, _ = campaign
    [run] = [run for run in report["runs"]
             if (run["environment"], run["workload"]) == ("kvm-nested", "restore")]
    assert run["status"] == "ok", run["reason"]
    values = {sample["metric"]: sample["value"] for sample in run["samples"]}
    assert sum(values[f"restore_{step}"] for step in ("spawn", "load", "resume")) \
        < values["restore"]
    saved = (Path(run["log_path"]) / "snapshot.txt").read_text()
    image_mib = float(saved.split("image: ")[1].split(" MiB")[0])
    assert image_mib >= 16 and "through cat in the L1 machine" in saved, saved


def test_cpuid_exits_to_the_l1_machines_kvm(campaign):
    _, report, _ = campaign
    emulated = _median(report, "tcg", "cpuid")
    # under TCG cpuid is a translated instruction (~10 ns here); under KVM it is a VM exit,
    # taken by the L1 machine's KVM under emulation (~40 us here)
    for environment in ("kvm-nested", "cmd-nested"):
        nested_kvm = _median(report, environment, "cpuid")
        assert nested_kvm > 100 * emulated, (environment, nested_kvm, emulated)
    statuses = {(run["environment"], run["workload"]): run["status"] for run in report["runs"]}
    assert statuses[("cmd-nested", "getpid")] == statuses[("cmd-nested", "cpuid")] == "ok"


def test_the_vmm_threads_host_cpu_is_read_on_the_host_and_inside(campaign):
    """Over cpuid: on the host from QEMU's /proc, inside from one grep in the L1 machine
    beside the run (whose console it leaves whole: the run is ok); its vCPU thread took
    most of the window in both. Off inside unless asked: cmd-nested has none."""
    _, report, _ = campaign
    runs = {(run["environment"], run["workload"]): run for run in report["runs"]}
    for environment in ("tcg", "kvm-nested"):
        run = runs[(environment, "cpuid")]
        assert run["status"] == "ok", run["reason"]
        values = {s["metric"]: s["value"] for s in run["samples"]}
        assert values["threads_cpu_vcpus"] > 30, (environment, values)
        assert values["threads_cpu_vcpus"] > values["threads_cpu_vmm"], (environment, values)
        listed = (Path(run["log_path"]) / "vmm-threads.txt").read_text()
        vcpu = "CPU 0/KVM" if environment == "kvm-nested" else "CPU 0/TCG"
        assert "cpuid: " in listed and "vcpus" in listed and vcpu in listed, listed
    assert not [s for s in runs[("cmd-nested", "cpuid")]["samples"]
                if s["metric"].startswith("threads_cpu_")]
    facts = {env["name"]: env["facts"] for env in report["environments"]}
    assert "thread_cpu = true" in facts["cmd-nested"]["vmm_threads"]


def test_both_nested_environments_ran_in_one_l1_machine_with_kvm(campaign):
    _, report, _ = campaign
    facts = {env["name"]: env["facts"] for env in report["environments"]}
    for name in NESTED:
        assert facts[name]["l1_kvm"] is True
        assert "under TCG" in facts[name]["functional"]
        assert facts[name]["l1"].startswith("QEMU TCG")
    assert facts["kvm-nested"]["l1_boot_s"] == facts["uml-nested"]["l1_boot_s"]
    assert "functional" not in facts["tcg"]


def test_the_inner_guests_boot_phases_and_the_l1_console_are_kept(campaign):
    _, report, _ = campaign
    boots = [run for run in report["runs"]
             if run["environment"] in NESTED and run["workload"] == "boot"]
    for run in boots:
        phases = {sample["metric"]: sample["value"] for sample in run["samples"]}
        assert 0 < phases["boot_first_byte"] <= phases["boot_userspace"] \
            <= phases["boot_agent_ready"] <= phases["boot_powered_off"], phases
        assert 0 < phases["boot_clock_zero"] < phases["boot_userspace"], phases
        logs = Path(run["log_path"])
        assert "gbl1: ready" in (logs / "l1-console.log").read_text()
        assert "guestbench-init: userspace" in (logs / "stdout.log").read_text()


def test_an_l1_machine_that_died_is_replaced_at_the_next_run(host_facts, agent_path, tmp_path):
    """Killed behind guestbench's back between two runs, the L1 machine is booted again, and
    the run after it is ok; the new one ends when its environment is closed."""
    from guestbench.process import proc
    from tests.support.guests import run
    from tests.support.real_environments import environment
    env = environment(host_facts, "qemu-kvm-nested")
    try:
        first = env.machine
        os.kill(first.process.pid, signal.SIGKILL)
        while first.alive:
            time.sleep(0.05)
        outcome, _ = run(env, agent_path, tmp_path, ["--min-time", "0.01", "getpid"])
        assert outcome.status == "ok", outcome.reason
        assert env.machine is not first and env.machine.alive
        replaced = env.machine.process.pid
    finally:
        env.close()
    deadline = proc.now_ns() + int(5e9)
    while Path(f"/proc/{replaced}").exists() and proc.now_ns() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{replaced}").exists(), "the new L1 machine outlived close()"


def test_a_killed_run_ends_with_every_process_it_started_gone(tmp_path):
    """A run whose program starts a process in a session of its own (as script(1) starts
    Cloud Hypervisor for a restore): the kill of the run reaches it too, through the run's
    cgroup in the L1 machine, and the run's end is told only once it is gone. A process
    group's kill, as before, left it running."""
    answer = nested.probe("tcg")
    if not answer.available:
        pytest.skip(f"no L1 machine here: {answer.reason}")
    machine = nested.acquire(nested.Shape("tcg", 512, 1))
    try:
        workdir = machine.workdir()
        child = workdir / "child"
        run = machine.launch(
            ["/bin/sh", "-c", f"setsid sleep 600 </dev/null >/dev/null 2>&1 & "
                              f"echo $! >{child}.part && mv {child}.part {child}; exec sleep 600"],
            workdir, tmp_path / "stdout.log", tmp_path / "stderr.log")
        deadline = time.monotonic() + 60
        while not child.exists():
            assert time.monotonic() < deadline, "the run's program did not start"
            time.sleep(0.05)
        pid = int(child.read_text())
        status, said = machine.side(f"cat /proc/{pid}/stat", 30)
        assert status == 0 and "(sleep)" in said, said  # running, in a session of its own
        run.kill()
        assert run.returncode is not None, "the run's end was not told"
        status, said = machine.side(f"test -e /proc/{pid} && cat /proc/{pid}/stat", 30)
        assert status != 0, f"the run's process in its own session outlived the kill: {said}"
        assert machine.alive
    finally:
        nested.release(machine)
