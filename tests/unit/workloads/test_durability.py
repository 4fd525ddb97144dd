"""workloads.durability and environments.tracedisk's parsing: judging fsync_honoured traces.

The fixtures are real: ftrace lines and host ack arrival times of the agent's
fsync_records (3 records) in QEMU TCG on a loop device, cache=none and cache=unsafe,
recorded on the 6.18 host kernel this was developed on.
"""

from __future__ import annotations

import dataclasses

import pytest

from guestbench.environments.base import Capability
from guestbench.environments.fullsystem.tracedisk import (
    BlockEvent, TraceDiskError, parse_line, parse_rwbs, parse_trace)
from guestbench.protocol import Record
from guestbench.workloads import durability
from guestbench.workloads.base import OutputError, RunOutput
from guestbench.workloads.durability import Ack, DurabilityParams, judge

HEADER = """\
# tracer: nop
#
# entries-in-buffer/entries-written: 29/29   #P:2
#
#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION
#              | |         |   |||||     |         |
"""

# QEMU cache=none: O_DIRECT writes, every guest flush an fdatasync of /dev/loop0 ("FF")
QEMU_NONE = HEADER + """\
 qemu-system-x86-29341   [000] ..... 16623.780066: block_rq_issue: 7,0 RS 4096 () 8 + 8 be,0,4 [qemu-system-x86]
     ksoftirqd/0-14      [000] ..s.. 16623.780111: block_rq_complete: 7,0 RS () 8 + 8 be,0,4 [0]
 qemu-system-x86-29341   [000] ..... 16623.855072: block_rq_issue: 7,0 WS 4096 () 8 + 8 be,0,4 [qemu-system-x86]
     ksoftirqd/0-14      [000] ..s.. 16623.855116: block_rq_complete: 7,0 WS () 8 + 8 be,0,4 [0]
    kworker/0:1H-44      [000] ..... 16623.861797: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
     ksoftirqd/0-14      [000] ..s.. 16623.862265: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
     ksoftirqd/0-14      [000] d.s1. 16623.862267: block_rq_complete: 7,0 WS () 0 + 0 be,0,4 [0]
 qemu-system-x86-29341   [000] ..... 16623.865067: block_rq_issue: 7,0 WS 4096 () 16 + 8 be,0,4 [qemu-system-x86]
     ksoftirqd/0-14      [000] ..s.. 16623.865089: block_rq_complete: 7,0 WS () 16 + 8 be,0,4 [0]
    kworker/0:1H-44      [000] ..... 16623.868517: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
     ksoftirqd/0-14      [000] ..s.. 16623.869847: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
     ksoftirqd/0-14      [000] d.s1. 16623.869849: block_rq_complete: 7,0 WS () 0 + 0 be,0,4 [0]
 qemu-system-x86-29341   [000] ..... 16623.870726: block_rq_issue: 7,0 WS 4096 () 24 + 8 be,0,4 [qemu-system-x86]
     ksoftirqd/0-14      [000] ..s.. 16623.870750: block_rq_complete: 7,0 WS () 24 + 8 be,0,4 [0]
    kworker/0:1H-44      [000] ..... 16623.871016: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
     ksoftirqd/0-14      [000] ..s.. 16623.871263: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
     ksoftirqd/0-14      [000] d.s1. 16623.871264: block_rq_complete: 7,0 WS () 0 + 0 be,0,4 [0]
"""
QEMU_NONE_ACKS = [Ack(1, 16623864704309), Ack(2, 16623870430086), Ack(3, 16623874566183)]

# QEMU cache=unsafe: the guest's flushes never reach the host; the three records reach
# the loop device in one write when QEMU closes it, after every ack, and are never flushed
QEMU_UNSAFE = HEADER + """\
 qemu-system-x86-29186   [001] .N... 16615.376158: block_rq_issue: 7,0 RA 65536 () 32 + 128 be,0,4 [qemu-system-x86]
     ksoftirqd/1-22      [001] ..s.. 16615.376307: block_rq_complete: 7,0 RA () 32 + 128 be,0,4 [0]
 qemu-system-x86-28891   [001] ..... 16615.519892: block_rq_issue: 7,0 WS 12288 () 8 + 24 be,0,4 [qemu-system-x86]
     ksoftirqd/1-22      [001] ..s.. 16615.521820: block_rq_complete: 7,0 WS () 8 + 24 be,0,4 [0]
"""
QEMU_UNSAFE_ACKS = [Ack(1, 16615479089244), Ack(2, 16615482298236), Ack(3, 16615492094723)]

