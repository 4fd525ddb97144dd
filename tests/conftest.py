"""Fixtures of the whole suite: a private PostgreSQL server, started once when a test asks
for it (tests/support/postgres.py) and removed at the end; no signal noted as received; and,
for the integration and faults suites, the built agent, this host's facts and the presets'
probes (each asked once per session, only by a test that names it: the unit suite never
imports the environments here).

The suite runs on one worker more than the machine has CPUs (pytest-xdist, `-n auto` in
pyproject.toml, pytest_xdist_auto_num_workers). The integration and faults tests start real machines: each of their
modules is one unit of work, run in order by one worker, and the workers take the modules
side by side, then the unit tests. The few tests that judge timings (ALONE) come
last, and each runs with nothing else of the suite beside it (pytest_runtest_protocol, a
lock every other test shares; pytest_collection_modifyitems, pytest_xdist_make_scheduler).

Each pytest process that runs tests claims what they start (pytest_configure,
tests/support/leaks.py): a mark in its environment and a private temporary folder, so that
the checks of what a test left count only its own processes and folders."""

from __future__ import annotations

import contextlib
import fcntl
import itertools
import os
import sys
import tempfile
from pathlib import Path

import pytest

# Bytecode is cached, whatever the environment says: with PYTHONDONTWRITEBYTECODE set (as in
# some CI shells) pytest rewrote every test module's asserts anew in each worker (collecting
# the unit suite took 7.6 s, 1.9 s with the cache), and each guestbench the tests start
# compiled its modules again. The caches are __pycache__ folders, which git ignores.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

from tests.support import leaks, postgres, quiet  # noqa: E402  (after the cache's switch)

_databases = itertools.count(1)
_SHARED = "guestbench_tests"  # the database that holds each test's schema


_ONE_AT_A_TIME = ("integration", "faults")  # suites that own the machine while they run


def _on_the_machine(nodeid: str) -> bool:
    parts = nodeid.split("/")
    return len(parts) > 2 and parts[0] == "tests" and parts[1] in _ONE_AT_A_TIME


# The modules whose tests judge timings, which other tests beside them would distort (unit
# tests beside a kernel build slowed it by half, and made a console's latency flag a right
# clock): each of their tests runs alone on the machine (pytest_runtest_protocol).
ALONE = ("tests/integration/test_clock_real.py", "tests/integration/test_compare_real.py",
         "tests/integration/test_history_real.py")


def _alone(item) -> bool:
    return item.nodeid.split("::")[0] in ALONE


# The machine's modules that took longest (summed durations, 2026-11-29, the suite on two
# workers of a 2-CPU host: the nested campaign 336 s, instance 195 s, full system 170 s,
# kill -9 133 s, command 103 s, upload 101 s, kernel build 95 s, disk 81 s; the Xen PV
# campaign, added later, about 150 s alone; the Firecracker and Cloud Hypervisor campaigns,
# where they are installed, 340 s on 2026-11-30), first: a long module started last kept one
# worker busy while the other had nothing left.
LONGEST_FIRST = ("tests/integration/test_api_vmms_real.py",
                 "tests/integration/test_nested_real.py",
                 "tests/integration/test_instance_real.py",
                 "tests/integration/test_xen_pv_real.py",
                 "tests/integration/test_full_system.py", "tests/faults/test_kill9.py",
                 "tests/integration/test_command_real.py", "tests/integration/test_upload.py",
                 "tests/integration/test_kernel_build_real.py",
                 "tests/integration/test_disk_real.py")


def _order(item) -> tuple[int, int]:
    """The machine's tests, the longest modules first, then the faults suite and the
    integration suite; then the unit tests, then the tests that must be alone on the
    machine; last the tests that leave a dead guestbench's journal for their next run to
    sweep (sweeps_journals)."""
    if item.get_closest_marker("sweeps_journals") is not None:
        return 5, 0
    if _alone(item):
        return 4, 0
    if not _on_the_machine(item.nodeid):
        return 3, 0
    module = item.nodeid.split("::")[0]
    if module in LONGEST_FIRST:
        return 0, LONGEST_FIRST.index(module)
    return (1 if item.nodeid.split("/")[1] == "faults" else 2), 0


