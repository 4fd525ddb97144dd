#!/usr/bin/env python3
"""How long report, envs, compare and history take on a stored default campaign.

    .venv/bin/python benchmarks/answer_speed.py --db sqlite:///guestbench.sqlite [--runs 5]
        [--against /path/to/an/older/checkout]

Each command runs as a whole process (`python -m guestbench ...`, as a user runs it), --runs
times, and the table gives the minimum, median and maximum wall time. The store is copied
first, so the copy starts without digests: the first `report` derives the campaign's results
from its samples and keeps its digest (shown apart), the timed runs then answer as a user's
second and later commands do. With --against, the same commands of another checkout (its
guestbench/ put first on PYTHONPATH, this checkout's Python environment) run on a copy of
their own, alternating with this checkout's, so both meet the same noise.

Without --db it first runs the default campaign (`guestbench run`, about 3.5 minutes) in a
temporary folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PYTHON = ROOT / ".venv/bin/python"
COMMANDS = (("report", ["report"]), ("envs", ["envs"]),
            ("compare A A", ["compare", "1", "1"]), ("history", ["history"]))


def timed(code: Path, args: list[str], db: str, folder: Path) -> float:
    # both checkouts use this one's agent: another checkout may have none built, and its
    # container probes would then answer "agent missing" at once
    env = {**os.environ, "PYTHONPATH": str(code),
           "GUESTBENCH_AGENT": os.environ.get("GUESTBENCH_AGENT", str(ROOT / "agent/gbagent"))}
    began = time.perf_counter()
    done = subprocess.run([str(PYTHON), "-m", "guestbench", *args, *(
        ["--db", db] if args[0] != "envs" else [])], cwd=folder, env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    took = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"answer_speed: {' '.join(args)} exited {done.returncode}: "
                         f"{done.stderr.strip()[-300:]}")
    return took


def copy_of(db: str, folder: Path, name: str) -> str:
    source = Path(db.removeprefix("sqlite:///"))
    target = folder / f"{name}.sqlite"
    shutil.copyfile(source, target)
    return f"sqlite:///{target}"


def default_campaign(folder: Path) -> str:
    print("answer_speed: running the default campaign (about 3.5 minutes) ...", file=sys.stderr)
    subprocess.run([str(ROOT / ".venv/bin/guestbench"), "run", "--quiet"], cwd=folder,
                   check=True)
    return f"sqlite:///{folder / 'guestbench.sqlite'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="a SQLite store holding a default campaign")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout to time beside this one")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="answer-speed-") as scratch:
        folder = Path(scratch)
        db = options.db or default_campaign(folder)
        codes = {"this": ROOT}
        if options.against:
            codes["against"] = options.against.resolve()
        stores = {name: copy_of(db, folder, name) for name in codes}
        first = {name: timed(code, ["report"], stores[name], folder)
                 for name, code in codes.items()}
        times: dict[tuple[str, str], list[float]] = {}
        for _ in range(options.runs):
            for label, args in COMMANDS:
                for name, code in codes.items():  # alternating: both meet the same noise
                    times.setdefault((label, name), []).append(
                        timed(code, args, stores[name], folder))
        print(f"{'command':<26}" + "".join(f"{name + ' min/median/max (s)':>34}"
                                           for name in codes))
        print(f"{'report, the first':<26}" + "".join(f"{first[name]:>34.2f}" for name in codes))
        for label, _args in COMMANDS:
            cells = []
            for name in codes:
                values = times[(label, name)]
                cells.append(f"{min(values):.2f} / {statistics.median(values):.2f} / "
                             f"{max(values):.2f}")
            print(f"{label:<26}" + "".join(f"{cell:>34}" for cell in cells))
        print(f"({options.runs} runs of each, alternating; load average "
              f"{os.getloadavg()[0]:.2f} at the end)")


if __name__ == "__main__":
    main()
