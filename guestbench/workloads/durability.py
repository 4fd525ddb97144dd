"""Durability: does an environment keep a guest's fsync promise? (the fsync_honoured check)

The guest (the agent's fsync_records workload) writes numbered 4 KiB records to a raw
disk, record i at offset i * 4096, calls fdatasync after each and reports each
acknowledgement at once. The environment puts that disk on a traced host device
(guestbench/environments/fullsystem/tracedisk.py) and records every write and flush that reached
the host's storage, with host monotonic times. A power cut keeps only what a flush or a
FUA write made stable, so a record counts as durable only if

  * every sector of it was written at the traced device before its acknowledgement
    arrived at the host, and
  * the last such write was a FUA write that completed, or a flush was issued at the
    device after that write completed and finished before the acknowledgement arrived.

The disk is fresh and nothing but the guest writes the records' sectors, so the last
write of a sector before the ack is the record's own. The judging is pure (judge());
derive() turns it into samples, and Verdict.problems says which records were lost and why.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from guestbench.environments.base import Capability, JobNeeds
from guestbench.environments.fullsystem.tracedisk import SECTOR_BYTES, TIME_RESOLUTION_NS, BlockEvent
from guestbench.workloads.base import OutputError, Params, RunOutput, Sample, Workload

RECORD_BYTES = 4096          # the agent's record size (agent/durable.c)
AGENT_WORKLOAD = "fsync_records"
TRACE_ARTIFACT = "block_trace"
MAX_RECORDS = 10_000         # the disk needs (records + 1) * 4 KiB: 40 MiB at most


class DurabilityParams(Params):
    records: int = Field(30, ge=1, le=MAX_RECORDS,
                         description="records written, each followed by fdatasync and "
                                     "acknowledged to the host")


@dataclass(frozen=True)
class Ack:
    """The guest's word that a record is on stable storage, as the host received it."""

    index: int
    arrival_ns: int  # host monotonic clock (proc.now_ns)


@dataclass(frozen=True)
class Verdict:
    acknowledged: int
    durable: int
    problems: tuple[str, ...]  # one line per record that would not survive a power cut

    @property
    def honoured(self) -> bool:
        return self.acknowledged > 0 and self.durable == self.acknowledged

    def summary(self) -> str:
        """One line: honoured, or why not (the first problems)."""
        if self.honoured:
            return f"fsync honoured: all {self.acknowledged} acknowledged records were durable"
        if not self.acknowledged:
            return "no record was acknowledged"
        shown = "; ".join(self.problems[:3])
        more = f" (and {len(self.problems) - 3} more)" if len(self.problems) > 3 else ""
        return (f"fsync NOT honoured: {self.durable} of {self.acknowledged} acknowledged records "
                f"durable; {shown}{more}")


@dataclass(frozen=True)
class _Flush:
    issued_at: int    # position of its issue in the trace
    completed_ns: int


def judge(events: Sequence[BlockEvent], acks: Iterable[Ack],
          record_bytes: int = RECORD_BYTES) -> Verdict:
    """How many acknowledged records a power cut at the traced device would have kept.

    events are in trace order (exact, even within one printed microsecond); their times
    are truncated to TIME_RESOLUTION_NS, so a completion counts before an acknowledgement
    only if it is before it by that much. Requests that failed count as never made.
    """
    if record_bytes <= 0 or record_bytes % SECTOR_BYTES:
        raise ValueError(f"record_bytes must be a positive multiple of {SECTOR_BYTES}")
    flushes = _flushes(events)
    acks = list(acks)
    problems = [problem for ack in acks
                if (problem := _record_problem(events, flushes, ack, record_bytes))]
    return Verdict(len(acks), len(acks) - len(problems), tuple(problems))


def _flushes(events: Sequence[BlockEvent]) -> list[_Flush]:
    """Each completed flush with where it was issued. The block layer keeps one flush in
    flight per queue, so completions pair with issues in order; a completion without an
    issue (the trace began mid-flush) is left out."""
    pending: list[int] = []
    done = []
    for position, event in enumerate(events):
        if event.kind != "flush":
            continue
        if event.phase == "issue":
            pending.append(position)
        elif pending:
            issued_at = pending.pop(0)
            if event.error == 0:
                done.append(_Flush(issued_at, event.time_ns))
    return done