# Every test holds this lock, shared, while it runs (its fixtures' setup and teardown too);
# a test of the ALONE modules holds it alone: it starts once every other test of this checkout's
# suite has ended (on any worker) and no other starts until it has. The tests folder
# itself is locked, so nothing is left behind.
_SHARE = Path(__file__).resolve().parent


@contextlib.contextmanager
def _machine_share(alone: bool):
    descriptor = os.open(_SHARE, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX if alone else fcntl.LOCK_SH)
        yield
    finally:
        os.close(descriptor)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Runs the test holding the machine: shared, or alone if its module is in ALONE, and
    then only once the host is quiet (what another test started may still be ending); if
    it does not become quiet, the test's report names what was busy."""
    alone = _alone(item)
    with _machine_share(alone):
        if alone:
            busy = quiet.wait()
            if busy:
                item.user_properties.append(("host busy before the test", busy))
                item.add_report_section("setup", "host", f"the host was not quiet: {busy}")
        return (yield)


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
    """The machine's tests first, the longest modules at their head, then the unit tests,
    then the tests that must be alone (_order). Under xdist each module of the machine's tests is
    one unit of work, which the workers take in that order as they come free: two boots or
    a boot and a campaign side by side use the machine's CPUs where one worker alone left
    half of them idle (the suite took 32 min so, 2026-11-29), and the unit tests fill the
    end. The faults tests judge what is lost and left, and the others with deadlines give
    them room for a busy machine; the tests that judge timings wait for the machine alone
    (pytest_runtest_protocol).

    The tests that kill a guestbench with its reaper and expect their next run to sweep the
    journal left (sweeps_journals) come last within their module: each worker has journals
    of its own, in its private TMPDIR, and within a worker one test runs at a time."""
    items.sort(key=_order)  # stable: the order within


def pytest_xdist_auto_num_workers(config) -> int:
    """`-n auto`: one worker more than the machine has CPUs. The machine's tests wait as
    well as compute (a guest booting under emulation waits on its console, a hung guest on
    its timeout, a store on fsync): with a worker per CPU the 2 CPUs here were busy 80% of
    the suite's time, and a third worker took it from 18 min 59 s to 18 min 01 s
    (docs/measurements.md). The deadlines of the tests that wait on a boot allow for it."""
    return (len(os.sched_getaffinity(0)) or 1) + 1


def pytest_xdist_make_scheduler(config, log):
    """xdist's scheduling by scope: each module of the integration and faults suites is one
    scope (its tests share a module's fixtures, a campaign or an L1 machine, in one worker),
    and each unit test a scope of its own. (xdist's
    own `loadgroup` names the group in the test's node id, which pytest 9 no longer lets a
    plugin change.)"""
    from xdist.scheduler import LoadScopeScheduling  # only where xdist runs the suite

    class OneMachine(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return nodeid.split("::")[0] if _on_the_machine(nodeid) else nodeid

    return OneMachine(config, log)


@pytest.fixture(autouse=True)
def no_signal_received():
    """Each test starts as a fresh guestbench does: no Ctrl-C or SIGTERM has come
    (guestbench/process/stopping.py); a test whose handler noted one does not stop the next."""
    from guestbench.process import stopping
    stopping.received = None
    yield
    stopping.received = None


@pytest.fixture(scope="module", autouse=True)
def nested_machines_end():
    """Every L1 machine a nested environment started in this process ends with its test
    module (the module's tests share them, as a campaign's environments do:
    nested.acquire): an idle L1 machine under TCG still takes CPU, and must not outlive
    its module into the tests that judge timings, which run alone."""
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
