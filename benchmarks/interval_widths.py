#!/usr/bin/env python3
"""How wide are the primary metrics' intervals, store against store (e.g. the default campaign
under two schemes, each run from a fresh store).

For each store, its latest campaign's cells that have an interval, as `report --format json`
gives them: half the width of the median's 95% interval over the median. Cells present in
every store are listed side by side, then, per store, the median, mean and widest half-width
and the runs they took. Usage:

    .venv/bin/python benchmarks/interval_widths.py STORE.sqlite [STORE.sqlite ...]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

# this checkout's guestbench, with the interpreter running this script (a worktree has no .venv)
CHECKOUT = str(Path(__file__).resolve().parent.parent)


def half_widths(store: str) -> dict[tuple[str, str], tuple[float, int]]:
    """(environment, workload) -> (half-width, runs) of the primary metric's cells."""
    output = subprocess.run([sys.executable, "-m", "guestbench", "report", "--format", "json",
                             "--db", f"sqlite:///{store}"], capture_output=True, text=True,
                            check=True, env={**os.environ, "PYTHONPATH": CHECKOUT}).stdout
    cells = {}
    for cell in json.loads(output)["cells"]:
        described = cell.get("statistics")
        if not cell.get("primary") or not described or described["ci"][0] is None:
            continue
        low, high = described["ci"]
        cells[(cell["environment"], cell["label"])] = (
            (high - low) / 2 / abs(described["median"]), cell["runs"])
    return cells


def main(stores: list[str]) -> None:
    found = {store: half_widths(store) for store in stores}
    shared = sorted(set.intersection(*(set(cells) for cells in found.values())))
    print("environment | workload | " + " | ".join(f"±% (runs) {store}" for store in stores))
    for key in shared:
        print(f"{key[0]} | {key[1]} | " + " | ".join(
            f"{found[store][key][0] * 100:.2f} ({found[store][key][1]})" for store in stores))
    print()
    for store in stores:
        widths = [found[store][key][0] * 100 for key in shared]
        runs = sum(found[store][key][1] for key in shared)
        print(f"{store}: {len(shared)} cells, half-width median ±{statistics.median(widths):.2f}%, "
              f"mean ±{statistics.fmean(widths):.2f}%, widest ±{max(widths):.1f}%, {runs} runs")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
