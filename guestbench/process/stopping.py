"""The exception guestbench's own signal handlers raise for Ctrl-C and SIGTERM, and the
signal that came, if one did.

Signalled is a KeyboardInterrupt, so every `except KeyboardInterrupt` takes it, but never
a plain one. CPython (3.11 at least) marks the process as ended by an unhandled Ctrl-C when
a plain KeyboardInterrupt leaves code run by exec() or eval() of a string, as dataclasses
and namedtuples do while modules load, even when guestbench catches it further up. The
interpreter then ends itself with SIGINT at exit, after guestbench said "stopped by
SIGTERM" and asked for 143. Its check is for the exact type, so a subclass is not marked.

A signal can also come out as another error: an extension module that is loading turns it
into an ImportError (numpy does). Or it is lost: a handler that runs inside a weakref
callback or a __del__ (importlib's module locks have one) raises into code whose errors
are printed and dropped. `received` names the signal once it came: the command line says
such an error is the stop (arguments.Commands, __main__), and a campaign calls check()
before it starts and before each run, so a lost signal stops it there. The interpreter prints such a dropped error with its
traceback; unraisable() keeps a dropped Signalled quiet, since check() or the command line
says the stop in one line."""

import signal
import sys

received: str | None = None  # 'SIGINT' or 'SIGTERM' once one came


class Signalled(KeyboardInterrupt):
    """Ctrl-C or SIGTERM; str() is the signal's name ('SIGINT', 'SIGTERM')."""


def of(signum: int) -> Signalled:
    """The exception for a signal that has come (and noted as received)."""
    global received
    received = signal.Signals(signum).name
    return Signalled(received)


def raise_it(signum: int, frame) -> None:
    """A signal handler: raise Signalled for the signal now."""
    raise of(signum)


def unraisable(unraisable) -> None:
    """sys.unraisablehook: a Signalled dropped in a callback is already noted (received),
    so it is not printed; any other dropped error is, as Python prints it."""
    if isinstance(unraisable.exc_value, Signalled):
        return
    sys.__unraisablehook__(unraisable)


def check() -> None:
    """Raise Signalled if a signal came whose exception may have been lost."""
    if received is not None:
        raise Signalled(received)


def exit_code(name: str) -> int:
    """The shell's code for a command stopped by the signal."""
    return 143 if name == "SIGTERM" else 130


def stopped_line(name: str, error: BaseException | None = None, when: str = "") -> str:
    """The one line a stopped command ends with; error: what the signal came out as."""
    line = f"guestbench: stopped by {name}{when}"
    if error is not None and not isinstance(error, KeyboardInterrupt):
        said = str(error).strip().splitlines()
        line += f" (it came out as {type(error).__name__}{': ' + said[0] if said else ''})"
    return line


class Stopped(Exception):
    """Ctrl-C or SIGTERM stopped the campaign, or the start before it: the message says
    what is kept; exit_code is the shell's for that signal (130 or 143)."""

    def __init__(self, message: str, signal_name: str) -> None:
        super().__init__(message)
        self.exit_code = exit_code(signal_name)
