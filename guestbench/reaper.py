"""What guestbench started ends with it, however it ends (SIGKILL included).

guestbench starts one reaper per process, the first time it starts a guest: a small
process in a session of its own that reads, on a pipe, what is alive now: the process
groups of guests, the commands that end state kept outside them (an OCI runtime's
`delete --force`), the folders to remove. guestbench adds each before it exists and takes
it back once it has ended it. When the pipe closes (guestbench has exited, however), the
reaper ends what is still listed: SIGKILL to each process group, then each command, then
each folder; then it exits. A guestbench that ends cleanly has taken everything back, and
its reaper ends at once.

Beside it, every guest's own process gets the kernel's parent-death signal (proc.py),
which needs nothing to stay alive; the reaper covers what that cannot: a guest's other
processes, and state a runtime keeps apart from its processes.

    python -m guestbench.reaper      (started by guestbench; reads its standard input)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading

COMMAND_TIMEOUT_S = 30


class Keeper:
    """guestbench's end of the pipe. Each method is one line; if the reaper is gone (killed
    by hand), guestbench goes on without it."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._lock = threading.Lock()

    def _send(self, verb: str, what: object) -> None:
        with self._lock:
            if self._process is None:
                self._process = subprocess.Popen(
                    [sys.executable, "-m", "guestbench.reaper"], stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                    start_new_session=True, close_fds=True)
            try:
                self._process.stdin.write(json.dumps([verb, what]).encode() + b"\n")
                self._process.stdin.flush()
            except (BrokenPipeError, OSError):
                pass

    def group(self, pgid: int) -> None:
        self._send("group", pgid)

    def group_ended(self, pgid: int) -> None:
        self._send("-group", pgid)

    def command(self, argv: list[str]) -> None:
        self._send("command", argv)

    def command_done(self, argv: list[str]) -> None:
        self._send("-command", argv)

    def folder(self, path: str) -> None:
        self._send("folder", path)

    def folder_gone(self, path: str) -> None:
        self._send("-folder", path)

    def close(self) -> None:
        """At a clean exit: close the pipe and wait for the reaper (it has nothing left)."""
        with self._lock:
            if self._process is not None:
                self._process.stdin.close()
                self._process.wait(COMMAND_TIMEOUT_S + 5)
                self._process = None


KEEPER = Keeper()


def main() -> None:
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)  # only the pipe's end ends it
    groups: dict[int, None] = {}
    commands: dict[str, list[str]] = {}
    folders: dict[str, None] = {}
    for line in sys.stdin.buffer:
        try:
            verb, what = json.loads(line)
        except ValueError:
            continue
        key = json.dumps(what)
        if verb == "group":
            groups[what] = None
        elif verb == "-group":
            groups.pop(what, None)
        elif verb == "command":
            commands[key] = what
        elif verb == "-command":
            commands.pop(key, None)
        elif verb == "folder":
            folders[what] = None
        elif verb == "-folder":
            folders.pop(what, None)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    for argv in commands.values():
        try:
            subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            pass
    for path in folders:
        shutil.rmtree(path, ignore_errors=True)


if __name__ == "__main__":
    main()
