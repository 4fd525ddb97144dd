"""Xen for real: Debian's Xen 4.17 under QEMU's TCG with the agent in its PV dom0
(guestbench/environments/kinds/xen.py), in a campaign as a person runs it; the version it
ran is in every report format that has a place for it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from guestbench import environments
from tests.support.real_environments import tcg_kernel

pytestmark = pytest.mark.integration

GUESTBENCH = [sys.executable, "-m", "guestbench"]


@pytest.fixture(scope="module")
def campaign(tmp_path_factory, host_facts):
    """xen-tcg running boot and getpid, twice each: (the run, the store's URL, its folder)."""
    answer = environments.create(environments.preset_spec("xen-tcg")).probe(host_facts)
    if not answer.available:
        pytest.skip(f"xen-tcg unavailable here: {answer.reason}")
    folder = tmp_path_factory.mktemp("xen")
    plan = folder / "plan.toml"
    plan.write_text(f'[campaign]\nname = "xen"\nrepeat = 2\n\n[[environment]]\nname = "xen"\n'
                    f'kind = "xen"\nkernel = "{tcg_kernel()}"\n\n[[workload]]\nname = "boot"\n\n'
                    '[[workload]]\nname = "getpid"\n')
    database = f"sqlite:///{folder / 'store.sqlite'}"
    ran = subprocess.run([*GUESTBENCH, "run", str(plan), "--db", database], cwd=folder,
                         capture_output=True, text=True, timeout=600)
    return ran, database, folder


def report(campaign, *options: str) -> str:
    _, database, folder = campaign
    shown = subprocess.run([*GUESTBENCH, "report", "--db", database, *options], cwd=folder,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_getpid_and_boot_run_in_dom0(campaign):
    ran = campaign[0]
    assert ran.returncode == 0, ran.stderr[-3000:]
    runs = json.loads(report(campaign, "--format", "json"))["runs"]
    assert len(runs) == 4 and {run["status"] for run in runs} == {"ok"}, runs
    boot = next(run for run in runs if run["workload"] == "boot")
    phases = {sample["metric"]: sample["value"] for sample in boot["samples"]}
    assert 0 < phases["boot_userspace"] <= phases["boot_powered_off"]
    # Xen's own console is kept beside dom0's, whose lines carry the records
    assert "(XEN) Xen version 4.17" in (Path(boot["log_path"]) / "xen-console.log").read_text()


@pytest.mark.parametrize("options", [(), ("--detail",), ("--format", "markdown"),
                                     ("--format", "html"), ("--format", "json"),
                                     ("--format", "csv")])
def test_the_xen_version_is_in_the_report(campaign, options):
    assert "Xen 4.17." in report(campaign, *options)

