"""The snapshot workloads on every kind that can save an instance here (runsc, runc with a
CRIU that works on this kernel, QEMU under TCG): the save timed and its image at least as
large as the memory the agent dirtied, each restore timed to the same agent's token, the
first touch of every page after it; the kinds without snapshots unsupported with their
reason. docs/workloads-startup.md."""

from __future__ import annotations

import json

import pytest

from guestbench import environments
from guestbench.environments.oci_snapshots import criu_refusal

from tests.support.cli import guestbench
from tests.support.real_environments import prepared, tcg_kernel

pytestmark = pytest.mark.integration

DIRTY_MIB = 16
PLAN = """[[workload]]
name = "snapshot_create"
dirty_mib = {dirty}

[[workload]]
name = "restore"
dirty_mib = {dirty}
restores = 2

[[workload]]
name = "restore_first_touch"
dirty_mib = {dirty}
"""


def _runs(preset: str, tmp_path, host_facts) -> list[dict]:
    prepared(host_facts, environments.create(environments.preset_spec(preset)))  # or skip: why
    kernel = f'kernel = "{tcg_kernel()}"\n' if preset == "qemu-tcg" else ""
    plan = tmp_path / "plan.toml"
    plan.write_text(f'[campaign]\nrepeat = 1\ntimeout_s = 300\n\n[[environment]]\n'
                    f'preset = "{preset}"\n{kernel}\n' + PLAN.format(dirty=DIRTY_MIB))
    run = guestbench("run", str(plan), "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    return json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)["runs"]


def _values(entry: dict) -> dict[str, list[float]]:
    got: dict[str, list[float]] = {}
    for sample in entry["samples"]:
        got.setdefault(sample["metric"], []).append(sample["value"])
    return got


@pytest.mark.parametrize("preset", ["runsc", "runc", "qemu-tcg"])
def test_save_restore_and_first_touch(preset, tmp_path, host_facts):
    if preset == "runc" and criu_refusal():
        pytest.skip(criu_refusal())
    runs = {entry["workload"]: entry for entry in _runs(preset, tmp_path, host_facts)}
    assert all(entry["status"] == "ok" for entry in runs.values()), [
        (entry["workload"], entry["status"], entry["reason"]) for entry in runs.values()]
    saved = _values(runs["snapshot_create"])
    assert 0 < saved["snapshot_create"][0] < 300_000
    assert saved["snapshot_size"][0] >= DIRTY_MIB  # random pages: no compressor shrinks them
    restored = _values(runs["restore"])
    assert len(restored["restore"]) == 2 and all(0 < ms < 300_000 for ms in restored["restore"])
    if preset == "qemu-tcg":  # QEMU's steps and the agent's answer after them: the whole
        for steps in zip(restored["restore_spawn"], restored["restore_load"],
                         restored["restore_resume"], restored["restore_answer"],
                         restored["restore"]):
            assert all(step > 0 for step in steps) and sum(steps[:4]) <= steps[4] + 0.01
    touched = _values(runs["restore_first_touch"])
    assert 0 < touched["restore_touch_p50"][0] <= touched["restore_touch_p99"][0] \
        <= touched["restore_touch_max"][0]
    assert touched["restore_touch_total"][0] > 0


@pytest.mark.parametrize("preset", ["native", "uml"])
def test_a_kind_without_snapshots_says_why(preset, tmp_path, host_facts):
    runs = _runs(preset, tmp_path, host_facts)
    assert {entry["status"] for entry in runs} == {"unsupported"}
    assert all(("no snapshot" in entry["reason"] or "does not checkpoint" in entry["reason"])
               for entry in runs), [entry["reason"] for entry in runs]
