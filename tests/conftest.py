"""Fixtures of the whole suite: a private PostgreSQL server, started once when a test asks
for it (tests/support/postgres.py) and removed at the end."""

from __future__ import annotations

import itertools

import pytest

from tests.support import postgres

_databases = itertools.count(1)
_SHARED = "guestbench_tests"  # the database that holds each test's schema


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
    """A new, empty store on the suite's server: a schema of its own in one shared database,
    dropped after the test. (A database per test cost 0.2 s: each DROP DATABASE makes the
    next CREATE DATABASE wait for a checkpoint. guestbench never names a schema, so its
    tables land in the one that search_path gives.)"""
    name = f"test_{next(_databases)}"
    postgres_server.execute(f'CREATE SCHEMA "{name}"', database=_SHARED)
    yield postgres_server.url(_SHARED, search_path=name)
    postgres_server.execute(f'DROP SCHEMA "{name}" CASCADE', database=_SHARED)
