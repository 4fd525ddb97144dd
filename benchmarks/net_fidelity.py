#!/usr/bin/env python3
"""Side by side, in one run, natively over loopback: guestbench's net_rr against
`sockperf ping-pong --tcp`, and net_stream against iperf3, both directions.

A pair is one run of each tool per figure family. The two runs of a family lie next to
each other, which goes first alternating from pair to pair: round trips (sockperf, then
guestbench's net_rr, or the other way round), then throughput (iperf3 both ways, then
guestbench's net_stream, or the other way round). This host's round-trip level drifts by a
third from one minute to the next, and it has slow phases of a second or more at random, so
each side gives one figure per pair, the same statistic over windows of the same length and
spacing, and a figure of one window spread over more time is less often caught by one:

- guestbench: the median of its run's values, VALUES of SECONDS / VALUES each, after a
  warm-up (a stream's directions alternate, so values of one direction lie one value
  apart);
- sockperf: its every round trip, from its full log, cut into the same VALUES windows from
  its first after its own warm-up; each window's p50 and p99 (one definition, as the agent);
  their medians. It times full round trips of 14-byte messages at least (its header),
  guestbench 1-byte ones;
- iperf3: intervals of SECONDS / VALUES after a first second it omits; the first interval
  after that second is left out (it reads low in every run here), and every second one of
  the rest kept: VALUES intervals, one interval apart, as guestbench's; their median. Its
  whole-test figure is printed beside it for reference.

The result per figure is the median over pairs of the ratio within each pair (guestbench /
the reference), with its 95% percentile-bootstrap interval over pairs and a Wilcoxon
signed-rank test's p-value on the ratios' logarithms. Within a pair both sides meet the same
drift, so the pair's ratio cancels most of it; a ratio of two medians over all pairs would
carry both sides' drift into its interval. The verdict is "within" only when the whole
interval lies inside the tolerance (±5%); a ratio inside it with a wider interval is "not
resolved", and needs more pairs, not a claim.

Placement. On a host of few CPUs where the two ends run moves a loopback figure by a
third or more, and differently from run to run, so both sides pin them alike: the client
(guestbench's agent, iperf3's and sockperf's client) on the first CPU this script may use,
the server (guestbench's peer, iperf3's and sockperf's server) on the second, through
guestbench's agent_cpu and peer_cpu, iperf3's -A and taskset. With one CPU both go on it.
`--free` leaves placement to the scheduler on both sides.

Congestion control. Every side uses the kernel's default unless `--congestion NAME` gives
one to all (guestbench's `congestion`, iperf3's -C, the plain pair's sockets); sockperf's
round trips of one byte never fill a congestion window, and it has no such option. Usage:

    .venv/bin/python benchmarks/net_fidelity.py [--free] [--congestion NAME] [--only rr|stream]
                                                [--plain] [PAIRS] [RAW.json]

`--only` runs one family of figures: round trips (rr) or throughput (stream). `--plain`
adds a third opinion on throughput: a plain pair of blocking sockets in Python (this
script's `plain_end`), 128 KiB per call, pinned and windowed as the others, and prints it
against guestbench and against iperf3; the three take turns going first.

RAW.json, when given, receives every figure of both sides, in the order they ran.
"""

from __future__ import annotations

import argparse
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

import numpy as np  # noqa: E402
from scipy.stats import wilcoxon  # noqa: E402

from guestbench.analysis.stats import median_ci  # noqa: E402
from guestbench.analysis.tails import quantile  # noqa: E402

GUESTBENCH = str(ROOT / ".venv/bin/guestbench")
SECONDS = 2.0  # each side's test, per figure and direction
VALUES = 5  # guestbench's values per run: each lasts SECONDS / VALUES
TOLERANCE = 0.05
FIGURES = (("rr_p50", "us"), ("rr_p99", "us"), ("to_host", "Gbit/s"), ("to_guest", "Gbit/s"))
# (A, B) for each figure both have: guestbench against each reference; the plain pair
# against iperf3, to tell a difference of guestbench's from one of iperf3's.
COMPARISONS = (("guestbench", "sockperf"), ("guestbench", "iperf3"), ("guestbench", "plain"),
               ("plain", "iperf3"))


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
    """The percentile of sorted values by guestbench's one definition, as the agent computes
    its own (guestbench/analysis/tails.py)."""
    return quantile(ordered, pct / 100)


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


PLAIN_BYTES = 128 * 1024  # each write and read of the plain pair, as iperf3's and the agent's


