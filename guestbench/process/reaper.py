"""What guestbench started ends with it, however it ends (SIGKILL included).

guestbench starts one reaper per process, the first time it starts a process of its own: a
small process in a session of its own that reads, on a pipe, what is alive now: the process
groups of guests and of the commands it runs to their end (proc.run), the commands that
end state kept outside them (an OCI runtime's `delete --force`), the folders to remove.
guestbench adds each before it exists and takes it back once it has ended it. When the
pipe closes (guestbench has exited, however), the reaper ends what is still listed:
SIGKILL to each process group, then each command, then each folder; then it exits. A
guestbench that ends cleanly has taken everything back, and its reaper ends at once.

Each line also goes to a journal, JOURNALS/PID-STARTTICKS.jsonl, which the reaper removes
when it has done. Should the reaper die too (killed with its guestbench), the next
guestbench's sweep() finds the journal of a process that is gone and runs its commands and
removes its folders (not its process groups: their numbers may belong to others by then).

Beside it, every guest's own process gets the kernel's parent-death signal (gate.py),
which needs nothing to stay alive; the reaper covers what that cannot: a guest's other
processes, state a runtime keeps apart from its processes, and the commands run to their
end (which do without the signal: its gate would double a short command's cost).

    python -m guestbench.process.reaper JOURNAL   (started by guestbench; reads its standard input)
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from guestbench.process import identity

COMMAND_TIMEOUT_S = 30
JOURNALS = Path(tempfile.gettempdir()) / "guestbench-reaper"


class Keeper:
    """guestbench's end of the pipe. Each method is one line, written to the journal and
    the pipe; if the reaper is gone (killed by hand), guestbench goes on without it."""

    def __init__(self) -> None:
        self._process: subprocess.Popen | None = None
        self._journal = None
        self._lock = threading.Lock()

    def _start(self) -> None:
        me = identity.identity()
        JOURNALS.mkdir(mode=0o700, exist_ok=True)
        path = JOURNALS / f"{me['pid']}-{me['started']}.jsonl"
        self._journal = open(path, "a", encoding="utf-8")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "guestbench.process.reaper", str(path)], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, close_fds=True)

    def _send(self, verb: str, what: object) -> None:
        line = json.dumps([verb, what]) + "\n"
        with self._lock:
            if self._process is None:
                self._start()
            try:
                self._journal.write(line)
                self._journal.flush()
            except OSError:  # a full disk: the pipe still carries it
                pass
            try:
                self._process.stdin.write(line.encode())
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


KEEPER = Keeper()


class Listed:
    """What is still listed after a run of lines: process groups, commands, folders."""

    def __init__(self) -> None:
        self.groups: dict[int, None] = {}
        self.commands: dict[str, list[str]] = {}
        self.folders: dict[str, None] = {}

    def take(self, lines: Iterable[bytes]) -> "Listed":
        for line in lines:
            try:
                verb, what = json.loads(line)
            except ValueError:
                continue  # a line cut short by a kill
            key = json.dumps(what)
            if verb == "group":
                self.groups[what] = None
            elif verb == "-group":
                self.groups.pop(what, None)
            elif verb == "command":
                self.commands[key] = what
            elif verb == "-command":
                self.commands.pop(key, None)
            elif verb == "folder":
                self.folders[what] = None
            elif verb == "-folder":
                self.folders.pop(what, None)
        return self

    def end(self, groups: bool = True) -> None:
        if groups:
            for pgid in self.groups:
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        for argv in self.commands.values():
            try:
                subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, timeout=COMMAND_TIMEOUT_S)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for path in self.folders:
            shutil.rmtree(path, ignore_errors=True)


def sweep() -> list[str]:
    """End what the journals of guestbench processes that are gone still list (their
    reapers died with them): run the commands, remove the folders. A journal is claimed by
    renaming it, so two guestbench starting at once never sweep one twice; a live
    process's journal is never touched. Returns one line per journal swept."""
    if not JOURNALS.is_dir():
        return []
    said = []
    for path in sorted(JOURNALS.glob("*.jsonl")):
        try:
            pid, started = (int(part) for part in path.stem.split("-"))
        except ValueError:
            continue
        if identity.still_running({"hostname": os.uname().nodename, "pid": pid,
                               "started": started}):
            continue
        claimed = path.with_name(f"{path.name}.{os.getpid()}")
        try:
            os.rename(path, claimed)
        except FileNotFoundError:
            continue  # another guestbench took it
        listed = Listed().take(claimed.read_bytes().splitlines())
        listed.end(groups=False)
        claimed.unlink(missing_ok=True)
        if listed.commands or listed.folders:
            said.append(f"a guestbench that was killed with its reaper (process {pid}) left "
                        f"{len(listed.commands)} cleanup command(s) and {len(listed.folders)} "
                        "folder(s): done and removed now")
    return said


def main() -> None:
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_IGN)  # only the pipe's end ends it
    Listed().take(sys.stdin.buffer).end()
    if len(sys.argv) > 1:
        Path(sys.argv[1]).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
