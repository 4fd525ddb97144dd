"""Bounded run logs (guestbench/process/logcap.py) and reading a guest's output in linear time."""

from __future__ import annotations

import sys

from guestbench.process import logcap, proc
from guestbench.process.logcap import CappedLog


def test_a_log_under_its_cap_is_written_whole(tmp_path):
    log = CappedLog(tmp_path / "a.log", 100)
    for chunk in (b"abc", b"def\n", b"x" * 40):
        log.write(chunk)
    log.close()
    assert (tmp_path / "a.log").read_bytes() == b"abcdef\n" + b"x" * 40 and log.dropped == 0


def test_a_log_over_its_cap_keeps_its_head_and_tail_with_a_marker(tmp_path):
    log = CappedLog(tmp_path / "b.log", 10)
    for index in range(100):
        log.write(b"%03d" % index)  # 300 bytes: 000001002...099
    log.close()
    text = (tmp_path / "b.log").read_bytes()
    assert text.startswith(b"00000\n[guestbench: 290 bytes dropped here")  # the first half
    assert text.endswith(b"]\n98099")  # and the last
    assert log.dropped == 290 and b"[guestbench: 290 bytes dropped here" in text
    assert b"first and last 5 bytes" in text


def test_the_pump_copies_a_pipe_until_it_closes(tmp_path):
    import subprocess
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.write('z' * 300000)"],
                             stdout=subprocess.PIPE)
    log = CappedLog(tmp_path / "c.log", 1 << 20)
    logcap.pump(child.stdout, log).join(30)
    child.wait()
    log.close()
    assert (tmp_path / "c.log").read_bytes() == b"z" * 300000


def test_lines_split_across_reads_and_a_line_without_end_is_cut(tmp_path):
    script = ("import sys, time\n"
              "sys.stdout.buffer.write(b'one\\ntw'); sys.stdout.flush(); time.sleep(0.2)\n"
              "sys.stdout.buffer.write(b'o\\n' + b'y' * (3 << 20)); sys.stdout.flush()\n")
    process = proc.Process([sys.executable, "-c", script], tmp_path / "out", tmp_path / "err")
    lines = [line for _, line in process.lines(proc.now_ns() + int(30e9))]
    process.kill()
    assert lines[:2] == [b"one", b"two"]
    assert lines[2] == b"y" * proc.MAX_LINE_BYTES  # cut: no record is that long
    assert (tmp_path / "out").stat().st_size == 4 + 4 + (3 << 20)  # the log has every byte


def test_stderr_and_unread_stdout_are_capped_too(tmp_path, monkeypatch):
    monkeypatch.setattr(proc, "LOG_CAP_BYTES", 1 << 20)
    script = ("import sys\n"
              "sys.stderr.buffer.write(b'e' * (8 << 20)); sys.stdout.buffer.write(b'o' * (8 << 20))")
    process = proc.Process([sys.executable, "-c", script], tmp_path / "out", tmp_path / "err",
                           stdout_to_log=True)
    process.wait(30)
    process.kill()
    for name in ("out", "err"):
        assert (tmp_path / name).stat().st_size < (1 << 20) + 200
    assert process.log_overflow == 2 * ((8 << 20) - (1 << 20))
