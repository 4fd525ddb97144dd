#!/usr/bin/env python3
"""How honest is the progress bar's ETA? Runs a campaign through the CLI with a progress
that records every estimate, then prints, at 10%, 25%, 50%, 75% and 90% of the time, what
the ETA said and how long the campaign really had left. Arguments are those of
`guestbench run`, e.g. none for the default campaign:

    .venv/bin/python benchmarks/eta_check.py [PLAN.toml] [--env A,B] [--db URL]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from guestbench import cli  # noqa: E402
from guestbench.runner import Progress  # noqa: E402

START = time.monotonic()
ESTIMATES: list[tuple[float, float]] = []  # (seconds since start, the ETA then)


class Recorded(Progress):
    def estimate(self, seconds_left: float) -> None:
        ESTIMATES.append((time.monotonic() - START, seconds_left))


class _recorded:
    """Stands in for the CLI's progress bar."""

    def __init__(self, quiet: bool) -> None:
        pass

    def __enter__(self) -> Progress:
        return Recorded()

    def __exit__(self, *exc_info) -> None:
        return None


def main() -> None:
    cli._progress = _recorded
    try:
        cli.main(["run", "--quiet", *sys.argv[1:]], standalone_mode=False)
    finally:
        if not ESTIMATES:
            print("no estimate was made (no run finished)")
            return
        end = ESTIMATES[-1][0]  # the matrix's end, before the report is printed
        print(f"runs took {end:.1f} s")
        for share in (0.1, 0.25, 0.5, 0.75, 0.9):
            at, said = min(ESTIMATES, key=lambda entry: abs(entry[0] - share * end))
            print(f"at {at:6.1f} s: the ETA said {said:6.1f} s, {end - at:6.1f} s were left")


if __name__ == "__main__":
    main()
