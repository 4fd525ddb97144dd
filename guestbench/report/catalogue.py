"""Every table a report can give, by its stable name: what `report --table NAME` and a plan's
`[[table]]` entries ask for.

An entry names the function that builds it ("module:function", taking the campaign's
results and the footnotes, giving a table, a list of them, or None without data) and says
in a line what it shows. Builders that give several tables (one per STREAM workload, one
per bonnie++ section) name each `<entry>` or `<entry>-<what>`, so an entry selects its
tables by name. A new table is one builder and one line here.

This module imports nothing of the report's: the plan checks `[[table]]` names against it
without loading a renderer.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module


@dataclass(frozen=True)
class Entry:
    build: str  # "module:function"
    what: str  # one line: what the table shows
    statistic: str = "median"  # what a plain cell shows unless the [[table]] says
    spread: bool | None = None  # a plain cell's spread unless the [[table]] says (None: none)


_P = "guestbench.report."

ENTRIES: dict[str, Entry] = {
    "measured": Entry(_P + "model:measured_table", "every metric's median with its interval"),
    "ratios": Entry(_P + "model:ratio_table",
                    "each environment's ratio to the baseline, and geometric means"),
    "platform": Entry(_P + "tables.platform:platform_table",
                      "what each environment ran: VMM, runtime, guest kernel versions"),
    "basic": Entry(_P + "tables.published:basic_table",
                   "getpid, sched_yield, malloc, first write: cycles (time) per operation"),
    "stream": Entry(_P + "tables.published:stream_tables",
                    "STREAM: bandwidth and avg / min / max time per kernel"),
    "percent": Entry(_P + "tables.published:percent_table", "% of the baseline per workload"),
    "scaling": Entry(_P + "tables.published:scaling_tables",
                     "vCPUs x placement, each cell's change against one"),
    "versions": Entry(_P + "tables.versions:version_tables",
                      "a kernel or VMM version sweep side by side"),
    "disk": Entry(_P + "tables.io:disk_table", "fio, metadata and dbench figures"),
    "dbench": Entry(_P + "tables.io:dbench_table", "dbench throughput by clients",
                    statistic="best"),
    "upload": Entry(_P + "tables.io:upload_times_table",
                    "upload, upload without write, write without upload: seconds"),
    "upload-rates": Entry(_P + "tables.io:upload_table", "uploads in MB/s per channel"),
    "kernbench": Entry(_P + "tables.kernbench:kernbench_table",
                       "builds as kernbench prints them: mean (stddev), elapsed / baseline",
                       statistic="mean", spread=True),
    "build": Entry(_P + "tables.io:build_table", "builds: medians of kernbench's columns"),
    "build-runs": Entry(_P + "tables.io:build_runs_table",
                        "each build run's real / user / sys"),
    "durability": Entry(_P + "tables.io:durability_table", "whether fsync is honoured"),
    "verdicts": Entry(_P + "tables.io:verdict_table", "yes or no metrics"),
    "bonnie": Entry(_P + "tables.bonnie:tables", "every bonnie++ table below"),
    "bonnie-output": Entry(_P + "tables.bonnie:tables", "bonnie++ sequential output"),
    "bonnie-input": Entry(_P + "tables.bonnie:tables", "bonnie++ sequential input"),
    "bonnie-seeks": Entry(_P + "tables.bonnie:tables", "bonnie++ random seeks"),
    "bonnie-seq-create": Entry(_P + "tables.bonnie:tables", "bonnie++ sequential create"),
    "bonnie-rand-create": Entry(_P + "tables.bonnie:tables", "bonnie++ random create"),
    "bonnie-percent": Entry(_P + "tables.bonnie:tables",
                            "bonnie++ comparison to the baseline"),
    "boot": Entry(_P + "tables.boot:boot_table", "boot phases per environment"),
    "boot-totals": Entry(_P + "tables.boot:boot_totals_table",
                         "boot time per environment, VMM start to powered off"),
    "statistics": Entry(_P + "tables.published:statistics_table",
                        "every cell: n, median, mean, min, max, stdev, CV, interval"),
    "clock": Entry(_P + "model:clock_table", "the guest's clock against the host's"),
    "host": Entry(_P + "model:host_table", "the host's checks before and after"),
    "efficiency": Entry(_P + "tables.efficiency:efficiency_table",
                        "where the campaign's time went: timed, in runs, outside runs"),
}

NAMES = tuple(ENTRIES)


def build(entry: Entry, report, footnotes) -> list:
    """The tables an entry's builder gives for these results (its module loads now)."""
    module, function = entry.build.split(":")
    made = getattr(import_module(module), function)(report, footnotes)
    if made is None:
        return []
    return made if isinstance(made, list) else [made]


def selects(entry: str, table_name: str) -> bool:
    """Whether a table its entry's builder gave is one `entry` names ("stream" names
    "stream-stream_triad"; "bonnie" every bonnie++ table)."""
    return table_name == entry or table_name.startswith(entry + "-")
