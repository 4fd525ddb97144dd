"""The results store: schema creation and versioning, round trips, selectors, errors."""

from __future__ import annotations

import datetime as dt
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy as sa

from guestbench import store as gb_store
from guestbench.store import RunRecord, StoreError, schema
from guestbench.store.schema import SCHEMA_VERSION

FACTS = {"hostname": "h", "cpu_model": "Test CPU", "logical_cpus": 4, "kernel": "6.1"}
PLAN = {"source": "x.toml", "campaign": {"name": "c", "repeat": 2},
        "environments": [{"name": "native", "kind": "native"}], "workloads": []}
STARTED = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=dt.timezone.utc)


def new_campaign(store: gb_store.Store, name: str = "c", fingerprint: str = "fp1") -> int:
    return store.create_campaign(name, PLAN, FACTS, fingerprint, "native", "/logs", "0.1.0")


def a_run(environment_id: int, repetition: int = 0, status: str = "ok", reason: str = "",
          samples=(("time_per_op", "ns", 61.25), ("tsc_per_op", "cycles", 150.0))) -> RunRecord:
    return RunRecord(environment_id=environment_id, workload="getpid", label="getpid",
                     params={"min_time_s": 0.1}, repetition=repetition, status=status,
                     reason=reason, started_at=STARTED, host_seconds=0.25,
                     log_path="/logs/campaign-1/native/getpid/rep0", samples=tuple(samples),
                     flags=("unstable",) if status == "ok" else ())


def test_open_creates_schema_version_1(store_url: str, tmp_path: Path) -> None:
    assert not (tmp_path / "results.sqlite").exists()
    store = gb_store.open(store_url)
    assert (tmp_path / "results.sqlite").is_file()
    assert SCHEMA_VERSION == 1
    assert store.version() == 1
    tables = set(sa.inspect(store.engine).get_table_names())
    assert {"schema_meta", "host", "campaign", "environment", "run", "sample"} <= tables
    with sqlite3.connect(tmp_path / "results.sqlite") as raw:
        rows = raw.execute("select key, value from schema_meta").fetchall()
    assert rows == [("schema_version", "1")]
    assert store.campaigns() == []


def test_in_memory_store() -> None:
    store = gb_store.open("sqlite://")
    assert store.version() == SCHEMA_VERSION


def test_round_trip(store: gb_store.Store) -> None:
    campaign_id = new_campaign(store)
    env_id = store.add_environment(campaign_id, "native", "native", {"name": "native",
                                   "kind": "native"}, True, "the host itself", 0)
    gone_id = store.add_environment(campaign_id, "runc", "oci", {"runtime": "runc"}, False,
                                    "runc not found", 1)
    ok_id = store.add_run(campaign_id, a_run(env_id))
    failed_id = store.add_run(campaign_id, a_run(gone_id, status="unavailable",
                                                 reason="runc not found", samples=()))
    store.finish_campaign(campaign_id, "finished")

    campaign = store.campaign(str(campaign_id))
    assert campaign["id"] == campaign_id
    assert campaign["name"] == "c"
    assert campaign["plan"] == PLAN
    assert campaign["host_facts"] == FACTS
    assert campaign["baseline"] == "native"
    assert campaign["log_dir"] == "/logs"
    assert campaign["guestbench_version"] == "0.1.0"
    assert campaign["status"] == "finished"
    assert campaign["finished_at"] is not None
    assert campaign["finished_at"] >= campaign["created_at"]

    envs = store.environments(campaign_id)
    assert [(e["id"], e["name"], e["kind"], e["available"], e["probe"], e["position"])
            for e in envs] == [(env_id, "native", "native", True, "the host itself", 0),
                               (gone_id, "runc", "oci", False, "runc not found", 1)]
    assert envs[1]["spec"] == {"runtime": "runc"}

    runs = store.runs(campaign_id)
    assert [r["id"] for r in runs] == [ok_id, failed_id]
    ok = runs[0]
    assert (ok["environment_id"], ok["workload"], ok["label"], ok["repetition"]) == (
        env_id, "getpid", "getpid", 0)
    assert ok["params"] == {"min_time_s": 0.1}
    assert (ok["status"], ok["reason"], ok["flags"]) == ("ok", "", ["unstable"])
    assert ok["host_seconds"] == 0.25
    assert ok["log_path"] == "/logs/campaign-1/native/getpid/rep0"
    # SQLite keeps no offset; the value is the same UTC wall time
    assert ok["started_at"].replace(tzinfo=None) == STARTED.replace(tzinfo=None)
    assert (runs[1]["status"], runs[1]["reason"]) == ("unavailable", "runc not found")

    samples = list(store.samples(campaign_id))
    assert samples == [
        {"run_id": ok_id, "metric": "time_per_op", "unit": "ns", "value": 61.25},
        {"run_id": ok_id, "metric": "tsc_per_op", "unit": "cycles", "value": 150.0},
    ]


