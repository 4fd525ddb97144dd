"""A guest that writes without end and never a record: its logs stay within their cap, its
reader's work stays linear, and the run fails with the cap as its reason."""

from __future__ import annotations

import sys

from guestbench.process import proc
from guestbench.environments.base import ProcessGuest
from guestbench.runner import Status
from guestbench.runner.outcomes import watch

ENDLESS = "import sys\nwhile True:\n    sys.stdout.buffer.write(b'x' * 65536)\n"  # no newline


def test_endless_output_is_capped_and_fails_the_run_with_that_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(proc, "LOG_CAP_BYTES", 4 << 20)
    timeout_s = 4.0
    guest = ProcessGuest([sys.executable, "-c", ENDLESS], tmp_path / "logs",
                         proc.now_ns() + int(timeout_s * 1e9))
    with guest:
        outcome = watch(guest, timeout_s, "getpid")
    assert outcome.status == Status.FAILED
    assert "passed the 4 MiB cap of the run's logs" in outcome.reason
    assert "without one valid record" in outcome.reason
    log = tmp_path / "logs" / "stdout.log"
    assert (4 << 20) <= log.stat().st_size < (4 << 20) + 200
    assert guest.log_overflow > 4 << 20  # it wrote far more than it kept
    assert b"bytes dropped here" in log.read_bytes()
