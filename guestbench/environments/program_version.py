"""The first line a program prints about its version, read within a deadline, for facts()."""

from __future__ import annotations

from guestbench.process import proc

VERSION_TIMEOUT_S = 5.0
MAX_VERSION_CHARS = 200


def first_line(argv: list[str]) -> str | None:
    """`runc --version`'s first line ("runc version 1.1.5+ds1"); None when the program is
    missing, hangs past the deadline or prints nothing. Some programs print it on stderr."""
    try:
        result = proc.run(argv, timeout_s=VERSION_TIMEOUT_S)
    except (proc.ProcessError, proc.DeadlineExceeded):
        return None
    lines = (result.stdout.strip() or result.stderr.strip()).splitlines()
    return lines[0].strip()[:MAX_VERSION_CHARS] if lines else None
