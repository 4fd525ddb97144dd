"""STREAM memory-bandwidth workloads (copy, scale, add, triad) of the agent."""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

from guestbench.environments.base import JobNeeds
from guestbench.host import Host
from guestbench.workloads.base import Params, Workload

FALLBACK_ARRAY_MIB = 80


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


def default_array_mib(host: Host) -> dict[str, Any]:
    """At least 4x the host's last-level cache, and never under 80 MiB.

    Resolved on the host so every environment of a campaign uses the same size
    (a guest's sysfs may show other caches or none).
    """
    llc = host.llc_bytes
    four_llc_mib = math.ceil(4 * llc / 2**20) if llc else 0
    return {"array_mib": max(FALLBACK_ARRAY_MIB, four_llc_mib)}


def _args(params: StreamParams) -> list[str]:
    return ["--array-mib", str(params.array_mib), "--ntimes", str(params.ntimes),
            "--enough", repr(params.enough_s)]


def _needs(params: StreamParams, inputs) -> JobNeeds:
    """The three arrays, all touched: an environment that cannot give that much memory
    refuses the run before it starts, with the fix."""
    return JobNeeds(memory_mib=3 * params.array_mib)


def _stream(name: str, summary: str, quick: bool, primary_metric: str) -> Workload:
    kernel = name.partition("_")[2]
    titles = {f"{k}_{figure}": f"{k} {words}" for k in ("copy", "scale", "add", "triad")
              for figure, words in (("bandwidth", "bandwidth"), ("time_avg", "avg time"),
                                    ("time_min", "min time"), ("time_max", "max time"))}
    return Workload(name, "stream", summary, StreamParams, _args, quick=quick,
                    host_defaults=default_array_mib, primary_metric=primary_metric,
                    job_needs=_needs, title=f"STREAM {kernel}".strip(),
                    metric_titles={**titles, "time_avg": "avg time", "time_min": "min time",
                                   "time_max": "max time", "array_mib": "array MiB", "passes": "passes"})


# A single kernel reports `bandwidth`; all four in turn report `<kernel>_bandwidth`,
# and triad (the reference STREAM's headline figure) is judged.
WORKLOADS = [
    _stream("stream", "all four STREAM kernels in turn, as the reference STREAM", True,
            "triad_bandwidth"),
    _stream("stream_copy", "STREAM copy  c = a", False, "bandwidth"),
    _stream("stream_scale", "STREAM scale b = q*c", False, "bandwidth"),
    _stream("stream_add", "STREAM add   c = a + b", False, "bandwidth"),
    _stream("stream_triad", "STREAM triad a = b + q*c", False, "bandwidth"),
]
