"""environments.tracedisk for real: a loop device whose writes and flushes the kernel traces.

The host plays the guest here: it writes records to the loop device itself and takes
each ack time from proc.now_ns(), as a VMM's console records arrive.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path

import pytest

from guestbench.process import proc
from guestbench.environments.fullsystem import tracedisk
from guestbench.environments.fullsystem.tracedisk import TracedDisk, TraceDiskError
from guestbench.workloads.durability import RECORD_BYTES, Ack, judge

pytestmark = pytest.mark.integration

RECORDS = 5


@pytest.fixture
def disk(tmp_path: Path):
    reason = tracedisk.unavailable_reason()
    if reason:
        pytest.skip(f"no traced disk here: {reason}")
    with TracedDisk(tmp_path, size_mib=4) as traced:
        yield traced
    assert_nothing_left(traced, tmp_path)


def assert_nothing_left(traced: TracedDisk, folder: Path) -> None:
    assert traced.device == "" and traced.instance is None
    assert not list(folder.glob("*.img"))
    root = tracedisk.tracefs()
    assert not [p for p in (root / "instances").iterdir() if p.name.startswith(
        f"guestbench-{os.getpid()}-")]
    attached = proc.run(["losetup", "--list", "--noheadings", "--output", "BACK-FILE"], 30)
    assert str(folder) not in attached.stdout


def block(index: int) -> bytes:
    return (f"record {index}\n".encode() * RECORD_BYTES)[:RECORD_BYTES]


def write_records(device: str, flags: int, sync: bool) -> list[Ack]:
    """Records 1..RECORDS at offset i * 4096 (aligned buffers, for O_DIRECT), ack after each."""
    buffer = mmap.mmap(-1, RECORD_BYTES)
    acks = []
    fd = os.open(device, os.O_RDWR | flags)
    try:
        for index in range(1, RECORDS + 1):
            buffer[:] = block(index)
            os.pwrite(fd, buffer, index * RECORD_BYTES)
            if sync:
                os.fdatasync(fd)
            acks.append(Ack(index, proc.now_ns()))
    finally:
        os.close(fd)
    return acks


def test_fdatasync_writes_are_seen_with_their_flushes(disk: TracedDisk) -> None:
    acks = write_records(disk.device, 0, sync=True)
    events = disk.stop()
    kinds = [(e.phase, e.kind) for e in events]
    assert kinds.count(("complete", "flush")) >= RECORDS
    assert {(e.sector, e.sectors) for e in events if e.kind == "write" and e.sectors} == {
        (index * 8, 8) for index in range(1, RECORDS + 1)}
    verdict = judge(events, acks)
    assert (verdict.acknowledged, verdict.durable, verdict.honoured) == (RECORDS, RECORDS, True)


def test_o_direct_o_dsync_writes_are_durable(disk: TracedDisk) -> None:
    # FUA from the writer; the loop device has none, so the block layer adds a post-flush
    acks = write_records(disk.device, os.O_DIRECT | os.O_DSYNC, sync=False)
    assert judge(disk.stop(), acks).honoured


def test_direct_writes_without_fsync_reach_the_disk_unflushed(disk: TracedDisk) -> None:
    acks = write_records(disk.device, os.O_DIRECT, sync=False)
    events = disk.stop()
    assert not [e for e in events if e.kind == "flush"]
    assert len([e for e in events if e.phase == "complete" and e.kind == "write"]) == RECORDS
    verdict = judge(events, acks)
    assert (verdict.durable, verdict.honoured) == (0, False)
    assert verdict.problems[0].endswith("no flush or FUA write after it")


def test_buffered_writes_without_fsync_are_never_flushed(disk: TracedDisk) -> None:
    acks = write_records(disk.device, 0, sync=False)  # written back on close at the latest
    events = disk.stop()
    assert not [e for e in events if e.kind == "flush"]
    assert judge(events, acks).durable == 0


def test_stop_twice_and_close_twice(disk: TracedDisk) -> None:
    write_records(disk.device, 0, sync=True)
    first = disk.stop()
    assert disk.stop() is first and "block_rq_complete" in disk.raw_trace
    disk.close()
    disk.close()


def test_a_failed_set_up_leaves_nothing(tmp_path: Path) -> None:
    if tracedisk.unavailable_reason():
        pytest.skip(f"no traced disk here: {tracedisk.unavailable_reason()}")
    with pytest.raises(TraceDiskError, match="cannot create"):
        TracedDisk(tmp_path / "missing", size_mib=4)
    (tmp_path / "traced-disk.img").write_bytes(b"someone else's")
    with pytest.raises(TraceDiskError, match="cannot create"):
        TracedDisk(tmp_path, size_mib=4)
    assert (tmp_path / "traced-disk.img").read_bytes() == b"someone else's"


def test_unavailable_reason_is_fast_and_one_line() -> None:
    started = proc.now_ns()
    reason = tracedisk.unavailable_reason()
    assert (proc.now_ns() - started) / 1e9 < 1
    assert reason is None or ("\n" not in reason and ":" in reason)
