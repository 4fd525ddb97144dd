"""A command run to its end takes what it started with it. On 2026-11-29 a version_argv of
the command kind, `sh -c "sleep 300 & echo v1"`, left its sleep running after guestbench
ended (with the sleep's output elsewhere), or cost the probe its 5 s timeout and the
environment (with the sleep holding the output): proc.run now kills the command's process
group once the command has exited."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from guestbench import environments
from guestbench.plan.build import load
from guestbench.process import proc
from tests.support.leaks import running

# the background sleep holds the command's output, or sends it elsewhere
BACKGROUND = {"holding-output": "sleep 300 & echo $! > {file}; echo v1",
              "output-elsewhere": "sleep 300 >/dev/null 2>&1 & echo $! > {file}; echo v1"}


@pytest.fixture
def sleep_pid_file(tmp_path):
    """Where the command writes its background sleep's pid; a sleep left running by a
    failing test is killed by that pid."""
    path = tmp_path / "sleep.pid"
    yield path
    if path.exists() and running(int(path.read_text())):
        os.kill(int(path.read_text()), signal.SIGKILL)


def _gone(pid_file: Path) -> bool:
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 2.0  # SIGKILL is sent; the kernel ends it at once
    while running(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return not running(pid)


@pytest.mark.parametrize("kind", list(BACKGROUND))
def test_a_command_s_background_child_ends_with_it(kind, sleep_pid_file) -> None:
    began = time.monotonic()
    done = proc.run(["sh", "-c", BACKGROUND[kind].format(file=sleep_pid_file)], timeout_s=5)
    assert done.returncode == 0 and done.stdout == "v1\n"
    assert time.monotonic() - began < 4  # not the timeout's kill
    assert _gone(sleep_pid_file)


@pytest.mark.parametrize("kind", list(BACKGROUND))
def test_a_version_argv_s_background_child_is_gone_after_the_probe(
        kind, sleep_pid_file, tmp_path, write_plan, host) -> None:
    kernel = tmp_path / "kernel"
    kernel.write_bytes(b"\0")
    version = BACKGROUND[kind].format(file=sleep_pid_file)
    plan = load(write_plan(
        f'[[environment]]\nname = "vm"\nkind = "command"\nimage = "none"\n'
        f'kernel = "{kernel}"\nargv = ["vmm", "{{kernel}}"]\n'
        f'version_argv = ["sh", "-c", "{version}"]\n[[workload]]\nname = "getpid"\n'), host)
    environment = environments.create(plan.environments[0])
    answer = environment.prepare(host)
    assert answer.available, answer.reason
    assert environment.facts()["vmm_version"] == "v1"
    assert _gone(sleep_pid_file)


def test_kill_returns_while_a_process_outside_the_group_holds_a_log_s_pipe(
        tmp_path, sleep_pid_file, monkeypatch):
    """A container's `runc init` that outlived a runc cut short by the run timeout kept the
    run's stderr open, out of reach of the group kill; closing that pipe under the thread
    that read it waited forever, and guestbench hung (2026-11-29). kill() now leaves such a
    pipe to its reader, which closes it when the holder has gone."""
    monkeypatch.setattr(proc, "PUMP_JOIN_S", 0.2)
    process = proc.Process(["sh", "-c", f"setsid sleep 300 >/dev/null & echo $! > {sleep_pid_file}; "
                                        "echo started"],
                           tmp_path / "stdout.log", tmp_path / "stderr.log")
    assert [line for _, line in process.lines(proc.now_ns() + int(10e9))] == [b"started"]
    holder = int(sleep_pid_file.read_text())
    deadline = time.monotonic() + 5  # out of the group once setsid has run
    while os.getpgid(holder) != holder and time.monotonic() < deadline:
        time.sleep(0.01)
    began = time.monotonic()
    process.kill()
    assert time.monotonic() - began < 5 and running(holder)  # it returned; the holder lives
    pump, = [pump for pump in process._pumps if pump.is_alive()]  # stderr's, still reading
    os.kill(holder, signal.SIGKILL)
    pump.join(5)
    assert not pump.is_alive() and pump.source.closed