# Python on the host: one O_DIRECT|O_DSYNC pwrite to /dev/loop0 (block_bio_queue, traced for
# this capture, shows the FUA the request no longer carries: loop has no FUA, so the block
# layer issues the data, then a post-flush), and the empty preflush bio of an fdatasync
HOST_LINES = """\
         python3-20788   [000] ..... 14879.717519: block_bio_queue: 7,0 WFS 8 + 8 [python3]
         python3-20788   [000] ..... 14879.717526: block_rq_issue: 7,0 WS 4096 () 8 + 8 be,0,4 [python3]
     ksoftirqd/0-14      [000] ..s.. 14879.717564: block_rq_complete: 7,0 WS () 8 + 8 be,0,4 [0]
    kworker/0:1H-44      [000] ..... 14879.717575: block_rq_issue: 7,0 FF 0 () 0 + 0 none,0,0 [kworker/0:1H]
     ksoftirqd/1-22      [001] ..s.. 14879.717986: block_rq_complete: 7,0 FF () 18446744073709551615 + 0 none,0,0 [0]
     ksoftirqd/1-22      [001] d.s1. 14879.717988: block_rq_complete: 7,0 WS () 8 + 0 be,0,4 [0]
         python3-20626   [001] ..... 14871.723789: block_bio_queue: 7,0 FWS 0 + 0 [python3]
"""

MS = 1_000_000


# ---- parsing ----

def test_a_write_issue_line() -> None:
    line = (" qemu-system-x86-29341   [000] ..... 16623.865067: block_rq_issue: 7,0 WS 4096 () "
            "16 + 8 be,0,4 [qemu-system-x86]")
    assert parse_line(line) == BlockEvent(16623865067000, "issue", "write", 16, 8, "WS")


def test_a_flush_completion_has_no_sectors() -> None:
    line = ("     ksoftirqd/0-14      [000] ..s.. 16623.862265: block_rq_complete: 7,0 FF () "
            "18446744073709551615 + 0 none,0,0 [0]")
    event = parse_line(line)
    assert (event.phase, event.kind, event.sector, event.sectors, event.preflush) == (
        "complete", "flush", 0, 0, True)


def test_a_failed_completion_keeps_its_error() -> None:
    line = "  ksoftirqd/0-14  [000] ..s.. 10.000001: block_rq_complete: 7,0 WS () 8 + 8 be,0,4 [-5]"
    assert parse_line(line).error == -5


def test_other_lines_and_other_devices_are_not_events() -> None:
    assert parse_line("# tracer: nop") is None
    assert parse_line(HOST_LINES.splitlines()[0]) is None  # block_bio_queue: not recorded
    write = QEMU_NONE.splitlines()[8]
    assert parse_line(write, (7, 0)) is not None
    assert parse_line(write, (7, 1)) is None


@pytest.mark.parametrize("rwbs, kind, preflush", [
    ("WS", "write", False), ("W", "write", False), ("WFS", "fua_write", False),
    ("FWS", "write", True), ("FWFS", "fua_write", True), ("FF", "flush", True),
    ("FN", "flush", True), ("RS", "read", False), ("RA", "read", False),
    ("D", "discard", False), ("DE", "discard", False), ("N", "other", False)])
def test_rwbs(rwbs: str, kind: str, preflush: bool) -> None:
    assert parse_rwbs(rwbs) == (kind, preflush)


def test_a_whole_trace_in_order() -> None:
    events = parse_trace(QEMU_NONE, (7, 0))
    assert len(events) == 17
    assert [e.kind for e in events[2:7]] == ["write", "write", "flush", "flush", "write"]
    assert [e.time_ns for e in events] == sorted(e.time_ns for e in events)


def test_the_host_side_fua_becomes_a_write_and_a_post_flush() -> None:
    events = parse_trace(HOST_LINES)
    assert [(e.phase, e.kind, e.sectors) for e in events] == [
        ("issue", "write", 8), ("complete", "write", 8), ("issue", "flush", 0),
        ("complete", "flush", 0), ("complete", "write", 0)]


def test_lost_events_make_the_trace_unusable() -> None:
    with pytest.raises(TraceDiskError, match="lost events"):
        parse_trace(QEMU_NONE.replace("29/29", "29/31"))
    with pytest.raises(TraceDiskError, match="lost events"):
        parse_trace(QEMU_NONE + "CPU:1 [LOST 12 EVENTS]\n")


# ---- judging real traces ----

def test_qemu_cache_none_is_honoured() -> None:
    verdict = judge(parse_trace(QEMU_NONE), QEMU_NONE_ACKS)
    assert (verdict.acknowledged, verdict.durable, verdict.honoured) == (3, 3, True)
    assert verdict.problems == ()


