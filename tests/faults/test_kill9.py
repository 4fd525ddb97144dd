"""guestbench killed with SIGKILL mid-run, under each kind installed here: within 5 s no
guest process and no folder of its is left (the kernel's parent-death signal and the
reaper, guestbench/process/reaper.py), and the next run marks the campaign interrupted."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guestbench import environments
from tests.support.real_environments import FULL_SYSTEM_PRESETS, prepared, preset_table
from tests.support.leaks import (guest_folders, guest_network, guest_processes, left_since,
                                 running, temporary_folder)

GUESTBENCH = [sys.executable, "-m", "guestbench"]


@pytest.mark.parametrize("preset", ["native", "namespace", "runc", "runsc", "qemu-user",
                                    "qemu-tcg", "uml", "xen-tcg"])
def test_sigkill_leaves_nothing_and_the_next_run_marks_the_campaign(preset, tmp_path, probes,
                                                                     host_facts):
    if preset in FULL_SYSTEM_PRESETS:
        prepared(host_facts, environments.create(environments.preset_spec(preset)))
    else:
        _environment, answer = probes[preset]
        if not answer.available:
            pytest.skip(f"{preset} unavailable here: {answer.reason}")
    processes, folders = guest_processes(), guest_folders()
    database = tmp_path / "store.sqlite"
    child = subprocess.Popen([*GUESTBENCH, "run", "--env", preset, "--workload", "hang",
                              "--repeat", "1", "--timeout", "120", "--quiet", "--db",
                              f"sqlite:///{database}"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    during = _killed_once(child, lambda: any(_is_hang(pid) for pid in
                                             guest_processes() - processes),
                          "the hanging run", settle_s=1.5) - processes
    assert during, "no guest process was seen"
    assert not left_since(processes, folders, wait_s=5.0)
    with sqlite3.connect(database) as connection:
        assert connection.execute("select status from campaign").fetchall() == [("running",)]
    again = subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload", "getpid",
                            "--repeat", "1", "--quiet", "--db", f"sqlite:///{database}"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "campaign 1 ('quick') was left running" in again.stderr
    with sqlite3.connect(database) as connection:
        assert connection.execute("select status from campaign order by id").fetchall() == [
            ("interrupted",), ("finished",)]


def _killed_once(child: subprocess.Popen, started, what: str, settle_s: float = 0.0) -> set[int]:
    """SIGKILLs guestbench once started() holds (then settle_s later); the guest processes
    alive just before."""
    try:
        deadline = time.monotonic() + 90
        while not started():
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, f"{what} did not start within 90 s"
            time.sleep(0.1)
        time.sleep(settle_s)  # a sandbox or a VMM: its guest gets to the workload
        return guest_processes()
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait()


def _is_hang(pid: int) -> bool:
    """The guest has got as far as running the hanging workload (or is a VMM, whose guest's
    processes are not the host's to see)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return any(word in cmdline for word in (b"hang", b"qemu-system", b"linux.uml",
                                            b"runsc-sandbox"))


