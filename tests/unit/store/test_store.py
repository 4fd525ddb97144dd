"""The results store: schema creation and versioning, round trips, selectors, errors."""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from guestbench import store as gb_store
from guestbench.store import StoreError, packed, schema
from guestbench.store.records import CellStop, RunRecord
from guestbench.store.columns import Samples
from guestbench.store.schema import SCHEMA_VERSION
from guestbench.store.records import StoredSample

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


def raw_rows(url: str, sql: str) -> list[tuple]:
    """One statement through a plain engine of its own, committed; the rows it returns."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as connection:
            result = connection.execute(sa.text(sql))
            return [tuple(row) for row in result] if result.returns_rows else []
    finally:
        engine.dispose()


def test_open_creates_schema_version_9(store_url: str, tmp_path: Path) -> None:
    on_sqlite = store_url.startswith("sqlite")
    assert not (tmp_path / "results.sqlite").exists()
    store = gb_store.open(store_url)
    assert (tmp_path / "results.sqlite").is_file() == on_sqlite
    assert SCHEMA_VERSION == 9
    assert store.version() == 9
    tables = set(sa.inspect(store.engine).get_table_names())
    assert {"schema_meta", "host", "campaign", "environment", "run", "sample",
            "cell_stop", "sample_block", "pool_host", "campaign_group", "campaign_digest"} <= tables
    columns = {column["name"] for column in sa.inspect(store.engine).get_columns("campaign")}
    assert {"host_checks", "owner", "group_id", "pool_host", "end_reason"} <= columns
    columns = {column["name"] for column in sa.inspect(store.engine).get_columns("environment")}
    assert "facts" in columns
    columns = {column["name"] for column in sa.inspect(store.engine).get_columns("sample_block")}
    assert "checksum" in columns
    assert raw_rows(store_url, "select key, value from schema_meta") == [("schema_version", "9")]
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
    assert campaign.id == campaign_id
    assert campaign.name == "c"
    assert campaign.plan == PLAN
    assert campaign.host_facts == FACTS
    assert campaign.baseline == "native"
    assert campaign.log_dir == "/logs"
    assert campaign.guestbench_version == "0.1.0"
    assert campaign.status == "finished"
    assert campaign.finished_at is not None
    assert campaign.finished_at >= campaign.created_at

    envs = store.environments(campaign_id)
    assert [(e.id, e.name, e.kind, e.available, e.probe, e.position)
            for e in envs] == [(env_id, "native", "native", True, "the host itself", 0),
                               (gone_id, "runc", "oci", False, "runc not found", 1)]
    assert envs[1].spec == {"runtime": "runc"}

    runs = store.runs(campaign_id)
    assert [r.id for r in runs] == [ok_id, failed_id]
    ok = runs[0]
    assert (ok.environment_id, ok.workload, ok.label, ok.repetition) == (
        env_id, "getpid", "getpid", 0)
    assert ok.params == {"min_time_s": 0.1}
    assert (ok.status, ok.reason, ok.flags) == ("ok", "", ["unstable"])
    assert ok.host_seconds == 0.25
    assert ok.log_path == "/logs/campaign-1/native/getpid/rep0"
    # SQLite keeps no offset; the value is the same UTC wall time
    assert ok.started_at.replace(tzinfo=None) == STARTED.replace(tzinfo=None)
    assert (runs[1].status, runs[1].reason) == ("unavailable", "runc not found")

    samples = list(store.samples(campaign_id))
    assert samples == [
        StoredSample(run_id=ok_id, metric="time_per_op", unit="ns", value=61.25),
        StoredSample(run_id=ok_id, metric="tsc_per_op", unit="cycles", value=150.0),
    ]


def test_reading_is_scoped_to_one_campaign(store: gb_store.Store) -> None:
    first, second = new_campaign(store, "a"), new_campaign(store, "b")
    env1 = store.add_environment(first, "native", "native", {}, True, "", 0)
    env2 = store.add_environment(second, "native", "native", {}, True, "", 0)
    store.add_run(first, a_run(env1))
    store.add_run(second, a_run(env2, samples=(("time_per_op", "ns", 1.0),)))
    store.add_run(second, a_run(env2, repetition=1, samples=(("time_per_op", "ns", 2.0),)))
    assert len(store.runs(first)) == 1 and len(store.runs(second)) == 2
    assert [s.value for s in store.samples(second)] == [1.0, 2.0]
    assert [e.id for e in store.environments(second)] == [env2]


def test_a_reader_may_ask_for_some_columns_and_leave_metrics_out(store: gb_store.Store) -> None:
    campaign_id = new_campaign(store)
    env_id = store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    run_id = store.add_run(campaign_id, a_run(env_id))
    (run,) = store.runs(campaign_id, ("label", "flags"))
    assert (run.id, run.label, run.flags, run.environment) == (
        run_id, "getpid", ["unstable"], "native")
    assert run.started_at is None and run.log_path is None  # not read
    assert [s.metric for s in store.samples(campaign_id, ("tsc_per_op",))] == ["time_per_op"]


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
    assert store.campaign().id == third  # latest without a selector
    assert store.campaign(str(first)).id == first  # by id
    assert store.campaign(str(second)).name == "beta"
    assert store.campaign("beta").id == second  # by name
    assert store.campaign("alpha").id == third  # the latest of that name
    assert [(c.id, c.name, c.status) for c in store.campaigns()] == [
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


def test_newer_schema_is_refused(store_url: str) -> None:
    gb_store.open(store_url).engine.dispose()
    raw_rows(store_url, "update schema_meta set value = '99' where key = 'schema_version'")
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
    assert [c.name for c in again.campaigns()] == ["kept"]
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


# -- schema version 2: host checks and cell stops ------------------------------------

CHECKS = {"before": {"load_avg": [0.1, 0.2, 0.3]}, "after": None, "steal_pct": None,
          "warnings": ["this host is itself a virtual machine"]}


def test_host_checks_at_start_and_at_finish(store: gb_store.Store) -> None:
    plain = new_campaign(store, "plain")
    assert store.campaign(str(plain)).host_checks is None
    checked = store.create_campaign("checked", PLAN, FACTS, "fp1", None, "/logs", "0.1.0",
                                    host_checks=CHECKS)
    assert store.campaign(str(checked)).host_checks == CHECKS
    store.finish_campaign(checked, "finished")  # without checks: the start's are kept
    assert store.campaign(str(checked)).host_checks == CHECKS
    final = {**CHECKS, "after": {"load_avg": [1.0, 0.5, 0.3]}, "steal_pct": 0.0}
    store.finish_campaign(checked, "finished", host_checks=final)
    assert store.campaign(str(checked)).host_checks == final


def test_cell_stops_round_trip(store: gb_store.Store) -> None:
    first, second = new_campaign(store, "a"), new_campaign(store, "b")
    env = store.add_environment(first, "native", "native", {}, True, "", 0)
    other = store.add_environment(second, "native", "native", {}, True, "", 0)
    store.add_cell_stop(first, CellStop(env, "getpid", 7, 7, "converged", 0.015, 0.02))
    store.add_cell_stop(first, CellStop(env, "stream", 5, 4, "fixed", None, None))
    store.add_cell_stop(second, CellStop(other, "getpid", 1, 0, "unavailable", None, 0.02))
    stops = store.cell_stops(first)
    assert [{key: getattr(stop, key) for key in ("campaign_id", "environment_id", "label", "runs",
                                        "ok_runs", "reason", "half_width", "target")}
            for stop in stops] == [
        {"campaign_id": first, "environment_id": env, "label": "getpid", "runs": 7,
         "ok_runs": 7, "reason": "converged", "half_width": 0.015, "target": 0.02},
        {"campaign_id": first, "environment_id": env, "label": "stream", "runs": 5,
         "ok_runs": 4, "reason": "fixed", "half_width": None, "target": None}]
    assert [stop.reason for stop in store.cell_stops(second)] == ["unavailable"]


def version_1_store(url: str) -> None:
    """A store as guestbench with schema 1 left it: a finished campaign with runs and samples."""
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        schema.MIGRATIONS[0](connection)
        connection.execute(sa.insert(schema.schema_meta).values(key="schema_version", value="1"))
        # plain SQL that both SQLite and PostgreSQL take; ids from a new store's sequences (1, 2)
        connection.execute(sa.text("insert into host (fingerprint, facts) values ('fp', '{}')"))
        connection.execute(sa.text(
            "insert into campaign (name, created_at, guestbench_version, plan, host_id, "
            "host_facts, baseline, log_dir, status) values ('old', '2024-05-06 07:08:09', "
            "'0.1.0', '{\"source\": \"x\"}', 1, '{}', 'native', '/logs', 'finished')"))
        connection.execute(sa.text(
            "insert into environment (campaign_id, name, kind, spec, available, probe, "
            "position) values (1, 'native', 'native', '{}', true, 'the host', 0)"))
        for run_id in (1, 2):
            connection.execute(sa.text(
                "insert into run (campaign_id, environment_id, workload, label, params, "
                "repetition, status, reason, flags, started_at, host_seconds, log_path) values "
                f"(1, 1, 'getpid', 'getpid', '{{}}', {run_id - 1}, 'ok', '', '[]', "
                "'2024-05-06 07:08:10', 0.5, null)"))
            connection.execute(sa.text(
                "insert into sample (run_id, metric, unit, value) values "
                f"({run_id}, 'time_per_op', 'ns', {60.0 + run_id})"))
    engine.dispose()


def test_version_1_store_migrates_to_the_current_keeping_everything(store_url: str, tmp_path: Path) -> None:
    version_1_store(store_url)
    engine = sa.create_engine(store_url)
    inspector = sa.inspect(engine)
    assert "host_checks" not in {c["name"] for c in inspector.get_columns("campaign")}
    assert "cell_stop" not in inspector.get_table_names()
    engine.dispose()

    store = gb_store.open(store_url)
    assert store.version() == SCHEMA_VERSION
    old = store.campaign("old")
    assert (old.id, old.status, old.plan, old.host_checks) == (
        1, "finished", {"source": "x"}, None)
    assert [(r.repetition, r.status) for r in store.runs(1)] == [(0, "ok"), (1, "ok")]
    assert [s.value for s in store.samples(1)] == [61.0, 62.0]
    assert store.cell_stops(1) == []

    store.add_cell_stop(1, CellStop(1, "getpid", 2, 2, "fixed", None, None))
    new = store.create_campaign("new", PLAN, FACTS, "fp", None, "/logs", "0.2.0",
                                host_checks=CHECKS)
    assert store.campaign(str(new)).host_checks == CHECKS
    assert store.cell_stops(1)[0].reason == "fixed"
    assert raw_rows(store_url, "select value from schema_meta") == [(str(SCHEMA_VERSION),)]
    store.engine.dispose()


# -- schema version 3: environment facts -----------------------------------------------

QEMU_FACTS = {"vmm_version": "QEMU emulator version 8.2.2 (Debian 1:8.2.2+ds-0ubuntu1.4)",
              "guest_kernel": "6.1.0-41-amd64"}


def test_environment_facts_round_trip(store: gb_store.Store) -> None:
    campaign_id = new_campaign(store)
    qemu = store.add_environment(campaign_id, "qemu", "qemu", {"kernel": None}, True, "kvm", 0,
                                 facts=QEMU_FACTS)
    plain = store.add_environment(campaign_id, "native", "native", {}, True, "", 1)
    empty = store.add_environment(campaign_id, "oci", "oci", {}, True, "", 2, facts={})
    facts = {env.id: env.facts for env in store.environments(campaign_id)}
    assert facts == {qemu: QEMU_FACTS, plain: None, empty: {}}
    with store.engine.connect() as connection:  # "unknown" is SQL NULL, not the JSON text null
        nulls = connection.execute(sa.text(
            "select id from environment where facts is null")).scalars().all()
    assert nulls == [plain]


def migrate_to(connection: sa.Connection, version: int) -> None:
    """One migration, as guestbench of that version applied it, and the version it leaves."""
    schema.MIGRATIONS[version - 1](connection)
    connection.execute(sa.update(schema.schema_meta).where(
        schema.schema_meta.c.key == "schema_version").values(value=str(version)))


def version_2_store(url: str) -> None:
    """A store as guestbench with schema 2 left it: environments without facts, a cell stop."""
    version_1_store(url)
    engine = sa.create_engine(url)
    with engine.begin() as connection:
        migrate_to(connection, 2)
        connection.execute(sa.text(
            "update campaign set host_checks = '{\"warnings\": [\"busy\"]}' where id = 1"))
        connection.execute(sa.text(
            "insert into environment (campaign_id, name, kind, spec, available, probe, "
            "position) values (1, 'qemu-kernelA', 'qemu', '{\"kernel\": \"/boot/A\"}', true, "
            "'kvm', 1)"))
        connection.execute(sa.text(
            "insert into cell_stop (campaign_id, environment_id, label, runs, ok_runs, reason, "
            "half_width, target) values (1, 1, 'getpid', 2, 2, 'fixed', null, null)"))
    engine.dispose()


def test_version_2_store_migrates_to_the_current_keeping_everything(store_url: str,
                                                                    tmp_path: Path) -> None:
    version_2_store(store_url)
    engine = sa.create_engine(store_url)
    assert "facts" not in {c["name"] for c in sa.inspect(engine).get_columns("environment")}
    engine.dispose()

    store = gb_store.open(store_url)
    assert store.version() == SCHEMA_VERSION
    old = store.campaign("old")
    assert (old.status, old.plan, old.host_checks) == (
        "finished", {"source": "x"}, {"warnings": ["busy"]})
    assert [(e.id, e.name, e.kind, e.spec, e.available, e.probe, e.position,
             e.facts) for e in store.environments(1)] == [
        (1, "native", "native", {}, True, "the host", 0, None),
        (2, "qemu-kernelA", "qemu", {"kernel": "/boot/A"}, True, "kvm", 1, None)]
    assert [(r.repetition, r.status) for r in store.runs(1)] == [(0, "ok"), (1, "ok")]
    assert [s.value for s in store.samples(1)] == [61.0, 62.0]
    assert [(c.label, c.reason) for c in store.cell_stops(1)] == [("getpid", "fixed")]

    new = new_campaign(store, "new", "fp")
    env = store.add_environment(new, "qemu", "qemu", {}, True, "kvm", 0, facts=QEMU_FACTS)
    assert [e.facts for e in store.environments(new)] == [QEMU_FACTS]
    assert env > 2
    assert raw_rows(store_url, "select value from schema_meta") == [(str(SCHEMA_VERSION),)]
    store.engine.dispose()


# -- schema version 4: packed samples of ended campaigns -------------------------------

def packed_size(store: gb_store.Store, campaign_id: int) -> int | None:
    with store.engine.connect() as connection:
        return connection.execute(sa.select(schema.sample_block.c.size).where(
            schema.sample_block.c.campaign_id == campaign_id)).scalar()


def rows_read(store: gb_store.Store, campaign_id: int, leave_out=()):
    with store.engine.connect() as connection:
        return Samples.from_tuples(packed.fetch(connection,
                                                packed.rows_query(campaign_id, tuple(leave_out))))


def same_samples(x: Samples, y: Samples) -> bool:
    return (x.kinds == y.kinds and x.run_id.tolist() == y.run_id.tolist()
            and x.kind.tolist() == y.kind.tolist() and x.value.tolist() == y.value.tolist())


def test_an_ended_campaign_is_read_from_its_block_exactly_as_from_its_rows(
        store: gb_store.Store) -> None:
    campaign_id = new_campaign(store)
    env = store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    for repetition in range(3):  # iterations, a context metric, between the two others
        store.add_run(campaign_id, a_run(env, repetition, samples=(
            ("time_per_op", "ns", 60.0 + repetition), ("iterations", "", 1e6 + repetition),
            ("tsc_per_op", "cycles", 150.5 * (repetition + 1)))))
    other = new_campaign(store, "other")
    store.add_run(other, a_run(store.add_environment(other, "native", "native", {}, True, "", 0)))
    assert packed_size(store, campaign_id) is None  # still running: read from the rows
    store.finish_campaign(campaign_id, "finished")
    assert packed_size(store, campaign_id) == 9
    assert packed_size(store, other) is None

    with store.engine.connect() as connection:
        block = packed.unpack(connection, campaign_id)
    assert block is not None and same_samples(block, rows_read(store, campaign_id))
    assert same_samples(store.samples(campaign_id), rows_read(store, campaign_id))
    left = store.samples(campaign_id, ["iterations"])
    assert same_samples(left, rows_read(store, campaign_id, ["iterations"]))
    assert left.kinds == (("time_per_op", "ns"), ("tsc_per_op", "cycles"))
    assert [sample.metric for sample in left] == ["time_per_op", "tsc_per_op"] * 3


def _ended_campaign(store: gb_store.Store) -> int:
    campaign_id = new_campaign(store)
    env = store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    for repetition in range(2):
        store.add_run(campaign_id, a_run(env, repetition))
    store.finish_campaign(campaign_id, "finished")
    return campaign_id


def _alter_block(store: gb_store.Store, campaign_id: int, **values) -> None:
    with store.engine.begin() as connection:
        connection.execute(sa.update(schema.sample_block).where(
            schema.sample_block.c.campaign_id == campaign_id).values(**values))


@pytest.mark.parametrize("damage", ["a value", "a code", "a run id", "checksum kept"])
def test_a_damaged_block_is_said_to_be_damage_with_the_file_and_the_fix(store, damage) -> None:
    """The checks a block passes before it is used: a flipped byte fails the checksum; a
    code out of range or a run id of another campaign fail on their own, even under a
    checksum that matches them (a block written wrong, not damaged after)."""
    campaign_id = _ended_campaign(store)
    other = _ended_campaign(store)
    with store.engine.connect() as connection:
        row = connection.execute(sa.select(schema.sample_block).where(
            schema.sample_block.c.campaign_id == campaign_id)).one()
    run_id, kind, value = bytearray(row.run_id), bytearray(row.kind), bytearray(row.value)
    if damage == "a value":
        value[3] ^= 0x40
        _alter_block(store, campaign_id, value=bytes(value))
        expected = "checksum"
    else:
        if damage == "a code" or damage == "checksum kept":
            kind[0:4] = (7).to_bytes(4, "little")
            expected = "codes 0 to 7 for 2 kinds"
        if damage == "a run id":
            run_id[0:8] = store.runs(other)[0].id.to_bytes(8, "little")
            expected = "run ids that are not the campaign's"
        _alter_block(store, campaign_id, run_id=bytes(run_id), kind=bytes(kind),
                     checksum=packed.checksum(row.kinds, bytes(run_id), bytes(kind), bytes(value)))
    with pytest.raises(StoreError, match=f"packed samples of campaign {campaign_id}: .*{expected}"):
        store.samples(campaign_id)
    assert len(store.samples(other)) == 4  # the other campaign's block is whole


def test_run_checks_every_block_before_it_writes(tmp_path: Path) -> None:
    path = tmp_path / "blocks.sqlite"
    store = gb_store.open(f"sqlite:///{path}")
    campaign_id = _ended_campaign(store)
    store.require("run")  # whole: nothing to say
    _alter_block(store, campaign_id, checksum=1)
    with pytest.raises(StoreError, match=rf"the store {path} is damaged .*packed samples of "
                                         rf"campaign {campaign_id}.*fix: restore it"):
        store.require("run")
    store.engine.dispose()


def test_text_that_is_not_utf8_is_damage_not_a_decoding_traceback(tmp_path: Path) -> None:
    path = tmp_path / "text.sqlite"
    store = gb_store.open(f"sqlite:///{path}")
    campaign_id = _ended_campaign(store)
    with store.engine.begin() as connection:
        connection.exec_driver_sql("update campaign set status = cast(x'ff00fe' as text)")
    for read in (store.campaigns, lambda: store.campaign(str(campaign_id))):
        with pytest.raises(StoreError, match=rf"the store {path} is damaged \(Could not decode"):
            read()
    store.engine.dispose()


def test_a_version_8_store_has_its_blocks_packed_again_with_their_checksum(
        store_url: str) -> None:
    version_2_store(store_url)
    engine = sa.create_engine(store_url)
    with engine.begin() as connection:
        for version in range(3, 9):
            migrate_to(connection, version)
        # campaign 1's block as schema 8 wrote it: layout 1, no checksum
        connection.execute(sa.text(
            "insert into sample_block (campaign_id, layout, size, kinds, run_id, kind, value) "
            "values (1, 1, 2, :kinds, :run_id, :kind, :value)"), {
                "kinds": '[["time_per_op", "ns"]]',
                "run_id": (1).to_bytes(8, "little") * 2, "kind": bytes(8),
                "value": b"".join(__import__("struct").pack("<d", v) for v in (61.0, 62.0))})
    engine.dispose()
    store = gb_store.open(store_url)
    assert store.version() == SCHEMA_VERSION
    with store.engine.connect() as connection:
        layout, checksum = connection.execute(sa.text(
            "select layout, checksum from sample_block where campaign_id = 1")).one()
    assert layout == packed.LAYOUT and checksum is not None
    assert [sample.value for sample in store.samples(1)] == [61.0, 62.0]
    store.engine.dispose()


def test_a_block_that_a_later_write_outdated_is_not_read(store: gb_store.Store) -> None:
    campaign_id = new_campaign(store)
    env = store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    store.add_run(campaign_id, a_run(env, 0))
    store.finish_campaign(campaign_id, "interrupted")
    assert packed_size(store, campaign_id) == 2
    store.add_run(campaign_id, a_run(env, 1, samples=(("time_per_op", "ns", 99.0),)))
    assert [sample.value for sample in store.samples(campaign_id)] == [61.25, 150.0, 99.0]
    store.finish_campaign(campaign_id, "finished")  # ending again packs it again
    assert packed_size(store, campaign_id) == 3
    assert [sample.value for sample in store.samples(campaign_id)] == [61.25, 150.0, 99.0]


def test_version_3_store_migrates_to_4_packing_the_ended_campaigns(store_url: str) -> None:
    version_2_store(store_url)
    engine = sa.create_engine(store_url)
    with engine.begin() as connection:
        migrate_to(connection, 3)
        connection.execute(sa.text(
            "insert into campaign (name, created_at, guestbench_version, plan, host_id, "
            "host_facts, baseline, log_dir, status) values ('busy', '2024-05-07 07:08:09', "
            "'0.1.0', '{}', 1, '{}', 'native', '/logs', 'running')"))
    assert "sample_block" not in sa.inspect(engine).get_table_names()
    engine.dispose()

    store = gb_store.open(store_url)
    assert store.version() == SCHEMA_VERSION
    assert packed_size(store, 1) == 2  # the finished campaign's two samples
    assert packed_size(store, 2) is None  # a running campaign is not packed
    assert [s.value for s in store.samples(1)] == [61.0, 62.0]
    store.engine.dispose()


def test_a_postgresql_url_without_a_driver_uses_psycopg_3(postgres_url: str) -> None:
    """SQLAlchemy would take psycopg2 for postgresql://, which guestbench does not install."""
    plain = postgres_url.replace("postgresql+psycopg://", "postgresql://", 1)
    store = gb_store.open(plain)
    assert store.engine.url.drivername == "postgresql+psycopg"
    assert store.version() == SCHEMA_VERSION
    store.engine.dispose()


