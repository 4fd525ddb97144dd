"""A log folder or a new store's folder on a read-only filesystem. On 2026-11-29 a read-only
--logs folder gave a traceback per run (four), exit 1 and a campaign stored as 'failed',
and a new store in a read-only folder a traceback. Both are now exit 2 with one message
that names the path and the fix, before any run starts: nothing is stored, and a store
that exists is left byte for byte as it was."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

GUESTBENCH = [sys.executable, "-m", "guestbench"]
RUN = [*GUESTBENCH, "run", "--env", "native", "--workload", "getpid", "--repeat", "1",
       "--quiet"]


@pytest.fixture
def read_only_folder(tmp_path):
    """An empty folder on a read-only tmpfs (root only: chmod does not stop root), unmounted
    after the test."""
    folder = tmp_path / "read-only"
    folder.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "none", str(folder)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {made.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*RUN, *args], cwd=cwd, capture_output=True, text=True, timeout=180)


def _one_message(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    # a warning of the host's load (a busy test machine) is not about the folder
    lines = [line for line in done.stderr.strip().splitlines()
             if not line.startswith("guestbench: warning:")]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("inside", ["", "logs"], ids=["the-folder", "a-folder-under-it"])
def test_read_only_logs_are_exit_2_before_any_run_and_store_nothing(read_only_folder,
                                                                   tmp_path, inside):
    path = tmp_path / "store.sqlite"
    first = _run(["--db", f"sqlite:///{path}", "--logs", str(tmp_path / "logs")], tmp_path)
    assert first.returncode == 0, first.stderr
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    logs = read_only_folder / inside if inside else read_only_folder
    said = _one_message(_run(["--db", f"sqlite:///{path}", "--logs", str(logs)], tmp_path))
    assert str(logs) in said and "read-only filesystem" in said, said
    assert "(fix: --logs DIR on a writable filesystem)" in said, said
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before  # no campaign 'failed'
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT status FROM campaign").fetchall() == [("finished",)]


def test_a_new_store_on_a_read_only_filesystem_is_exit_2(read_only_folder, tmp_path):
    path = read_only_folder / "store.sqlite"
    said = _one_message(_run(["--db", f"sqlite:///{path}", "--logs", str(tmp_path / "logs")],
                             tmp_path))
    assert f"cannot make a new store at {path}" in said, said
    assert "read-only filesystem" in said and "fix: point --db at a file on a writable" in said
    assert not path.exists()
    assert not (tmp_path / "logs").exists() or not any((tmp_path / "logs").iterdir())
