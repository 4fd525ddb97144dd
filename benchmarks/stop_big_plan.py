#!/usr/bin/env python3
"""How long `guestbench run` takes to end after SIGTERM in a plan of 10,000 cells (one
native environment, getpid swept over 100 x 100 parameter values, one run each), the
signal sent AT seconds after the start. Each try runs in a fresh folder; prints each
try's seconds from the signal to the process's end, and their median.

    .venv/bin/python benchmarks/stop_big_plan.py [--at S] [--tries N] [--tree DIR]

--tree runs the guestbench of another checkout, for a side-by-side comparison."""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUESTBENCH = [str(ROOT / ".venv/bin/python"), "-m", "guestbench"]


def plan() -> str:
    values = ", ".join(str(3 + index) for index in range(100))
    times = ", ".join(f"{0.01 + index / 10000:.4f}" for index in range(100))
    return (f'[campaign]\nname = "big"\nrepeat = 1\n\n[[environment]]\npreset = "native"\n\n'
            f'[[workload]]\nname = "getpid"\nvalues = [{values}]\nmin_time_s = [{times}]\n')


def one(at: float, tree: Path | None) -> float:
    with tempfile.TemporaryDirectory(prefix="stop-big-") as folder:
        (Path(folder) / "big.toml").write_text(plan())
        child = subprocess.Popen([*GUESTBENCH, "run", "big.toml", "--quiet"], cwd=folder,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 env={**os.environ, "PYTHONPATH": str(tree)} if tree else None)
        time.sleep(at)
        sent = time.monotonic()
        child.send_signal(signal.SIGTERM)
        try:
            child.wait(timeout=120)
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        return time.monotonic() - sent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--at", type=float, default=12.0)
    parser.add_argument("--tries", type=int, default=3)
    parser.add_argument("--tree", type=Path, help="another checkout's guestbench to run")
    options = parser.parse_args()
    seconds = [one(options.at, options.tree) for _ in range(options.tries)]
    print(f"{options.tree or ROOT}: SIGTERM at {options.at:g} s, ended after "
          + ", ".join(f"{value:.2f}" for value in seconds)
          + f" s (median {statistics.median(seconds):.2f} s)")


if __name__ == "__main__":
    main()
