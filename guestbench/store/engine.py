"""The store's engine: open(url) for SQLite or PostgreSQL, migrations, retries while a server
is away, and raw samples written run by run."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import gc
import json
import os
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from guestbench.process import proc
from guestbench.store import damage, grants, packed, schema
from guestbench.store.columns import Samples
from guestbench.store.schema import SCHEMA_VERSION
from guestbench.store.errors import StoreError
from guestbench.store.records import (
    Campaign, CellStop, Environment, Run, RunRecord, StoredCellStop)

# module SQLAlchemy imports -> the PyPI package that provides it
_DRIVER_PACKAGES = {"psycopg2": "psycopg2-binary", "psycopg": "psycopg[binary]",
                    "MySQLdb": "mysqlclient", "pymysql": "pymysql"}


def open(url: str, create: bool = True) -> "Store":  # noqa: A001 - the store's documented entry point
    """Open the store at a SQLAlchemy URL, migrating it; with create=False it must exist."""
    engine = check(url, create)
    if create:
        _made_whole(engine)
    store = Store(engine)
    store.found_empty = _zero_bytes(store.engine)
    try:
        store.migrate(create)
    except sa.exc.OperationalError as error:
        raise StoreError(f"--db {url!r}: cannot open the database ({error.orig}) "
                         "(fix: check the URL, the server and the permissions)") from None
    except sa.exc.ProgrammingError as error:
        if getattr(error.orig, "sqlstate", None) != "42501":  # insufficient_privilege
            raise
        raise StoreError(f"--db {url!r}: the store needs its schema made or migrated to "
                         f"version {SCHEMA_VERSION}, and this role may not ({error.orig}) "
                         "(fix: run guestbench once as the store's owner, e.g. 'guestbench "
                         "grants ROLE --as worker --apply --db URL')") from None
    return store


def check(url: str, create: bool = True) -> sa.Engine:
    """The engine for a URL, after checking what can be checked without writing anything."""
    try:
        engine = sa.create_engine(_with_driver(url), pool_pre_ping=True)
    except (sa.exc.ArgumentError, sa.exc.NoSuchModuleError, ValueError) as error:
        raise StoreError(f"--db {url!r}: not a usable database URL ({error}) "
                         "(fix: e.g. sqlite:///results.sqlite or postgresql://user@host/db)") from None
    except ImportError as error:
        package = _DRIVER_PACKAGES.get(error.name or "", error.name)
        raise StoreError(f"--db {url!r}: the database driver is not installed ({error.name}) "
                         f"(fix: .venv/bin/pip install {package})") from None
    if engine.dialect.name == "sqlite":
        _check_sqlite_path(engine.url.database, url, create)
        damage.opened["sqlite"] = str(Path(engine.url.database or "").resolve())
        sa.event.listen(engine, "connect", _value_checks)
    return engine


def _value_checks(dbapi_connection: Any, _record: Any) -> None:
    """SQL functions for _bad_values, on each new SQLite connection: whether a stored text
    fails to decode as the readers decode it (a JSON document, a timestamp)."""
    dbapi_connection.create_function("gb_bad_json", 1, _bad_json, deterministic=True)
    dbapi_connection.create_function("gb_bad_time", 1, _bad_time, deterministic=True)


def _bad_json(value: Any) -> int:
    """1 if value (the column's bytes: text that is not UTF-8 reaches no Python function
    as text) does not decode as a JSON document."""
    try:
        _document(value.decode() if isinstance(value, bytes) else value)
    except (ValueError, TypeError, RecursionError):  # UnicodeDecodeError is a ValueError
        return 1
    return 0


def _bad_time(value: Any) -> int:
    try:
        _timestamp(value.decode() if isinstance(value, bytes) else value)
    except (ValueError, TypeError, OverflowError):
        return 1
    return 0


def _made_whole(engine: sa.Engine) -> None:
    """A new SQLite store is made aside, in a hidden file of the same folder named after
    this process, and linked into place once its schema is written: the store's path holds
    a whole store or nothing, whenever a signal comes. (Made in place, a SIGTERM or SIGKILL
    within the first milliseconds left a 0-byte file that every later command refused.)
    Two processes that make one store at once each make their own; the first link wins
    and the other opens it. Files left aside by a killed process are removed here."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:" or engine.url.query:
        return
    path = Path(database).resolve()
    if path.exists():
        return
    for left in path.parent.glob(f".{path.name}.*.new"):
        pid = left.name[len(path.name) + 2:-len(".new")]
        if pid.isdigit() and not Path(f"/proc/{pid}").exists():  # its maker is gone
            left.unlink(missing_ok=True)
    aside = path.parent / f".{path.name}.{os.getpid()}.new"
    aside.unlink(missing_ok=True)
    opened = damage.opened.get("sqlite")
    try:
        made = Store(check(f"sqlite:///{aside}"))
        try:
            made.migrate(True)
        finally:
            made.engine.dispose()
        with contextlib.suppress(FileExistsError):  # another process made it meanwhile
            os.link(aside, path)
    finally:
        aside.unlink(missing_ok=True)
        if opened is not None:
            damage.opened["sqlite"] = opened


