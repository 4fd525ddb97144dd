"""bonnie++ as the KVM-against-Xen comparisons ran it: its own figures, from its CSV line.

One run is one `bonnie++ -q` in the scratch folder: sequential output per character,
per block and rewrite; sequential input per character and per block; random seeks; then
sequential and random create, read (stat) and delete of small files. Each figure comes
with the %CPU bonnie++ measured for it (context) and its latency (us). Where a phase
ended too fast for bonnie++ to time, it prints +++++ instead of a number: the run then
carries no sample of that figure and a too-fast:<metric> flag, and the tables show
+++++ as bonnie++ does.

The CSV line's fields (format 1.98, bonnie++ 2.00; the order of bon_csv2txt):
0 format, 1 version, 2 name, 3 concurrency, 4 seed, 5 size, 6 chunk size, 7 seeks,
8 seek processes, 9-20 the six I/O figures each with %CPU, 21-25 the file test's
sizes, 26-37 the six file figures each with %CPU, 38-43 and 44-49 their latencies.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError

from guestbench.environments.base import Capability, JobNeeds
from guestbench.workloads.base import (
    Derived, OutputError, Params, RunOutput, Sample, Workload, too_fast)

CSV_FORMAT = "1.98"
IO_AT, FILES_AT = 9, 26  # the first I/O figure's field, the first file figure's
LATENCIES_AT = 38
# metric, unit, column title as bonnie++ prints it; in the CSV's order
FIGURES: tuple[tuple[str, str, str], ...] = (
    ("out_char", "KiB/s", "per chr"), ("out_block", "KiB/s", "block"),
    ("rewrite", "KiB/s", "rewrite"), ("in_char", "KiB/s", "per chr"),
    ("in_block", "KiB/s", "block"), ("seeks", "seeks/s", "seeks"),
    ("seq_create", "files/s", "create"), ("seq_read", "files/s", "read"),
    ("seq_delete", "files/s", "delete"), ("rand_create", "files/s", "create"),
    ("rand_read", "files/s", "read"), ("rand_delete", "files/s", "delete"))
TOO_FAST_MARK = re.compile(r"^\++$")
LATENCY = re.compile(r"^([0-9.]+)(us|ms|s)$")
LATENCY_US = {"us": 1.0, "ms": 1e3, "s": 1e6}


class BonnieParams(Params):
    # 1 GiB: on a host with a fast page cache (here 2 GB/s) block writes of 256 MiB end too
    # fast for bonnie++ to time (+++++); 2 GiB times them, but costs guests a 2 GiB disk
    size_mib: int = Field(1024, ge=8, le=1 << 20,
                          description="the file bonnie++ writes, reads and seeks in, MiB (-s); "
                                      "at least twice ram_mib, as bonnie++ demands")
    ram_mib: int = Field(512, ge=4, le=1 << 19,
                         description="the memory bonnie++ assumes (-r); it refuses a file under "
                                     "twice this size")
    files: int = Field(4, ge=0, le=1024,
                       description="small files of the create tests, in thousands (-n, units "
                                   "of 1024); 0 skips them")

    per_char: bool = Field(True, description="the per-character tests (putc/getc: a call per "
                                             "byte); false passes -f, which skips them")

    @model_validator(mode="after")
    def _file_twice_ram(self) -> "BonnieParams":
        if self.size_mib < 2 * self.ram_mib:
            raise PydanticCustomError(
                "bonnie_size", "size_mib {size} is under twice ram_mib {ram}: bonnie++ refuses "
                "to run", {"size": self.size_mib, "ram": self.ram_mib,
                           "fix": f"give size_mib >= {2 * self.ram_mib}, or a smaller ram_mib"})
        return self


def bonnie_command(params: BonnieParams) -> list[str]:
    """bonnie++ in the scratch folder: quiet (the CSV line alone on stdout), one pass, a fixed
    seed and machine name so that runs differ only in their figures."""
    return ["bonnie++", "-d", ".", "-s", str(params.size_mib), "-r", str(params.ram_mib),
            "-n", str(params.files), "-u", "0:0", "-m", "guestbench", "-x", "1", "-z", "1", "-q",
            *(() if params.per_char else ("-f",))]


def csv_line(text: str) -> list[str]:
    """The result line's fields (the last line that starts with the CSV format)."""
    lines = [line.strip() for line in text.splitlines() if line.startswith(CSV_FORMAT + ",")]
    if not lines:
        raise OutputError(f"no bonnie++ CSV line (format {CSV_FORMAT}) in its output: "
                          f"{_tail(text)}")
    fields = lines[-1].split(",")
    if len(fields) < LATENCIES_AT:
        raise OutputError(f"bonnie++'s CSV line has {len(fields)} fields, {LATENCIES_AT} or "
                          f"more expected: {lines[-1][:200]}")
    return fields


def derive(params: BonnieParams, run: RunOutput) -> Derived:
    fields = csv_line(run.stdout)
    samples: list[Sample] = []
    flags: list[str] = []
    for index, (metric, unit, _title) in enumerate(FIGURES):
        if params.files == 0 and index >= 6:
            break  # no file tests were asked for
        at = IO_AT + 2 * index if index < 6 else FILES_AT + 2 * (index - 6)
        value, cpu = fields[at], fields[at + 1]
        if not value or TOO_FAST_MARK.match(value):
            if value:
                flags.append(too_fast(metric))
            continue
        samples.append((metric, unit, _number(value, metric)))
        if cpu and not TOO_FAST_MARK.match(cpu):
            samples.append((f"{metric}_cpu", "%", _number(cpu, f"{metric} %CPU")))
        latency = fields[LATENCIES_AT + index] if LATENCIES_AT + index < len(fields) else ""
        found = LATENCY.match(latency)
        if found:
            samples.append((f"{metric}_latency", "us",
                            float(found.group(1)) * LATENCY_US[found.group(2)]))
    if not samples and not flags:
        raise OutputError(f"bonnie++'s CSV line holds no figure: {','.join(fields)[:200]}")
    # every phase too fast (+++++) is a result, as in the seed's create tables: the run is
    # ok, and its cells say +++++
    return Derived(samples, flags)


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise OutputError(f"bonnie++'s {what} is {text!r}, not a number") from None


def _tail(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-limit:] or "(no output)"


def _titles() -> dict[str, str]:
    words = {"out": "output", "in": "input", "seq": "seq.", "rand": "random"}
    out = {}
    for metric, _unit, title in FIGURES:
        side = metric.split("_")[0]
        name = f"{words[side]} {title}" if side in words else title
        out |= {metric: name, f"{metric}_cpu": f"{name} %CPU", f"{metric}_latency": f"{name} latency"}
    return out


def _needs(params: BonnieParams, inputs: Any) -> JobNeeds:
    # the big file, and room for the small files' directory
    return JobNeeds(scratch=True, scratch_mib=params.size_mib + 16)


WORKLOADS = [
    Workload("bonnie", "disk", "bonnie++: sequential output and input per character and per "
             "block, rewrite, seeks, file create/read/delete; each with %CPU", BonnieParams,
             lambda params: ["exec", *bonnie_command(params)],
             frozenset({Capability.FILESYSTEM}), quick=False, primary_metric="out_block",
             agent_name="exec", job_needs=_needs, derive=derive, tools=("bonnie++",),
             title="bonnie++", metric_titles=_titles(),
             too_fast_rule="bonnie++ prints +++++ for a phase it ended too fast to time"),
]
