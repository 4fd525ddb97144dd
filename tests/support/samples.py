"""Samples as workloads record them: recorded values from a real host, and builders of
each workload's metrics."""

from __future__ import annotations

from guestbench.report.tables import published


# Recorded on this project's 2-vCPU test host: getpid ns per op over 6 fresh runs each.
NATIVE_GETPID = [140.0, 141.64, 139.52, 140.72, 148.37, 140.68]
# The same, with two busy loops on the host's two CPUs (a deliberately slowed B).
HOGGED_GETPID = [180.9, 151.19, 201.5, 231.22, 201.26, 232.65]
# sched_yield with the CPU hogs: the spread is a third of the mean.
HOGGED_SCHED_YIELD = [1097.61, 682.22, 844.8, 928.67, 769.6, 769.07]
# fork_exit us per op over 10 fresh native runs, one of them slow.
NATIVE_FORK_EXIT_US = [107.4, 107.5, 98.97, 105.4, 104.3, 109.0, 103.1, 104.0, 98.4, 128.3]
# pipe_switch with placement "free": same-CPU switches (~2.5 us) mixed with
# cross-CPU wake-ups (20-34 us), the shape seen here before placement was pinned.
PIPE_SWITCH_FREE_US = [2.54, 2.55, 2.53, 21.3, 2.54, 24.1, 2.56, 33.2, 2.55, 22.8, 2.53, 27.9]


def micro(time_ns: float) -> list[tuple[str, str, float]]:
    return [("time_per_op", "ns", time_ns), ("tsc_per_op", "cycles", time_ns * 2.6),
            ("iterations", "count", 1024.0)]


# runs that differ a little, around an exact median: identical runs are a quantised figure
# (too-fast), which tables show as +++++ without an interval
JITTER = (0.998, 0.999, 1.0, 1.0, 1.001, 1.002)
THREE = (0.999, 1.0, 1.001)


def stream(bandwidth: float, jitter: float = 1.0) -> list[tuple[str, str, float]]:
    out = []
    for kernel in published.STREAM_KERNELS:
        out += [(f"{kernel}_bandwidth", "MB/s", bandwidth * jitter),
                (f"{kernel}_time_avg", "s", 0.011 / jitter),
                (f"{kernel}_time_min", "s", 0.010 / jitter),
                (f"{kernel}_time_max", "s", 0.013 / jitter)]
    return out + [("array_mib", "MiB", 128.0)]


def upload(bandwidth: float) -> list[tuple[str, str, float]]:
    return [("bandwidth", "MB/s", bandwidth), ("elapsed", "s", 64 / bandwidth),
            ("bytes", "bytes", 64e6)]


def build(elapsed: float, sleeps: float) -> list[tuple[str, str, float]]:
    return [("elapsed", "s", elapsed), ("user", "s", elapsed * 1.8), ("sys", "s", 0.1),
            ("cpu_percent", "%", 190.0), ("context_switches", "count", 40.0),
            ("sleeps", "count", sleeps), ("max_rss", "KiB", 9000.0)]


def fsync(honoured: bool) -> list[tuple[str, str, float]]:
    return [("records_acknowledged", "count", 200.0),
            ("records_durable", "count", 200.0 if honoured else 12.0),
            ("honoured", "bool", 1.0 if honoured else 0.0)]
