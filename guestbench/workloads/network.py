"""Network workloads: TCP between the instance's agent and the agent's peer on the host,
over the instance's own path (loopback, a veth pair, a tap, QEMU's user-mode network:
guestbench/network/). The host makes the path and starts the peer (runner/host_parts.py);
the agent in the instance measures. docs/workloads-network.md."""

from __future__ import annotations

from pydantic import Field

from guestbench.environments.base import Capability
from guestbench.workloads.base import Params, Workload


class RrParams(Params):
    min_time_s: float = Field(0.2, ge=0.01, le=3600, description=(
        "each value's round trips last about this long (its p50 and p99 come from them)"))
    values: int = Field(5, ge=1, le=1000, description="values per run, after a warm-up")


class StreamParams(Params):
    min_time_s: float = Field(0.5, ge=0.05, le=3600, description=(
        "each value's transfer, in each direction, lasts about this long"))
    values: int = Field(5, ge=1, le=1000, description=(
        "values per run and direction, the directions alternating, after a warm-up"))


def _args(params: RrParams | StreamParams) -> list[str]:
    return ["--min-time", repr(params.min_time_s), "--values", str(params.values)]


WORKLOADS = [
    Workload("net_rr", "network", "1-byte TCP round trips with the host's peer (netperf's "
             "TCP_RR): median and 99th percentile", RrParams, _args,
             frozenset({Capability.NETWORK}), quick=False, host_part="network",
             primary_metric="rr_p50", title="TCP round trip",
             metric_titles={"rr_p50": "p50", "rr_p99": "p99", "time_per_op": "mean"}),
    Workload("net_stream", "network", "TCP throughput with the host's peer, host to guest and "
             "guest to host (iperf3's test, 128 KiB writes)", StreamParams, _args,
             frozenset({Capability.NETWORK}), quick=False, host_part="network",
             primary_metric="to_guest", title="TCP stream",
             metric_titles={"to_guest": "host to guest", "to_host": "guest to host",
                            "to_guest_chunk": "moved per value, to guest",
                            "to_host_chunk": "moved per value, to host"}),
]
