"""Xen PV guests for real: a domU that `xl create` starts in a dom0 which QEMU runs under TCG
(guestbench/environments/kinds/xen_pv.py, fullsystem/dom0.py), in one campaign as a person
runs it: one dom0 serves every run, a domU whose kernel panics before its agent is a run
that failed with its console's words, and the next domU in that dom0 is ok."""

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
    """pv: boot twice and getpid; pv-panics (its /init exits: the domU's kernel panics
    before the agent) getpid, before pv's runs in the plan's order; (the run, its JSON
    report, its folder, the guest processes before it)."""
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
kernel_args = ["gb.fault=exit-init"]

[[environment]]
name = "pv"
preset = "xen-pv-tcg"

[[workload]]
name = "getpid"

[[workload]]
name = "boot"
repeat = 2
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
    for key in (("pv", "getpid", 0), ("pv", "boot", 0), ("pv", "boot", 1)):
        assert runs[key]["status"] == "ok", (key, runs[key]["reason"], ran.stderr[-2000:])
    phases = {sample["metric"]: sample["value"] for sample in runs[("pv", "boot", 0)]["samples"]}
    # from `xl create` in dom0: the domain built, its kernel, its /init, its agent
    assert 0 < phases["boot_clock_zero"] < phases["boot_userspace"] \
        < phases["boot_agent_ready"] < phases["boot_powered_off"]
    console = (Path(runs[("pv", "getpid", 0)]["log_path"]) / "stdout.log").read_text()
    assert "guestbench-init: userspace" in console and "agent exited with status 0" in console


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
