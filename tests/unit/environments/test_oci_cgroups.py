"""A container's empty cgroups, which `runc delete` does not know when the run timeout cut its
create short: removed at the teardown, or by the reaper's command, under cgroup v1 hybrid
hierarchies and the v2 tree alike (each rebuilt in a folder: only one is this host's); the
teardown does not wait for the zombie a killed `runc init` is until its parent reaps it."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from guestbench.environments import oci_leftovers
from guestbench.environments.base import ProcessGuest
from guestbench.process import proc, reaper

ID = "guestbench-0123456789ab"
OTHER = "guestbench-ba9876543210"


def v1_hybrid(root: Path) -> Path:
    """A v1 hybrid layout: nine hierarchies, and the v2 tree mounted at unified, with the
    container's folder in each, one of them not empty (a process or child cgroup in it)."""
    for hierarchy in ("blkio", "cpu", "cpuacct", "cpuset", "devices", "freezer", "memory",
                      "pids", "systemd", "unified"):
        (root / hierarchy / ID).mkdir(parents=True)
        (root / hierarchy / OTHER).mkdir()
    (root / "memory" / ID / "still-used").mkdir()
    return root


def v2_tree(root: Path) -> Path:
    (root / ID).mkdir(parents=True)
    (root / OTHER).mkdir()
    (root / "system.slice" / "some.service").mkdir(parents=True)
    return root


def left(root: Path) -> set[str]:
    return {str(path.relative_to(root)) for path in root.rglob("*") if ID in path.parts}


@pytest.mark.parametrize("layout", [v1_hybrid, v2_tree])
def test_the_teardown_removes_the_container_s_empty_cgroups_and_nothing_else(tmp_path, layout):
    root = layout(tmp_path / "cgroup")
    others = {path for path in root.rglob("*") if ID not in path.parts}
    removed = oci_leftovers.remove_cgroups(ID, root)
    if layout is v1_hybrid:
        assert len(removed) == 9  # memory's holds a child: rmdir refuses it, as cgroupfs does
        assert left(root) == {f"memory/{ID}", f"memory/{ID}/still-used"}
    else:
        assert removed == [root / ID] and left(root) == set()
    assert {path for path in root.rglob("*") if ID not in path.parts} == others


@pytest.mark.parametrize("layout", [v1_hybrid, v2_tree])
def test_the_teardown_s_end_removes_them_and_its_command_is_the_reaper_s(tmp_path, layout):
    """end() (the teardown's, after the timed delete; and, as command(), the reaper's)
    removes what remove_cgroups() does where no process of the container is left."""
    by_remove, by_end = layout(tmp_path / "a"), layout(tmp_path / "b")
    oci_leftovers.remove_cgroups(ID, by_remove)
    oci_leftovers.end(ID, tmp_path / "bundle", by_end)
    assert {p.relative_to(by_end) for p in by_end.rglob("*")} == {
        p.relative_to(by_remove) for p in by_remove.rglob("*")}
    assert oci_leftovers.command(ID, tmp_path / "bundle") == [
        sys.executable, "-m", "guestbench.environments.oci_leftovers", ID,
        str(tmp_path / "bundle")]


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_a_container_s_cgroup_under_guestbench_s_own_is_removed_too(tmp_path, monkeypatch,
                                                                     layout):
    """runc makes a container's cgroup under its caller's: a host that runs its jobs in a
    memory cgroup of their own (cgroup v1 hybrid) gets them there, and on a v2 host under the
    caller's v2 cgroup; the teardown finds them there as well as at the top."""
    root, own = tmp_path / "cgroup", "/jobs/job-7"
    if layout == "v1":
        lines = f"9:pids:/\n4:memory:{own}\n1:name=systemd:/\n0::/\n"
        nested = root / "memory" / own.lstrip("/")
        (root / "pids" / ID).mkdir(parents=True)
    else:
        lines, nested = f"0::{own}\n", root / own.lstrip("/")
    (nested / ID).mkdir(parents=True)
    (nested / OTHER).mkdir()
    proc_self = tmp_path / "self-cgroup"
    proc_self.write_text(lines)
    monkeypatch.setattr(oci_leftovers, "SELF", proc_self)
    assert nested in oci_leftovers.own_cgroups(root)
    oci_leftovers.end(ID, tmp_path / "bundle", root)
    assert left(root) == set() and (nested / OTHER).is_dir()


def test_the_teardown_does_not_wait_for_a_killed_member_s_zombie(tmp_path, monkeypatch):
    """A killed `runc init` stays a zombie until pid 1 reaps it (up to 2 s on one host),
    its v2 cgroup still named in /proc/PID/cgroup, though rmdir removes that cgroup: end()
    waited for the reaping, up to GONE_S, at each run's teardown."""
    root = v2_tree(tmp_path / "cgroup")
    member = subprocess.Popen(["sleep", "60"])  # the test's child: a zombie until it waits
    try:
        monkeypatch.setattr(oci_leftovers, "_members", lambda container_id, _root: (
            {member.pid: [root / ID]} if Path(f"/proc/{member.pid}").exists() else {}))
        started = time.monotonic()
        oci_leftovers.end(ID, tmp_path / "bundle", root)
        assert time.monotonic() - started < oci_leftovers.GONE_S / 2
        assert oci_leftovers._exited(member.pid) and Path(f"/proc/{member.pid}").exists()
        assert left(root) == set()
    finally:
        member.kill()
        member.wait()


def test_a_running_process_has_not_exited_and_a_reaped_one_has():
    member = subprocess.Popen(["sleep", "60"])
    try:
        assert not oci_leftovers._exited(member.pid)
    finally:
        member.kill()
        member.wait()
    assert oci_leftovers._exited(member.pid)  # reaped: gone


def test_reaped_commands_are_journaled_for_the_reaper_alone_and_forgotten_after_teardown(
        tmp_path, monkeypatch):
    sent, ran = [], []
    monkeypatch.setattr(reaper.KEEPER, "_send", lambda verb, what: sent.append((verb, what)))
    sweep = ["find", str(tmp_path), "-name", ID, "-delete"]
    guest = ProcessGuest([sys.executable, "-c", "pass"], tmp_path / "logs",
                         proc.now_ns() + int(10e9), reaped=[sweep],
                         finalizers=[lambda: ran.append("finalizer")])
    assert ("command", sweep) in sent
    guest._process.wait(10)
    guest.stop()
    assert ("-command", sweep) in sent and ran == ["finalizer"]
    assert "cleanup" not in guest.start_phases()  # nothing was run as a timed command
