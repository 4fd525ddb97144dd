"""STREAM memory-bandwidth workloads (copy, scale, add, triad) of the agent."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import Field

from guestbench.environments.base import JobNeeds
from guestbench.host import Host
from guestbench.workloads.base import Params, Workload

FALLBACK_ARRAY_MIB = 80
KERNELS = ("copy", "scale", "add", "triad")


class StreamParams(Params):
    array_mib: int = Field(FALLBACK_ARRAY_MIB, gt=0, le=65536,
                           description="size of each of the three arrays, MiB")
    ntimes: int = Field(10, ge=2, le=10000,
                        description="passes over the kernels at most; the first is not counted")
    enough_s: float = Field(1.0, ge=0, le=3600,
                            description="the passes stop, after three counted ones, once the "
                                        "counted passes have lasted this long (an emulator's "
                                        "STREAM need not take 10x native's seconds); 0 = always "
                                        "ntimes")


class StreamAllParams(StreamParams):
    kernels: list[Literal["copy", "scale", "add", "triad"]] = Field(
        default_factory=lambda: list(KERNELS), min_length=1,
        description="the kernels run in turn, in the reference's order (the default campaign "
                    "runs triad alone: its summary's figure, at 3 of the 10 arrays' traffic "
                    "a pass of all four moves)")


def default_array_mib(host: Host) -> dict[str, Any]:
    """At least 4x the host's last-level cache, and never under 80 MiB.

    Resolved on the host so every environment of a campaign uses the same size
    (a guest's sysfs may show other caches or none).
    """
    llc = host.llc_bytes
    four_llc_mib = math.ceil(4 * llc / 2**20) if llc else 0
    return {"array_mib": max(FALLBACK_ARRAY_MIB, four_llc_mib)}


# The default campaign's STREAM: triad alone, and fresh runs while their arrays come to at most
# QUICK_BUDGET_MIB in all (at least one, at most QUICK_MAX_RUNS). Each run must set its arrays
# up: a first write of every page (3 x 1920 MiB on a host with a 480 MiB L3: 1.5 million page
# faults, several seconds natively and more in a sandbox) before its passes, which move 3
# arrays each. Both grow with the cache; the campaign's time must not (docs/workloads-micro.md).
QUICK_KERNELS = ["triad"]
QUICK_BUDGET_MIB = 1152
QUICK_MAX_RUNS = 5


def quick_runs(array_mib: int) -> int:
    """Fresh runs of the default campaign's STREAM cell for arrays of array_mib each."""
    return max(1, min(QUICK_MAX_RUNS, QUICK_BUDGET_MIB // (3 * array_mib)))


def quick_table(host: Host) -> dict[str, Any]:
    """The default campaign's [[workload]] table for `stream`."""
    return {"name": "stream", "kernels": list(QUICK_KERNELS),
            "repeat": quick_runs(default_array_mib(host)["array_mib"])}


# What a run costs natively, for the first estimate (runner/estimate.py): typical figures of
# a 2-core VM, where STREAM's own `timed` and a run's host seconds give them (2026-11-29,
# docs/measurements.md): triad at about 10 GB/s; setting up and checking the arrays about
# 1.6 s per GiB of them (a first write of each page: a page fault and its zeroing).
TYPICAL_BYTES_PER_S = 10e9
TYPICAL_SETUP_S_PER_GIB = 1.6
ARRAYS_MOVED = {"copy": 2, "scale": 2, "add": 3, "triad": 3}  # per element, each 8 bytes
MIN_COUNTED = 3  # the agent's: counted passes before --enough may stop them


def typical_run(params: StreamParams, kernels: list[str]) -> tuple[float, float]:
    """(0, native seconds): the set-up and check, a warm-up pass, then counted passes until
    they lasted enough_s (three at least, ntimes - 1 at most)."""
    array_bytes = params.array_mib * 2**20
    pass_s = sum(ARRAYS_MOVED[kernel] for kernel in kernels) * array_bytes / TYPICAL_BYTES_PER_S
    counted = params.ntimes - 1
    if params.enough_s > 0:
        counted = min(counted, max(MIN_COUNTED, math.ceil(params.enough_s / pass_s)))
    setup_s = 3 * array_bytes / 2**30 * TYPICAL_SETUP_S_PER_GIB
    return 0.0, setup_s + (1 + counted) * pass_s


def _args(params: StreamParams) -> list[str]:
    kernels = getattr(params, "kernels", KERNELS)
    return ["--array-mib", str(params.array_mib), "--ntimes", str(params.ntimes),
            "--enough", repr(params.enough_s),
            *([] if set(kernels) == set(KERNELS) else ["--kernels", ",".join(kernels)])]


def _needs(params: StreamParams, inputs) -> JobNeeds:
    """The three arrays, all touched: an environment that cannot give that much memory
    refuses the run before it starts, with the fix."""
    return JobNeeds(memory_mib=3 * params.array_mib)


def _stream(name: str, summary: str, quick: bool, primary_metric: str,
            params: type[StreamParams] = StreamParams) -> Workload:
    kernel = name.partition("_")[2]
    titles = {f"{k}_{figure}": f"{k} {words}" for k in ("copy", "scale", "add", "triad")
              for figure, words in (("bandwidth", "bandwidth"), ("time_avg", "avg time"),
                                    ("time_min", "min time"), ("time_max", "max time"))}
    own = [kernel] if kernel else list(KERNELS)  # stream_triad's, or stream's by default
    return Workload(name, "stream", summary, params, _args, quick=quick,
                    typical_run=lambda given: typical_run(given, getattr(given, "kernels", own)),
                    host_defaults=default_array_mib, primary_metric=primary_metric,
                    job_needs=_needs, memory_mib=lambda params: 3 * params.array_mib,
                    title=f"STREAM {kernel}".strip(),
                    metric_titles={**titles, "time_avg": "avg time", "time_min": "min time",
                                   "time_max": "max time", "array_mib": "array MiB", "passes": "passes"})


# A single kernel reports `bandwidth`; all four in turn report `<kernel>_bandwidth`,
# and triad (the reference STREAM's headline figure) is judged.
WORKLOADS = [
    _stream("stream", "all four STREAM kernels in turn, as the reference STREAM", True,
            "triad_bandwidth", StreamAllParams),
    _stream("stream_copy", "STREAM copy  c = a", False, "bandwidth"),
    _stream("stream_scale", "STREAM scale b = q*c", False, "bandwidth"),
    _stream("stream_add", "STREAM add   c = a + b", False, "bandwidth"),
    _stream("stream_triad", "STREAM triad a = b + q*c", False, "bandwidth"),
]
