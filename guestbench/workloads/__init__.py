"""The catalogue of workloads, by name."""

from __future__ import annotations

from guestbench.workloads import boot, build, disk, durability, micro, stream, tool, transfer
from guestbench.workloads.base import Params, Workload

CATALOGUE: dict[str, Workload] = {
    w.name: w for w in (*micro.WORKLOADS, *stream.WORKLOADS, *boot.WORKLOADS, *disk.WORKLOADS,
                         *durability.WORKLOADS, *transfer.WORKLOADS,
                         *build.WORKLOADS, *tool.WORKLOADS)}

QUICK_SUITE: tuple[str, ...] = tuple(name for name, w in CATALOGUE.items() if w.quick)

__all__ = ["CATALOGUE", "QUICK_SUITE", "Params", "Workload"]
