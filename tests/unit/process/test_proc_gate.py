"""A guest's process starts its program only once guestbench has listed its process group
with the reaper: guestbench killed between the fork and that line leaves nothing running
(two of UML's helpers outlived a SIGKILL in a burst, 2026-11-30, when the group was listed
after the program had started). Each test runs behind the built gate (agent/gbgate) and
behind the shell's, which guestbench uses when the gate is not built."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from guestbench import programs
from guestbench.process import gate, proc
from tests.support.leaks import running


@pytest.fixture(params=["built", "shell"])
def which_gate(request, monkeypatch) -> str:
    if request.param == "built" and gate.built() is None:
        pytest.skip(f"gbgate is not built ({programs.build_hint()})")
    chosen = gate.built() if request.param == "built" else gate.shell()
    monkeypatch.setattr(gate, "_argv", lambda: chosen)
    return request.param


# guestbench dies (as by SIGKILL: no cleanup) while it lists the group, half a second after
# the fork: time enough for an ungated program to start
DIES_WHILE_LISTING = """
import os, sys, time
from pathlib import Path
from guestbench.process import gate, proc, reaper

def dies(pgid):
    print(pgid, flush=True)
    time.sleep(0.5)
    os._exit(9)

reaper.KEEPER.group = dies
chosen = gate.built() if sys.argv[2] == "built" else gate.shell()
gate._argv = lambda: chosen
folder = Path(sys.argv[1])
proc.Process(["sh", "-c", f"echo started > {folder}/started; exec sleep 60"],
             folder / "out.log", folder / "err.log")
"""


def test_a_guest_whose_guestbench_dies_before_listing_it_never_starts(tmp_path, which_gate):
    (tmp_path / "dies.py").write_text(DIES_WHILE_LISTING)
    ended = subprocess.run([sys.executable, str(tmp_path / "dies.py"), str(tmp_path),
                            which_gate], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 9, ended.stderr
    pid = int(ended.stdout)
    deadline = time.monotonic() + 10
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not running(pid), "the gated child outlived its guestbench"
    assert not (tmp_path / "started").exists(), "the program started before it was listed"


def test_a_guest_listed_then_stopped_before_its_start_exits_unstarted(tmp_path, which_gate,
                                                                      monkeypatch):
    """The listing itself fails (a Ctrl-C there): the gate closes and the program never runs."""
    def interrupted(pgid):
        raise KeyboardInterrupt("SIGINT")
    monkeypatch.setattr(proc.reaper.KEEPER, "group", interrupted)
    with pytest.raises(KeyboardInterrupt):
        proc.Process(["sh", "-c", f"echo started > {tmp_path}/started"], tmp_path / "out.log",
                     tmp_path / "err.log")
    [(pid, guest)] = [(pid, p) for pid, p in proc._live.items() if p.argv[0] == "sh"]
    assert guest.wait(10) == gate.CLOSED
    guest.kill()
    assert not running(pid) and not (tmp_path / "started").exists()


def _ran(argv: list[str], folder, stdin: bytes | None = None) -> tuple[list[bytes], int | None]:
    """argv started as a guest is (with stdin written to its pipe, if given): its lines
    of output and its exit status."""
    guest = proc.Process(argv, folder / "out.log", folder / "err.log",
                         stdin_pipe=stdin is not None)
    try:
        if stdin is not None:
            guest.send(stdin)
        return [line for _, line in guest.lines(proc.now_ns() + 30 * 10**9)], guest.wait(30)
    finally:
        guest.kill()


def test_a_guest_reads_its_stdin_pipe_past_the_gate(tmp_path, which_gate):
    assert _ran(["head", "-n", "1"], tmp_path, b"the first line\n") == ([b"the first line"], 0)


def test_a_guest_without_a_stdin_pipe_reads_dev_null(tmp_path, which_gate):
    assert _ran(["sh", "-c", "readlink /proc/self/fd/0; cat"], tmp_path) == ([b"/dev/null"], 0)


def test_a_guest_past_the_gate_has_the_parent_death_signal(tmp_path, which_gate):
    """prctl(PR_GET_PDEATHSIG) (2), read by a Python
    started behind the gate, is SIGKILL."""
    program = ("import ctypes, signal; libc = ctypes.CDLL(None); v = ctypes.c_int(); "
               "libc.prctl(2, ctypes.byref(v)); print(v.value == signal.SIGKILL)")
    assert _ran([sys.executable, "-c", program], tmp_path) == ([b"True"], 0)