def hanging_runc(tmp_path, probes):
    """A campaign under runc whose run hangs, once its agent runs; with the snapshot of
    guest processes and folders from before it."""
    _environment, answer = probes["runc"]
    if not answer.available:
        pytest.skip(f"runc unavailable here: {answer.reason}")
    processes, folders = guest_processes(), guest_folders()
    child = subprocess.Popen([*GUESTBENCH, "run", "--env", "runc", "--workload", "hang",
                              "--repeat", "1", "--timeout", "120", "--quiet", "--db",
                              f"sqlite:///{tmp_path}/store.sqlite"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(_is_hang(pid) for pid in guest_processes() - processes):
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.05)
    return child, processes, folders


def test_a_second_sigterm_during_an_oci_teardown_leaves_nothing(tmp_path, probes):
    child, processes, folders = hanging_runc(tmp_path, probes)
    child.send_signal(signal.SIGTERM)
    time.sleep(0.05)  # into the teardown (runc delete --force)
    child.send_signal(signal.SIGTERM)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert not left_since(processes, folders, wait_s=5.0)
    with sqlite3.connect(tmp_path / "store.sqlite") as connection:
        assert connection.execute("select status from campaign").fetchall() == [("interrupted",)]


@pytest.mark.sweeps_journals
def test_a_journal_left_by_a_guestbench_killed_with_its_reaper_is_swept(tmp_path):
    from guestbench.process import proc, reaper
    dead = subprocess.Popen(["true"])
    dead.wait()
    marker, left = tmp_path / "delete-ran", tmp_path / "guest-folder"
    left.mkdir()
    reaper.JOURNALS.mkdir(mode=0o700, exist_ok=True)
    journal = reaper.JOURNALS / f"{dead.pid}-1.jsonl"  # that pid, but not that process
    journal.write_text("\n".join(json.dumps(line) for line in [
        ["group", 999999], ["command", ["touch", str(marker)]], ["folder", str(left)],
        ["command", ["touch", str(tmp_path / "taken-back")]],
        ["-command", ["touch", str(tmp_path / "taken-back")]]]) + "\n{cut sh")
    me = proc.identity()
    mine = reaper.JOURNALS / f"{me['pid']}-{me['started']}.jsonl"  # alive: never touched
    kept = not mine.exists()
    if kept:
        mine.write_text(json.dumps(["folder", str(left)]) + "\n")
    try:
        done = subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload", "getpid",
                               "--repeat", "1", "--quiet", "--db",
                               f"sqlite:///{tmp_path}/store.sqlite"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert f"killed with its reaper (process {dead.pid})" in done.stderr
        assert marker.exists() and not left.exists() and not journal.exists()
        assert not (tmp_path / "taken-back").exists()
        assert not kept or mine.exists()
    finally:
        if kept:
            mine.unlink(missing_ok=True)


@pytest.mark.sweeps_journals
def test_runc_killed_with_its_reaper_is_cleaned_up_by_the_next_run(tmp_path, probes):
    child, processes, folders = hanging_runc(tmp_path, probes)
    _kill_with_its_reaper(child)
    assert guest_folders() - folders, "nothing was left to sweep: the test proves nothing"
    _next_run_sweeps(tmp_path)
    assert not left_since(processes, folders, wait_s=5.0)


def _kill_with_its_reaper(child: subprocess.Popen) -> None:
    """SIGKILL to guestbench's reaper, then to guestbench: nobody is left to clean up."""
    reapers = [pid for pid in _children(child.pid)
               if b"guestbench.process.reaper" in Path(f"/proc/{pid}/cmdline").read_bytes()]
    assert len(reapers) == 1
    os.kill(reapers[0], signal.SIGKILL)  # the reaper first, then its guestbench
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    time.sleep(1)


def _next_run_sweeps(tmp_path: Path) -> None:
    """The next guestbench runs, and its sweep finds the dead one's journal."""
    again = subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload", "getpid",
                            "--repeat", "1", "--quiet", "--db",
                            f"sqlite:///{tmp_path}/store.sqlite"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert "killed with its reaper" in again.stderr


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    found.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                pass
    return found


@pytest.mark.parametrize("preset", ["runc", "runsc", "uml"])
def test_sigkill_during_density_leaves_no_instance(preset, tmp_path, host_facts):
    """Three instances up at once, guestbench killed while it waits to weigh them: no process
    and no folder of theirs is left (an OCI runtime's state lives in the bundle's folder)."""
    # once every agent has said it idles: guestbench waits its settle_s, then would weigh them
    _instances_killed(preset, 'name = "density"\ninstances = 3\nsettle_s = 60',
                      lambda: _idle_instances(tmp_path) >= 3, tmp_path, host_facts)


@pytest.mark.parametrize("preset", ["runc", "runsc", "uml"])
def test_sigkill_during_a_burst_leaves_no_instance(preset, tmp_path, host_facts):
    """Six instances launched half a second apart (the burst lasts 2.5 s at least, and all
    live until its end), guestbench killed as the third is launched, while the first two
    run or start and the others are still to come (an OCI runtime's create, a kernel's
    boot): no process, no container state and no folder of theirs is left."""
    _instances_killed(preset, 'name = "burst"\ninstances = 6\nmode = "staggered"\n'
                      'stagger_ms = 500', lambda: _launched(tmp_path) >= 3, tmp_path,
                      host_facts)


def _instances_killed(preset: str, workload: str, started, tmp_path: Path, host_facts) -> None:
    """A campaign of one run of `workload` (its TOML lines) that starts several instances,
    guestbench killed once started() holds: none of theirs is left 10 s later."""
    prepared(host_facts, environments.create(environments.preset_spec(preset)))  # or skip
    processes, folders = guest_processes(), guest_folders()
    plan = tmp_path / "instances.toml"
    plan.write_text(f'[campaign]\nrepeat = 1\ntimeout_s = 120\n\n{preset_table(preset)}\n'
                    f'[[workload]]\n{workload}\n')
    child = subprocess.Popen([*GUESTBENCH, "run", str(plan), "--quiet", "--db",
                              f"sqlite:///{tmp_path / 'store.sqlite'}"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # a launch's folder comes before its runtime's or VMM's process (a bundle to make), and
    # on a busy host a while before: the kill waits for an instance's process too
    during = _killed_once(child, lambda: started() and bool(guest_processes() - processes),
                          "the instances") - processes
    assert during, "no instance's process was seen"
    assert not left_since(processes, folders, wait_s=10.0)


@pytest.mark.parametrize("moment", ["save", "restore"])
@pytest.mark.parametrize("preset", ["runsc", "runc", "qemu-tcg"])
def test_sigkill_during_a_save_or_a_restore_leaves_nothing(preset, moment, tmp_path, host_facts):
    """guestbench killed while the runtime or QEMU writes the image of 256 MiB of dirtied
    memory, or while a new instance loads it: no process (the runtime's, CRIU, QEMU), no
    container, no image and no folder is left."""
    from guestbench.environments.oci_snapshots import criu_refusal  # the faults suite's module
    if preset == "runc" and criu_refusal():
        pytest.skip(criu_refusal())
    images = lambda: list(tmp_path.glob("guestbench-logs/**/snapshot"))  # noqa: E731
    before = guest_processes()

    def started() -> bool:
        if moment == "restore":  # its folder comes a moment before the runtime's process
            return any(tmp_path.glob("guestbench-logs/**/restore1")) \
                and bool(guest_processes() - before)
        return any(path.is_file() and path.stat().st_size > 0
                   for image in images() for path in image.rglob("*"))

    # 20 restores: the run is still restoring when its first restore's folder appears
    _instances_killed(preset, 'name = "restore"\ndirty_mib = 256\nrestores = 20', started,
                      tmp_path, host_facts)
    # the reaper removes folders last, after the runtime's delete and CRIU's leftovers
    until = time.monotonic() + 10
    while images() and time.monotonic() < until:
        time.sleep(0.2)
    assert not images(), "the snapshot's image was left"


def _launched(folder: Path) -> int:
    """Instances launched: each has its log folder from its start."""
    return sum(1 for _ in folder.glob("guestbench-logs/**/instance*/"))


def test_sigkill_during_a_nested_run_leaves_no_l1_machine_and_no_folder(tmp_path):
    """guestbench killed while a KVM guest hangs inside its L1 machine: the L1 machine's QEMU
    (and so the inner guest), its shared folder and its logs' folder all go."""
    from guestbench.environments.fullsystem import nested  # the integration suites' module
    answer = nested.probe("tcg")
    if not answer.available:
        pytest.skip(f"no L1 machine here: {answer.reason}")
    processes, folders = guest_processes(), guest_folders()
    child = subprocess.Popen([*GUESTBENCH, "run", "--env", "qemu-kvm-nested", "--workload",
                              "hang", "--repeat", "1", "--timeout", "120", "--quiet", "--db",
                              f"sqlite:///{tmp_path / 'store.sqlite'}"], cwd=tmp_path,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    # an inner guest runs once the L1 machine has a run's folder; 3 s later it boots or hangs
    during = _killed_once(child, lambda: any(temporary_folder().glob("guestbench-l1-*/run-*")),
                          "the nested run", settle_s=3.0) - processes
    assert during, "no L1 machine was seen"
    assert not left_since(processes, folders, wait_s=5.0)


def _idle_instances(folder: Path) -> int:
    """Instances whose agent's records, in their logs, say it idles."""
    return sum(1 for log in folder.glob("guestbench-logs/**/instance*/stdout.log")
               if b'"workload":"idle"' in log.read_bytes())


def _network_run(preset: str, tmp_path: Path) -> subprocess.Popen:
    """A campaign whose one run streams for minutes over the preset's path (a veth pair in a
    namespace, a tap)."""
    plan = tmp_path / "net.toml"
    plan.write_text(f'[campaign]\nrepeat = 1\ntimeout_s = 300\n\n[[environment]]\n'
                    f'preset = "{preset}"\n\n[[workload]]\nname = "net_stream"\n'
                    'min_time_s = 30\nvalues = 5\n')
    return subprocess.Popen([*GUESTBENCH, "run", str(plan), "--quiet", "--db",
                             f"sqlite:///{tmp_path / 'store.sqlite'}"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _streaming(folder: Path, network: set[str]) -> bool:
    """The run's path is made and its agent has begun (its workload record is out)."""
    return bool(guest_network() - network) and any(
        b'"workload":"net_stream"' in log.read_bytes()
        for log in folder.glob("guestbench-logs/**/stdout.log"))


@pytest.mark.parametrize("preset", ["runc", "uml"])
def test_sigkill_during_a_network_run_leaves_no_device_or_namespace(preset, tmp_path,
                                                                     host_facts):
    prepared(host_facts, environments.create(environments.preset_spec(preset)))  # or skip
    processes, folders, network = guest_processes(), guest_folders(), guest_network()
    child = _network_run(preset, tmp_path)
    _killed_once(child, lambda: _streaming(tmp_path, network), "the network run",
                 settle_s=0.5)
    assert not left_since(processes, folders, wait_s=10.0)


@pytest.mark.sweeps_journals
def test_a_network_path_outlives_a_killed_reaper_only_until_the_next_run(tmp_path, probes):
    """guestbench and its reaper both killed mid-stream: the veth pair and the namespace stay
    (nobody is left to remove them), and the next guestbench's sweep removes them."""
    _environment, answer = probes["runc"]
    if not answer.available:
        pytest.skip(f"runc unavailable here: {answer.reason}")
    processes, folders, network = guest_processes(), guest_folders(), guest_network()
    child = _network_run("runc", tmp_path)
    deadline = time.monotonic() + 60
    while not _streaming(tmp_path, network):
        assert time.monotonic() < deadline and child.poll() is None
        time.sleep(0.1)
    _kill_with_its_reaper(child)
    left = guest_network() - network
    assert any(item.startswith("netns ") for item in left), left  # else this proves nothing
    _next_run_sweeps(tmp_path)
    assert not left_since(processes, folders, wait_s=10.0)


COMMAND = """\
import sys
from guestbench.process import proc
proc.run(["sh", "-c", "sleep 300 & echo $! > bg; echo $$ > fg; wait"], timeout_s=600,
         cwd=sys.argv[1])
"""


def test_sigkill_during_a_command_run_to_its_end_leaves_none_of_its_processes(tmp_path):
    """A command guestbench runs to its end (a probe, `runc delete`, an image's build) ends
    with guestbench: the command by its parent-death signal, what it started by the reaper,
    which holds its process group."""
    child = subprocess.Popen([sys.executable, "-c", COMMAND, str(tmp_path)])
    deadline = time.monotonic() + 30
    while not ((tmp_path / "fg").exists() and (tmp_path / "bg").exists()):
        assert time.monotonic() < deadline and child.poll() is None, "the command never ran"
        time.sleep(0.05)
    time.sleep(0.1)  # the files are written; so are their numbers
    started = [int((tmp_path / name).read_text()) for name in ("fg", "bg")]
    assert all(running(pid) for pid in started)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 5
    while any(running(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [pid for pid in started if running(pid)], started
