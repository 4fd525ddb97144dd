"""The agent record protocol (docs/agent-protocol.md): parsing, verifying, sequencing."""

from __future__ import annotations

import json
import zlib

import pytest

from guestbench.protocol import (
    PREFIX, PROTOCOL_VERSION, ProtocolError, Record, RecordStream, encode, parse_line)

# Recorded once from the built agent: `agent/gbagent --min-time 0.001 getpid`
# (gbagent 0.1.0). The checksums were computed by the C agent's own CRC-32, so
# these lines test it against Python's zlib.crc32. The tests never run the agent.
AGENT_LINES = [
    b'@GB1 0 5175f267 {"type":"hello","t_ns":455121276616,"agent":"gbagent","version":"0.1.0",'
    b'"protocol":1,"tsc":true,"argv":["--min-time","0.001","getpid"]}',
    b'@GB1 1 ca72342a {"type":"workload","t_ns":455121294132,"workload":"getpid",'
    b'"params":{"min_time_s":0.001}}',
    b'@GB1 2 dfd1c8b7 {"type":"sample","t_ns":455124819013,"workload":"getpid",'
    b'"metric":"time_per_op","unit":"ns","value":140.88525390625}',
    b'@GB1 3 e31f831c {"type":"sample","t_ns":455124829739,"workload":"getpid",'
    b'"metric":"tsc_per_op","unit":"cycles","value":365.73291015625}',
    b'@GB1 4 669adb46 {"type":"sample","t_ns":455124833404,"workload":"getpid",'
    b'"metric":"iterations","unit":"count","value":8192}',
    b'@GB1 5 80003c4f {"type":"end","t_ns":455124836008,"status":"ok","records":5}',
]


def hello(t_ns: int = 0, protocol: int = PROTOCOL_VERSION) -> dict:
    return {"type": "hello", "t_ns": t_ns, "agent": "gbagent", "version": "0.1.0",
            "protocol": protocol, "tsc": True, "argv": ["getpid"]}


def sample(value: float = 61.2, t_ns: int = 2) -> dict:
    return {"type": "sample", "t_ns": t_ns, "workload": "getpid", "metric": "time_per_op",
            "unit": "ns", "value": value}


def end(records: int, status: str = "ok") -> dict:
    return {"type": "end", "t_ns": 9, "status": status, "records": records}


def lines_of(*bodies: dict) -> list[bytes]:
    return [encode(seq, body) for seq, body in enumerate(bodies)]


def feed_all(lines: list[bytes]) -> tuple[RecordStream, list[Record]]:
    stream = RecordStream()
    records = list(stream.feed((1000 + index, line) for index, line in enumerate(lines)))
    return stream, records


# -- the real agent's lines -------------------------------------------------------------

@pytest.mark.parametrize("line", AGENT_LINES, ids=lambda line: line.split(b" ")[1].decode())
def test_agent_crc_matches_zlib_crc32(line: bytes) -> None:
    _prefix, _seq, crc_text, payload = line.split(b" ", 3)
    assert zlib.crc32(payload) == int(crc_text, 16)
    assert crc_text == crc_text.lower() and len(crc_text) == 8


def test_agent_lines_parse_with_their_fields() -> None:
    first = parse_line(AGENT_LINES[0], host_arrival_ns=42)
    assert first == Record(0, "hello", first.body, 42)
    assert first.body["agent"] == "gbagent"
    assert first.body["protocol"] == PROTOCOL_VERSION
    assert first.agent_ns == 455121276616
    timing = parse_line(AGENT_LINES[2])
    assert (timing.seq, timing.type) == (2, "sample")
    assert (timing.body["metric"], timing.body["unit"]) == ("time_per_op", "ns")
    assert timing.body["value"] == pytest.approx(140.88525390625)


def test_python_encoder_reproduces_the_agents_exact_lines() -> None:
    for line in AGENT_LINES:
        record = parse_line(line)
        assert encode(record.seq, record.body) == line


def test_agent_stream_is_accepted_whole() -> None:
    stream, records = feed_all(AGENT_LINES)
    stream.finish()
    assert stream.ended
    assert [r.type for r in records] == ["hello", "workload", "sample", "sample", "sample", "end"]
    assert records[-1].body["records"] == 5


# -- encode / parse_line round trip ---------------------------------------------------

@pytest.mark.parametrize("body", [
    hello(),
    sample(1e-9),
    {"type": "error", "t_ns": 5, "workload": "stream", "message": "caf\u00e9 check failed"},
    {"type": "workload", "t_ns": 1, "workload": "getpid", "params": {"min_time_s": 0.1}},
])
def test_encode_parse_round_trip(body: dict) -> None:
    line = encode(7, body)
    assert line.startswith(PREFIX + b"7 ")
    assert line.isascii() and b"\n" not in line
    record = parse_line(line, host_arrival_ns=123)
    assert record == Record(7, body["type"], body, 123)


def test_encode_checksum_is_zlib_crc32_of_the_json() -> None:
    line = encode(0, hello())
    crc_text, payload = line[len(PREFIX):].split(b" ", 2)[1:]
    assert crc_text == b"%08x" % zlib.crc32(payload)
    assert json.loads(payload) == hello()


