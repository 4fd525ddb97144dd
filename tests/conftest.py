"""Fixtures of the whole suite: a private PostgreSQL server, started once when a test asks
for it (tests/support/postgres.py) and removed at the end; no signal noted as received; and,
for the integration and faults suites, the built agent, this host's facts and the presets'
probes (each asked once per session, only by a test that names it: the unit suite never
imports the environments here).

The suite runs on as many workers as the machine has CPUs (pytest-xdist, `-n auto` in
pyproject.toml). The integration and faults tests run one after another on one worker, as
they did alone: they start real machines, time them and share the image cache and the L1
machines of a session. That worker starts them at once, the faults suite first, while the
other workers take the unit tests (pytest_collection_modifyitems,
pytest_xdist_make_scheduler).

Each pytest process that runs tests claims what they start (pytest_configure,
tests/support/leaks.py): a mark in its environment and a private temporary folder, so that
the checks of what a test left count only its own processes and folders."""

from __future__ import annotations

import itertools
import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests.support import leaks, postgres

_databases = itertools.count(1)
_SHARED = "guestbench_tests"  # the database that holds each test's schema


_ONE_AT_A_TIME = ("integration", "faults")  # suites that own the machine while they run


def _on_the_machine(nodeid: str) -> bool:
    parts = nodeid.split("/")
    return len(parts) > 2 and parts[0] == "tests" and parts[1] in _ONE_AT_A_TIME


def _order(item) -> int:
    """The faults suite, then the integration suite, then the unit tests; last the tests that
    leave a dead guestbench's journal for their next run to sweep (sweeps_journals)."""
    if item.get_closest_marker("sweeps_journals") is not None:
        return 3
    if not _on_the_machine(item.nodeid):
        return 2
    return 0 if item.nodeid.split("/")[1] == "faults" else 1


def pytest_configure(config) -> None:
    """Claims what this process's tests start (leaks.claim(): the mark, the private TMPDIR)
    before any test imports guestbench; not in xdist's controller, which runs no test.
    pytest's own temporary folders (tmp_path) stay where they were, so that they outlive the
    private folder as pytest means them to."""
    if not hasattr(config, "workerinput") and _distributes(config):
        return
    os.environ.setdefault("PYTEST_DEBUG_TEMPROOT", tempfile.gettempdir())
    leaks.claim()


def _distributes(config) -> bool:
    """This process is xdist's controller, whose workers run the tests (as xdist decides)."""
    return config.getoption("dist", "no") != "no" and bool(config.getoption("tx", None))


def pytest_unconfigure(config) -> None:
    """After the session's fixtures (the L1 machines, the PostgreSQL server) have ended:
    the journals of killed guestbench processes swept, the private folder removed."""
    leaks.release()


def pytest_collection_modifyitems(items) -> None:
    """The machine's tests first, the faults suite at their head: under xdist one worker
    takes them all at once and the others the unit tests, which end within about two
    minutes. Beside the unit tests run the faults tests, which judge what is lost and left,
    not how long anything took; the integration tests that time things come after, alone
    on the machine as their timings need (unit tests beside them slowed a kernel build by
    half and made a console's latency flag a right clock). Starting the machine's tests at
    once, not after the unit tests, took 2 min off the suite (2026-11-27).

    Last, in the machine's worker, come the tests that kill a guestbench with its reaper and
    expect their next run to sweep the journal left: any guestbench sweeps the shared
    journals as it starts, and one started by a unit test beside them took that journal
    first (a fresh-clone run, 2026-11-27). By then the unit tests have long ended. (Each
    worker now has journals of its own, in its private TMPDIR; the order still keeps them
    apart where one process runs every test.)"""
    items.sort(key=_order)  # stable: the order within


