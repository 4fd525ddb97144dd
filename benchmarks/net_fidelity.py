#!/usr/bin/env python3
"""Side by side, in one run, natively over loopback: guestbench's net_rr against
`sockperf ping-pong --tcp`, and net_stream against iperf3, both directions.

A pair is one `guestbench run` of both workloads and one run of each reference tool;
pairs alternate which side goes first, so drift on the host hits both. Each side gives one
figure per pair, the same statistic over windows of the same length and spacing, because
this host has slow phases of a second or more at random, and a figure of one window
spread over more time is less often caught by one:

- guestbench: the median of its run's values, VALUES of SECONDS / VALUES each, after a
  warm-up (a stream's directions alternate, so values of one direction lie one value
  apart);
- sockperf: its every round trip, from its full log, cut into the same VALUES windows from
  its first after its own warm-up; each window's p50 and p99 (nearest rank, as the agent);
  their medians. It times full round trips of 14-byte messages at least (its header),
  guestbench 1-byte ones;
- iperf3: intervals of SECONDS / VALUES after a first second it omits; the first interval
  after that second is left out (it reads low in every run here), and every second one of
  the rest kept: VALUES intervals, one interval apart, as guestbench's; their median. Its
  whole-test figure is printed beside it for reference.

The result per figure is the ratio of the two medians over pairs, with its 95% interval
(guestbench's own: each side's bootstrap interval of the median, combined by MOVER) and a
permutation test's p-value. The verdict is "within" only when the whole interval lies
inside the tolerance (±5%); a ratio inside it with a wider interval is "not resolved",
and needs more pairs, not a claim.

Placement. On a host of few CPUs where the two ends run moves a loopback figure by a
third or more, and differently from run to run, so both sides pin them alike: the client
(guestbench's agent, iperf3's and sockperf's client) on the first CPU this script may use,
the server (guestbench's peer, iperf3's and sockperf's server) on the second, through
guestbench's agent_cpu and peer_cpu, iperf3's -A and taskset. With one CPU both go on it.
`--free` leaves placement to the scheduler on both sides.

Congestion control. Both sides use the kernel's default unless `--congestion NAME` gives
one to both (guestbench's `congestion`, iperf3's -C); sockperf's round trips of one byte
never fill a congestion window, and it has no such option. Usage:

    .venv/bin/python benchmarks/net_fidelity.py [--free] [--congestion NAME] [PAIRS] [RAW.json]

RAW.json, when given, receives every figure of both sides, in the order they ran.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from guestbench.analysis.stats import describe, permutation_pvalues, ratio_interval  # noqa: E402

GUESTBENCH = str(ROOT / ".venv/bin/guestbench")
SECONDS = 2.0  # each side's test, per figure and direction
VALUES = 5  # guestbench's values per run: each lasts SECONDS / VALUES
TOLERANCE = 0.05
FIGURES = (("rr_p50", "us", "sockperf"), ("rr_p99", "us", "sockperf"),
           ("to_host", "Gbit/s", "iperf3"), ("to_guest", "Gbit/s", "iperf3 -R"))


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pinned_cpus(free: bool) -> tuple[int, int] | None:
    """(the client's CPU, the server's), or None when the scheduler places both."""
    if free:
        return None
    cpus = sorted(os.sched_getaffinity(0))
    return (cpus[0], cpus[1] if len(cpus) > 1 else cpus[0])


def on_cpu(cpu: int | None) -> list[str]:
    return [] if cpu is None else ["taskset", "-c", str(cpu)]


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


def percentile(ordered: list[float], pct: int) -> float:
    """The nearest-rank percentile of sorted values, as the agent computes its own."""
    rank = (len(ordered) * pct + 99) // 100
    return ordered[max(rank, 1) - 1]


def sockperf_us(cpus: tuple[int, int] | None, folder: Path) -> dict[str, float]:
    """p50 and p99 round trips, µs, as guestbench's: sockperf's every round trip (its full
    log: send and receive times) cut into VALUES windows of SECONDS / VALUES from its first
    after its warm-up; each window's percentiles; their medians."""
    client, server = cpus or (None, None)
    port = free_port()
    log = folder / "sockperf.csv"
    with Server([*on_cpu(server), "sockperf", "server", "--tcp", "-i", "127.0.0.1",
                 "-p", str(port)]):
        subprocess.run([*on_cpu(client), "sockperf", "ping-pong", "--tcp", "-i", "127.0.0.1",
                        "-p", str(port), "-t", str(int(SECONDS) + 1), "-m", "14",
                        "--full-log", str(log)], capture_output=True, text=True, check=True)
    trips = []  # (sent at, round trip in µs)
    for line in log.read_text().splitlines():
        fields = line.split(",")
        if len(fields) == 4 and fields[0].strip().isdigit():
            sent, received = float(fields[1]), float(fields[2])
            trips.append((sent, (received - sent) * 1e6))
    each = SECONDS / VALUES
    windows: list[list[float]] = [[] for _ in range(VALUES)]
    for sent, trip in trips:
        at = int((sent - trips[0][0]) / each)
        if at < VALUES:
            windows[at].append(trip)
    for window in windows:
        window.sort()
    return {"rr_p50": statistics.median(percentile(window, 50) for window in windows),
            "rr_p99": statistics.median(percentile(window, 99) for window in windows)}