def test_small_checksum_is_zero_padded_to_eight_digits() -> None:
    # find a body whose CRC has a leading zero nibble, then check the padding
    body = next(b for b in ({"type": "x", "n": n} for n in range(1000))
                if zlib.crc32(json.dumps(b, separators=(",", ":")).encode()) < 0x10000000)
    crc_text = encode(0, body).split(b" ")[2]
    assert len(crc_text) == 8 and crc_text.startswith(b"0")
    assert parse_line(encode(0, body)).body == body


# -- records inside console noise ----------------------------------------------------

@pytest.mark.parametrize("line", [
    b"",
    b"[    0.000000] Linux version 6.1.0 (gcc) #1 SMP",
    b"GB1 0 00000000 {}",
    b"@GB2 0 00000000 {}",
    b"@GB10 0 00000000 {}",
    b"\xff\xfe binary junk \x00",
    b"login: ",
])
def test_lines_without_the_prefix_are_noise(line: bytes) -> None:
    assert parse_line(line) is None


def test_record_after_noise_on_the_same_line() -> None:
    line = b"[    1.234567] random: crng init done\x1b[0m" + encode(0, hello())
    record = parse_line(line)
    assert record is not None and record.type == "hello" and record.seq == 0


def test_crlf_line_ending_is_accepted() -> None:
    assert parse_line(encode(3, sample()) + b"\r").seq == 3
    assert parse_line(b"noise " + encode(3, sample()) + b"\r\r").type == "sample"


def test_stream_with_kernel_noise_and_crlf_console() -> None:
    records = [encode(seq, body) for seq, body in enumerate([hello(), sample(), end(2)])]
    console = (b"SeaBIOS (version 1.16)\r\n"
               + records[0] + b"\r\n"
               + b"[    2.000001] EXT4-fs (vda): mounted filesystem\r\n"
               + b"[    2.000002] systemd[1]: Started something.\r\n"
               + b"$ " + records[1] + b"\r\n"
               + b"\r\n"
               + records[2] + b"\r\n"
               + b"reboot: Power down\r\n")
    # split the way proc.Process.lines does: at \n only, keeping the \r
    stream, got = feed_all(console.split(b"\n"))
    stream.finish()
    assert [r.type for r in got] == ["hello", "sample", "end"]
    assert [r.seq for r in got] == [0, 1, 2]
    assert got[1].body["value"] == pytest.approx(61.2)


def test_arrival_time_is_kept_per_record() -> None:
    stream = RecordStream()
    got = list(stream.feed([(111, encode(0, hello())), (222, b"noise"), (333, encode(1, end(1)))]))
    assert [r.host_arrival_ns for r in got] == [111, 333]


# -- garbled records ----------------------------------------------------------------

def _with_crc(line: bytes, crc: bytes) -> bytes:
    prefix, seq, _crc, payload = line.split(b" ", 3)
    return b" ".join([prefix, seq, crc, payload])


GOOD = encode(2, sample())


@pytest.mark.parametrize("line, fragment", [
    pytest.param(_with_crc(GOOD, b"%08x" % (zlib.crc32(GOOD.split(b" ", 3)[3]) ^ 1)),
                 "checksum", id="checksum-off-by-one-bit"),
    pytest.param(GOOD.replace(b"61.2", b"61.3"), "checksum", id="payload-changed"),
    pytest.param(GOOD[:-5], "checksum", id="payload-cut-short"),
    pytest.param(GOOD + b" trailing noise", "checksum", id="noise-after-json"),
    pytest.param(_with_crc(GOOD, b"zzzzzzzz"), "checksum", id="crc-not-hex"),
    pytest.param(_with_crc(GOOD, b"1234567"), "checksum field", id="crc-seven-digits"),
    pytest.param(_with_crc(GOOD, b"123456789"), "checksum field", id="crc-nine-digits"),
    pytest.param(GOOD.replace(b"@GB1 2 ", b"@GB1 x2 "), "sequence number", id="seq-not-a-number"),
    pytest.param(GOOD.replace(b"@GB1 2 ", b"@GB1 -2 "), "sequence number", id="seq-negative"),
    pytest.param(GOOD.replace(b"@GB1 2 ", b"@GB1  2 "), "sequence number", id="two-spaces"),
    pytest.param(b"@GB1 2", "expected", id="no-crc-no-json"),
    pytest.param(b"@GB1 ", "expected", id="prefix-only"),
    pytest.param(b"@GB1 2 00000000", "expected", id="no-json"),
])
def test_garbled_records_raise(line: bytes, fragment: str) -> None:
    with pytest.raises(ProtocolError, match="garbled|checksum") as caught:
        parse_line(line)
    assert fragment in str(caught.value)


def _line_with_payload(seq: int, payload: bytes) -> bytes:
    return PREFIX + b"%d %08x " % (seq, zlib.crc32(payload)) + payload


