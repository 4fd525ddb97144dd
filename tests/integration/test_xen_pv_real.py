"""Xen PV guests for real: a domU that `xl create` starts in a dom0 which QEMU runs under TCG
(guestbench/environments/kinds/xen_pv.py, fullsystem/dom0.py), in one campaign as a person
runs it: one dom0 serves every run; the domU boots with its own phases, runs the agent,
writes to its PV disk and is saved and restored with xl; a domU whose kernel panics before
its agent is a run that failed with its console's words, and the next domU in that dom0
is ok. Each run boots a domU under emulation (about 15 s here): what one run proves is not
run twice."""

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


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, host_facts):
    """pv: boot, getpid, a sequential write to its disk, a save and a restore; pv-panics
    (its /init exits: the domU's kernel panics before the agent) getpid, before pv's runs
    in the plan's order; (the run, its JSON report, its folder, what was there before)."""
    answer = environments.create(environments.preset_spec("xen-pv-tcg")).probe(host_facts)
    if not answer.available:
        pytest.skip(f"xen-pv-tcg unavailable here: {answer.reason}")
    before = guest_processes(), guest_folders()
    folder = tmp_path_factory.mktemp("xen-pv")
    plan = folder / "plan.toml"
    plan.write_text("""
[campaign]
name = "xen-pv"
repeat = 1

[[environment]]
name = "pv-panics"
preset = "xen-pv-tcg"
memory_mib = 384          # as pv's: one dom0 serves both
kernel_args = ["gb.fault=exit-init"]

[[environment]]
name = "pv"
preset = "xen-pv-tcg"
memory_mib = 384          # the image (fio and its libraries) unpacked; a shorter save
disk_mib = 128            # the scratch disk, read by dom0 over 9p

[[workload]]
name = "getpid"

[[workload]]
name = "boot"
environments = ["pv"]

[[workload]]
name = "fio_seq_write"
size_mib = 16
environments = ["pv"]

[[workload]]
name = "restore"
dirty_mib = 16
restores = 1
environments = ["pv"]
""")
    database = f"sqlite:///{folder / 'store.sqlite'}"
    ran = subprocess.run([*GUESTBENCH, "run", str(plan), "--db", database], cwd=folder,
                         capture_output=True, text=True, timeout=900)
    report = subprocess.run([*GUESTBENCH, "report", "--db", database, "--format", "json"],
                            cwd=folder, capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    return ran, json.loads(report.stdout), folder, before


def test_the_domu_runs_the_agent_and_boots_with_its_own_phases(campaign):
    ran, report, _, _ = campaign
    runs = {(run["environment"], run["workload"], run["repetition"]): run for run in report["runs"]}
    for key in (("pv", "getpid", 0), ("pv", "boot", 0)):
        assert runs[key]["status"] == "ok", (key, runs[key]["reason"], ran.stderr[-2000:])
    getpid = {sample["metric"]: sample["value"] for sample in runs[("pv", "getpid", 0)]["samples"]}
    assert getpid["time_per_op"] > 0  # a system call of a PV guest, through Xen
    boot = runs[("pv", "boot", 0)]
    phases = {sample["metric"]: sample["value"] for sample in boot["samples"]}
    # from `xl create` in dom0: the domain built, its kernel, its /init, its agent
    assert 0 < phases["boot_clock_zero"] < phases["boot_userspace"] \
        < phases["boot_agent_ready"] < phases["boot_powered_off"]
    console = (Path(boot["log_path"]) / "stdout.log").read_text()
    assert "guestbench-init: userspace" in console and "agent exited with status 0" in console


def test_the_domu_writes_to_its_pv_disk(campaign):
    """A file in the run's folder, on a loop device in dom0 that xen-blkback serves to the
    domU's xen-blkfront (/dev/xvda), formatted ext4 on the host."""
    _, report, _, _ = campaign
    [run] = [run for run in report["runs"]
             if (run["environment"], run["workload"]) == ("pv", "fio_seq_write")]
    assert run["status"] == "ok", run["reason"]
    values = {sample["metric"]: sample["value"] for sample in run["samples"]}
    assert values["bandwidth"] > 0


def test_the_domu_is_saved_and_restored_with_xl(campaign):
    """xl save through a FIFO into the folder dom0 shares, xl restore, xl console in a
    terminal: the restored agent is the one saved (the runner checks its token, pid and
    sequence) and its memory is intact (the agent checks every byte)."""
    _, report, _, _ = campaign
    [run] = [run for run in report["runs"]
             if (run["environment"], run["workload"]) == ("pv", "restore")]
    assert run["status"] == "ok", run["reason"]
    values = {sample["metric"]: sample["value"] for sample in run["samples"]}
    assert 0 < values["restore_load"] < values["restore"]
    saved = (Path(run["log_path"]) / "snapshot.txt").read_text()
    assert "xl save" in saved
    # the domU's whole memory (384 MiB) and its state
    assert 384 <= float(saved.split("image: ")[1].split(" MiB")[0]) < 400


def test_a_domu_that_never_reaches_its_agent_fails_and_dom0_lives_on(campaign):
    ran, report, _, _ = campaign
    assert ran.returncode == 1, ran.stderr[-2000:]  # the one run that did not end ok
    [panicked] = [run for run in report["runs"] if run["environment"] == "pv-panics"]
    assert panicked["status"] in ("crashed", "failed"), panicked
    assert "Attempted to kill init" in panicked["reason"]
    # one dom0 for both environments: booted once, before the first run
    facts = {env["name"]: env["facts"] for env in report["environments"]}
    assert facts["pv"]["dom0_boot_s"] == facts["pv-panics"]["dom0_boot_s"] > 0
    assert "Xen 4.17" in facts["pv"]["vmm_version"] and "PV domU" in facts["pv"]["functional"]


def test_nothing_of_dom0_is_left(campaign):
    """dom0's QEMU ended with the campaign, and its folders are gone."""
    assert not left_since(*campaign[3])