def iperf3_gbps(cpus: tuple[int, int] | None,
                congestion: str | None) -> tuple[dict[str, float], dict[str, float]]:
    """to_host (the client sends) and to_guest (-R: the server sends), Gbit/s, as
    guestbench's: iperf3 runs 2 x SECONDS after a first second it omits, in intervals of
    SECONDS / VALUES; the first interval after the omitted second is left out (it reads low
    in every run here: iperf3's reset at the end of its omitting), and of the rest every
    second one is kept: VALUES intervals, one interval apart, as guestbench's values of one
    direction are (the other direction's lie between). The figure is their median; the
    whole test's figure is returned beside it."""
    medians, whole = {}, {}
    pin = [] if cpus is None else ["-A", f"{cpus[0]},{cpus[1]}"]
    pin += [] if congestion is None else ["-C", congestion]
    for name, reverse in (("to_host", []), ("to_guest", ["-R"])):
        port = free_port()
        with Server(["iperf3", "-s", "-1", "-B", "127.0.0.1", "-p", str(port)]):
            out = subprocess.run(["iperf3", "-c", "127.0.0.1", "-p", str(port), "-t",
                                  str(int(2 * SECONDS)), "-O", "1", "-i", str(SECONDS / VALUES),
                                  "-J", *pin, *reverse], capture_output=True, text=True,
                                 check=True).stdout
        document = json.loads(out)
        intervals = [each["sum"]["bits_per_second"] / 1e9 for each in document["intervals"]
                     if not each["sum"].get("omitted")]
        medians[name] = statistics.median(intervals[1::2][:VALUES])
        whole[name] = document["end"]["sum_received"]["bits_per_second"] / 1e9
    return medians, whole


def guestbench(folder: Path, number: int, cpus: tuple[int, int] | None,
               congestion: str | None) -> dict[str, float]:
    """The medians of one run's values: net_rr's p50 and p99 (µs), net_stream's Gbit/s."""
    plan = folder / f"pair{number}.toml"
    db = f"sqlite:///{folder}/pair{number}.sqlite"  # a store of its own: this pair's runs
    each = SECONDS / VALUES
    pin = "" if cpus is None else f"agent_cpu = {cpus[0]}\npeer_cpu = {cpus[1]}\n"
    pin += "" if congestion is None else f'congestion = "{congestion}"\n'
    plan.write_text('[campaign]\nrepeat = 1\n\n[[environment]]\npreset = "native"\n\n'
                    f'[[workload]]\nname = "net_rr"\nmin_time_s = {each}\nvalues = {VALUES}\n{pin}\n'
                    f'[[workload]]\nname = "net_stream"\nmin_time_s = {each}\nvalues = {VALUES}\n{pin}')
    subprocess.run([GUESTBENCH, "run", str(plan), "--quiet", "--db", db], check=True,
                   capture_output=True, cwd=folder)
    document = json.loads(subprocess.run([GUESTBENCH, "report", "--format", "json", "--db", db],
                                         check=True, capture_output=True, text=True).stdout)
    values: dict[str, list[float]] = {}
    for run in document["runs"]:
        if run["status"] != "ok":
            raise SystemExit(f"guestbench {run['workload']}: {run['status']}: {run['reason']}")
        for sample in run["samples"]:
            values.setdefault(sample["metric"], []).append(sample["value"])
    return {name: statistics.median(values[name]) for name, _, _ in FIGURES}


