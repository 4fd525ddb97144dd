"""ProcessGuest and the runner's status rules, on small Python child processes (no agent)."""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import pytest

from guestbench.process import proc
from guestbench.environments.base import ProcessGuest
from guestbench.protocol import encode
from guestbench.runner import Status
from guestbench.runner.outcomes import watch

HELLO = encode(0, {"type": "hello", "t_ns": 1, "protocol": 1}).decode()
WORKLOAD = encode(1, {"type": "workload", "t_ns": 2, "workload": "getpid"}).decode()
SAMPLE = encode(2, {"type": "sample", "t_ns": 3, "workload": "getpid", "metric": "time_per_op",
                    "unit": "ns", "value": 61.5}).decode()
END = encode(3, {"type": "end", "t_ns": 4, "status": "ok", "records": 3}).decode()


def guest(tmp_path: Path, script: str, timeout_s: float = 10.0, **options) -> ProcessGuest:
    code = "import os, signal, subprocess, sys, time\n" + textwrap.dedent(script)
    return ProcessGuest([sys.executable, "-c", code], tmp_path / "logs",
                        proc.now_ns() + int(timeout_s * 1e9), **options)


def outcome_of(tmp_path: Path, script: str, timeout_s: float = 10.0, **options):
    with guest(tmp_path, script, timeout_s, **options) as started:
        return watch(started, timeout_s, "getpid"), started


def alive(pid: int) -> bool:
    """Running or sleeping; a zombie waiting for init to reap it is dead."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.05)
    return True


def test_records_amid_noise_give_an_ok_run(tmp_path):
    outcome, started = outcome_of(tmp_path, f"""
        print("kernel noise"); print({HELLO!r}); print("more noise")
        print({WORKLOAD!r}); print({SAMPLE!r}); print({END!r})
    """)
    assert outcome.status == Status.OK
    assert outcome.samples == [("time_per_op", "ns", 61.5)]
    assert started.stop().exit_code == 0
    assert b"kernel noise" in (tmp_path / "logs" / "stdout.log").read_bytes()


def test_deadline_kills_the_whole_process_group(tmp_path):
    pid_file = tmp_path / "grandchild.pid"
    outcome, _ = outcome_of(tmp_path, f"""
        child = subprocess.Popen(["sleep", "300"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print({HELLO!r}, flush=True)
        sys.stdout.write("a partial line"); sys.stdout.flush()
        time.sleep(300)
    """, timeout_s=1.0)
    assert outcome.status == Status.TIMEOUT and "1 s run timeout" in outcome.reason
    assert not alive(int(pid_file.read_text()))


def test_output_closed_but_still_running_is_killed_with_its_own_reason(tmp_path):
    outcome, _ = outcome_of(tmp_path, f"""
        print({HELLO!r}, flush=True)
        os.close(1)
        time.sleep(300)
    """, exit_grace_s=0.3)
    assert outcome.status == Status.TIMEOUT
    assert "closed its output but did not exit within 0.3 s" in outcome.reason


@pytest.mark.parametrize("ending, status, words", [
    pytest.param("os.kill(os.getpid(), signal.SIGSEGV)", Status.CRASHED, "SIGSEGV", id="signal"),
    pytest.param("sys.exit(139)", Status.CRASHED, "SIGSEGV", id="runtime-style-128+11"),
    pytest.param("sys.exit(0)", Status.FAILED, "truncated", id="truncated"),
])
def test_stream_that_breaks_off(tmp_path, ending, status, words):
    outcome, _ = outcome_of(tmp_path, f"""
        print({HELLO!r}, flush=True)
        {ending}
    """)
    assert outcome.status == status and words in outcome.reason


def test_no_record_and_a_failing_environment_is_infra(tmp_path):
    outcome, _ = outcome_of(tmp_path, """
        print("runtime: cannot create container", file=sys.stderr)
        sys.exit(1)
    """)
    assert outcome.status == Status.INFRA
    assert "cannot create container" in outcome.reason


def test_the_agent_refusing_its_arguments_is_failed_not_infra(tmp_path):
    outcome, _ = outcome_of(tmp_path, """
        print("gbagent: --min-time: 'x' is not a number", file=sys.stderr)
        sys.exit(2)
    """)
    assert outcome.status == Status.FAILED and "rejected its arguments" in outcome.reason


@pytest.mark.parametrize("end, words", [
    pytest.param({"status": "failed", "records": 3}, "ended with status 'failed'", id="end-failed"),
    pytest.param({"status": "ok", "records": 2}, "end record counts 2", id="end-miscounts"),
])
def test_end_record_is_checked(tmp_path, end, words):
    bad_end = encode(3, {"type": "end", "t_ns": 4, **end}).decode()
    outcome, _ = outcome_of(tmp_path, f"""
        print({HELLO!r}); print({WORKLOAD!r}); print({SAMPLE!r}); print({bad_end!r})
    """)
    assert outcome.status == Status.FAILED and words in outcome.reason


def test_a_run_without_samples_is_failed(tmp_path):
    end = encode(2, {"type": "end", "t_ns": 4, "status": "ok", "records": 2}).decode()
    outcome, _ = outcome_of(tmp_path, f"""
        print({HELLO!r}); print({WORKLOAD!r}); print({end!r})
    """)
    assert outcome.status == Status.FAILED and "no samples" in outcome.reason


def test_stop_is_idempotent_and_tolerates_a_dead_guest(tmp_path):
    started = guest(tmp_path, "sys.exit(0)")
    time.sleep(0.2)
    first = started.stop()
    assert started.stop() is first


def test_a_missing_program_is_a_start_error(tmp_path):
    from guestbench.environments.base import GuestStartError
    with pytest.raises(GuestStartError, match="cannot start"):
        ProcessGuest(["/nonexistent/vmm"], tmp_path / "logs", proc.now_ns() + 10**9)