# -- schema version 5: who runs a campaign; reopening one to resume it -----------------

OWNER = {"hostname": "h", "pid": 4242, "started": 123456}


def test_a_campaign_records_its_owner_and_reopening_forgets_what_was_unfinished(
        store: gb_store.Store) -> None:
    campaign_id = store.create_campaign("c", PLAN, FACTS, "fp1", "native", "/logs", "0.1.0",
                                        owner=OWNER)
    assert store.campaign(str(campaign_id)).owner == OWNER
    env = store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    done = store.add_run(campaign_id, a_run(env, 0))
    store.add_run(campaign_id, RunRecord(
        environment_id=env, workload="getpid", label="getpid", params={}, repetition=1,
        status="interrupted", reason="campaign stopped by SIGTERM during this run",
        started_at=STARTED, host_seconds=0.1, log_path="/logs/native/getpid/rep1",
        samples=(("time_per_op", "ns", 1.0),)))
    store.add_cell_stop(campaign_id, CellStop(env, "getpid", 2, 1, "interrupted",
                                                       None, 0.02))
    store.finish_campaign(campaign_id, "interrupted")
    assert packed_size(store, campaign_id) == 3

    again = {**OWNER, "pid": 4343}
    assert store.reopen_campaign(campaign_id, again) == ["/logs/native/getpid/rep1"]
    reopened = store.campaign(str(campaign_id))
    assert (reopened.status, reopened.finished_at, reopened.owner) == (
        "running", None, again)
    assert [run.id for run in store.runs(campaign_id)] == [done]
    assert [sample.value for sample in store.samples(campaign_id)] == [61.25, 150.0]
    assert store.cell_stops(campaign_id) == []
    assert packed_size(store, campaign_id) is None


