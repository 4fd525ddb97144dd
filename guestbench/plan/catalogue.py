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


ENTRIES: dict[str, Entry] = {
    "measured": Entry("every metric's median with its interval"),
    "ratios": Entry("each environment's ratio to the baseline, and geometric means"),
    "platform": Entry("the setup: the host, and what each environment ran, under which "
                      "accelerator, with its guest memory and vCPUs"),
    "basic": Entry("getpid, sched_yield, malloc, first write: cycles (time) per operation"),
    "stream": Entry("STREAM: bandwidth and avg / min / max time per kernel"),
    "percent": Entry("% of the baseline per workload"),
    "scaling": Entry("vCPUs x placement, each cell's change against one"),
    "versions": Entry("a kernel or VMM version sweep side by side"),
    "disk": Entry("fio, metadata and dbench figures"),
    "dbench": Entry("dbench throughput by clients", statistic="best"),
    "upload": Entry("upload, upload without write, write without upload: seconds"),
    "upload-rates": Entry("uploads in MB/s per channel"),
    "kernbench": Entry("builds as kernbench prints them: mean (stddev), elapsed / baseline",
                       statistic="mean", spread=True),
    "build": Entry("builds: medians of kernbench's columns"),
    "build-runs": Entry("each build run's real / user / sys"),
    "durability": Entry("whether fsync is honoured"),
    "verdicts": Entry("yes or no metrics"),
    "bonnie": Entry("every bonnie++ table below"),
    "bonnie-output": Entry("bonnie++ sequential output"),
    "bonnie-input": Entry("bonnie++ sequential input"),
    "bonnie-seeks": Entry("bonnie++ random seeks"),
    "bonnie-seq-create": Entry("bonnie++ sequential create"),
    "bonnie-rand-create": Entry("bonnie++ random create"),
    "bonnie-percent": Entry("bonnie++ comparison to the baseline"),
    "startup": Entry("start-up per instance: p50, p90, p95, p99 with intervals from 30 runs"),
    "footprint": Entry("an instance's host memory in MiB, and its processes by command name"),
    "density": Entry("memory per instance, start p50 and slowest, against N started together"),
    "burst": Entry("N instances at once, staggered or in turn: success rate, p50 to p99, first "
                   "and last ready"),
    "snapshot": Entry("cold start against restore (p50, p99), save, image size, first touch"),
    "network": Entry("TCP round trip p50 and p99, TCP stream each way"),
    "boot": Entry("boot phases per environment"),
    "boot-totals": Entry("boot time per environment, VMM start to powered off"),
    "statistics": Entry("every cell: n, median, mean, min, max, stdev, CV, interval"),
    "clock": Entry("the guest's clock against the host's"),
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