@pytest.mark.parametrize("payload", [
    pytest.param(b'{"type":"sample",', id="truncated-json"),
    pytest.param(b"not json at all", id="not-json"),
    pytest.param(b'{"type":"x"}}', id="extra-brace"),
    pytest.param(b'{"type":"\xff"}', id="invalid-utf8"),
])
def test_valid_checksum_but_not_json(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="not valid JSON"):
        parse_line(_line_with_payload(4, payload))


@pytest.mark.parametrize("payload", [
    pytest.param(b"[1,2,3]", id="array"),
    pytest.param(b'"hello"', id="string"),
    pytest.param(b"42", id="number"),
    pytest.param(b"null", id="null"),
    pytest.param(b'{"t_ns":1}', id="missing-type"),
    pytest.param(b'{"type":5}', id="type-not-a-string"),
    pytest.param(b'{"type":null}', id="type-null"),
])
def test_json_that_is_not_a_typed_object(payload: bytes) -> None:
    with pytest.raises(ProtocolError, match="not a JSON object with a type"):
        parse_line(_line_with_payload(4, payload))


def test_garbled_message_names_the_sequence_and_shows_the_line() -> None:
    bad = GOOD.replace(b"61.2", b"61.3")
    with pytest.raises(ProtocolError) as caught:
        parse_line(bad)
    assert "record 2" in str(caught.value)
    assert "time_per_op" in str(caught.value)


def test_garbled_message_is_bounded_for_huge_lines() -> None:
    bad = PREFIX + b"0 00000000 {" + b"x" * 100_000
    with pytest.raises(ProtocolError) as caught:
        parse_line(bad)
    assert len(str(caught.value)) < 400


# -- RecordStream: sequence, hello first, end last ------------------------------------

def test_stream_accepts_a_well_formed_run() -> None:
    stream, got = feed_all(lines_of(hello(), sample(1.0), sample(2.0), end(3)))
    stream.finish()
    assert stream.ended
    assert [r.seq for r in got] == [0, 1, 2, 3]
    assert stream.records == got


def test_stream_gap_is_a_missing_record() -> None:
    lines = [encode(0, hello()), encode(1, sample()), encode(3, end(3))]
    with pytest.raises(ProtocolError, match="missing record: expected sequence 2, got 3"):
        feed_all(lines)


def test_stream_repeated_sequence_number() -> None:
    lines = [encode(0, hello()), encode(1, sample()), encode(1, sample())]
    with pytest.raises(ProtocolError, match="out-of-order or repeated record: expected sequence 2, got 1"):
        feed_all(lines)


def test_stream_out_of_order() -> None:
    lines = [encode(0, hello()), encode(2, sample()), encode(1, sample())]
    with pytest.raises(ProtocolError, match="missing"):
        feed_all(lines)
    lines = [encode(0, hello()), encode(1, sample()), encode(2, sample()), encode(0, hello())]
    with pytest.raises(ProtocolError, match="out-of-order"):
        feed_all(lines)


def test_stream_first_record_not_starting_at_zero() -> None:
    with pytest.raises(ProtocolError, match="expected sequence 0, got 1"):
        feed_all([encode(1, hello())])


def test_stream_first_record_must_be_hello() -> None:
    with pytest.raises(ProtocolError, match="first record is 'sample', expected 'hello'"):
        feed_all([encode(0, sample())])


@pytest.mark.parametrize("protocol", [0, 2, "1", None])
def test_stream_rejects_other_protocol_versions(protocol) -> None:
    with pytest.raises(ProtocolError, match="protocol") as caught:
        feed_all([encode(0, hello(protocol=protocol))])
    assert "rebuild the agent" in str(caught.value)


def test_stream_rejects_records_after_end() -> None:
    lines = lines_of(hello(), end(1)) + [encode(2, sample())]
    with pytest.raises(ProtocolError, match="record 2 arrived after the end record"):
        feed_all(lines)


def test_stream_noise_after_end_is_fine() -> None:
    stream, got = feed_all(lines_of(hello(), end(1)) + [b"[  9.9] reboot: Power down"])
    stream.finish()
    assert len(got) == 2


def test_stream_truncated_without_end() -> None:
    stream, got = feed_all(lines_of(hello(), sample()))
    assert not stream.ended and len(got) == 2
    with pytest.raises(ProtocolError, match=r"agent output truncated: no end record \(last record: 1\)"):
        stream.finish()


def test_stream_truncated_with_no_records_at_all() -> None:
    stream, got = feed_all([b"Kernel panic - not syncing", b""])
    assert got == []
    with pytest.raises(ProtocolError, match=r"truncated.*last record: none"):
        stream.finish()


def test_stream_yields_records_before_a_garbled_one() -> None:
    stream = RecordStream()
    lines = lines_of(hello(), sample())
    lines.append(encode(2, sample()).replace(b"61.2", b"99.9"))
    got = []
    with pytest.raises(ProtocolError, match="checksum"):
        for record in stream.feed((0, line) for line in lines):
            got.append(record)
    assert [r.seq for r in got] == [0, 1]


def test_stream_is_ended_as_soon_as_end_is_yielded() -> None:
    stream = RecordStream()
    for record in stream.feed((0, line) for line in lines_of(hello(), sample(), end(2))):
        if record.type == "end":
            break
    stream.finish()  # must not raise: the end record was received