def test_version_4_store_migrates_to_5_with_no_owner_for_old_campaigns(store_url: str) -> None:
    version_2_store(store_url)
    engine = sa.create_engine(store_url)
    with engine.begin() as connection:
        migrate_to(connection, 3)
        migrate_to(connection, 4)
    assert "owner" not in {c["name"] for c in sa.inspect(engine).get_columns("campaign")}
    engine.dispose()
    store = gb_store.open(store_url)
    assert store.version() == SCHEMA_VERSION
    assert store.campaign("old").owner is None
    store.engine.dispose()


# -- a PostgreSQL server that goes away mid-campaign -------------------------------------

def test_a_run_written_while_postgresql_restarts_is_stored_once_it_is_back(
        postgres_server, postgres_url) -> None:
    store = gb_store.open(postgres_url)
    campaign_id = new_campaign(store)
    env = store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    store.add_run(campaign_id, a_run(env, 0))
    waits: list[str] = []
    store.on_wait = waits.append
    postgres_server.stop()
    restart = threading.Timer(3.0, postgres_server.start)
    restart.start()
    began = time.monotonic()
    try:
        store.add_run(campaign_id, a_run(env, 1))  # the server is down: waits, then writes
    finally:
        restart.join()
    assert time.monotonic() - began >= 2.5
    assert waits and "the store is unreachable" in waits[0]
    assert [run.repetition for run in store.runs(campaign_id)] == [0, 1]
    assert len(list(store.samples(campaign_id))) == 4
    store.engine.dispose()


