#!/usr/bin/env python3
"""A randomized fault run (tests/support/faultrun.py): N campaigns over every kind installed
here, each hit by one fault at a random moment (SIGKILL, SIGTERM or SIGINT to guestbench,
its PostgreSQL store's server stopped, its disk filled) and then resumed; M copies of a
real store, each damaged at a random offset and size and read by every command, then
given to `run`. Prints the counts as a Markdown table, and every problem found.

    .venv/bin/python benchmarks/fault_run.py [N] [M] [SEED]     (default 50 100 1)

Run it as root (tmpfs mounts, OCI runtimes) on a host where nothing else runs guestbench:
it counts every guest process of the machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support import faultrun  # noqa: E402


def main() -> None:
    campaigns = int(sys.argv[1]) if len(sys.argv) > 1 else 50
    stores = int(sys.argv[2]) if len(sys.argv) > 2 else 100
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    began = time.monotonic()
    tally = faultrun.run(campaigns, stores, seed, say=lambda line: print(line, flush=True))
    print(f"\nseed {seed}, {time.monotonic() - began:.0f} s; faults: "
          + ", ".join(f"{fault} {count}" for fault, count in sorted(tally.faults.items()))
          + f"; {tally.before_fault} campaigns finished before their fault came\n")
    print("| " + " | ".join(tally.row()) + " |")
    print("|" + "---:|" * len(tally.row()))
    print("| " + " | ".join(str(value) for value in tally.row().values()) + " |")
    for problem in tally.problems:
        print(f"- {problem}")
    sys.exit(1 if tally.problems else 0)


if __name__ == "__main__":
    main()