def test_qemu_cache_unsafe_is_not_honoured() -> None:
    verdict = judge(parse_trace(QEMU_UNSAFE), QEMU_UNSAFE_ACKS)
    assert (verdict.acknowledged, verdict.durable, verdict.honoured) == (3, 0, False)
    assert verdict.problems[0] == "record 1: none of it reached the disk before its ack"
    assert "NOT honoured: 0 of 3" in verdict.summary()


def test_an_ack_that_overtakes_its_flush_is_not_durable() -> None:
    # record 2's ack moved to between its write and the flush after it
    acks = [QEMU_NONE_ACKS[0], Ack(2, 16623866_000_000 // 1000 * 1000), QEMU_NONE_ACKS[2]]
    verdict = judge(parse_trace(QEMU_NONE), acks)
    assert (verdict.durable, verdict.honoured) == (2, False)
    assert verdict.problems == ("record 2: written 0.911 ms before its ack, no flush or FUA "
                                "write before the ack (the next flush completed 3.847 ms after "
                                "it)",)


# ---- judging constructed traces ----

def write(time_ms: float, sector: int, sectors: int = 8, kind: str = "write",
          phase: str = "complete", error: int = 0) -> BlockEvent:
    return BlockEvent(int(time_ms * MS), phase, kind, sector, sectors, "WS", error=error)


def flush(time_ms: float, phase: str) -> BlockEvent:
    return BlockEvent(int(time_ms * MS), phase, "flush", 0, 0, "FF", preflush=True)


def record(index: int, written_ms: float, flushed: tuple[float, float] | None) -> list[BlockEvent]:
    events = [write(written_ms - 0.1, index * 8, phase="issue"), write(written_ms, index * 8)]
    if flushed:
        events += [flush(flushed[0], "issue"), flush(flushed[1], "complete")]
    return events


def test_honoured_by_flushes() -> None:
    events = record(1, 1.0, (1.2, 1.5)) + record(2, 2.0, (2.2, 2.5))
    verdict = judge(events, [Ack(1, 2 * MS), Ack(2, 3 * MS)])
    assert (verdict.acknowledged, verdict.durable, verdict.honoured) == (2, 2, True)


def test_honoured_by_fua_writes() -> None:
    events = [write(1.0, 8, kind="fua_write"), write(2.0, 16, kind="fua_write")]
    assert judge(events, [Ack(1, 2 * MS), Ack(2, 3 * MS)]).honoured


def test_a_fua_write_makes_only_itself_durable() -> None:
    events = [write(1.0, 8), write(2.0, 16, kind="fua_write")]
    verdict = judge(events, [Ack(1, 3 * MS), Ack(2, 3 * MS)])
    assert (verdict.durable, verdict.problems) == (
        1, ("record 1: written 2.000 ms before its ack, no flush or FUA write after it",))


def test_a_flush_after_the_ack_does_not_count() -> None:
    events = record(1, 1.0, (3.0, 4.0))
    verdict = judge(events, [Ack(1, 2 * MS)])
    assert (verdict.durable, verdict.honoured) == (0, False)
    assert "the next flush completed 2.000 ms after it" in verdict.problems[0]


def test_never_flushed() -> None:
    verdict = judge(record(1, 1.0, None), [Ack(1, 2 * MS)])
    assert verdict.problems == (
        "record 1: written 1.000 ms before its ack, no flush or FUA write after it",)


def test_a_flush_issued_before_the_write_completed_does_not_cover_it() -> None:
    events = [write(0.9, 8, phase="issue"), flush(1.0, "issue"), write(1.1, 8),
              flush(1.5, "complete")]
    assert judge(events, [Ack(1, 2 * MS)]).durable == 0


def test_a_later_flush_covers_earlier_records() -> None:
    events = record(1, 1.0, None) + record(2, 2.0, (2.2, 2.5))
    assert judge(events, [Ack(1, 3 * MS), Ack(2, 3 * MS)]).honoured


def test_mixed() -> None:
    events = record(1, 1.0, (1.2, 1.5)) + record(2, 2.0, None) + record(3, 3.0, (3.2, 4.5))
    verdict = judge(events, [Ack(1, 2 * MS), Ack(2, 2.5 * MS), Ack(3, 4 * MS)])
    assert (verdict.acknowledged, verdict.durable, verdict.honoured) == (3, 1, False)
    assert [problem.split(":")[0] for problem in verdict.problems] == ["record 2", "record 3"]


def test_a_partly_written_record_is_not_durable() -> None:
    events = [write(1.0, 8, sectors=4), flush(1.2, "issue"), flush(1.5, "complete")]
    assert judge(events, [Ack(1, 2 * MS)]).problems == (
        "record 1: only 4 of its 8 sectors reached the disk before its ack",)


def test_a_record_written_in_pieces_needs_its_last_piece_flushed() -> None:
    events = [write(1.0, 8, sectors=4), flush(1.1, "issue"), flush(1.2, "complete"),
              write(1.5, 12, sectors=4)]
    assert judge(events, [Ack(1, 2 * MS)]).durable == 0
    assert judge(events + [flush(1.6, "issue"), flush(1.7, "complete")],
                 [Ack(1, 2 * MS)]).durable == 1


def test_failed_requests_count_for_nothing() -> None:
    events = [write(1.0, 8, error=-5), flush(1.2, "issue"), flush(1.5, "complete")]
    assert judge(events, [Ack(1, 2 * MS)]).durable == 0
    failed_flush = [write(1.0, 8), flush(1.2, "issue"),
                    dataclasses.replace(flush(1.5, "complete"), error=-5)]
    assert judge(failed_flush, [Ack(1, 2 * MS)]).durable == 0


def test_a_completion_within_the_acks_microsecond_does_not_count() -> None:
    events = record(1, 1.0, (1.2, 1.5))
    assert judge(events, [Ack(1, int(1.5 * MS) + 999)]).durable == 0
    assert judge(events, [Ack(1, int(1.5 * MS) + 1000)]).durable == 1


def test_nothing_acknowledged_is_not_honoured() -> None:
    verdict = judge(record(1, 1.0, (1.2, 1.5)), [])
    assert (verdict.acknowledged, verdict.honoured) == (0, False)


# ---- the workload ----

def ack_records(arrivals: list[int], values: list[int] | None = None) -> list[Record]:
    records = [Record(0, "hello", {"type": "hello"}, 1),
               Record(1, "workload", {"type": "workload", "workload": "fsync_records"}, 2)]
    for seq, (value, arrival) in enumerate(zip(values or range(1, len(arrivals) + 1), arrivals)):
        records.append(Record(seq + 2, "sample", {
            "type": "sample", "workload": "fsync_records", "metric": "ack", "unit": "index",
            "value": value}, arrival))
    return records


def run_output(records: list[Record], artifacts: dict) -> RunOutput:
    return RunOutput(samples=[], stdout="", stderr="", records=records, artifacts=artifacts)


def test_derive_gives_the_three_samples() -> None:
    workload = durability.WORKLOADS[0]
    params = DurabilityParams(records=3)
    good = run_output(ack_records([ack.arrival_ns for ack in QEMU_NONE_ACKS]),
                      {"block_trace": parse_trace(QEMU_NONE)})
    assert workload.derive(params, good) == [
        ("records_acknowledged", "count", 3.0), ("records_durable", "count", 3.0),
        ("honoured", "bool", 1.0)]
    bad = run_output(ack_records([ack.arrival_ns for ack in QEMU_UNSAFE_ACKS]),
                     {"block_trace": [dataclasses.asdict(e) for e in parse_trace(QEMU_UNSAFE)]})
    assert workload.derive(params, bad) == [
        ("records_acknowledged", "count", 3.0), ("records_durable", "count", 0.0),
        ("honoured", "bool", 0.0)]


def test_derive_refuses_a_missing_trace_or_odd_acks() -> None:
    derive = durability.WORKLOADS[0].derive
    params = DurabilityParams(records=2)
    trace = {"block_trace": []}
    with pytest.raises(OutputError, match="no block trace"):
        derive(params, run_output(ack_records([10, 20]), {}))
    with pytest.raises(OutputError, match="acknowledged 1 records, 2 were asked for"):
        derive(params, run_output(ack_records([10]), trace))
    with pytest.raises(OutputError, match="ack number 2 is for record 3"):
        derive(params, run_output(ack_records([10, 20], [1, 3]), trace))
    with pytest.raises(OutputError, match="no usable host arrival time"):
        derive(params, run_output(ack_records([20, 10]), trace))
    with pytest.raises(OutputError, match="malformed"):
        derive(params, run_output(ack_records([10, 20]), {"block_trace": [{"when": 1}]}))


def test_the_workload_runs_fsync_records_on_a_traced_disk() -> None:
    workload = durability.WORKLOADS[0]
    params = workload.params_model()
    assert (workload.name, workload.agent_workload, params.records) == (
        "fsync_honoured", "fsync_records", 30)
    assert workload.agent_args(params) == ["--count", "30", "fsync_records"]
    assert workload.job_needs(params, None).traced_disk
    assert workload.capabilities == frozenset({Capability.BLOCK_DEVICE, Capability.TRACED_DISK})
    with pytest.raises(ValueError):
        workload.params_model(records=0)
