"""The guestbench command (and python -m guestbench): the command line, then the objects it
made frozen, so that the interpreter's last collection at exit does not walk them all (about
40 ms of an answer that takes a few hundred). Tests call guestbench.cli.main, never this.

SIGTERM is taken as Ctrl-C is, from the first line: while the command line's modules load,
either ends guestbench with one line and the shell's code (143, 130), not a traceback or
a death by the signal (arguments.Commands says the same once a command runs)."""

import gc
import signal
import sys


def _stop(signum, frame) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


signal.signal(signal.SIGTERM, _stop)


def entry() -> None:
    try:
        from guestbench.cli import main
        main()
    except KeyboardInterrupt as stop:  # before a command ran (it says so itself after)
        name = str(stop) or "SIGINT"
        print(f"guestbench: stopped by {name} while starting", file=sys.stderr)
        raise SystemExit(143 if name == "SIGTERM" else 130) from None
    finally:
        gc.freeze()


if __name__ == "__main__":
    entry()
