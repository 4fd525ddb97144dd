"""The catalogue of workloads, by name."""

from __future__ import annotations

from guestbench.workloads import (bonnie, boot, build, disk, durability, instance, micro,
                                  network, snapshot, stream, tool, transfer)
from guestbench.workloads.base import Params, Workload

CATALOGUE: dict[str, Workload] = {
    w.name: w for w in (*micro.WORKLOADS, *stream.WORKLOADS, *boot.WORKLOADS,
                         *instance.WORKLOADS, *snapshot.WORKLOADS, *network.WORKLOADS, *disk.WORKLOADS,
                         *bonnie.WORKLOADS,
                         *durability.WORKLOADS, *transfer.WORKLOADS,
                         *build.WORKLOADS, *tool.WORKLOADS)}

# workload -> the metrics the host times of its runs (Workload.host_timed)
HOST_TIMED: dict[str, tuple[str, ...]] = {
    name: w.host_timed for name, w in CATALOGUE.items() if w.host_timed}

QUICK_SUITE: tuple[str, ...] = tuple(name for name, w in CATALOGUE.items() if w.quick)
NOT_IN_DEFAULT_CAMPAIGN: dict[str, str] = micro.VM_EXITS  # names -> why, said after a run

__all__ = ["CATALOGUE", "HOST_TIMED", "NOT_IN_DEFAULT_CAMPAIGN", "QUICK_SUITE", "Params", "Workload"]
