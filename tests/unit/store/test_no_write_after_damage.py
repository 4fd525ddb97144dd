"""A store that a reader of this process called damaged is written no more by it: not a
digest (a cache), not a run. history once kept a digest into a store it had just called
damaged (2026-11-29)."""

from __future__ import annotations

import datetime as dt
import hashlib
import sqlite3
from pathlib import Path

import pytest

from guestbench import store as gb_store
from guestbench.store.records import RunRecord


def _store_of_one(path: Path) -> None:
    opened = gb_store.open(f"sqlite:///{path}")
    campaign = opened.create_campaign("one", {"campaign": {"repeat": 1}}, {"cpu": "test"},
                                      "fingerprint", "native", "logs", "test")
    env_id = opened.add_environment(campaign, "native", "native", {}, True, "yes", 0)
    opened.add_run(campaign, RunRecord(env_id, "getpid", "getpid", {}, 0, "ok", "",
                                       dt.datetime.now(dt.timezone.utc), 1.0, None,
                                       (("getpid", "ns", 50.0),)))
    opened.finish_campaign(campaign, "finished")
    opened.engine.dispose()


def test_a_store_a_reader_called_damaged_takes_no_digest_and_no_run(tmp_path) -> None:
    path = tmp_path / "store.sqlite"
    _store_of_one(path)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE run SET params = '{'")
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    opened = gb_store.open(f"sqlite:///{path}", create=False)
    with pytest.raises(gb_store.StoreError, match="is damaged"):
        opened.runs(1)
    with pytest.raises(gb_store.StoreError, match="is damaged"):
        opened.put_digest(1, 1, "finished", (1, 1), "crc32:00000000 {}")
    with pytest.raises(gb_store.StoreError, match="is damaged"):
        opened.create_campaign("two", {}, {}, "fingerprint", None, "logs", "test")
    opened.engine.dispose()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_a_sound_store_takes_its_digest(tmp_path) -> None:
    path = tmp_path / "store.sqlite"
    _store_of_one(path)
    opened = gb_store.open(f"sqlite:///{path}", create=False)
    opened.put_digest(1, 1, "finished", opened.run_mark(1), "crc32:00000000 {}")
    opened.engine.dispose()
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT count(*) FROM campaign_digest").fetchone() == (1,)
