"""Every table a report can give, by its stable name: what `report --table NAME` and a plan's
`[[table]]` entries may ask for, what each shows in a line, and how a plain cell of it reads.

Builders that give several tables (one per STREAM workload, one per bonnie++ section) name
each `<entry>` or `<entry>-<what>`, so an entry selects its tables by name. Each name's
builder is in report/select.py (BUILDERS), which a test holds to these names. This module
imports nothing: the plan checks its [[table]] names here, and report checks --table.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Entry:
    what: str  # one line: what the table shows
    statistic: str = "median"  # what a plain cell shows unless the [[table]] says
    spread: bool | None = None  # a plain cell's spread unless the [[table]] says (None: none)
    filled_by: str = ""  # the workloads whose figures it shows: what an empty one lacks


ENTRIES: dict[str, Entry] = {
    "measured": Entry("every metric's median with its interval"),
    "ratios": Entry("each environment's ratio to the baseline, and geometric means"),
    "platform": Entry("the setup: the host, and what each environment ran, under which "
                      "accelerator, with its guest memory and vCPUs"),
    "basic": Entry("getpid, sched_yield, malloc, first write: cycles (time) per operation",
                   filled_by="getpid, sched_yield, malloc_1mib or first_write"),
    "stream": Entry("STREAM: bandwidth and avg / min / max time per kernel",
                    filled_by="stream or stream_triad (copy, scale, add)"),
    "percent": Entry("% of the baseline per workload"),
    "scaling": Entry("vCPUs x placement, each cell's change against one",
                     filled_by="any workload in environments swept over vcpus or placement"),
    "versions": Entry("a kernel or VMM version sweep side by side"),
    "disk": Entry("fio, metadata and dbench figures",
                  filled_by="fio_seq_read, fio_rand_write, ..., metadata or dbench"),
    "dbench": Entry("dbench throughput by clients", statistic="best", filled_by="dbench"),
    "upload": Entry("upload, upload without write, write without upload: seconds",
                    filled_by="upload"),
    "upload-rates": Entry("uploads in MB/s per channel", filled_by="upload"),
    "kernbench": Entry("builds as kernbench prints them: mean (stddev), elapsed / baseline",
                       statistic="mean", spread=True, filled_by="build or kernel_build"),
    "build": Entry("builds: medians of kernbench's columns", filled_by="build or kernel_build"),
    "build-runs": Entry("each build run's real / user / sys",
                        filled_by="build or kernel_build"),
    "durability": Entry("whether fsync is honoured", filled_by="fsync_honoured"),
    "verdicts": Entry("yes or no metrics"),
    "bonnie": Entry("every bonnie++ table below", filled_by="bonnie"),
    "bonnie-output": Entry("bonnie++ sequential output", filled_by="bonnie"),
    "bonnie-input": Entry("bonnie++ sequential input", filled_by="bonnie"),
    "bonnie-seeks": Entry("bonnie++ random seeks", filled_by="bonnie"),
    "bonnie-seq-create": Entry("bonnie++ sequential create", filled_by="bonnie"),
    "bonnie-rand-create": Entry("bonnie++ random create", filled_by="bonnie"),
    "bonnie-percent": Entry("bonnie++ comparison to the baseline",
                            filled_by="bonnie, with a baseline"),
    "startup": Entry("start-up per instance: p50, p90, p95, p99 with intervals from 30 runs",
                     filled_by="start or density"),
    "footprint": Entry("an instance's host memory in MiB, and its processes by command name",
                       filled_by="footprint"),
    "density": Entry("memory per instance, start p50 and slowest, against N started together",
                     filled_by="density"),
    "burst": Entry("N instances at once, staggered or in turn: success rate, p50 to p99, first "
                   "and last ready", filled_by="burst"),
    "snapshot": Entry("cold start against restore (p50, p99), save, image size, first touch",
                      filled_by="snapshot_create, restore or restore_first_touch"),
    "network": Entry("TCP round trip p50 and p99, TCP stream each way",
                     filled_by="net_rr or net_stream"),
    "boot": Entry("boot phases per environment", filled_by="boot (a full-system guest's)"),
    "boot-totals": Entry("boot time per environment, VMM start to powered off",
                         filled_by="boot (a full-system guest's)"),
    "statistics": Entry("every cell: n, median, mean, min, max, stdev, CV, interval"),
    "clock": Entry("the guest's clock against the host's",
                   filled_by="any workload in a full-system guest"),
    "host": Entry("the host's checks before and after"),
    "efficiency": Entry("where the campaign's time went: timed, in runs, outside runs"),
}

NAMES = tuple(ENTRIES)
# what VMM and sandbox teams publish, absolute: the HTML overview and JSON carry them whole
VMM_TABLES = ("startup", "footprint", "density", "burst", "snapshot", "network")


def selects(entry: str, table_name: str) -> bool:
    """Whether a table its entry's builder gave is one `entry` names ("stream" names
    "stream-stream_triad"; "bonnie" every bonnie++ table)."""
    return table_name == entry or table_name.startswith(entry + "-")
