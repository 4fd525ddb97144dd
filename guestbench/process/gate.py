"""The gate every long-running child of guestbench (a guest's own process: a VMM, a runtime's
`create`, UML, the agent natively) waits at until guestbench has listed its process group
with the reaper (reaper.py). Without it, a SIGKILL of guestbench between the fork and that
line left what the program had started by then unlisted, and alive (two of UML's helper
processes after a burst, 2026-11-30). If guestbench dies first, the gate's pipe (the child's
standard input) ends and the child exits, 111, without starting the program.

Past the gate, the child has the kernel's parent-death signal (SIGKILL once the thread that
started it ends, however it ends; Python's preexec_fn could set it, but is unsafe in a
process with threads), then execs the program, whose standard input is /dev/null or stays
the pipe (stdin_pipe: send() writes to it).

The gate is gbgate, built with the agent (agent/gate.c; programs.py finds it). Without it, a shell reads the
line and util-linux's setpriv sets the signal: the same, one exec more (a program's start to
its first line: about 2.9 ms against 1.5 ms). A command run to its end (proc.run) has
neither gate nor signal: it would double a short command's cost (runc or ip run thousands
of them in a campaign); the reaper alone ends it."""

from __future__ import annotations

import functools
import shutil

from guestbench import programs

CLOSED = 111  # the child's exit status when the gate closed without opening
_SHELL = ["/bin/sh", "-c", 'read -r _ || exit 111; [ "$0" = pipe ] || exec </dev/null; exec "$@"']


def built() -> tuple[list[str], list[str]] | None:
    """gbgate, if it is built: (its argv, [])."""
    program = programs.find("gbgate")
    return ([str(program)], []) if program is not None else None


def shell() -> tuple[list[str], list[str]]:
    """The shell's gate, and setpriv's argv that sets the parent-death signal after it."""
    setpriv = shutil.which("setpriv")
    return _SHELL, [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []


@functools.cache
def _argv() -> tuple[list[str], list[str]]:
    """The gate's argv and what sets the parent-death signal after it, if the gate does not."""
    return built() or shell()


def prefix(stdin_pipe: bool) -> list[str]:
    """What comes before a program's argv to start it behind the gate."""
    gate, signal = _argv()
    return [*gate, "pipe" if stdin_pipe else "null", *signal]


def open_gate(stdin, stdin_pipe: bool) -> None:
    """Let the child start its program: one byte on its standard input (stdin, Popen's
    pipe), which is then closed unless stdin_pipe."""
    try:
        stdin.write(b"\n")
        stdin.flush()
    except OSError:  # the child has died already: its exit status says so
        pass
    if not stdin_pipe:
        stdin.close()


def close_gate(stdin) -> None:
    """Close the gate unopened: the child exits (CLOSED) without starting its program."""
    try:
        stdin.close()
    except OSError:
        pass