def verdict(low: float | None, high: float | None, value: float) -> str:
    if low is not None and high is not None and 1 - TOLERANCE <= low and high <= 1 + TOLERANCE:
        return "within"
    if abs(value - 1) <= TOLERANCE:
        return "not resolved"
    return "outside"


def main() -> None:
    args = sys.argv[1:]
    free = "--free" in args
    args = [arg for arg in args if arg != "--free"]
    congestion = None
    if "--congestion" in args:
        at = args.index("--congestion")
        congestion = args[at + 1]
        del args[at:at + 2]
    pairs = int(args[0]) if args else 12
    raw_path = Path(args[1]) if len(args) > 1 else None
    cpus = pinned_cpus(free)
    theirs: dict[str, list[float]] = {name: [] for name, _, _ in FIGURES}
    ours: dict[str, list[float]] = {name: [] for name, _, _ in FIGURES}
    whole: dict[str, list[float]] = {"to_host": [], "to_guest": []}

    def reference() -> dict[str, float]:
        medians, whole_test = iperf3_gbps(cpus, congestion)
        for name, value in whole_test.items():
            whole[name].append(value)
        return {**sockperf_us(cpus, Path(work)), **medians}

    with tempfile.TemporaryDirectory(prefix="net-fidelity-") as work:
        for number in range(pairs):
            sides = [(theirs, reference), (ours, lambda: guestbench(Path(work), number, cpus, congestion))]
            for store, measure in sides if number % 2 == 0 else reversed(sides):
                for name, value in measure().items():
                    store[name].append(value)
    placed = ("where the scheduler puts them" if cpus is None
              else f"clients on CPU {cpus[0]}, servers on CPU {cpus[1]}")
    with open("/proc/sys/net/ipv4/tcp_congestion_control") as default:
        control = congestion or f"the kernel's default, {default.read().strip()}"
    print(f"pairs: {pairs}, {SECONDS:g} s per side, figure and direction; {placed}; "
          f"congestion control: {control}; "
          f"ratio = guestbench / reference, tolerance ±{TOLERANCE:.0%}")
    print(f"{'figure':<18}{'reference':>11}{'guestbench':>12}{'ratio':>8}{'95% interval':>17}"
          f"{'p':>7}  verdict       reference tool; spread (min-max) guestbench | reference")
    for name, unit, tool in FIGURES:
        reference_stats, our_stats = describe([theirs[name], ours[name]])
        ratio = ratio_interval(reference_stats, our_stats)
        pvalue = permutation_pvalues([(theirs[name], ours[name])])[0]
        low, high = (ratio.low, ratio.high) if ratio else (None, None)
        interval = f"[{low:.3f}-{high:.3f}]" if low is not None and high is not None else "[-]"
        value = ratio.value if ratio else float("nan")
        print(f"{name + ' (' + unit + ')':<18}{reference_stats.median:>11.2f}"
              f"{our_stats.median:>12.2f}{value:>8.3f}{interval:>17}"
              f"{pvalue if pvalue is not None else float('nan'):>7.3f}  "
              f"{verdict(low, high, value):<13} {tool}; "
              f"{min(ours[name]):.1f}-{max(ours[name]):.1f} | "
              f"{min(theirs[name]):.1f}-{max(theirs[name]):.1f}", flush=True)
    for name, values in whole.items():
        print(f"iperf3's whole-test figure, {name}: median {statistics.median(values):.2f} Gbit/s "
              f"(guestbench / it: {statistics.median(ours[name]) / statistics.median(values):.3f})")
    if raw_path:
        raw_path.write_text(json.dumps({"guestbench": ours, "reference": theirs,
                                        "iperf3_whole_test": whole, "cpus": cpus,
                                        "congestion": control}, indent=1))


if __name__ == "__main__":
    main()
