#!/usr/bin/env python3
"""Side by side, in one run: guestbench's native getpid/getppid against `perf bench syscall basic`.

perf's basic benchmark times getppid(2), so the like-for-like pair is
guestbench getppid vs perf; getpid is shown beside it. Rounds alternate the two
tools so that drift on the host hits both. Usage:

    .venv/bin/python benchmarks/fidelity_perf.py [ROUNDS]
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUESTBENCH = [str(ROOT / ".venv/bin/guestbench")]


def perf_getppid_ns() -> float:
    out = subprocess.run(["perf", "bench", "syscall", "basic"], capture_output=True, text=True,
                         check=True).stdout
    return float(re.search(r"([\d.]+) usecs/op", out).group(1)) * 1000


def guestbench_ns(db: str) -> dict[str, float]:
    subprocess.run([*GUESTBENCH, "run", "--env", "native", "--workload", "getpid,getppid",
                    "--repeat", "1", "--quiet", "--db", db], check=True, capture_output=True)
    document = json.loads(subprocess.run([*GUESTBENCH, "report", "--format", "json", "--db", db],
                                         check=True, capture_output=True, text=True).stdout)
    return {run["workload"]: next(s["value"] for s in run["samples"] if s["metric"] == "time_per_op")
            for run in document["runs"]}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    perf, getpid, getppid = [], [], []
    with tempfile.TemporaryDirectory() as folder:
        db = f"sqlite:///{folder}/fidelity.sqlite"
        for _ in range(rounds):
            perf.append(perf_getppid_ns())
            measured = guestbench_ns(db)
            getpid.append(measured["getpid"])
            getppid.append(measured["getppid"])
    p, g, gp = (statistics.median(x) for x in (perf, getpid, getppid))
    print(f"rounds: {rounds} (medians)")
    print(f"perf bench syscall basic (getppid): {p:8.1f} ns/op   all: {[round(x, 1) for x in perf]}")
    print(f"guestbench native getppid:          {gp:8.1f} ns/op   {gp / p - 1:+.1%} vs perf")
    print(f"guestbench native getpid:           {g:8.1f} ns/op   {g / p - 1:+.1%} vs perf")


if __name__ == "__main__":
    main()