def test_a_write_gives_up_when_the_server_stays_away(postgres_server, postgres_url) -> None:
    store = gb_store.open(postgres_url)
    campaign_id = new_campaign(store)
    store.retry_for_s = 1.0
    postgres_server.stop()
    try:
        with pytest.raises(sa.exc.OperationalError):
            store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
    finally:
        postgres_server.start()
    store.engine.dispose()


def test_a_write_after_a_stop_signal_does_not_wait_for_a_lost_server(postgres_server,
                                                                    postgres_url) -> None:
    """A signal wins over retries: once stopping is set, a lost server is Unreachable at
    once, and a pause already under way ends within its 0.1 s step."""
    store = gb_store.open(postgres_url)
    campaign_id = new_campaign(store)
    waits: list[str] = []
    store.on_wait = waits.append
    postgres_server.stop()
    try:
        threading.Timer(1.0, setattr, (store, "stopping", True)).start()
        began = time.monotonic()
        with pytest.raises(gb_store.Unreachable):
            store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
        assert time.monotonic() - began < 3.0  # not the 600 s of RETRY_FOR_S
        began = time.monotonic()
        with pytest.raises(gb_store.Unreachable):
            store.add_environment(campaign_id, "native", "native", {}, True, "", 0)
        assert time.monotonic() - began < 2.0
    finally:
        postgres_server.start()
    # each retry message names the driver's error whole: its first line, nothing cut
    assert waits and all(message.count("(") == message.count(")") for message in waits)
    store.engine.dispose()


