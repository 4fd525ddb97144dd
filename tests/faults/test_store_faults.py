"""Faults of the store: two starts at once on a new file, a damaged file, a schema version
that is not a number, a full disk. Each ends in one message and exit 2, or in success;
never a traceback, and nothing is written into a damaged store."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from guestbench import store as gb_store
from tests.support.together import run_together

GUESTBENCH = [sys.executable, "-m", "guestbench"]


def _open(url: str, barrier, results) -> None:
    barrier.wait()
    try:
        gb_store.open(url).engine.dispose()
        results.put("ok")
    except Exception as error:  # noqa: BLE001 - the test reports what it was
        results.put(f"{type(error).__name__}: {error}")


def _failed(target, url: str, count: int) -> list[str]:
    """What failed of count processes started together on url, each running target."""
    codes, outcomes = run_together(target, [(url,)] * count)
    return [f"exit {code}" for code in codes if code != 0] + [
        outcome for outcome in outcomes if outcome != "ok"]


def test_twenty_double_starts_on_new_store_files_all_succeed(tmp_path):
    failures = []
    for attempt in range(20):
        url = f"sqlite:///{tmp_path}/store{attempt}.sqlite"
        failures += _failed(_open, url, 2)
        assert gb_store.open(url).version() == gb_store.SCHEMA_VERSION
    assert failures == []


def _first_worker_start(url: str, barrier, results) -> None:
    """What a worker does before it takes jobs: open the store, check its role's rights
    (which looks up the queue's tables), then make the queue's tables if they are not there."""
    from guestbench.pool import queue
    barrier.wait()
    try:
        opened = gb_store.open(url)
        opened.require("worker")
        queue.ensure_schema(opened.engine, queue.app_for(url))
        opened.engine.dispose()
        results.put("ok")
    except Exception as error:  # noqa: BLE001 - the test reports what it was
        results.put(f"{type(error).__name__}: {error}")


def test_three_workers_starting_at_once_on_a_new_pool_store_all_start(postgres_server):
    """Ten rounds of three first starts at once, each round on a new store (a schema of its
    own). Before the queue's tables were looked for in pg_class, 5 of 45 starts failed with
    'type procrastinate_job_status already exists'."""
    failures = []
    for attempt in range(10):
        name = f"three_starts_{attempt}"
        postgres_server.execute(f'CREATE SCHEMA "{name}"', database="guestbench_tests")
        failures += _failed(_first_worker_start,
                            postgres_server.url("guestbench_tests", search_path=name), 3)
        postgres_server.execute(f'DROP SCHEMA "{name}" CASCADE', database="guestbench_tests")
    assert failures == []


@pytest.fixture
def damaged(tmp_path) -> Path:
    """A store with a real campaign, then every page but the first overwritten."""
    path = tmp_path / "damaged.sqlite"
    made = subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload", "getpid",
                           "--repeat", "1", "--db", f"sqlite:///{path}", "--quiet"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    size = path.stat().st_size
    with open(path, "r+b") as file:
        file.seek(4096)
        file.write(b"\xde\xad" * ((size - 4096) // 2))
    return path


def test_a_damaged_store_is_exit_2_and_nothing_is_written_into_it(damaged, tmp_path):
    before = hashlib.sha256(damaged.read_bytes()).hexdigest()
    for args in (["run", "--env", "native", "--workload", "getpid", "--repeat", "1"],
                 ["report"], ["history"], ["report", "--list"]):
        done = subprocess.run([*GUESTBENCH, *args, "--db", f"sqlite:///{damaged}"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (args, done.stderr)
        assert "Traceback" not in done.stderr
        assert f"the store {damaged} is damaged" in done.stderr and ".recover" in done.stderr
    assert hashlib.sha256(damaged.read_bytes()).hexdigest() == before


def test_a_schema_version_that_is_not_a_number_is_exit_2(tmp_path):
    path = tmp_path / "odd.sqlite"
    opened = gb_store.open(f"sqlite:///{path}")
    with opened.engine.begin() as connection:
        connection.execute(sa.update(gb_store.schema.schema_meta).values(value="six"))
    opened.engine.dispose()
    done = subprocess.run([*GUESTBENCH, "report", "--db", f"sqlite:///{path}"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "schema version is 'six', not a number" in done.stderr


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs (root only), unmounted after the test."""
    mount = tmp_path / "small"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def _filled(disk: Path) -> Path:
    """Fills the small disk to its last block with one file, which it returns."""
    filler = disk / "filler"
    handle = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while os.write(handle, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(handle)
    return filler


def test_a_full_disk_is_exit_2_with_the_fix_and_keeps_what_was_stored(small_disk, tmp_path):
    url = f"sqlite:///{small_disk}/store.sqlite"
    run = [*GUESTBENCH, "run", "--env", "native", "--workload", "getpid", "--repeat", "1",
           "--db", url, "--logs", str(small_disk / "logs"), "--quiet"]
    first = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    filler = _filled(small_disk)
    second = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2, second.stderr
    assert "Traceback" not in second.stderr and "full" in second.stderr
    assert "free some space" in second.stderr
    filler.unlink()
    opened = gb_store.open(url)
    assert [campaign.status for campaign in opened.campaigns()][0] == "finished"
    opened.engine.dispose()


def test_an_agent_that_is_not_executable_is_told_apart_from_a_missing_one(tmp_path):
    agent = tmp_path / "gbagent"
    for made, words in ((False, "is missing at"), (True, "is not executable (fix: chmod +x")):
        if made:
            agent.write_bytes(b"\x7fELF")
            agent.chmod(0o644)
        done = subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload", "getpid",
                               "--db", f"sqlite:///{tmp_path}/s.sqlite"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60,
                              env={**os.environ, "GUESTBENCH_AGENT": str(agent)})
        assert done.returncode == 2 and words in done.stderr, done.stderr


def test_a_store_on_a_read_only_filesystem_is_exit_2_and_still_read(small_disk, tmp_path):
    """run on a store whose filesystem is read-only gave a traceback (2026-11-27): now it
    is exit 2 with the reason before anything runs, and report reads the store as it is."""
    url = f"sqlite:///{small_disk}/store.sqlite"
    run = [*GUESTBENCH, "run", "--env", "native", "--workload", "getpid", "--repeat", "1",
           "--db", url, "--logs", str(tmp_path / "logs"), "--quiet"]
    first = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0, first.stderr
    remounted = subprocess.run(["mount", "-o", "remount,ro", str(small_disk)],
                               capture_output=True, text=True)
    assert remounted.returncode == 0, remounted.stderr
    second = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert second.returncode == 2 and "Traceback" not in second.stderr, second.stderr
    assert (f"the store {small_disk}/store.sqlite cannot be written ({small_disk}/store.sqlite "
            "is on a read-only filesystem)") in second.stderr and "fix:" in second.stderr
    shown = subprocess.run([*GUESTBENCH, "report", "--db", url], cwd=tmp_path,
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "getpid" in shown.stdout, shown.stderr


def test_a_signal_while_a_new_store_is_made_leaves_a_whole_store_or_none(tmp_path):
    """SIGTERM or SIGKILL within a new store's first milliseconds left a 0-byte file that
    every later command refused (14 of 14, 2026-11-27). Now the path holds a whole store or
    nothing, and the next run makes or uses it."""
    import signal
    import time
    for attempt, delay in enumerate([0.2, 0.3, 0.4, 0.5, 0.6, 0.8] * 2):
        path = tmp_path / f"s{attempt}.sqlite"
        run = [*GUESTBENCH, "run", "--env", "native", "--workload", "getpid", "--repeat", "1",
               "--db", f"sqlite:///{path}", "--logs", str(tmp_path / "logs"), "--quiet"]
        child = subprocess.Popen(run, cwd=tmp_path, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
        time.sleep(delay)
        child.send_signal(signal.SIGTERM if attempt % 2 else signal.SIGKILL)
        child.wait(timeout=60)
        size = path.stat().st_size if path.exists() else None
        assert size != 0, (attempt, delay)
        again = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert again.returncode == 0, (attempt, again.stderr)
    leftovers = [left.name for left in tmp_path.glob(".*.new")]
    assert len(leftovers) <= 1, leftovers  # one killed maker's, at most: the next removes it


def test_logs_on_a_full_disk_leave_the_campaign_interrupted_and_resumable(small_disk, tmp_path):
    """A campaign whose logs filled their disk was marked 'failed' (2026-11-27), which
    --resume does not take: now it is 'interrupted', and resumed once there is room."""
    url = f"sqlite:///{tmp_path}/store.sqlite"
    filler = _filled(small_disk)
    run = [*GUESTBENCH, "run", "--env", "native", "--workload", "getpid,sched_yield",
           "--repeat", "2", "--db", url, "--logs", str(small_disk / "logs"), "--quiet"]
    first = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert first.returncode == 2 and "Traceback" not in first.stderr, first.stderr
    assert "no space left" in first.stderr and "--resume" in first.stderr
    opened = gb_store.open(url)
    (campaign,) = opened.campaigns()
    assert campaign.status == "interrupted"
    assert opened.campaign("1").end_reason.startswith("a disk was full: ")
    opened.engine.dispose()
    filler.unlink()
    resumed = subprocess.run([*GUESTBENCH, "run", "--resume", "1", "--db", url, "--logs",
                              str(small_disk / "logs"), "--quiet"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    opened = gb_store.open(url)
    assert opened.campaign("1").status == "finished"
    assert sorted(run.status for run in opened.runs(1)) == ["ok"] * 4
    opened.engine.dispose()
