"""A Ctrl-C or SIGTERM that lands while a child is being started must not orphan it: the
handler's exception waits until the child is registered, so the campaign's teardown ends it."""

from __future__ import annotations

import os
import signal
import subprocess

import pytest

from guestbench.process import proc
from tests.support.leaks import running


def _interrupting(signum):
    def handler(number, frame):
        proc.interrupt(KeyboardInterrupt(signal.Signals(number).name))
    return handler


@pytest.fixture
def sigterm_raises():
    previous = signal.signal(signal.SIGTERM, _interrupting(signal.SIGTERM))
    yield
    signal.signal(signal.SIGTERM, previous)


def _popen_then_signal(monkeypatch):
    """Popen as it is, then SIGTERM to ourselves before it returns: the moment the child
    exists and nobody holds its pid yet."""
    real = subprocess.Popen
    started = []

    def popen(argv, *args, **kwargs):
        child = real(argv, *args, **kwargs)
        if "sleep" not in argv:  # the reaper, started with the first child of a process
            return child
        started.append(child.pid)
        os.kill(os.getpid(), signal.SIGTERM)
        return child
    monkeypatch.setattr(subprocess, "Popen", popen)
    return started


def test_a_signal_while_a_guest_starts_waits_until_it_can_be_ended(tmp_path, monkeypatch,
                                                                    sigterm_raises):
    started = _popen_then_signal(monkeypatch)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        proc.Process(["sleep", "60"], tmp_path / "out.log", tmp_path / "err.log")
    [pid] = started
    assert pid in proc._live, "the interrupted start left its child unregistered"
    proc.kill_all()
    assert not running(pid) and pid not in proc._live


def test_a_signal_while_a_short_command_starts_ends_the_command(monkeypatch, sigterm_raises):
    started = _popen_then_signal(monkeypatch)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
        proc.run(["sleep", "60"], timeout_s=30)
    [pid] = started
    assert not running(pid)


def test_outside_a_start_the_signal_raises_at_once(sigterm_raises):
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGTERM)
        signal.sigtimedwait([], 0)  # a bytecode boundary for the handler
    assert not proc._held
