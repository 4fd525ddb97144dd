#!/usr/bin/env python3
"""Ctrl-C or SIGTERM in guestbench's first second, many times: how each `guestbench run`
ended. Each run is a short campaign of one preset in a fresh folder, hit by the signal at
a random moment of the window (while its modules load, its store is made, its campaign
starts); it must end with the shell's code for the signal (143, 130), or 0 if the campaign
finished first, and one line, never a traceback or a death by a signal.

    .venv/bin/python benchmarks/signal_at_start.py [--runs N] [--window LO HI]
        [--signal SIGTERM|SIGINT] [--preset PRESET] [--seed S] [--tree DIR]

--tree runs the guestbench of another checkout (its agent built), for a side-by-side
comparison with this one's.

Prints the exit codes counted, then each unexpected ending with the end of its stderr.
Exits 1 if there was one."""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import faultrun  # noqa: E402

GUESTBENCH = [str(ROOT / ".venv/bin/python"), "-m", "guestbench"]


def one(folder: Path, preset: str, name: str, at: float, tree: Path | None) -> tuple[int, str]:
    (folder / "plan.toml").write_text(faultrun.PLAN.format(kind=preset, repeat=3))
    child = subprocess.Popen([*GUESTBENCH, "run", "plan.toml", "--quiet", "--db",
                              f"sqlite:///{folder}/store.sqlite", "--logs", str(folder / "logs")],
                             cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, start_new_session=True,
                             env={**os.environ, "PYTHONPATH": str(tree)} if tree else None)
    try:
        time.sleep(at)
        os.kill(child.pid, getattr(signal, name))
        _, err = child.communicate(timeout=120)
        return child.returncode, err
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--window", type=float, nargs=2, default=(0.1, 0.6), metavar=("LO", "HI"))
    parser.add_argument("--signal", choices=("SIGTERM", "SIGINT"), default="SIGTERM")
    parser.add_argument("--preset", default="namespace")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tree", type=Path, help="another checkout's guestbench to run")
    options = parser.parse_args()
    if options.tree and not (options.tree / "guestbench" / "__main__.py").is_file():
        parser.error(f"--tree {options.tree}: no guestbench/__main__.py there")
    if options.runs < 1:
        parser.error(f"--runs {options.runs}: give at least 1")
    if not 0 <= options.window[0] <= options.window[1]:
        parser.error(f"--window {options.window[0]} {options.window[1]}: give LO HI in "
                     "seconds with 0 <= LO <= HI (e.g. --window 0.1 0.6)")
    from guestbench import environments
    from guestbench.process import stopping
    if options.preset not in environments.PRESETS:
        parser.error(f"--preset {options.preset!r}: not a preset (fix: one of "
                     f"{', '.join(environments.PRESETS)})")
    # a shell's background job starts with SIGINT ignored, and guestbench keeps it so while
    # it starts, as Python does: its children get Ctrl-C as from a terminal
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    rng = random.Random(options.seed)
    expected = {0, stopping.exit_code(options.signal)}
    counts: collections.Counter[int] = collections.Counter()
    unexpected = []
    with tempfile.TemporaryDirectory(prefix="signal-at-start-") as scratch:
        for number in range(options.runs):
            folder = Path(scratch) / str(number)
            folder.mkdir()
            at = rng.uniform(*options.window)
            code, err = one(folder, options.preset, options.signal, at, options.tree)
            counts[code] += 1
            if code not in expected or "Traceback" in err:
                tail = "\n    ".join(err.strip().splitlines()[-12:]) or "(silent)"
                unexpected.append(f"run {number} ({options.signal} at {at:.3f} s): exit {code}:"
                                  f"\n    {tail}")
    print(f"{options.tree or ROOT}: {options.runs} runs of {options.preset}, {options.signal} at "
          f"{options.window[0]}-{options.window[1]} s: exit codes "
          + ", ".join(f"{code}: {count}" for code, count in sorted(counts.items())))
    for line in unexpected:
        print(line)
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