def _a_run_naming(tmp_path: Path, environment_id: str):
    """A store with an ended campaign whose first run's environment_id is set to the SQL
    literal given: (its path, the store, the campaign's id, the run's id)."""
    path = tmp_path / "damaged.sqlite"
    store = gb_store.open(f"sqlite:///{path}")
    campaign_id = _ended_campaign(store)
    run_id = store.runs(campaign_id)[0].id
    with store.engine.begin() as connection:
        connection.exec_driver_sql(
            f"update run set environment_id = {environment_id} where id = {run_id}")
    return path, store, campaign_id, run_id


def test_a_value_of_a_type_never_written_there_is_damage(tmp_path: Path) -> None:
    """SQLite keeps any value in any column: one flipped bit of the fault run of
    2026-11-26 left a run's environment id the text '' (report ended in a KeyError)."""
    path, store, campaign_id, run_id = _a_run_naming(tmp_path, "''")
    with pytest.raises(StoreError, match=rf"the store {path} is damaged \(row {run_id} of table "
                                         r"run: environment_id holds a text value, not integer\)"):
        store.runs(campaign_id)
    store.engine.dispose()


def test_a_run_that_names_another_campaigns_environment_is_damage(tmp_path: Path) -> None:
    _path, store, campaign_id, run_id = _a_run_naming(tmp_path, "999")
    with pytest.raises(StoreError, match=rf"damaged \(run {run_id} of campaign {campaign_id} "
                                         r"names environment 999, not one of the campaign's\)"):
        store.runs(campaign_id)
    store.engine.dispose()


