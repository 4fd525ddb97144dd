"""The guestbench command (and python -m guestbench): the command line, then the objects it
made frozen, so that the interpreter's last collection at exit does not walk them all (about
40 ms of an answer that takes a few hundred). Tests call guestbench.cli.main, never this.

SIGTERM is taken as Ctrl-C is, from the first line: while the command line's modules load,
either ends guestbench with one line and the shell's code (143, 130), not a traceback or
a death by the signal (arguments.Commands says the same once a command runs). Both raise
stopping.Signalled, not a plain KeyboardInterrupt (stopping.py says why); a Ctrl-C that the
parent left ignored (a shell's background job) stays ignored, as Python leaves it. Once the
command has ended, both are ignored (_ended)."""

import gc
import signal
import sys

from guestbench.process import stopping

sys.unraisablehook = stopping.unraisable  # a signal dropped in a callback: no traceback
signal.signal(signal.SIGTERM, stopping.raise_it)
if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # not ignored by our parent
    signal.signal(signal.SIGINT, stopping.raise_it)


def entry() -> None:
    try:
        from guestbench.cli import main  # inside the try: a signal while it loads is a stop
        main()
    except KeyboardInterrupt as stop:  # before a command ran (it says so itself after)
        name = str(stop) or "SIGINT"
        print(stopping.stopped_line(name, when=" while starting"), file=sys.stderr)
        raise SystemExit(stopping.exit_code(name)) from None
    except Exception as error:  # a signal that came out as another error (stopping.py)
        if stopping.received is None:
            raise
        print(stopping.stopped_line(stopping.received, error, " while starting"),
              file=sys.stderr)
        raise SystemExit(stopping.exit_code(stopping.received)) from None
    finally:
        _ended()


def _ended() -> None:
    """The command has ended and given its code: a Ctrl-C or SIGTERM from now on changes
    nothing it did. Ignored, not left to the interpreter, which in its last steps puts the
    default handlers back and would die of it (exit -2, -15 instead of the code given)."""
    for number in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(number) is stopping.raise_it:
            signal.signal(number, signal.SIG_IGN)
    gc.freeze()


if __name__ == "__main__":
    entry()