def pytest_xdist_make_scheduler(config, log):
    """xdist's scheduling by scope, with every integration and faults test in one scope, so
    that one worker runs them in order while the unit tests, each a scope of its own, spread
    over the workers. (xdist's own `loadgroup` names the group in the test's node id, which
    pytest 9 no longer lets a plugin change.)"""
    from xdist.scheduler import LoadScopeScheduling  # only where xdist runs the suite

    class OneMachine(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "machine" if _on_the_machine(nodeid) else nodeid

    return OneMachine(config, log)


@pytest.fixture(autouse=True)
def no_signal_received():
    """Each test starts as a fresh guestbench does: no Ctrl-C or SIGTERM has come
    (guestbench/process/stopping.py); a test whose handler noted one does not stop the next."""
    from guestbench.process import stopping
    stopping.received = None
    yield
    stopping.received = None


@pytest.fixture(scope="session", autouse=True)
def nested_machines_end():
    """Every L1 machine a nested environment started in this process ends with the session
    (tests share them, as a campaign's environments do: nested.acquire)."""
    yield
    nested = sys.modules.get("guestbench.environments.fullsystem.nested")  # not the unit suite's
    if nested is not None:
        nested.stop_all()


@pytest.fixture(scope="session")
def postgres_server():
    """The suite's own PostgreSQL server; the test is skipped, with the reason, if PostgreSQL
    is not installed here."""
    try:
        server = postgres.start()
    except postgres.Unavailable as error:
        pytest.skip(f"PostgreSQL unavailable here: {error}")
    server.create_database(_SHARED)
    yield server
    server.remove()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """A new, empty database on the suite's server: a schema of its own in one shared database,
    dropped after the test. (A database per test cost 0.2 s: each DROP DATABASE makes the
    next CREATE DATABASE wait for a checkpoint. guestbench never names a schema, so its
    tables land in the one that search_path gives.)"""
    name = f"test_{next(_databases)}"
    postgres_server.execute(f'CREATE SCHEMA "{name}"', database=_SHARED)
    yield postgres_server.url(_SHARED, search_path=name)
    postgres_server.execute(f'DROP SCHEMA "{name}" CASCADE', database=_SHARED)


_emptied: list[str] = []  # schemas holding guestbench's tables, emptied, for the next store


@pytest.fixture
def postgres_store_url(postgres_server) -> str:
    """An empty guestbench store on the suite's server, made by guestbench's own migration
    the first time, then reused: after each test its tables are emptied (TRUNCATE, ids
    restarting at 1), which costs a tenth of making the 10 tables anew (0.1 s of DDL per
    store, 180 stores in the unit suite). A schema whose tables or version a test changed,
    or that cannot be emptied within 2 s, is dropped instead."""
    name = _emptied.pop() if _emptied else f"store_{next(_databases)}"
    postgres_server.execute(f'CREATE SCHEMA IF NOT EXISTS "{name}"', database=_SHARED)
    yield postgres_server.url(_SHARED, search_path=name)
    if _empty(postgres_server, name):
        _emptied.append(name)
    else:
        postgres_server.execute(f'DROP SCHEMA "{name}" CASCADE', database=_SHARED)


def _empty(server, name: str) -> bool:
    """Empties the schema's guestbench tables; False if it is not exactly a current store."""
    import psycopg

    from guestbench.store.version import SCHEMA_VERSION
    from guestbench.store import schema

    expected = set(schema.metadata.tables)
    try:
        with psycopg.connect(host=str(server.folder), port=postgres.PORT, user="postgres",
                             dbname=_SHARED, autocommit=True) as connection:
            connection.execute("SET lock_timeout = '2s'")
            tables = {row[0] for row in connection.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s", (name,))}
            version = connection.execute(
                f'SELECT value FROM "{name}".schema_meta WHERE key = %s',
                ("schema_version",)).fetchall() if "schema_meta" in tables else []
            if tables != expected or version != [(str(SCHEMA_VERSION),)]:
                return False
            emptied = ", ".join(f'"{name}"."{table}"' for table in sorted(expected - {
                "schema_meta"}))
            connection.execute(f"TRUNCATE {emptied} RESTART IDENTITY CASCADE")
            left = connection.execute(f'SELECT count(*) FROM "{name}".schema_meta').fetchone()
            return left == (1,)
    except psycopg.Error:
        return False


@pytest.fixture(scope="session")
def agent_path() -> Path:
    from guestbench import agent
    try:
        return agent.path()
    except agent.AgentMissing as error:
        pytest.skip(f"agent not built: {error}")


@pytest.fixture(scope="session")
def host_facts():
    from guestbench import host
    return host.collect()


@pytest.fixture(scope="session")
def probes(host_facts, agent_path):
    """Every preset's environment and its probe answer, asked once per test session."""
    from guestbench import environments
    from tests.support.real_environments import PRESETS
    probed = {}
    for name in PRESETS:
        environment = environments.create(environments.preset_spec(name))
        probed[name] = (environment, environment.probe(host_facts))
    return probed
