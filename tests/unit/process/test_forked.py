"""forked.beside: work done in a child process, its result or error brought back, the child
never left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from guestbench.process import forked

two_cpus = pytest.mark.skipif(forked._cpus() < 2, reason="one CPU: beside() runs the work in "
                                                          "the parent, no child to test")


class Refused(Exception):
    pass


def refuse() -> None:
    raise Refused("campaign 7: not in this store")


def _state(pid: int) -> str | None:
    """The process's state letter, or None once it is gone (a zombie is 'Z')."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return None


def _wait_gone(pid: int, seconds: float = 10) -> str | None:
    deadline = time.monotonic() + seconds
    while _state(pid) not in (None, "Z") and time.monotonic() < deadline:
        time.sleep(0.05)
    return _state(pid)


@two_cpus
def test_the_work_runs_in_a_child_and_its_result_comes_back() -> None:
    with forked.beside(lambda: (os.getpid(), [0.5] * 1000)) as result:
        pid, values = result()
    assert pid != os.getpid()
    assert values == [0.5] * 1000
    assert _state(pid) is None  # reaped


def test_an_error_in_the_work_is_raised_in_the_parent() -> None:
    with pytest.raises(Refused, match="campaign 7"):
        with forked.beside(refuse) as result:
            result()


@two_cpus
def test_an_error_that_cannot_be_pickled_still_says_what_it_was() -> None:
    def unpicklable():
        error = ValueError("bad value")
        error.handle = lambda: None  # a local function: pickle refuses it
        raise error
    with pytest.raises(forked.ChildFailed, match="ValueError: bad value"):
        with forked.beside(unpicklable) as result:
            result()


@two_cpus
def test_leaving_the_block_early_kills_and_reaps_the_child(tmp_path: Path) -> None:
    marker = tmp_path / "pid"

    def linger():
        marker.write_text(str(os.getpid()))
        time.sleep(60)
    with pytest.raises(Refused):
        with forked.beside(linger):
            while not marker.exists():
                time.sleep(0.01)
            refuse()
    assert _state(int(marker.read_text())) is None


@two_cpus
def test_the_child_dies_with_a_parent_killed_by_sigkill(tmp_path: Path) -> None:
    marker = tmp_path / "pid"
    script = textwrap.dedent(f"""
        import os, time
        from guestbench.process import forked
        def linger():
            open({str(marker)!r} + ".tmp", "w").write(str(os.getpid()))
            os.rename({str(marker)!r} + ".tmp", {str(marker)!r})
            time.sleep(60)
        with forked.beside(linger):
            time.sleep(60)
    """)
    parent = subprocess.Popen([sys.executable, "-c", script])
    child = None
    try:
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        child = int(marker.read_text())
        assert _state(child) not in (None, "Z")
        parent.kill()
        parent.wait()
        assert _wait_gone(child) in (None, "Z")
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        if child is not None and _state(child) not in (None, "Z"):  # the test failed: no leak
            os.kill(child, 9)
