"""The snapshot workloads' run, against a stub kind whose instances are shell processes
printing an agent's records: the save is timed and its image weighed; a restore is timed to
the restored agent's token; a restored instance that is not the one saved (another token,
another pid, a record out of sequence) fails the run; a kind without snapshots is
unsupported with its reason; the image and every instance are gone after."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from guestbench.environments.base import GuestStartError, Job, ProcessGuest, SnapshotUnavailable
from guestbench.environments.snapshots import Restored, Saved, Snapshots
from guestbench.protocol import ProtocolError, RecordStream, encode
from guestbench.runner.outcomes import Status
from guestbench.runner.snapshot import run_snapshot
from tests.support.guests import alive

TOKEN, PID = 123456789, 42
HELLO = {"type": "hello", "t_ns": 1, "agent": "stub", "version": "0", "protocol": 1,
         "tsc": True, "argv": []}


def _script(records: list[dict], first_seq: int = 0, wait_line: bool = False,
            then: str = "") -> list[str]:
    lines = "".join(f"printf '%s\\n' {shlex.quote(encode(first_seq + i, r).decode())}; "
                    for i, r in enumerate(records))
    return ["sh", "-c", ("read go; " if wait_line else "") + lines + then]


def _sample(metric: str, value: float, unit: str = "count") -> dict:
    return {"type": "sample", "t_ns": 2, "workload": "snapshot", "metric": metric,
            "unit": unit, "value": value}


SAVED = [HELLO, {"type": "workload", "t_ns": 2, "workload": "snapshot",
                 "params": {"size_mib": 1, "token": TOKEN, "pid": PID}},
         _sample("snapshot_ready", 256)]


def _restored(token=TOKEN, pid=PID) -> list[dict]:
    return [_sample("restored_token", token), _sample("restored_pid", pid),
            _sample("touch_p50", 900, "ns"), _sample("touch_p99", 5000, "ns"),
            _sample("touch_total", 0.4, "ms"),
            {"type": "end", "t_ns": 9, "status": "ok", "records": 3 + 5}]


class _Session(Snapshots):
    def __init__(self, stub):
        self.stub, self.closed = stub, False

    def start(self, logdir, deadline_ns):
        guest = ProcessGuest(_script(SAVED, then="sleep 30"), logdir, deadline_ns, stdin=True)
        self.stub.guests.append(guest)
        return guest

    def save(self, guest, image):
        if self.stub.save_fails:
            raise GuestStartError("checkpoint exited with status 1: no room")
        (image / "state").write_bytes(b"x" * 3 * 2**20)
        return Saved(3 * 2**20, {"checkpoint": 1.5})

    def restore(self, image, logdir, deadline_ns, first_seq):
        assert (image / "state").exists()
        guest = ProcessGuest(_script(self.stub.after, first_seq + self.stub.skip, wait_line=True),
                             logdir, deadline_ns, stdin=True, first_seq=first_seq)
        self.stub.guests.append(guest)
        return Restored(guest, {"load": 2.0})

    def close(self):
        self.closed = True


class _Stub:
    kind = "stub"

    def __init__(self, after=None, skip=0, save_fails=False, unavailable=""):
        self.after, self.skip, self.save_fails = after or _restored(), skip, save_fails
        self.unavailable, self.guests, self.sessions = unavailable, [], []

    def snapshots(self, job, folder):
        if self.unavailable:
            raise SnapshotUnavailable(self.unavailable)
        self.sessions.append(_Session(self))
        return self.sessions[-1]


JOB = Job("restore", Path("/bin/true"), ())


def _run(stub, workload, tmp_path, restores=1):
    outcome = run_snapshot(stub, JOB, workload, restores, tmp_path, timeout_s=30)
    assert not (tmp_path / "snapshot").exists()  # the image goes with the run
    assert not any(alive(guest) for guest in stub.guests)
    assert all(session.closed for session in stub.sessions)
    return outcome


def test_the_save_is_timed_and_its_image_weighed(tmp_path):
    outcome = _run(_Stub(), "snapshot_create", tmp_path)
    assert outcome.status == Status.OK, outcome.reason
    got = {metric: (unit, value) for metric, unit, value in outcome.samples}
    assert got["snapshot_size"] == ("MiB", 3.0)
    assert got["snapshot_create"][0] == "ms" and got["snapshot_create"][1] > 0
    assert got["snapshot_create_checkpoint"] == ("ms", 1.5)
    assert "image: 3.0 MiB" in (tmp_path / "snapshot.txt").read_text()


def test_each_restore_is_timed_to_the_agent_s_token(tmp_path):
    outcome = _run(_Stub(), "restore", tmp_path, restores=3)
    assert outcome.status == Status.OK, outcome.reason
    restores = [value for metric, _unit, value in outcome.samples if metric == "restore"]
    assert len(restores) == 3 and all(0 < ms < 30_000 for ms in restores)
    assert [s for s in outcome.samples if s[0] == "restore_load"] == [("restore_load", "ms", 2.0)] * 3
    # the rest of each restore, after the kind's steps: "go" to the agent's token
    answers = [value for metric, _unit, value in outcome.samples if metric == "restore_answer"]
    assert len(answers) == 3 and all(0 < answer < total for answer, total in zip(answers, restores))
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [
        "restore1", "restore2", "restore3", "saved"]


def test_first_touch_keeps_the_agent_s_figures(tmp_path):
    outcome = _run(_Stub(), "restore_first_touch", tmp_path)
    assert outcome.status == Status.OK, outcome.reason
    assert outcome.samples == [("restore_touch_p50", "ns", 900), ("restore_touch_p99", "ns", 5000),
                               ("restore_touch_total", "ms", 0.4)]


@pytest.mark.parametrize("stub, said", [
    (_Stub(after=_restored(token=999)), "the restored instance is not the one saved: its "
                                        "agent's token differs"),
    (_Stub(after=_restored(pid=7)), "the restored agent's pid is 7, it was 42"),
    (_Stub(skip=1), "missing record: expected sequence 3, got 4"),
    (_Stub(after=[HELLO]), "the restored instance began anew (its first record is a hello)"),
    (_Stub(after=_restored()[1:]), "first record is sample restored_pid, not its agent's token"),
])
def test_a_restored_instance_that_is_not_the_one_saved_fails(stub, said, tmp_path):
    outcome = _run(stub, "restore", tmp_path)
    assert outcome.status == Status.FAILED and said in outcome.reason, outcome.reason


def test_a_failed_save_and_a_kind_without_snapshots_say_why(tmp_path):
    failed = _run(_Stub(save_fails=True), "restore", tmp_path / "a")
    assert failed.status == Status.INFRA and "no room" in failed.reason
    refused = run_snapshot(_Stub(unavailable="CRIU 3.17 cannot"), JOB, "restore", 1,
                           tmp_path / "b", 30)
    assert (refused.status, refused.reason) == (Status.UNSUPPORTED, "CRIU 3.17 cannot")


def test_a_stream_goes_on_from_its_first_number():
    """A restored agent's records go on from first_seq; its end counts every record of the
    process, those before the save too."""
    end = {"type": "end", "t_ns": 9, "status": "ok", "records": 4}
    stream = RecordStream(first_seq=3)
    records = list(stream.feed([(0, encode(3, _sample("restored_token", 1))), (0, encode(4, end))]))
    assert [record.seq for record in records] == [3, 4] and stream.ended
    with pytest.raises(ProtocolError, match="expected sequence 3, got 0"):
        list(RecordStream(first_seq=3).feed([(0, encode(0, HELLO))]))