def test_an_error_raised_while_handling_a_full_disk_is_told_as_the_full_disk(
        tmp_path: Path) -> None:
    """The fault run of 2026-11-26: a disk filled while a savepoint was open; SQLite rolled
    the whole transaction back, so the savepoint's own rollback failed ('no such
    savepoint'), and that error, not the full disk, reached the command line."""
    import sqlite3

    from guestbench.store import damage
    path = tmp_path / "full.sqlite"
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA max_page_count = 2")  # a disk that is full at once
        connection.execute("create table t (x blob)")
        with pytest.raises(sqlite3.OperationalError) as full:
            connection.execute("insert into t values (zeroblob(100000))")
    finally:
        connection.close()
    try:
        try:
            raise sa.exc.OperationalError("INSERT", {}, full.value)
        except sa.exc.OperationalError:
            raise sa.exc.OperationalError("ROLLBACK TO SAVEPOINT sa_savepoint_1", {},
                                          sqlite3.OperationalError("no such savepoint"))
    except sa.exc.OperationalError as outer:
        told = damage.explain(outer)
    assert told is not None and "is full" in told and "fix: free some space" in told
    assert damage.explain(ValueError("not the store's")) is None


def test_a_signal_within_the_first_migration_leaves_no_store_and_no_other_error(
        tmp_path: Path, monkeypatch) -> None:
    """Ctrl-C or SIGTERM inside a statement of the migration invalidates the connection:
    the signal's exception comes out, not SQLAlchemy's complaint about the ROLLBACK after
    it, and the half-made store is rolled back, so the next open makes it whole."""
    from guestbench.process import stopping
    default = sa.engine.default.DefaultDialect
    real = {name: getattr(default, name) for name in ("do_execute", "do_execute_no_params")}
    hit = []

    def interrupted(name):
        def execute(self, cursor, statement, *args, **kwargs):
            if statement.lstrip().upper().startswith("CREATE TABLE") and not hit:
                hit.append(statement)
                raise stopping.Signalled("SIGTERM")
            return real[name](self, cursor, statement, *args, **kwargs)
        return execute
    for name in real:
        monkeypatch.setattr(default, name, interrupted(name))
    url = f"sqlite:///{tmp_path}/store.sqlite"
    with pytest.raises(stopping.Signalled, match="SIGTERM"):
        gb_store.open(url)
    assert hit
    monkeypatch.undo()
    with sa.create_engine(url).connect() as connection:
        assert sa.inspect(connection).get_table_names() == []
    again = gb_store.open(url)
    assert again.version() == SCHEMA_VERSION
    again.engine.dispose()


def test_a_new_sqlite_store_appears_whole_or_not_at_all(tmp_path: Path, monkeypatch) -> None:
    """A signal while a new store's schema is written leaves no file at the store's path
    (it once left 0 bytes there, refused by every later command), and nothing aside; a
    file left aside by a maker that was killed is removed by the next."""
    from guestbench.process.stopping import Signalled
    path = tmp_path / "new.sqlite"
    killed = tmp_path / ".new.sqlite.999999999.new"  # no process has this id
    killed.write_bytes(b"half a store")
    migrate = gb_store.Store.migrate

    def stopped(self, create=True):
        assert not path.exists() and self.engine.url.database.endswith(".new")
        raise Signalled("SIGTERM")
    monkeypatch.setattr(gb_store.Store, "migrate", stopped)
    with pytest.raises(Signalled):
        gb_store.open(f"sqlite:///{path}")
    assert not path.exists() and list(tmp_path.iterdir()) == []
    monkeypatch.setattr(gb_store.Store, "migrate", migrate)
    opened = gb_store.open(f"sqlite:///{path}")
    assert opened.version() == SCHEMA_VERSION and opened.campaigns() == []
    assert [one.name for one in tmp_path.iterdir()] == ["new.sqlite"]
