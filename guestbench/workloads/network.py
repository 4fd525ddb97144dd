"""Network workloads: TCP between the instance's agent and the agent's peer on the host,
over the instance's own path (loopback, a veth pair, a tap, QEMU's user-mode network:
guestbench/network/). The host makes the path and starts the peer (runner/host_parts.py);
the agent in the instance measures. vsock_rr: the same round trips over a full-system
guest's virtio-vsock device, its peer beside the VMM (environments/fullsystem/vsock.py).
docs/workloads-network.md."""

from __future__ import annotations

import re

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from guestbench.environments.base import Capability
from guestbench.workloads.base import Params, Workload


class Ends(Params):
    """How both ends run, iperf3's -A and -C. Where each end runs moves a loopback figure by
    a third or more on a host of few CPUs; unset, the scheduler decides. The congestion
    control decides how fast a sender may go; unset, each kernel's default."""

    agent_cpu: int | None = Field(None, ge=0, le=4095, description=(
        "the CPU the agent measures on, numbered as its environment sees them (a vCPU in a "
        "full-system guest), as iperf3's -A pins its client; unset: the scheduler's choice"))
    peer_cpu: int | None = Field(None, ge=0, le=4095, description=(
        "the host CPU the peer runs on; unset: the scheduler's choice"))
    congestion: str | None = Field(None, description=(
        "the TCP congestion control of both ends' connections (cubic, bbr, reno: the kernel's "
        "tcp_available_congestion_control); unset: each kernel's default"))


    @field_validator("congestion")
    @classmethod
    def _a_kernel_name(cls, name: str | None) -> str | None:
        if name is not None and not re.fullmatch(r"[a-z][a-z0-9_]{0,14}", name):
            raise PydanticCustomError(
                "congestion_name", "'{name}' is not a congestion control's name",
                {"name": name, "fix": "give a name the kernel lists in /proc/sys/net/ipv4/"
                                      "tcp_available_congestion_control, e.g. \"cubic\": "
                                      "lower case, at most 15 characters"})
        return name


class RrParams(Ends):
    min_time_s: float = Field(0.2, ge=0.01, le=3600, description=(
        "each value's round trips last about this long (its p50 and p99 come from them)"))
    values: int = Field(5, ge=1, le=1000, description="values per run, after a warm-up")


class StreamParams(Ends):
    min_time_s: float = Field(0.5, ge=0.05, le=3600, description=(
        "each value's transfer, in each direction, lasts about this long"))
    values: int = Field(5, ge=1, le=1000, description=(
        "values per run and direction, the directions alternating, after a warm-up"))


class VsockParams(Params):
    agent_cpu: int | None = Field(None, ge=0, le=4095, description=(
        "the vCPU the agent measures on; unset: the scheduler's choice"))
    min_time_s: float = Field(0.2, ge=0.01, le=3600, description=(
        "each value's round trips last about this long (its p50 and p99 come from them)"))
    values: int = Field(5, ge=1, le=1000, description="values per run, after a warm-up")


def _vsock_args(params: VsockParams) -> list[str]:
    cpu = [] if params.agent_cpu is None else ["--cpu", str(params.agent_cpu)]
    return ["--min-time", repr(params.min_time_s), "--values", str(params.values), *cpu]


def _args(params: RrParams | StreamParams) -> list[str]:
    cpu = [] if params.agent_cpu is None else ["--cpu", str(params.agent_cpu)]
    congestion = [] if params.congestion is None else ["--congestion", params.congestion]
    return ["--min-time", repr(params.min_time_s), "--values", str(params.values), *cpu,
            *congestion]


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
    Workload("vsock_rr", "network", "1-byte round trips over virtio-vsock with a peer on the "
             "host side of the VMM (its hybrid vsock's Unix socket, or vhost-vsock): median and "
             "99th percentile", VsockParams, _vsock_args, frozenset({Capability.VSOCK}),
             quick=False, host_part="vsock", primary_metric="rr_p50",
             title="vsock round trip",
             metric_titles={"rr_p50": "p50", "rr_p99": "p99", "time_per_op": "mean"}),
]
