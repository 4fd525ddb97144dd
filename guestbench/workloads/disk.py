"""Disk and filesystem workloads: fio jobs, fio's metadata engines, and dbench.

Every workload here runs a real tool through the agent's exec workload, in a scratch
folder the environment provides (a host folder on a disk for process-level kinds, an
ext4 scratch disk for full-system guests), and its samples are parsed on the host from
the tool's own output: fio's JSON, dbench's summary line. docs/workloads-disk.md has
the jobs and why they are set up this way (docs/research/disk-workloads.md, the
measurements behind it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

from pydantic import Field

from guestbench.environments.base import Capability, JobNeeds
from guestbench.workloads.base import (
    Derived, InputError, OutputError, Params, RunOutput, Sample, Workload, too_fast)

FIO_FILE = "gb.fio"     # the scratch file, relative to the scratch folder
PERCENTILES = "50:99"   # fio's --percentile_list; keys "50.000000" and "99.000000"
DBENCH_LOADFILE = "/usr/share/dbench/client.txt"
MIB = 2**20


class FioParams(Params):
    size_mib: int = Field(256, ge=1, le=1 << 20,
                          description="size of the scratch file, MiB (sequential jobs need "
                                      ">= 256 for CPU% to mean anything)")
    runtime_s: float = Field(10.0, gt=0, le=3600, description="fio's --runtime limit, seconds")
    direct: bool = Field(False, description="O_DIRECT (fails on tmpfs and initramfs roots)")


class TimedFioParams(FioParams):
    runtime_s: float = Field(5.0, gt=0, le=3600,
                             description="the job runs this long (--time_based), seconds")


def _settle_field() -> Any:
    return Field(3.0, ge=0, le=600,
                 description="seconds fio waits before reading (its --startdelay, outside the "
                             "timed part), so the file's copy, just written and flushed, has "
                             "left any write cache below the environment; 0 reads at once")


class SeqReadParams(FioParams):
    settle_s: float = _settle_field()


class RandReadParams(TimedFioParams):
    settle_s: float = _settle_field()


class FsyncParams(TimedFioParams):
    size_mib: int = Field(64, ge=1, le=1 << 20, description="size of the scratch file, MiB")


class MetadataParams(Params):
    files: int = Field(10000, ge=1, le=10_000_000,
                       description="small files created, stat'ed, then deleted")


class DbenchParams(Params):
    clients: int = Field(2, ge=1, le=1024, description="dbench's client processes")
    seconds: int = Field(10, ge=2, le=3600, description="dbench's -t: how long it runs")


# ---- fio jobs ----

# name: (rw, block size, extra fio options, needs a prepared file, summary)
_FIO_JOBS: dict[str, tuple[str, str, tuple[str, ...], bool, str]] = {
    "fio_seq_write": ("write", "1M", ("--end_fsync=1",), False,
                      "fio sequential write of a new file, 1 MiB blocks, fsync at the end"),
    "fio_rewrite": ("write", "1M", ("--end_fsync=1", "--overwrite=1"), False,
                    "fio sequential rewrite of a laid-out file, 1 MiB blocks, fsync at the end"),
    "fio_seq_read": ("read", "1M", (), True,
                     "fio sequential read of a file not in any cache, 1 MiB blocks"),
    "fio_rand_read": ("randread", "4k", ("--time_based",), True,
                      "fio random 4 KiB reads of a file not in any cache"),
    "fio_rand_write": ("randwrite", "4k", ("--time_based", "--end_fsync=1"), False,
                       "fio random 4 KiB writes, fsync at the end"),
    "fio_fsync": ("write", "4k", ("--time_based", "--fsync=1"), False,
                  "fio 4 KiB writes with an fsync after each: fsync latency"),
}


def fio_command(name: str, params: FioParams) -> list[str]:
    """The fio command line of one job, as run in the scratch folder (also by benchmarks)."""
    rw, block, extra, _, _ = _FIO_JOBS[name]
    # Read jobs wait for their freshly copied file to settle: on a nested VM's disk a read
    # that races the lower host's write-back of the copy is served from its memory at 1-2.4
    # GB/s, one that comes after at 0.7-1 GB/s (docs/workloads-disk.md), so without the wait
    # the figure depends on the timing of the start.
    settle_s = getattr(params, "settle_s", 0.0)
    if settle_s:
        extra = (f"--startdelay={settle_s:g}", *extra)
    return ["fio", f"--name={name}", f"--filename={FIO_FILE}", f"--size={params.size_mib}M",
            f"--runtime={params.runtime_s:g}", "--ioengine=psync", f"--rw={rw}", f"--bs={block}",
            f"--direct={int(params.direct)}", "--output-format=json",
            f"--percentile_list={PERCENTILES}", *extra]


def fio_json(text: str) -> dict[str, Any]:
    """fio's JSON report; fio may print error lines before it, so it starts at the first '{'."""
    start = text.find("{")
    if start < 0:
        raise OutputError(f"no JSON report in fio's output: {_tail(text)}")
    try:
        report = json.loads(text[start:])
    except ValueError as error:
        raise OutputError(f"fio's JSON report does not parse ({error}): {_tail(text)}") from None
    jobs = report.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise OutputError("fio's report has no jobs")
    for job in jobs:
        if job.get("error"):
            raise OutputError(f"fio job {job.get('jobname')} failed with errno {job['error']}: "
                              f"{_tail(text[:start])}")
    return report


def _section(job: dict[str, Any]) -> dict[str, Any]:
    """The read or write part of a job, whichever moved data."""
    for side in ("write", "read"):
        part = job.get(side) or {}
        if part.get("io_bytes", 0) > 0 or part.get("total_ios", 0) > 0:
            return part
    raise OutputError(f"fio job {job.get('jobname')} moved no data")


def _percentile(latency: dict[str, Any], key: str) -> float:
    try:
        return float(latency["percentile"][key]) / 1e3  # ns -> us
    except (KeyError, TypeError, ValueError):
        raise OutputError(f"fio's report has no {key} percentile") from None


def derive_fio(name: str):
    def derive(params: FioParams, run: RunOutput) -> list[Sample]:
        job = fio_json(run.stdout)["jobs"][0]
        part = _section(job)
        cpu = [("cpu_usr", "%", float(job["usr_cpu"])), ("cpu_sys", "%", float(job["sys_cpu"]))]
        if name == "fio_fsync":
            sync = job.get("sync") or {}
            if not sync.get("total_ios"):
                raise OutputError("fio reported no fsync calls")
            runtime_s = max(job.get("job_runtime", part.get("runtime", 0)), 1) / 1e3
            return [("fsync_p50", "us", _percentile(sync["lat_ns"], "50.000000")),
                    ("fsync_p99", "us", _percentile(sync["lat_ns"], "99.000000")),
                    ("fsyncs", "ops/s", sync["total_ios"] / runtime_s), *cpu]
        bandwidth = ("bandwidth", "MB/s", part["bw_bytes"] / 1e6)
        if name in ("fio_rand_read", "fio_rand_write"):
            return [("iops", "IOPS", float(part["iops"])),
                    ("lat_p50", "us", _percentile(part["clat_ns"], "50.000000")),
                    ("lat_p99", "us", _percentile(part["clat_ns"], "99.000000")),
                    bandwidth, *cpu]
        return [bandwidth, *cpu]
    return derive


def _prepared_file(name: str, params: FioParams, inputs: Path) -> Path:
    """A folder holding the scratch file a read job reads: made once per campaign and size.

    Read jobs read a file that exists before the run and is in no cache, so no
    environment can serve them from a page cache that fio's own invalidation does not
    reach (gVisor's fadvise does not get to the host: docs/research/disk-workloads.md).
    """
    folder = inputs / f"fio-file-{params.size_mib}m"
    target = folder / FIO_FILE
    if target.is_file() and target.stat().st_size == params.size_mib * MIB:
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
        block = bytes(range(256)) * (MIB // 256)  # not zeros: no filesystem may skip them
        with open(target.with_suffix(".part"), "wb") as file:
            for index in range(params.size_mib):
                file.write(index.to_bytes(8, "little") + block[8:])
            file.flush()
            os.fsync(file.fileno())  # written out now, not during a run's reads
        target.with_suffix(".part").rename(target)
    except OSError as error:
        raise InputError(f"cannot write {target}: {error.strerror}") from None
    return folder


def _fio_needs(name: str):
    prepared = _FIO_JOBS[name][3]

    def needs(params: FioParams, inputs: Path) -> JobNeeds:
        files = _prepared_file(name, params, inputs) if prepared else None
        return JobNeeds(scratch=True, scratch_files=files, uncache_files=prepared,
                        scratch_mib=params.size_mib)
    return needs


# what a table calls each fio job (its name is the plan's and the store's)
_FIO_TITLES = {"fio_seq_write": "fio sequential write", "fio_rewrite": "fio rewrite",
               "fio_seq_read": "fio sequential read", "fio_rand_read": "fio random read",
               "fio_rand_write": "fio random write", "fio_fsync": "fio fsync"}
_FIO_METRIC_TITLES = {"iops": "I/O rate", "fsync_p50": "fsync p50", "fsync_p99": "fsync p99"}


def _fio_workload(name: str) -> Workload:
    timed = "--time_based" in _FIO_JOBS[name][2]
    params_model = {"fio_fsync": FsyncParams, "fio_seq_read": SeqReadParams,
                    "fio_rand_read": RandReadParams}.get(
        name, TimedFioParams if timed else FioParams)
    primary = {"fio_fsync": "fsync_p50", "fio_rand_read": "iops",
               "fio_rand_write": "iops"}.get(name, "bandwidth")
    return Workload(name, "disk", _FIO_JOBS[name][4], params_model,
                    lambda params: ["exec", *fio_command(name, params)],
                    frozenset({Capability.FILESYSTEM}), quick=False, primary_metric=primary,
                    agent_name="exec", job_needs=_fio_needs(name), derive=derive_fio(name),
                    tools=("fio",), title=_FIO_TITLES[name], metric_titles=_FIO_METRIC_TITLES)


# ---- metadata: fio's filecreate, filestat and filedelete engines ----

def metadata_command(params: MetadataParams) -> list[str]:
    """Three fio jobs run one after another (stonewall) on the same file names."""
    common = ["--directory=.", f"--nrfiles={params.files}", "--filesize=4k", "--bs=4k",
              "--openfiles=1", "--file_service_type=sequential", "--filename_format=meta.$filenum"]
    return ["fio", "--output-format=json", f"--percentile_list={PERCENTILES}",
            "--name=create", "--ioengine=filecreate", *common,
            "--name=stat", "--stonewall", "--ioengine=filestat", *common,
            "--name=delete", "--stonewall", "--ioengine=filedelete", *common]


# fio counts a job's runtime in whole milliseconds, and its rates divide by that count: a
# job shorter than this many milliseconds gives a rate off by more than 5% (1 ms in 20).
FIO_SHORTEST_MS = 20


def derive_metadata(params: MetadataParams, run: RunOutput) -> Derived:
    jobs = {job.get("jobname"): job for job in fio_json(run.stdout)["jobs"]}
    samples, flags = [], []
    for phase in ("create", "stat", "delete"):
        if phase not in jobs:
            raise OutputError(f"fio's report has no {phase} job")
        part = jobs[phase].get("read") or {}
        if not part.get("total_ios"):
            raise OutputError(f"fio's {phase} job touched no files")
        samples += [(phase, "files/s", float(part["iops"])),
                    (f"{phase}_p50", "us", _percentile(part["clat_ns"], "50.000000"))]
        if part.get("runtime", FIO_SHORTEST_MS) < FIO_SHORTEST_MS:
            flags.append(too_fast(phase))  # the latency percentile is timed in ns: kept
    return Derived(samples, flags)


# ---- dbench ----

THROUGHPUT = re.compile(r"^Throughput ([0-9.]+) MB/sec\s+(\d+) clients\s+(\d+) procs\s+"
                        r"max_latency=([0-9.]+) ms", re.MULTILINE)


LOADFILE_COPY = "dbench-client.txt"


def dbench_command(params: DbenchParams) -> list[str]:
    return ["dbench", "-c", LOADFILE_COPY, "-D", ".", "-t", str(params.seconds),
            str(params.clients)]


def _dbench_needs(params: DbenchParams, inputs: Path) -> JobNeeds:
    """dbench's load file travels in the scratch folder: guest images carry programs, not
    /usr/share (26 MB, read once at start, so where it lies does not change the figure)."""
    folder = inputs / "dbench"
    if not (folder / LOADFILE_COPY).is_file():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(DBENCH_LOADFILE, folder / LOADFILE_COPY)
        except OSError as error:
            raise InputError(f"dbench's load file {DBENCH_LOADFILE}: {error.strerror} "
                             "(apt-get install dbench)") from None
    return JobNeeds(scratch=True, scratch_files=folder, scratch_mib=256)


def derive_dbench(params: DbenchParams, run: RunOutput) -> list[Sample]:
    found = THROUGHPUT.findall(run.stdout)
    if not found:
        raise OutputError(f"no 'Throughput ... MB/sec' line in dbench's output: "
                          f"{_tail(run.stdout + run.stderr)}")
    throughput, clients, _, max_latency = found[-1]
    if int(clients) != params.clients:
        raise OutputError(f"dbench ran {clients} clients, {params.clients} were asked for")
    return [("throughput", "MB/s", float(throughput)), ("max_latency", "ms", float(max_latency))]


def _tail(text: str, limit: int = 200) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-limit:] or "(no output)"


WORKLOADS = [
    *(_fio_workload(name) for name in _FIO_JOBS),
    Workload("metadata", "disk", "small files created, stat'ed and deleted per second "
             "(fio's filecreate, filestat and filedelete engines)", MetadataParams,
             lambda params: ["exec", *metadata_command(params)],
             frozenset({Capability.FILESYSTEM}), quick=False, primary_metric="create",
             agent_name="exec", job_needs=lambda params, inputs: JobNeeds(scratch=True),
             derive=derive_metadata, tools=("fio",), title="file metadata",
             too_fast_rule=f"fio counts a phase's runtime in whole milliseconds: a phase "
                           f"of under {FIO_SHORTEST_MS} ms is too fast to time to 5%"),
    Workload("dbench", "disk", "dbench's filesystem load (Samba's NetBench trace): MB/s with "
             "N clients", DbenchParams, lambda params: ["exec", *dbench_command(params)],
             frozenset({Capability.FILESYSTEM, Capability.PROCESSES}), quick=False,
             primary_metric="throughput", agent_name="exec",
             job_needs=_dbench_needs, derive=derive_dbench, tools=("dbench",),
             title="dbench"),
]