def plain_end(role: str, port: int, cpu: int | None, congestion: str | None,
              seconds: float) -> None:
    """One end of the plain pair, in its own process: "send" connects and writes PLAIN_BYTES
    at a time for `seconds`; "receive" accepts one connection, reads until it ends, and
    prints the times (s) at which each byte count was reached, one window apart."""
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    if role == "send":
        data = memoryview(os.urandom(PLAIN_BYTES))
        with socket.socket() as connection:
            if congestion:
                connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION,
                                      congestion.encode())
            connection.connect(("127.0.0.1", port))
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                connection.sendall(data)
        return
    with socket.create_server(("127.0.0.1", port)) as server:
        if congestion:  # its connection inherits it
            server.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, congestion.encode())
        print("listening", flush=True)
        connection, _ = server.accept()
        buffer = bytearray(PLAIN_BYTES)
        moved, start, marks = 0, time.monotonic(), [(0.0, 0)]
        with connection:
            while (count := connection.recv_into(buffer)) > 0:
                moved += count
                at = time.monotonic() - start
                if at - marks[-1][0] >= SECONDS / VALUES:
                    marks.append((at, moved))
        print(json.dumps(marks))


def plain_gbps(cpus: tuple[int, int] | None, congestion: str | None) -> dict[str, float]:
    """to_host (the client on the first CPU sends) and to_guest (the server on the second
    sends), Gbit/s, by a plain pair of blocking sockets in Python: the third opinion on
    throughput, with no loop of iperf3's or guestbench's. The receiver's windows of
    SECONDS / VALUES after a first second, every second one, VALUES of them; their median,
    as iperf3's."""
    client, server = cpus or (None, None)
    medians = {}
    for name, (sender_cpu, receiver_cpu) in (("to_host", (client, server)),
                                             ("to_guest", (server, client))):
        port = free_port()
        command = [sys.executable, __file__, "--plain-end"]
        receiver = subprocess.Popen([*command, "receive", str(port), str(receiver_cpu),
                                     str(congestion)], stdout=subprocess.PIPE, text=True,
                                    start_new_session=True)
        try:
            receiver.stdout.readline()  # "listening"
            subprocess.run([*command, "send", str(port), str(sender_cpu), str(congestion)],
                           check=True)
            marks = json.loads(receiver.communicate(timeout=30)[0])
        finally:
            if receiver.poll() is None:
                os.killpg(receiver.pid, signal.SIGKILL)
                receiver.wait()
        rates = [(moved - before) * 8 / (at - since) / 1e9
                 for (since, before), (at, moved) in zip(marks, marks[1:]) if since >= 1]
        medians[name] = statistics.median(rates[1::2][:VALUES])
    return medians


def guestbench(folder: Path, number: int, workload: str, cpus: tuple[int, int] | None,
               congestion: str | None) -> dict[str, float]:
    """The medians of one run's values: net_rr's p50 and p99 (µs), or net_stream's Gbit/s."""
    plan = folder / f"pair{number}-{workload}.toml"
    db = f"sqlite:///{folder}/pair{number}-{workload}.sqlite"  # a store of its own: this run
    each = SECONDS / VALUES
    pin = "" if cpus is None else f"agent_cpu = {cpus[0]}\npeer_cpu = {cpus[1]}\n"
    pin += "" if congestion is None else f'congestion = "{congestion}"\n'
    plan.write_text('[campaign]\nrepeat = 1\n\n[[environment]]\npreset = "native"\n\n'
                    f'[[workload]]\nname = "{workload}"\nmin_time_s = {each}\nvalues = {VALUES}\n{pin}')
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
    return {name: statistics.median(values[name]) for name, _ in FIGURES if name in values}