def test_reading_is_scoped_to_one_campaign(store: gb_store.Store) -> None:
    first, second = new_campaign(store, "a"), new_campaign(store, "b")
    env1 = store.add_environment(first, "native", "native", {}, True, "", 0)
    env2 = store.add_environment(second, "native", "native", {}, True, "", 0)
    store.add_run(first, a_run(env1))
    store.add_run(second, a_run(env2, samples=(("time_per_op", "ns", 1.0),)))
    store.add_run(second, a_run(env2, repetition=1, samples=(("time_per_op", "ns", 2.0),)))
    assert len(store.runs(first)) == 1 and len(store.runs(second)) == 2
    assert [s["value"] for s in store.samples(second)] == [1.0, 2.0]
    assert [e["id"] for e in store.environments(second)] == [env2]


def test_one_host_row_per_fingerprint(store: gb_store.Store) -> None:
    new_campaign(store, "a", "same")
    new_campaign(store, "b", "same")
    new_campaign(store, "c", "other")
    with store.engine.connect() as connection:
        hosts = connection.execute(sa.select(schema.host.c.fingerprint)).scalars().all()
        host_ids = connection.execute(sa.select(schema.campaign.c.host_id)).scalars().all()
    assert sorted(hosts) == ["other", "same"]
    assert host_ids[0] == host_ids[1] != host_ids[2]


def test_campaign_selectors(store: gb_store.Store) -> None:
    first = new_campaign(store, "alpha")
    second = new_campaign(store, "beta")
    third = new_campaign(store, "alpha")
    assert store.campaign()["id"] == third  # latest without a selector
    assert store.campaign(str(first))["id"] == first  # by id
    assert store.campaign(str(second))["name"] == "beta"
    assert store.campaign("beta")["id"] == second  # by name
    assert store.campaign("alpha")["id"] == third  # the latest of that name
    assert [(c["id"], c["name"], c["status"]) for c in store.campaigns()] == [
        (first, "alpha", "running"), (second, "beta", "running"), (third, "alpha", "running")]


def test_missing_campaign_is_a_store_error(store: gb_store.Store) -> None:
    with pytest.raises(StoreError, match="campaign"):
        store.campaign()
    new_campaign(store, "alpha")
    with pytest.raises(StoreError, match="no campaign '99'") as caught:
        store.campaign("99")
    assert "fix:" in str(caught.value)
    with pytest.raises(StoreError, match="no campaign 'gamma'"):
        store.campaign("gamma")


def test_newer_schema_is_refused(store_url: str, tmp_path: Path) -> None:
    gb_store.open(store_url).engine.dispose()
    with sqlite3.connect(tmp_path / "results.sqlite") as raw:
        raw.execute("update schema_meta set value = '99' where key = 'schema_version'")
    with pytest.raises(StoreError, match=r"schema 99 is newer.*fix: upgrade guestbench"):
        gb_store.open(store_url)


def test_garbage_file_is_not_a_store(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.sqlite"
    content = b"this is not a database\x00\x01\x02" * 200
    garbage.write_bytes(content)
    with pytest.raises(StoreError, match="not a guestbench store") as caught:
        gb_store.open(f"sqlite:///{garbage}")
    assert "fix:" in str(caught.value)
    assert garbage.read_bytes() == content  # untouched


def test_missing_folder_is_a_store_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/no/such/folder/x.sqlite"
    with pytest.raises(StoreError, match="does not exist") as caught:
        gb_store.open(url)
    assert "fix: create it first" in str(caught.value)
    assert not (tmp_path / "no").exists()


@pytest.mark.parametrize("url", ["not a url", "nosuchdialect://x/y"])
def test_unusable_url_is_a_store_error(url: str) -> None:
    with pytest.raises(StoreError, match="not a usable database URL"):
        gb_store.open(url)


def test_reopening_keeps_data(store_url: str) -> None:
    first = gb_store.open(store_url)
    campaign_id = new_campaign(first, "kept")
    env_id = first.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    first.add_run(campaign_id, a_run(env_id))
    first.engine.dispose()

    again = gb_store.open(store_url)
    assert again.version() == SCHEMA_VERSION
    assert [c["name"] for c in again.campaigns()] == ["kept"]
    assert len(again.runs(campaign_id)) == 1
    assert len(list(again.samples(campaign_id))) == 2
    with again.engine.connect() as connection:
        versions = connection.execute(sa.select(schema.schema_meta)).all()
    assert len(versions) == 1  # migrate() did not add a second version row
    again.engine.dispose()


def test_a_run_is_stored_whole_or_not_at_all(store: gb_store.Store) -> None:
    campaign_id = new_campaign(store)
    env_id = store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    broken = a_run(env_id, samples=(("time_per_op", "ns", 1.0), ("tsc_per_op", None, 2.0)))
    with pytest.raises(sa.exc.IntegrityError):
        store.add_run(campaign_id, broken)  # the second sample has no unit
    assert store.runs(campaign_id) == []
    assert list(store.samples(campaign_id)) == []
