"""The guestbench command (and python -m guestbench): the command line, then the objects it
made frozen, so that the interpreter's last collection at exit does not walk them all (about
40 ms of an answer that takes a few hundred). Tests call guestbench.cli.main, never this."""

import gc

from guestbench.cli import main


def entry() -> None:
    try:
        main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    entry()
