#!/usr/bin/env python3
"""Side by side, in one run, natively over loopback: guestbench's net_rr against
`sockperf ping-pong --tcp`, and net_stream against iperf3, both directions.

sockperf reports half the round trip ("latency"), so its percentiles are doubled here; its
messages are 14 bytes at least (its header), guestbench's 1. iperf3's figure is the
receiver's over the whole test. Rounds alternate the tools so that drift on the host hits
both; the medians over rounds are compared. Usage:

    .venv/bin/python benchmarks/net_fidelity.py [ROUNDS]
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUESTBENCH = [sys.executable, "-m", "guestbench"]
SECONDS = 3  # each tool's test, per direction


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Server:
    """A server in its own process group, ended by that group."""

    def __init__(self, argv: list[str]) -> None:
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(0.5)

    def __enter__(self) -> "Server":
        return self

    def __exit__(self, *exc: object) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()


def sockperf_us() -> dict[str, float]:
    """p50 and p99 round trips, µs: sockperf's half round trips doubled."""
    port = free_port()
    with Server(["sockperf", "server", "--tcp", "-i", "127.0.0.1", "-p", str(port)]):
        out = subprocess.run(["sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1", "-p", str(port),
                              "-t", str(SECONDS), "-m", "14"], capture_output=True, text=True,
                             check=True).stdout
    got = {}
    for name, percentile in (("rr_p50", "50.000"), ("rr_p99", "99.000")):
        got[name] = 2 * float(re.search(rf"percentile {percentile} =\s*([\d.]+)", out).group(1))
    return got


def iperf3_gbps() -> dict[str, float]:
    """to_host (the client sends) and to_guest (-R: the server sends), Gbit/s."""
    got = {}
    for name, reverse in (("to_host", []), ("to_guest", ["-R"])):
        port = free_port()
        with Server(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)]):
            out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t",
                                  str(SECONDS), "-J", *reverse], capture_output=True, text=True,
                                 check=True).stdout
        got[name] = json.loads(out)["end"]["sum_received"]["bits_per_second"] / 1e9
    return got


def guestbench_figures(db: str) -> dict[str, float]:
    """Medians over each run's values: net_rr's p50 and p99 (µs), net_stream's Gbit/s."""
    plan = Path(db.removeprefix("sqlite:///")).with_suffix(".toml")
    plan.write_text('[campaign]\nrepeat = 1\n\n[[environment]]\npreset = "native"\n\n'
                    f'[[workload]]\nname = "net_rr"\nmin_time_s = {SECONDS / 5}\nvalues = 5\n\n'
                    f'[[workload]]\nname = "net_stream"\nmin_time_s = {SECONDS / 5}\nvalues = 5\n')
    subprocess.run([*GUESTBENCH, "run", str(plan), "--quiet", "--db", db], check=True,
                   capture_output=True, cwd=plan.parent)
    document = json.loads(subprocess.run([*GUESTBENCH, "report", "--format", "json", "--db", db],
                                         check=True, capture_output=True, text=True).stdout)
    values: dict[str, list[float]] = {}
    for run in document["runs"]:  # a store of its own: this round's two runs
        for sample in run["samples"]:
            values.setdefault(sample["metric"], []).append(sample["value"])
    return {name: statistics.median(values[name])
            for name in ("rr_p50", "rr_p99", "to_host", "to_guest")}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    theirs: dict[str, list[float]] = {}
    ours: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for number in range(rounds):
            db = f"sqlite:///{folder}/round{number}.sqlite"
            for name, value in {**sockperf_us(), **iperf3_gbps()}.items():
                theirs.setdefault(name, []).append(value)
            for name, value in guestbench_figures(db).items():
                ours.setdefault(name, []).append(value)
    print(f"rounds: {rounds}, {SECONDS} s per tool and direction (medians over rounds)")
    print(f"{'figure':<22}{'reference':>12}{'guestbench':>12}{'difference':>12}")
    for name, unit, tool in (("rr_p50", "us", "sockperf"), ("rr_p99", "us", "sockperf"),
                             ("to_host", "Gbit/s", "iperf3"), ("to_guest", "Gbit/s", "iperf3 -R")):
        reference, measured = statistics.median(theirs[name]), statistics.median(ours[name])
        print(f"{name + ' (' + unit + ')':<22}{reference:>12.2f}{measured:>12.2f}"
              f"{measured / reference - 1:>+12.1%}   ({tool}; rounds: "
              f"{[round(v, 2) for v in theirs[name]]} vs {[round(v, 2) for v in ours[name]]})")


if __name__ == "__main__":
    main()
