"""fsync_honoured through guestbench for real: QEMU's cache modes and UML's ubd sync."""

from __future__ import annotations

import json
import subprocess

import pytest

from guestbench.environments.fullsystem import tracedisk

from tests.support.cli import guestbench
from tests.support.real_environments import tcg_kernel

pytestmark = pytest.mark.integration

PLAN = """
[campaign]
name = "durability"
repeat = 1
timeout_s = 120

[[environment]]
name = "tcg"
kind = "qemu"
kernel = "{kernel}"
disk_cache = ["unsafe", "none", "directsync"]

[[environment]]
name = "uml"
kind = "uml"
disk_cache = ["writeback", "sync"]

[[workload]]
name = "fsync_honoured"
records = 20
"""
EXPECTED = {"tcg-disk_cacheunsafe": 0, "tcg-disk_cachenone": 1, "tcg-disk_cachedirectsync": 1,
            "uml-disk_cachewriteback": 0, "uml-disk_cachesync": 1}


def test_unsafe_and_plain_ubd_are_not_honoured_the_others_are(tmp_path):
    reason = tracedisk.unavailable_reason()
    if reason:
        pytest.skip(f"no traced disk on this host: {reason}")
    (tmp_path / "plan.toml").write_text(PLAN.replace("{kernel}", tcg_kernel()))
    run = guestbench("run", "plan.toml", cwd=tmp_path, timeout_s=600)
    assert run.returncode == 0, run.stderr
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    available = {env["name"] for env in document["environments"] if env["available"]}
    checked = {}
    for entry in document["runs"]:
        if entry["environment"] not in available:
            continue
        assert entry["status"] == "ok", (entry["environment"], entry["reason"])
        samples = {s["metric"]: s["value"] for s in entry["samples"]}
        assert samples["records_acknowledged"] == 20
        assert samples["honoured"] == EXPECTED[entry["environment"]], (entry["environment"], samples)
        assert samples["records_durable"] == 20 * samples["honoured"]
        checked[entry["environment"]] = samples["honoured"]
    if not checked:
        pytest.skip("neither qemu-tcg nor uml is available here")
    print(f"\nverdicts (1 = honoured): {checked}")
    losetup = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    assert "traced-disk" not in losetup, losetup
    assert not list((tracedisk.tracefs() / "instances").glob("guestbench-*"))