def verdict(low: float | None, high: float | None, value: float) -> str:
    if low is not None and high is not None and 1 - TOLERANCE <= low and high <= 1 + TOLERANCE:
        return "within"
    if abs(value - 1) <= TOLERANCE:
        return "not resolved"
    return "outside"


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["--plain-end"]:
        role, port = args[1], int(args[2])
        cpu, congestion = (None if arg == "None" else arg for arg in args[3:5])
        plain_end(role, port, None if cpu is None else int(cpu), congestion,
                  1 + 2 * SECONDS + SECONDS / VALUES)
        return
    parser = argparse.ArgumentParser(
        prog="net_fidelity.py", description="guestbench's network workloads against sockperf "
        "and iperf3, natively, side by side (this file's docstring says how).")
    parser.add_argument("--free", action="store_true",
                        help="leave placement to the scheduler on every side")
    parser.add_argument("--congestion", metavar="NAME",
                        help="this congestion control for every side (default: the kernel's)")
    parser.add_argument("--only", choices=("rr", "stream"), help="one family of figures")
    parser.add_argument("--plain", action="store_true",
                        help="a plain pair of blocking sockets as a third opinion on throughput")
    parser.add_argument("pairs", nargs="?", type=int, default=12, help="pairs (default: 12)")
    parser.add_argument("raw", nargs="?", type=Path, help="a JSON file for every figure")
    options = parser.parse_args(args)
    if options.pairs < 1:
        parser.error(f"pairs {options.pairs}: give 1 or more")
    free, congestion, only, plain = options.free, options.congestion, options.only, options.plain
    pairs, raw_path = options.pairs, options.raw
    cpus = pinned_cpus(free)
    figures: dict[str, dict[str, list[float]]] = {
        tool: {name: [] for name, _ in FIGURES}
        for tool in ("guestbench", "sockperf", "iperf3", "plain")}
    whole: dict[str, list[float]] = {"to_host": [], "to_guest": []}

    def iperf3() -> dict[str, float]:
        medians, whole_test = iperf3_gbps(cpus, congestion)
        for name, value in whole_test.items():
            whole[name].append(value)
        return medians

    with tempfile.TemporaryDirectory(prefix="net-fidelity-") as work:
        folder = Path(work)
        for number in range(pairs):
            def ours(workload: str) -> dict[str, float]:
                return guestbench(folder, number, workload, cpus, congestion)

            round_trips = [("sockperf", lambda: sockperf_us(cpus, folder)),
                           ("guestbench", lambda: ours("net_rr"))]
            streams = [("iperf3", iperf3), ("guestbench", lambda: ours("net_stream"))]
            streams += [("plain", lambda: plain_gbps(cpus, congestion))] if plain else []
            families = {"rr": [round_trips], "stream": [streams]}.get(only, [round_trips, streams])
            for family in families:
                turn = number % len(family)  # who goes first turns from pair to pair
                for tool, measure in family[turn:] + family[:turn]:
                    for name, value in measure().items():
                        figures[tool][name].append(value)
    placed = ("where the scheduler puts them" if cpus is None
              else f"clients on CPU {cpus[0]}, servers on CPU {cpus[1]}")
    with open("/proc/sys/net/ipv4/tcp_congestion_control") as default:
        control = congestion or f"the kernel's default, {default.read().strip()}"
    print(f"pairs: {pairs}, {SECONDS:g} s per side, figure and direction; {placed}; "
          f"congestion control: {control}; ratio = median of A / B within each pair, "
          f"tolerance ±{TOLERANCE:.0%}")
    print(f"{'figure':<18}{'A / B':<22}{'B':>8}{'A':>8}{'ratio':>8}{'95% interval':>15}"
          f"{'p':>7}  verdict       spread (min-max) A | B")
    for name, unit in FIGURES:
        for mine, reference in COMPARISONS:
            a, b = figures[mine][name], figures[reference][name]
            if not a or not b:
                continue
            ratios = [x / y for x, y in zip(a, b)]
            value = statistics.median(ratios)
            bounds = median_ci(ratios)
            low, high = bounds if bounds else (None, None)
            interval = f"[{low:.3f}-{high:.3f}]" if bounds else "[-]"
            pvalue = float(wilcoxon(np.log(ratios)).pvalue) if len(ratios) > 1 else float("nan")
            other = reference + (" -R" if reference == "iperf3" and name == "to_guest" else "")
            print(f"{name + ' (' + unit + ')':<18}{mine + ' / ' + other:<22}"
                  f"{statistics.median(b):>8.2f}{statistics.median(a):>8.2f}{value:>8.3f}"
                  f"{interval:>15}{pvalue:>7.3f}  {verdict(low, high, value):<13} "
                  f"{min(a):.1f}-{max(a):.1f} | {min(b):.1f}-{max(b):.1f}", flush=True)
    for name, values in whole.items():
        if not values:
            continue
        ours = statistics.median(figures["guestbench"][name])
        print(f"iperf3's whole-test figure, {name}: median {statistics.median(values):.2f} Gbit/s "
              f"(guestbench / it: {ours / statistics.median(values):.3f})")
    if raw_path:
        raw_path.write_text(json.dumps({**figures, "iperf3_whole_test": whole, "cpus": cpus,
                                        "congestion": control}, indent=1))


if __name__ == "__main__":
    main()
