"""A store damaged where SQLite's own checks do not look, replayed as the fault run of
2026-11-25 found it: random bytes at the middle of the file (report --list exited 1
with `Could not decode to UTF-8 column 'status'`, 8 tries of 8), random bytes inside a
packed sample block (quick_check said ok, run wrote into the file, report --format csv
ended in an IndexError), and a zero-byte file (taken silently for a new store). Every
command now exits 0 or 2 with the file and the fix, never a traceback, and run never
writes into a store it found damaged."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guestbench import store as gb_store
from guestbench.store.records import RunRecord

GUESTBENCH = [sys.executable, "-m", "guestbench"]
# every command that reads a store, as a user would type it (ids 1 and 2 exist)
READERS = [["report", "--list"], ["report"], ["report", "1"], ["report", "2", "--format", "csv"],
           ["report", "2", "--format", "json"], ["report", "2", "--format", "markdown"],
           ["report", "2", "--format", "html", "--output", "out.html"], ["history"],
           ["compare", "1", "2"]]
RUN = ["run", "--env", "native", "--workload", "getpid", "--repeat", "1", "--quiet"]


def _guestbench(args: list[str], path: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*GUESTBENCH, *args, "--db", f"sqlite:///{path}"], cwd=cwd,
                          capture_output=True, text=True, timeout=180)


def _synthetic_campaign(opened: gb_store.Store, name: str, samples: int, base: float) -> int:
    """A campaign of two environments and `samples` samples each, ended (so packed); its
    values from base up, so that no two campaigns' blocks hold the same bytes."""
    now = dt.datetime.now(dt.timezone.utc)
    campaign = opened.create_campaign(name, {"campaign": {"repeat": 1}}, {"cpu": "test"},
                                      "fingerprint", "native", "logs", "test")
    for position, env in enumerate(("native", "namespace")):
        env_id = opened.add_environment(campaign, env, env, {}, True, "yes", position)
        for repetition in range(2):
            opened.add_run(campaign, RunRecord(
                env_id, "getpid", "getpid", {}, repetition, "ok", "", now, 1.0, None,
                tuple(("getpid", "ns", base + position * 10 + i % 7 + i / 1e4)
                      for i in range(samples))))
    opened.finish_campaign(campaign, "finished")
    return campaign


@pytest.fixture(scope="module")
def store_of_two(tmp_path_factory) -> Path:
    """Two campaigns of 2 x 2 x 400 samples: each packed block holds 1,600 samples."""
    path = tmp_path_factory.mktemp("stores") / "two.sqlite"
    opened = gb_store.open(f"sqlite:///{path}")
    _synthetic_campaign(opened, "first", 400, 50.0)
    _synthetic_campaign(opened, "second", 400, 70.0)
    opened.engine.dispose()
    return path


def _assert_clean(done: subprocess.CompletedProcess, args: list[str], path: Path) -> None:
    assert "Traceback" not in done.stderr, (args, done.stderr[-2000:])
    assert done.returncode in (0, 2), (args, done.returncode, done.stderr[-2000:])
    if done.returncode == 2:
        assert str(path) in done.stderr and "fix:" in done.stderr, (args, done.stderr)


def test_random_bytes_at_the_middle_of_a_store_never_give_a_traceback(store_of_two, tmp_path):
    """4 KiB of random bytes at the middle, eight seeds; every reader on the first, the
    listing and a CSV report on the others (the fault run reads every one with every
    command), then run."""
    told = 0
    for seed in range(8):
        path = tmp_path / f"middle{seed}.sqlite"
        shutil.copy(store_of_two, path)
        data = bytearray(path.read_bytes())
        middle = len(data) // 2
        data[middle:middle + 4096] = random.Random(seed).randbytes(4096)
        path.write_bytes(bytes(data))
        for args in READERS if seed == 0 else READERS[:1] + READERS[3:4]:
            done = _guestbench(args, path, tmp_path)
            _assert_clean(done, args, path)
            told += done.returncode == 2
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        done = _guestbench(RUN, path, tmp_path)
        _assert_clean(done, RUN, path)
        if done.returncode == 2:  # it found damage: it wrote nothing
            assert hashlib.sha256(path.read_bytes()).hexdigest() == before
        told += done.returncode == 2
    # the damage was seen (run's check of the file finds it; a reader that does not read the
    # damaged pages answers), not only survived
    assert told >= 8