def _record_problem(events: Sequence[BlockEvent], flushes: list[_Flush], ack: Ack,
                    record_bytes: int) -> str | None:
    """Why record ack.index would be lost, or None if it is durable."""
    per_record = record_bytes // SECTOR_BYTES
    first = ack.index * per_record
    last_write: dict[int, int] = {}  # sector -> position of the last write of it before the ack
    for position, event in enumerate(events):
        if (event.phase == "complete" and event.kind in ("write", "fua_write") and event.sectors
                and event.error == 0 and event.time_ns < ack.arrival_ns
                and event.sector < first + per_record and event.end > first):
            for sector in range(max(event.sector, first), min(event.end, first + per_record)):
                last_write[sector] = position
    name = f"record {ack.index}"
    if not last_write:
        return f"{name}: none of it reached the disk before its ack"
    if len(last_write) < per_record:
        return (f"{name}: only {len(last_write)} of its {per_record} sectors reached the disk "
                "before its ack")
    for position in sorted(set(last_write.values())):
        if not _made_stable(events[position], position, flushes, ack):
            return f"{name}: {_why_not_stable(events[position], position, flushes, ack)}"
    return None


def _before(time_ns: int, ack: Ack) -> bool:
    return time_ns + TIME_RESOLUTION_NS <= ack.arrival_ns


def _made_stable(write: BlockEvent, position: int, flushes: list[_Flush], ack: Ack) -> bool:
    if write.kind == "fua_write" and _before(write.time_ns, ack):
        return True
    return any(flush.issued_at > position and _before(flush.completed_ns, ack)
               for flush in flushes)


def _why_not_stable(write: BlockEvent, position: int, flushes: list[_Flush], ack: Ack) -> str:
    written = f"written {_ms(ack.arrival_ns - write.time_ns)} ms before its ack"
    later = [flush for flush in flushes if flush.issued_at > position]
    if not later:
        return f"{written}, no flush or FUA write after it"
    return (f"{written}, no flush or FUA write before the ack (the next flush completed "
            f"{_ms(later[0].completed_ns - ack.arrival_ns)} ms after it)")


def _ms(ns: int) -> str:
    return f"{ns / 1e6:.3f}"


# ---- the workload ----

def acks_of(records: Iterable[Any], expected: int) -> list[Ack]:
    """The agent's ack samples (records 1..expected in order, arriving in order)."""
    acks = []
    for record in records:
        body = getattr(record, "body", {})
        if getattr(record, "type", "") != "sample" or body.get("metric") != "ack":
            continue
        value = body.get("value")
        index = len(acks) + 1
        if value != index:
            raise OutputError(f"ack number {index} is for record {value}: the agent acknowledges "
                              "records 1, 2, 3, ... in order")
        arrival = record.host_arrival_ns
        if not arrival or (acks and arrival < acks[-1].arrival_ns):
            raise OutputError(f"the ack of record {index} has no usable host arrival time "
                              f"({arrival})")
        acks.append(Ack(index, arrival))
    if len(acks) != expected:
        raise OutputError(f"the agent acknowledged {len(acks)} records, {expected} were asked for")
    return acks


def block_events(artifacts: dict[str, Any]) -> list[BlockEvent]:
    """The traced disk's events from a run's artifacts (BlockEvents, or their dicts)."""
    trace = artifacts.get(TRACE_ARTIFACT)
    if trace is None:
        raise OutputError("the environment recorded no block trace of the disk (fsync_honoured "
                          "needs a traced disk: JobNeeds.traced_disk)")
    try:
        return [event if isinstance(event, BlockEvent) else BlockEvent(**event)
                for event in trace]
    except TypeError as error:
        raise OutputError(f"the block trace is malformed: {error}") from None


def derive_fsync_honoured(params: DurabilityParams, run: RunOutput) -> list[Sample]:
    verdict = judge(block_events(run.artifacts), acks_of(run.records, params.records))
    return [("records_acknowledged", "count", float(verdict.acknowledged)),
            ("records_durable", "count", float(verdict.durable)),
            ("honoured", "bool", 1.0 if verdict.honoured else 0.0)]


WORKLOADS = [
    Workload("fsync_honoured", "durability",
             "records written with fdatasync on a raw disk: how many a power cut at the host's "
             "storage would keep (1 = every acknowledged record)", DurabilityParams,
             lambda params: ["--count", str(params.records), AGENT_WORKLOAD],
             frozenset({Capability.BLOCK_DEVICE, Capability.TRACED_DISK}), quick=False,
             primary_metric="honoured", title="fsync honoured",
             metric_titles={"records_acknowledged": "records acknowledged",
                            "records_durable": "records durable",
                            "honoured": "fsync honoured"},
             agent_name=AGENT_WORKLOAD,
             job_needs=lambda params, inputs: JobNeeds(traced_disk=True),
             derive=derive_fsync_honoured),
]