# An empty file this recent may be a store that a guestbench started at the same time is
# making this moment: SQLite makes the file some milliseconds before it writes the schema.
BEING_MADE_S = 2.0


def _zero_bytes(engine: sa.Engine) -> str | None:
    """The SQLite file's path if it is empty (0 bytes) and was last changed more than
    BEING_MADE_S ago, else None. SQLite would take it for a new store; one being made
    now by another guestbench is found made under Store.migrate's lock."""
    database = engine.url.database if engine.dialect.name == "sqlite" else None
    if not database or database == ":memory:":
        return None
    path = Path(database).resolve()
    try:
        found = path.stat()
    except OSError:
        return None
    if found.st_size or not path.is_file() or found.st_mtime > time.time() - BEING_MADE_S:
        return None
    return str(path)


def _with_driver(url: str) -> str | sa.URL:
    """postgresql://... through psycopg 3, which guestbench installs (SQLAlchemy's default
    for a URL without a driver is psycopg2); any URL that names its driver is left alone."""
    try:
        parsed = sa.make_url(url)
    except (sa.exc.ArgumentError, ValueError):
        return url  # create_engine says what is wrong with it
    if parsed.drivername == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    return url


def _check_sqlite_path(database: str | None, url: str, create: bool) -> None:
    if not database or database == ":memory:":
        return
    path = Path(database).resolve()
    if path.is_dir():
        raise StoreError(f"--db {url!r}: {path} is a folder (fix: name a file in it)")
    if not path.parent.is_dir():
        raise StoreError(f"--db {url!r}: folder {path.parent} does not exist (fix: create it first)")
    if not create and not path.exists():
        raise StoreError(f"--db {url!r}: no store at {path} "
                         "(fix: run 'guestbench run' first, or point --db at an existing store)")
    if create and not path.exists() and not os.access(path.parent, os.W_OK | os.X_OK):
        # a new store is made beside its path and linked into place (_made_whole)
        if _read_only_mount(path.parent):
            why, fix = "is on a read-only filesystem", "on a writable filesystem"
        else:
            why, fix = "is not writable by this user", "in a folder you can write"
        raise StoreError(f"--db {url!r}: cannot make a new store at {path}: its folder "
                         f"{path.parent} {why}; nothing was run or stored (fix: point --db "
                         f"at a file {fix})")


DOING = {"run": "store a campaign", "worker": "serve as a pool worker",
         "submitter": "submit plans to the pool"}


# How long a write waits for a store whose server went away (a PostgreSQL restart), trying
# again with growing pauses, before the error stands; on_wait hears of each pause.
RETRY_FOR_S = 600.0


class Unreachable(Exception):
    """A write met a lost server after the campaign was told to stop: it is not waited for
    (a signal wins over retries); what it would have stored is not stored."""


def _waits_for_the_server(method: Callable[..., Any]) -> Callable[..., Any]:
    """A write that meets a lost connection is tried again until the server is back (or
    RETRY_FOR_S has passed): _server_gone tells; any other error (a full disk, a
    constraint) stands at once. A transaction whose connection broke
    was not committed, so trying it again stores it once; add_run checks that too.
    Once stopping is set (Ctrl-C, SIGTERM), a lost server raises Unreachable at once.
    Nothing is written into a store found damaged (Store.check_before_writing)."""
    @functools.wraps(method)
    def retried(self: "Store", *args: Any, **kwargs: Any) -> Any:
        self.check_before_writing()
        waited, pause = 0.0, 0.5
        while True:
            try:
                result = method(self, *args, **kwargs)
                self._again = False
                return result
            except sa.exc.DBAPIError as error:
                if not _server_gone(error):
                    self._again = False
                    raise
                if self.stopping:
                    self._again = True  # a later write, if the server returns, checks first
                    raise Unreachable(_first_line(error)) from None
                if waited >= self.retry_for_s:
                    self._again = False
                    raise
                self._again = True  # add_run looks for its run before it writes it again
                if self.on_wait is not None:
                    self.on_wait(f"the store is unreachable ({_first_line(error)}); "
                                 f"trying again in {pause:g} s, for up to "
                                 f"{self.retry_for_s - waited:.0f} s more")
                self._pause(pause)
                waited += pause
                pause = min(pause * 2, 10.0)
    return retried


def _first_line(error: sa.exc.DBAPIError) -> str:
    """The driver's message, its first line whole (psycopg adds a hint on the next)."""
    text = str(error.orig).strip()
    return text.splitlines()[0].strip() if text else type(error.orig).__name__


def _server_gone(error: sa.exc.DBAPIError) -> bool:
    """A lost or refused connection to a database server, as opposed to an error in what
    was asked: a connection SQLAlchemy found broken, a connection that could not be made
    (psycopg gives it no SQLSTATE), a connection exception (class 08) or a server shutting
    down or starting (57P01-57P03). SQLite's errors have no SQLSTATE and are never
    waited for."""
    if error.connection_invalidated:
        return True
    if not hasattr(error.orig, "sqlstate"):
        return False
    state = error.orig.sqlstate
    return state is None or state.startswith("08") or state in ("57P01", "57P02", "57P03")


