"""Where guestbench's own C programs are: gbagent, the measuring agent, and gbgate, the gate its
long-running children wait at (process/gate.py); and its example plans.

A checkout has them in agent/ beside the package once `make -C agent` has built them; an
installed wheel has them in the package's _bin/, built when the wheel was (setup.py). A
checkout's come first, so that a developer's rebuilt agent is the one that runs."""

from __future__ import annotations

import os
from pathlib import Path

SOURCE_DIR = Path(__file__).resolve().parent.parent / "agent"  # a checkout's C sources
PACKAGED_DIR = Path(__file__).resolve().parent / "_bin"        # a wheel's built programs
EXAMPLES_DIRS = (Path(__file__).resolve().parent.parent / "examples",  # a checkout's
                 Path(__file__).resolve().parent / "examples")         # a wheel's
PROGRAMS = ("gbagent", "gbgate")


def find(name: str) -> Path | None:
    """The built program name, executable, from a checkout or the installed package."""
    for folder in (SOURCE_DIR, PACKAGED_DIR):
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def expected(name: str) -> Path:
    """Where name should be: a checkout's agent/ if this is one, else the package's _bin/."""
    return (SOURCE_DIR if SOURCE_DIR.is_dir() else PACKAGED_DIR) / name


def examples() -> Path:
    """The example plans: a checkout's examples/, else the installed package's."""
    return next((folder for folder in EXAMPLES_DIRS if folder.is_dir()), EXAMPLES_DIRS[0])


def build_hint() -> str:
    """How to get the programs: build them in a checkout, or install the wheel that has
    them."""
    if SOURCE_DIR.is_dir():
        return f"build it with 'make -C {SOURCE_DIR}'"
    return ("reinstall guestbench from a wheel built for this platform (pip install "
            "guestbench-*.whl), whose package carries it")