def _block_window(path: Path, campaign_id: int, size: int) -> int:
    """Where `size` bytes of campaign_id's packed values lie together in the file: inside
    the blob, clear of the page pointers between its pages."""
    with sqlite3.connect(path) as connection:
        value, = connection.execute("SELECT value FROM sample_block WHERE campaign_id = ?",
                                    (campaign_id,)).fetchone()
    data = path.read_bytes()
    for start in range(0, len(value) - size, 256):
        offset = data.find(value[start:start + size])
        if offset > 0:
            return offset
    raise AssertionError("no window of the block lies together in the file")


def test_random_bytes_inside_a_packed_block_are_damage_for_every_command(store_of_two,
                                                                         tmp_path):
    path = tmp_path / "block.sqlite"
    shutil.copy(store_of_two, path)
    offset = _block_window(path, 2, 2048)
    data = bytearray(path.read_bytes())
    data[offset:offset + 2048] = random.Random(7).randbytes(2048)
    path.write_bytes(bytes(data))
    with sqlite3.connect(path) as connection:  # SQLite itself finds nothing wrong
        assert connection.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    done = _guestbench(RUN, path, tmp_path)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"the store {path} is damaged" in done.stderr
    assert "packed samples of campaign 2" in done.stderr
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # nothing written
    for args in (["report", "2", "--format", "csv"], ["report", "2"], ["compare", "1", "2"]):
        done = _guestbench(args, path, tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "packed samples of campaign 2" in done.stderr and "fix:" in done.stderr
    done = _guestbench(["report", "1", "--format", "csv"], path, tmp_path)
    assert done.returncode == 0, done.stderr  # the campaign that is whole still reads


def test_a_zero_byte_file_is_not_taken_for_a_new_store(tmp_path):
    path = tmp_path / "empty.sqlite"
    path.write_bytes(b"")
    an_hour_ago = time.time() - 3600  # a file left empty, not one a guestbench is making now
    os.utime(path, (an_hour_ago, an_hour_ago))
    for args in [RUN, ["report"], ["report", "--list"], ["history"]]:
        done = _guestbench(args, path, tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "is an empty file (0 bytes), not a store" in done.stderr
        assert path.stat().st_size == 0


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_history_and_report_write_nothing_into_a_store_they_call_damaged(store_of_two,
                                                                          tmp_path):
    """A run of campaign 2 whose params do not parse: history derived campaign 1 first and
    kept its digest, then called the store damaged ("guestbench writes nothing into it")
    with a new row in campaign_digest (2026-11-29). A digest is kept only once every
    campaign was read, and never into a store a reader of the process called damaged."""
    path = tmp_path / "params.sqlite"
    shutil.copy(store_of_two, path)
    with sqlite3.connect(path) as connection:
        first_of_2, = connection.execute(
            "SELECT min(id) FROM run WHERE campaign_id = 2").fetchone()
        connection.execute("UPDATE run SET params = '{' WHERE id = ?", (first_of_2,))
    before = _sha256(path)
    for args in (["history"], ["report"], ["report", "2", "--format", "json"]):
        done = _guestbench(args, path, tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)
        assert f"the store {path} is damaged" in done.stderr, (args, done.stderr)
        assert f"row {first_of_2} of table run" in done.stderr, (args, done.stderr)
        assert _sha256(path) == before, f"{args} wrote into the store it called damaged"


def test_no_digest_goes_into_a_file_that_fails_quick_check(store_of_two, tmp_path):
    """512 random bytes at the middle of the file: SQLite's quick_check fails, yet report
    and history read what they need, exit 0 and kept their digests in the file (the fault
    run of 2026-11-29). A command writes nothing into a file that fails quick_check; it
    still answers from what it could read."""
    path = tmp_path / "pages.sqlite"
    shutil.copy(store_of_two, path)
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 512] = random.Random(1).randbytes(512)
    path.write_bytes(bytes(data))
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA quick_check").fetchall() != [("ok",)]
    before = _sha256(path)
    answered = 0
    for args in (["report"], ["report", "1"], ["history"], ["report", "2", "--format", "csv"]):
        done = _guestbench(args, path, tmp_path)
        _assert_clean(done, args, path)
        answered += done.returncode == 0
        assert _sha256(path) == before, f"{args} wrote into a file that fails quick_check"
    assert answered >= 2  # the readers answered (a digest would have been kept), not failed
