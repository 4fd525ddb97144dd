"""python -m guestbench."""

from guestbench.cli import main

main()
