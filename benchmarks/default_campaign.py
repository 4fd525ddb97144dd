#!/usr/bin/env python3
"""The default campaign, this checkout against another, side by side: wall time, the
efficiency line, and the primary metrics' interval widths over the cells both share.

Each pair runs `guestbench run` (no arguments, the newcomer's command) once per side, each in
an empty folder of its own, the order alternating from pair to pair (A B, B A, ...). The other
side is another checkout (e.g. `git worktree add /tmp/before COMMIT`, its agent built with
`make -C /tmp/before/agent`): its guestbench/ goes first on PYTHONPATH, with this checkout's
Python environment, and it runs its own agent. Before the pairs, each side runs one short
campaign so that both find their guest images built (a fresh machine builds its image once).

    .venv/bin/python benchmarks/default_campaign.py --against /tmp/before [--pairs 3]
        [--out DIR]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE / "benchmarks"))

from interval_widths import half_widths  # noqa: E402


def guestbench(code: Path, folder: Path, *args: str) -> tuple[float, str]:
    """Runs guestbench of the checkout `code` in folder; (wall seconds, its stderr)."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(code)}
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "guestbench", "run", *args], cwd=folder,
                          env=env, capture_output=True, text=True)
    wall = time.monotonic() - began
    if done.returncode not in (0, 1):  # 1: a run did not end ok; the campaign was whole
        sys.exit(f"{code}: guestbench run {' '.join(args)} in {folder} exited "
                 f"{done.returncode}:\n{done.stderr[-2000:]}")
    return wall, done.stderr


def first_estimate(stderr: str) -> float | None:
    """Seconds of the estimate printed before the first run ("expected to take about 1:01"),
    or None where the side prints none."""
    found = re.search(r"expected to take about (?:(\d+):)?(\d+):(\d\d)", stderr)
    if not found:
        return None
    hours, minutes, seconds = (int(part or 0) for part in found.groups())
    return hours * 3600 + minutes * 60 + seconds


def time_line(stderr: str) -> str:
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if line.startswith("Time:"):
            joined = [line]
            for more in lines[index + 1:]:
                if not more or more.startswith(("campaign ", "guestbench:")):
                    break
                joined.append(more)
            return " ".join(joined)
    return "(no efficiency line)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True,
                        help="the other checkout (its agent built)")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None,
                        help="where the campaigns' folders go (default: a new temporary one)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="guestbench-default-"))
    sides = {"this": HERE, "other": args.against.resolve()}
    for name, code in sides.items():  # the default campaign's guest images built
        guestbench(code, out / f"warm-{name}", "--env", "uml,qemu-kvm", "--repeat", "1",
                   "--quiet")
    walls: dict[str, list[float]] = {name: [] for name in sides}
    estimates: dict[str, list[float | None]] = {name: [] for name in sides}
    stores: dict[str, list[str]] = {name: [] for name in sides}
    for pair in range(args.pairs):
        order = list(sides) if pair % 2 == 0 else list(reversed(sides))
        for name in order:
            folder = out / f"{name}{pair + 1}"
            wall, stderr = guestbench(sides[name], folder)
            walls[name].append(wall)
            estimates[name].append(first_estimate(stderr))
            stores[name].append(str(folder / "guestbench.sqlite"))
            said = estimates[name][-1]
            told = f"first estimate {said:.0f} s ({said / wall - 1:+.0%}); " if said else ""
            print(f"pair {pair + 1} {name} ({sides[name]}): {wall:.1f} s; {told}"
                  f"{time_line(stderr)}", flush=True)
    print()
    for name in sides:
        print(f"{name}: wall {' '.join(f'{w:.1f}' for w in walls[name])} s, "
              f"median {statistics.median(walls[name]):.1f} s")
    found = {store: half_widths(store) for name in sides for store in stores[name]}
    shared = set.intersection(*(set(cells) for cells in found.values()))
    print(f"\nprimary metrics' interval half-widths over the {len(shared)} cells every "
          "campaign shares (per campaign median; then all cells of the side's campaigns):")
    for name in sides:
        medians = [statistics.median(found[store][key][0] * 100 for key in shared)
                   for store in stores[name]]
        pooled = [found[store][key][0] * 100 for store in stores[name] for key in shared]
        print(f"{name}: {' '.join(f'±{m:.2f}%' for m in medians)}; "
              f"pooled median ±{statistics.median(pooled):.2f}%, runs "
              f"{sum(found[store][key][1] for store in stores[name] for key in shared)}")
    print(f"\nfolders: {out}")


if __name__ == "__main__":
    main()
