"""The agent's record protocol (docs/agent-protocol.md): find, verify and parse records."""

from __future__ import annotations

import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

PROTOCOL_VERSION = 1
PREFIX = b"@GB1 "
_CRC_FIELD = re.compile(rb"[0-9a-f]{8}")


class ProtocolError(Exception):
    """The agent's output cannot be trusted: garbled, missing, reordered or truncated."""


@dataclass(frozen=True)
class Record:
    seq: int
    type: str
    body: dict[str, Any]
    host_arrival_ns: int = 0

    @property
    def agent_ns(self) -> int | None:
        return self.body.get("t_ns")


def encode(seq: int, body: dict[str, Any]) -> bytes:
    """One record line (without the newline), as the agent prints it."""
    payload = json.dumps(body, separators=(",", ":"), ensure_ascii=True).encode()
    return PREFIX + b"%d %08x " % (seq, zlib.crc32(payload)) + payload


def parse_line(line: bytes, host_arrival_ns: int = 0) -> Record | None:
    """The record in a console line, None for console noise; ProtocolError if garbled."""
    line = line.rstrip(b"\r")
    at = line.find(PREFIX)
    if at < 0:
        return None
    parts = line[at + len(PREFIX):].split(b" ", 2)
    if len(parts) != 3:
        raise ProtocolError(f"garbled record (expected '@GB1 SEQ CRC JSON'): {_show(line)}")
    seq_text, crc_text, payload = parts
    if not seq_text.isdigit():
        raise ProtocolError(f"garbled record: sequence number is not a number: {_show(line)}")
    if not _CRC_FIELD.fullmatch(crc_text):
        raise ProtocolError(f"garbled record: checksum field is not 8 lowercase hex digits: "
                            f"{_show(line)}")
    crc = int(crc_text, 16)
    if zlib.crc32(payload) != crc:
        raise ProtocolError(f"record {int(seq_text)} fails its checksum: {_show(line)}")
    try:
        body = json.loads(payload, parse_constant=_reject_constant)
    except ValueError:
        raise ProtocolError(f"record {int(seq_text)} is not valid JSON: {_show(line)}") from None
    if not isinstance(body, dict) or not isinstance(body.get("type"), str):
        raise ProtocolError(f"record {int(seq_text)} is not a JSON object with a type")
    _check_fields(int(seq_text), body)
    return Record(int(seq_text), body["type"], body, host_arrival_ns)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# The fields each record type must carry, and what each must be.
_REQUIRED: dict[str, dict[str, Callable[[Any], bool]]] = {
    "workload": {"workload": lambda v: isinstance(v, str) and bool(v)},
    "sample": {"workload": lambda v: isinstance(v, str) and bool(v),
               "metric": lambda v: isinstance(v, str) and bool(v),
               "unit": lambda v: isinstance(v, str) and bool(v),
               "value": _is_number},
    "error": {"message": lambda v: isinstance(v, str)},
    "output": {"workload": lambda v: isinstance(v, str) and bool(v),
               "stream": lambda v: v in ("stdout", "stderr"),
               "text": lambda v: isinstance(v, str)},
    "clock": {"mark": lambda v: isinstance(v, int) and not isinstance(v, bool) and v > 0},
    "end": {"status": lambda v: v in ("ok", "failed"),
            "records": lambda v: isinstance(v, int) and not isinstance(v, bool)},
}


def _check_fields(seq: int, body: dict[str, Any]) -> None:
    for name, valid in _REQUIRED.get(body["type"], {}).items():
        if name not in body:
            raise ProtocolError(f"record {seq} ({body['type']}) has no '{name}'")
        if not valid(body[name]):
            raise ProtocolError(f"record {seq} ({body['type']}) has an invalid '{name}': "
                                f"{json.dumps(body[name])[:60]}")


@dataclass
class RecordStream:
    """Checks a run's records as they arrive: sequence, hello first, end last. A restored
    instance's stream goes on from first_seq, the number after the last record its process
    gave before it was saved (no hello: the same agent goes on)."""

    records: list[Record] = field(default_factory=list)
    ended: bool = False
    first_seq: int = 0

    def feed(self, lines: Iterable[tuple[int, bytes]]) -> Iterator[Record]:
        for arrival_ns, line in lines:
            record = parse_line(line, arrival_ns)
            if record is None:
                continue
            self._check_order(record)
            self.records.append(record)
            if record.type == "end":
                self.ended = True  # before the yield: a reader may stop at the end record
            yield record

    def _check_order(self, record: Record) -> None:
        if self.ended:
            raise ProtocolError(f"record {record.seq} arrived after the end record")
        expected = self.first_seq + len(self.records)
        if record.seq != expected:
            what = "missing" if record.seq > expected else "out-of-order or repeated"
            raise ProtocolError(f"{what} record: expected sequence {expected}, got {record.seq}")
        if expected == 0 and record.type != "hello":
            raise ProtocolError(f"first record is '{record.type}', expected 'hello'")
        if record.type == "end" and record.body["records"] != record.seq:
            raise ProtocolError(f"end record counts {record.body['records']} records before it, "
                                f"{record.seq} arrived")
        if record.type == "hello" and record.body.get("protocol") != PROTOCOL_VERSION:
            raise ProtocolError(
                f"agent speaks protocol {record.body.get('protocol')!r}, "
                f"this guestbench reads {PROTOCOL_VERSION}: rebuild the agent (make -C agent)")

    def finish(self) -> None:
        """Call at end of output: raises if the end record never came."""
        if not self.ended:
            last = self.records[-1].seq if self.records else "none"
            raise ProtocolError(f"agent output truncated: no end record (last record: {last})")


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _show(line: bytes, limit: int = 120) -> str:
    text = line.decode("ascii", "backslashreplace")
    return text if len(text) <= limit else text[:limit] + "..."