def _host_row(connection: sa.Connection, fingerprint: str, facts: dict[str, Any]) -> int:
    """The host's row, made if new. Two campaigns of one machine that start at once (two
    pool workers there) may both find none: the one whose insert loses takes the other's."""
    query = sa.select(schema.host.c.id).where(schema.host.c.fingerprint == fingerprint)
    host_id = connection.execute(query).scalar()
    if host_id is not None:
        return host_id
    try:
        with connection.begin_nested():
            return connection.execute(sa.insert(schema.host).values(
                fingerprint=fingerprint, facts=facts)).inserted_primary_key[0]
    except sa.exc.IntegrityError:
        return connection.execute(query).scalar_one()


def _foreign_tables(connection: sa.Connection) -> bool:
    """Tables that are neither guestbench's nor its pool queue's (procrastinate_*)."""
    return any(not name.startswith("procrastinate_")
               for name in sa.inspect(connection).get_table_names())


def _version_of(connection: sa.Connection) -> int:
    if not sa.inspect(connection).has_table("schema_meta"):
        return 0
    value = connection.execute(sa.select(schema.schema_meta.c.value).where(
        schema.schema_meta.c.key == "schema_version")).scalar()
    if not value:
        return 0
    try:
        return int(value)
    except ValueError:
        raise StoreError(f"{connection.engine.url}: the store's schema version is "
                         f"{value!r}, not a number: the store is damaged (fix: restore it from "
                         "a copy, or point --db at another store)") from None


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _reads(method: Callable[..., Any]) -> Callable[..., Any]:
    """A read of a SQLite store whose bytes are damaged where SQLite's own checks do not
    look (text that is not UTF-8, a JSON document or a timestamp that does not parse)
    raises StoreError naming the file and the fix, not the decoder's error."""
    @functools.wraps(method)
    def read(self: "Store", *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except StoreError:
            raise
        except Exception as error:  # noqa: BLE001 - only what damage.explain or decoding names
            told = damage.explain(error)
            if told is not None:
                raise StoreError(told) from None
            if self.engine.dialect.name == "sqlite" and isinstance(
                    error, (ValueError, UnicodeDecodeError, OverflowError)):
                raise StoreError(self.damaged(f"{type(error).__name__} reading it: "
                                              f"{str(error)[:160]}")) from None
            raise
    return read


def _sqlite_types(column: sa.Column) -> tuple[str, ...]:
    """What SQLite's typeof() may say of a value of this column as guestbench writes it.
    SQLite keeps any value in any column, so damage can leave an integer column holding
    text ('' where a run's environment id was): a reader checks before it uses the rows."""
    kind = column.type
    if isinstance(kind, (sa.Integer, sa.Boolean)):
        allowed: tuple[str, ...] = ("integer",)
    elif isinstance(kind, sa.Float):
        allowed = ("real", "integer")
    elif isinstance(kind, sa.LargeBinary):
        allowed = ("blob",)
    else:  # String, Text, JSON, DateTime: text in SQLite
        allowed = ("text",)
    return allowed + (("null",) if column.nullable and not column.primary_key else ())


def _bad_values(connection: sa.Connection, table: sa.Table, where: str) -> str | None:
    """The first value of table's rows matching the SQL condition `where` (SQLite) that the
    readers could not use, said in a few words; None if none: a type guestbench never
    writes in its column (_wrong_types), or a text that does not decode as the column's
    JSON document or timestamp. The readers check the rows they read with it; run and
    worker check every row (Store.require), so that neither writes into a store that a
    reader would call damaged."""
    problem = _wrong_types(connection, table, where)
    if problem:
        return problem
    for column in table.columns:
        if isinstance(column.type, sa.JSON):
            check, what = "gb_bad_json", "a JSON document"
        elif isinstance(column.type, sa.DateTime):
            check, what = "gb_bad_time", "a timestamp"
        else:
            continue
        row = connection.exec_driver_sql(  # as bytes: text need not be UTF-8 (_bad_json)
            f"SELECT rowid FROM {table.name} WHERE ({where}) AND {column.name} IS NOT NULL "
            f"AND {check}(CAST({column.name} AS BLOB)) LIMIT 1").first()
        if row is not None:
            return f"row {row[0]} of table {table.name}: {column.name} is not {what}"
    return None


# rows that name a row of another campaign: (table, the SQL that finds the first one)
_CROSSED = [(name, f"SELECT {name}.rowid FROM {name} JOIN environment ON environment.id = "
                   f"{name}.environment_id WHERE environment.campaign_id != {name}.campaign_id "
                   "LIMIT 1") for name in ("run", "cell_stop")]


def _bad_references(connection: sa.Connection) -> str | None:
    """The first row (SQLite) that names a row that does not exist (PRAGMA
    foreign_key_check) or an environment of another campaign; None if none."""
    found = connection.exec_driver_sql("PRAGMA foreign_key_check").first()
    if found is not None:
        table, rowid, parent = found[0], found[1], found[2]
        return f"row {rowid} of table {table} names a row of table {parent} that does not exist"
    for table, query in _CROSSED:
        row = connection.exec_driver_sql(query).first()
        if row is not None:
            return f"row {row[0]} of table {table} names an environment of another campaign"
    return None


def _wrong_types(connection: sa.Connection, table: sa.Table, where: str) -> str | None:
    """The first row of table (SQLite) matching the SQL condition `where` whose value in
    some column has a type guestbench never writes there, said in a few words; None if none."""
    columns = list(table.columns)
    tests = [f"typeof({column.name}) NOT IN ({', '.join(repr(t) for t in _sqlite_types(column))})"
             for column in columns]
    types = ", ".join(f"typeof({column.name})" for column in columns)
    row = connection.exec_driver_sql(
        f"SELECT rowid, {types} FROM {table.name} WHERE ({where}) AND ({' OR '.join(tests)}) "
        "LIMIT 1").first()
    if row is None:
        return None
    for column, found in zip(columns, row[1:]):
        if found not in _sqlite_types(column):
            return (f"row {row[0]} of table {table.name}: {column.name} holds a {found} value, "
                    f"not {' or '.join(_sqlite_types(column))}")
    return None


class Store:
    def __init__(self, engine: sa.Engine) -> None:
        self.engine = engine
        self.retry_for_s = RETRY_FOR_S
        self.on_wait: Callable[[str], None] | None = None
        self.stopping = False  # set on Ctrl-C or SIGTERM: a lost server is not waited for
        self.found_empty: str | None = None  # the SQLite file was 0 bytes when opened (open())
        self._again = False  # a write is being tried again after a lost connection
        self._quick_check: list[str] | None = None  # SQLite's PRAGMA quick_check, once run

    def _pause(self, seconds: float) -> None:
        """A retry's pause, in steps, so that a stop (a signal handler that does not
        raise) ends it within 0.1 s."""
        end = time.monotonic() + seconds
        while not self.stopping and (left := end - time.monotonic()) > 0:
            time.sleep(min(left, 0.1))

    # -- schema ---------------------------------------------------------------
    def version(self) -> int:
        with self.engine.connect() as connection:
            return _version_of(connection)

    def migrate(self, create: bool = True) -> None:
        try:
            current = self.version()
        except sa.exc.OperationalError:
            raise
        except sa.exc.DatabaseError as error:
            told = damage.explain(error)  # a damaged file, a full disk
            if told and "is damaged" in told:
                raise StoreError(told) from None
            raise StoreError(f"{self.engine.url}: not a guestbench store ({error.orig}) "
                             "(fix: point --db at a guestbench store or a new file)") from None
        if current > SCHEMA_VERSION:
            raise StoreError(f"{self.engine.url}: store schema {current} is newer than this "
                             f"guestbench reads ({SCHEMA_VERSION}) (fix: upgrade guestbench)")
        if current == SCHEMA_VERSION:
            return
        if current > 0:  # an older store is migrated in place: not if it is damaged
            self.check_before_writing()
        # Several processes may open a new or older store at once (two runs started
        # together, workers of a pool): one makes or migrates it under a lock, in one
        # transaction; the others wait for the lock, then find the version it left.
        with self._migration_lock() as connection:
            current = _version_of(connection)
            if current == 0 and self.found_empty:  # and nobody made a store in it meanwhile
                raise StoreError(
                    f"--db {self.engine.url}: {self.found_empty} is an empty file (0 bytes), "
                    "not a store: a store that lost its contents, or a file another program "
                    f"made (fix: restore it from a copy; or remove it ('rm {self.found_empty}')"
                    " and guestbench makes a new store there; or point --db at another file)")
            if current == 0 and _foreign_tables(connection):
                raise StoreError(f"{self.engine.url}: holds tables but no guestbench schema "
                                 "version; not a guestbench store (fix: point --db at a "
                                 "guestbench store or a new file)")
            if current == 0 and not create:
                raise StoreError(f"{self.engine.url}: an empty database, not a guestbench "
                                 "store (fix: run 'guestbench run' first, or point --db at a "
                                 "store)")
            for version in range(current, SCHEMA_VERSION):
                schema.MIGRATIONS[version](connection)
            if 0 < current < schema.CHECKSUM_SINCE:  # an older store's ended campaigns
                packed.pack_ended(connection)
            if current != SCHEMA_VERSION:
                connection.execute(sa.delete(schema.schema_meta).where(
                    schema.schema_meta.c.key == "schema_version"))
                connection.execute(sa.insert(schema.schema_meta).values(
                    key="schema_version", value=str(SCHEMA_VERSION)))

    @contextlib.contextmanager
    def _migration_lock(self) -> Iterator[sa.Connection]:
        """A connection in a transaction that holds the store's write lock from its start:
        PostgreSQL's advisory lock; SQLite's BEGIN IMMEDIATE (the sqlite3 module would
        otherwise run each CREATE TABLE in a transaction of its own)."""
        if self.engine.dialect.name != "sqlite":
            with self.engine.begin() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(sa.text("SELECT pg_advisory_xact_lock(7305118)"))
                yield connection
            return
        with self.engine.connect() as connection:
            connection = connection.execution_options(isolation_level="AUTOCOMMIT")
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                try:
                    connection.exec_driver_sql("ROLLBACK")
                except sa.exc.SQLAlchemyError:
                    # a Ctrl-C or SIGTERM within a statement left the connection invalid;
                    # closing it, as the with block does, rolls the transaction back
                    pass
                raise
            connection.exec_driver_sql("COMMIT")

    def require(self, what: str) -> None:
        """Before anything starts, rather than fail at the first write: on SQLite, that the
        file is sound (PRAGMA quick_check: 0.2 s for a 115 MB store), that every value is
        one the readers can use (_bad_values, _bad_references) and every packed block
        matches its checksum, so that nothing is written into a store a reader would call
        damaged; on PostgreSQL, that this role may do `what` (run:
        store a campaign; worker; submitter)."""
        if self.engine.dialect.name == "sqlite":
            self._require_writable()
            problems = self._quick_checked()
            with self.engine.connect() as connection:
                if problems == ["ok"]:
                    problems = [problem for problem in [
                        *(_bad_values(connection, table, "1")
                          for table in schema.metadata.sorted_tables),
                        _bad_references(connection)] if problem][:1] or ["ok"]
            if problems != ["ok"]:
                raise StoreError(self.damaged(" ".join("; ".join(problems).split())))
            self._verify_blocks()  # inside a blob, where quick_check does not look
            return
        if self.engine.dialect.name != "postgresql":
            return
        with self.engine.connect() as connection:
            lacking = grants.missing(connection, what)
        if lacking:
            user = self.engine.url.username or "this role"
            kind = "worker" if what == "run" else what
            raise StoreError(
                f"{self.engine.url.render_as_string()}: the database role {user!r} may not "
                f"{DOING[what]} here: it lacks {', '.join(lacking[:4])}"
                f"{' and more' if len(lacking) > 4 else ''} (fix: as the store's owner, "
                f"'guestbench grants {user} --as {kind} --apply --db URL'; docs/pool.md)")

    def _require_writable(self) -> None:
        """StoreError if the SQLite file, or its folder (where SQLite keeps its journal),
        cannot be written: a read-only filesystem or permissions."""
        database = self.engine.url.database
        if not database or database == ":memory:":
            return
        path = Path(database).resolve()
        for place in (path, path.parent):
            if place.exists() and not os.access(place, os.W_OK):
                reason = ("on a read-only filesystem" if _read_only_mount(place)
                          else "not writable by this user")
                raise StoreError(damage.read_only(str(path), f"{place} is {reason}"))

    # -- writing --------------------------------------------------------------
    @_waits_for_the_server
    def create_campaign(self, name: str, plan: dict[str, Any], host_facts: dict[str, Any],
                        fingerprint: str, baseline: str | None, log_dir: str,
                        guestbench_version: str, host_checks: dict[str, Any] | None = None,
                        owner: dict[str, Any] | None = None, group_id: int | None = None,
                        pool_host: str | None = None) -> int:
        with self.engine.begin() as connection:
            host_id = _host_row(connection, fingerprint, host_facts)
            return connection.execute(sa.insert(schema.campaign).values(
                name=name, created_at=_now(), guestbench_version=guestbench_version, plan=plan,
                host_id=host_id, host_facts=host_facts, baseline=baseline, log_dir=log_dir,
                status="running", host_checks=host_checks, owner=owner, group_id=group_id,
                pool_host=pool_host)).inserted_primary_key[0]

    @_waits_for_the_server
    def add_environment(self, campaign_id: int, name: str, kind: str, spec: dict[str, Any],
                        available: bool, probe: str, position: int,
                        facts: dict[str, Any] | None = None) -> int:
        """facts: what ran, e.g. {"vmm_version": ..., "guest_kernel": ...}; None if unknown."""
        with self.engine.begin() as connection:
            return connection.execute(sa.insert(schema.environment).values(
                campaign_id=campaign_id, name=name, kind=kind, spec=spec, available=available,
                probe=probe, position=position,
                facts=sa.null() if facts is None else facts)).inserted_primary_key[0]

    @_waits_for_the_server
    def add_run(self, campaign_id: int, record: RunRecord) -> int:
        """One run and its samples, in one transaction: a run is stored whole or not at all.
        Tried again after a lost connection, it is not stored twice: a run of this campaign,
        environment, label and repetition already there is the one."""
        run = schema.run
        again, self._again = self._again, False
        with self.engine.begin() as connection:
            if again:
                stored = connection.execute(sa.select(run.c.id).where(
                    run.c.campaign_id == campaign_id,
                    run.c.environment_id == record.environment_id,
                    run.c.label == record.label, run.c.repetition == record.repetition)).scalar()
                if stored is not None:
                    return stored
            run_id = connection.execute(sa.insert(schema.run).values(
                campaign_id=campaign_id, environment_id=record.environment_id,
                workload=record.workload, label=record.label, params=record.params,
                repetition=record.repetition, status=record.status, reason=record.reason,
                flags=list(record.flags), started_at=record.started_at,
                host_seconds=record.host_seconds, log_path=record.log_path,
            )).inserted_primary_key[0]
            if record.samples:
                connection.execute(sa.insert(schema.sample), [
                    {"run_id": run_id, "metric": metric, "unit": unit, "value": value}
                    for metric, unit, value in record.samples])
        return run_id

    def add_cell_stop(self, campaign_id: int, stop: CellStop) -> None:
        self.add_cell_stops(campaign_id, [stop])

    @_waits_for_the_server
    def add_cell_stops(self, campaign_id: int, stops: list[CellStop]) -> None:
        """Several cells' stops in one transaction: a campaign of 10,000 cells stopped by a
        signal writes them at once (one commit each took 20 s)."""
        if not stops:
            return
        with self.engine.begin() as connection:
            connection.execute(sa.insert(schema.cell_stop), [dict(
                campaign_id=campaign_id, environment_id=stop.environment_id, label=stop.label,
                runs=stop.runs, ok_runs=stop.ok_runs, reason=stop.reason,
                half_width=stop.half_width, target=stop.target) for stop in stops])

    @_waits_for_the_server
    def finish_campaign(self, campaign_id: int, status: str,
                        host_checks: dict[str, Any] | None = None,
                        end_reason: str | None = None) -> None:
        """Close the campaign; host_checks, when given, replace those stored at its start;
        end_reason: why it ended other than by finishing (a signal, an error). Its samples
        are packed into one block for readers, in the same transaction."""
        values: dict[str, Any] = {"status": status, "finished_at": _now(),
                                  "end_reason": end_reason}
        if host_checks is not None:
            values["host_checks"] = host_checks
        with self.engine.begin() as connection:
            connection.execute(sa.update(schema.campaign).where(
                schema.campaign.c.id == campaign_id).values(**values))
            packed.pack(connection, campaign_id)

    def mark_abandoned(self) -> list[dict[str, Any]]:
        """Campaigns left 'running' by a guestbench of this host that has since ended
        (killed, or stopped by a full disk before it could say so) become 'interrupted',
        with the reason; a campaign whose owner still runs, or is on another host, or is
        not recorded, is left alone. Returns the campaigns marked."""
        self.check_before_writing()
        table = schema.campaign
        marked = []
        with self.engine.begin() as connection:
            rows = connection.execute(sa.select(table.c.id, table.c.name, table.c.owner)
                                      .where(table.c.status == "running")).mappings().all()
            for row in rows:
                owner = _document(row["owner"]) if isinstance(row["owner"], str) \
                    else row["owner"]
                if proc.still_running(owner) is not False:
                    continue
                reason = (f"its guestbench (process {owner['pid']} on {owner['hostname']}) "
                          "ended without closing it: killed, or stopped by an error it could "
                          f"not store; found {_now():%Y-%m-%d %H:%M:%S} UTC")
                done = connection.execute(sa.update(table).where(
                    table.c.id == row["id"], table.c.status == "running").values(
                        status="interrupted", end_reason=reason))
                if done.rowcount:
                    marked.append({"id": row["id"], "name": row["name"], "reason": reason})
        return marked

    @_waits_for_the_server
    def reopen_campaign(self, campaign_id: int, owner: dict[str, Any] | None) -> list[str]:
        """Make an ended or abandoned campaign 'running' again for `run --resume`, in one
        transaction: the runs that were interrupted midway (they measured nothing) and the
        stops of cells that were open are removed, and so is its packed block. Returns the
        removed runs' log folders."""
        run, sample, stop = schema.run, schema.sample, schema.cell_stop
        with self.engine.begin() as connection:
            unfinished = connection.execute(
                sa.select(run.c.id, run.c.log_path).where(
                    run.c.campaign_id == campaign_id, run.c.status == "interrupted")).all()
            ids = [row.id for row in unfinished]
            if ids:
                connection.execute(sa.delete(sample).where(sample.c.run_id.in_(ids)))
                connection.execute(sa.delete(run).where(run.c.id.in_(ids)))
            connection.execute(sa.delete(stop).where(stop.c.campaign_id == campaign_id,
                                                     stop.c.reason == "interrupted"))
            connection.execute(sa.delete(schema.sample_block).where(
                schema.sample_block.c.campaign_id == campaign_id))
            connection.execute(sa.delete(schema.campaign_digest).where(
                schema.campaign_digest.c.campaign_id == campaign_id))
            connection.execute(sa.update(schema.campaign).where(
                schema.campaign.c.id == campaign_id).values(
                    status="running", finished_at=None, owner=owner, end_reason=None))
        return [row.log_path for row in unfinished if row.log_path]

    # -- reading --------------------------------------------------------------
    @_reads
    def campaign(self, selector: str | None = None) -> Campaign:
        """A campaign by id or name (the latest of that name); the latest without a selector."""
        table = schema.campaign
        query = sa.select(table).order_by(table.c.id.desc()).limit(1)
        if selector is not None:
            as_id = int(selector) if selector.isdigit() else -1
            by_id = table.c.id == as_id if 0 < as_id < 2**63 else sa.false()
            query = query.where(sa.or_(by_id, table.c.name == selector))
        with self.engine.connect() as connection:
            self._check_types(connection, table, "1")
            row = connection.execute(query).mappings().first()
        if row is None:
            what = f"no campaign {selector!r}" if selector else "no campaign yet"
            raise StoreError(f"{self.engine.url}: {what} in this store "
                             "(fix: 'guestbench run' first, or 'guestbench report --list')")
        return Campaign(**_utc(dict(row)))

    @_reads
    def campaigns(self) -> list[Campaign]:
        table = schema.campaign
        with self.engine.connect() as connection:
            self._check_types(connection, table, "1")
            return [Campaign(**_utc(dict(row))) for row in connection.execute(
                sa.select(table.c.id, table.c.name, table.c.created_at, table.c.status, table.c.log_dir)
                .order_by(table.c.id)).mappings()]

    def environments(self, campaign_id: int) -> list[Environment]:
        return [Environment(**row) for row in self._rows_of(
            schema.environment, campaign_id, schema.environment.c.position)]

    def runs(self, campaign_id: int, only: tuple[str, ...] = ()) -> list[Run]:
        """The campaign's runs in order, each with its environment's name; only: just these
        columns (and the id), for a reader that needs no more (compare: no timestamps, logs
        or times to read and convert)."""
        rows = self._rows_of(schema.run, campaign_id, schema.run.c.id,
                             (*only, "environment_id") if only else ())
        names = self._environment_names(campaign_id)
        try:
            return [Run(**row, environment=names[row["environment_id"]]) for row in rows]
        except KeyError:  # stored runs name their campaign's environments: the store is damaged
            bad = next(row for row in rows if row["environment_id"] not in names)
            raise StoreError(self.damaged(
                f"run {bad['id']} of campaign {campaign_id} names environment "
                f"{bad['environment_id']!r}, not one of the campaign's")) from None

    @_reads
    def _environment_names(self, campaign_id: int) -> dict[int, str]:
        table = schema.environment
        with self.engine.connect() as connection:
            return dict(connection.execute(sa.select(table.c.id, table.c.name).where(
                table.c.campaign_id == campaign_id)).all())

    @_reads
    def run_mark(self, campaign_id: int) -> tuple[int, int | None]:
        """(how many runs the campaign has, the newest one's id): what a digest is made from."""
        run = schema.run
        with self.engine.connect() as connection:
            self._check_types(connection, run, f"campaign_id = {int(campaign_id)}")
            count, last = connection.execute(sa.select(sa.func.count(run.c.id), sa.func.max(
                run.c.id)).where(run.c.campaign_id == campaign_id)).one()
        return int(count), last

    def put_digest(self, campaign_id: int, form: int, status: str, mark: tuple[int, int | None],
                   body: str) -> None:
        """Keep a campaign's digest (analysis/digest.py) in place of any older one; never
        into a store found damaged (StoreError: check_before_writing)."""
        self.check_before_writing()
        table = schema.campaign_digest
        with self.engine.begin() as connection:
            connection.execute(sa.delete(table).where(table.c.campaign_id == campaign_id))
            connection.execute(sa.insert(table).values(
                campaign_id=campaign_id, format=form, status=status, runs=mark[0],
                last_run_id=mark[1], body=body))

    def cell_stops(self, campaign_id: int) -> list[StoredCellStop]:
        """Why each cell stopped, in the order the cells stopped."""
        names = self._environment_names(campaign_id)
        rows = self._rows_of(schema.cell_stop, campaign_id, schema.cell_stop.c.id)
        for row in rows:
            if row["environment_id"] not in names:  # as for a run: the store is damaged
                raise StoreError(self.damaged(
                    f"cell_stop {row['id']} of campaign {campaign_id} names environment "
                    f"{row['environment_id']!r}, not one of the campaign's"))
        return [StoredCellStop(**row, environment=names[row["environment_id"]]) for row in rows]

    @_reads
    def _rows_of(self, table: sa.Table, campaign_id: int, order: sa.Column,
                 only: tuple[str, ...] = ()) -> list[dict[str, Any]]:
        wanted = [column for column in table.columns
                  if not only or column.name in only or column.name == "id"]
        keys = [column.name for column in wanted]
        stamps = [column.name for column in wanted if isinstance(column.type, sa.DateTime)]
        documents = [column.name for column in wanted if isinstance(column.type, sa.JSON)]
        truths = [column.name for column in wanted if isinstance(column.type, sa.Boolean)]
        # JSON columns come back as text and are decoded once per distinct text: the
        # params and flags of 93k runs are a few dozen distinct documents. The decoded
        # values are shared between rows: callers read them, never change them.
        # (a CAST in the SQL: PostgreSQL's driver would otherwise parse every row's JSON)
        columns = [sa.cast(column, sa.Text).label(column.name)
                   if column.name in documents else column for column in wanted]
        query = sa.select(*columns).where(table.c.campaign_id == campaign_id).order_by(order)
        converters = {**{key: _timestamp for key in stamps}, **{key: _truth for key in truths},
                      **{key: _document for key in documents}}
        with self.engine.connect() as connection:
            self._check_types(connection, table, f"campaign_id = {int(campaign_id)}")
        with _no_cycle_collection():
            rows = [dict(zip(keys, row)) for row in self._fetch(query)]
            for key, convert in converters.items():  # only timestamp, boolean and JSON columns
                _convert_column(rows, key, convert)
        return rows

    def damaged(self, detail: str) -> str:
        """The message for damage found here or by a reader above the store
        (analysis/results.py): the file (on SQLite) or the URL, the detail, the fix. The
        store is marked found damaged: this process writes nothing more into it."""
        return damage.damaged(self._where(), detail)

    def _where(self) -> str:
        return (str(Path(self.engine.url.database or "").resolve())
                if self.engine.dialect.name == "sqlite" else self.engine.url.render_as_string())

    def check_before_writing(self) -> None:
        """StoreError (damaged) where this process may not write into the store: a reader
        of this process called it damaged (damage.found: say, history found campaign 2's
        runs damaged after campaign 1's digest was made), or, on SQLite, the file fails
        PRAGMA quick_check (run once, before the first write: 0.4 s for a 115 MB store).
        Every write checks, a digest (a cache) as much as a run: a store that is damaged
        is left byte for byte as it was, for its owner to restore or recover."""
        if self._where() in damage.found:
            raise StoreError(damage.damaged(self._where(), "a read of it found damage"))
        if self.engine.dialect.name != "sqlite":
            return
        problems = self._quick_checked()
        if problems != ["ok"]:
            raise StoreError(self.damaged(" ".join("; ".join(problems).split())))

    def _quick_checked(self) -> list[str]:
        """SQLite's PRAGMA quick_check(3) of the file (['ok'] if sound), run once per Store;
        an error that says the file is damaged is its answer too."""
        if self._quick_check is None:
            try:
                with self.engine.connect() as connection:
                    self._quick_check = [str(row[0]) for row in connection.exec_driver_sql(
                        "PRAGMA quick_check(3)")]
            except sa.exc.DatabaseError as error:
                told = damage.explain(error)
                if told is None or "is damaged" not in told:
                    raise
                self._quick_check = [_first_line(error)]
        return self._quick_check

    def _check_types(self, connection: sa.Connection, table: sa.Table, where: str) -> None:
        """On SQLite, StoreError (damaged) if a row of table matching where holds a value of
        a type guestbench never writes in its column (_wrong_types)."""
        if self.engine.dialect.name != "sqlite":
            return
        problem = _bad_values(connection, table, where)
        if problem:
            raise StoreError(self.damaged(problem))

    @_reads
    def _verify_blocks(self) -> None:
        with self.engine.connect() as connection:
            packed.verify_all(connection)

    def _fetch(self, query: sa.Select) -> list[tuple[Any, ...]]:
        with self.engine.connect() as connection:
            return packed.fetch(connection, query)

    @_reads
    def samples(self, campaign_id: int, leave_out: Iterable[str] = ()) -> Samples:
        """The campaign's samples as columns, in the order they were stored; without the
        metrics named in leave_out (what a view does not show need not be read). An ended
        campaign's come from its packed block (store/packed.py), others' from the rows."""
        leave_out = tuple(leave_out)
        with _no_cycle_collection(), self.engine.connect() as connection:
            self._check_types(connection, schema.sample_block, f"campaign_id = {int(campaign_id)}")
            block = packed.unpack(connection, campaign_id)
            if block is not None:
                return block.without_metrics(leave_out)
            self._check_types(connection, schema.sample, "run_id IN (SELECT id FROM run WHERE "
                                                         f"campaign_id = {int(campaign_id)})")
            return Samples.from_tuples(packed.fetch(connection,
                                                    packed.rows_query(campaign_id, leave_out)))


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Python's cycle collector off while rows are read: a read makes hundreds of thousands
    of tuples and dicts, none in a cycle, and the collector's passes over them took a
    third of the read (93,000 runs: 0.6 s against 0.35 s)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _truth(value: Any) -> bool | None:
    """A stored boolean: SQLite gives 0 and 1."""
    return None if value is None else bool(value)


def _document(value: Any) -> Any:
    """A stored JSON document: text from SQLite, already decoded by some drivers (psycopg)."""
    return json.loads(value) if isinstance(value, str) else value


def _convert_column(rows: list[dict[str, Any]], key: str, convert: Any) -> None:
    """row[key] = convert(row[key]) in every row, called once per distinct value (a column
    of 93k runs' flags holds a handful of texts); a value that cannot be hashed (a document
    the driver decoded) is converted on its own."""
    done: dict[Any, Any] = {}
    for row in rows:
        value = row[key]
        try:
            row[key] = done[value]
        except KeyError:
            row[key] = done[value] = convert(value)
        except TypeError:
            row[key] = convert(value)


def _timestamp(value: Any) -> dt.datetime | None:
    """A stored timestamp in UTC, whether the driver gives text (SQLite) or a datetime."""
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value if "+" in value else value + "+00:00")
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=dt.timezone.utc)


def _utc(row: dict[str, Any]) -> dict[str, Any]:
    """Timestamps are stored in UTC; SQLite hands them back without the offset."""
    for key, value in row.items():
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            row[key] = value.replace(tzinfo=dt.timezone.utc)
    return row


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)
