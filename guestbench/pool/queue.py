"""The pool's queue: procrastinate over the store's own PostgreSQL database.

Each host has a queue of its own, `host:NAME`, which only that host's worker reads, with
one job at a time: a job is bound to its host, and two benchmarks never run on one host
at once. A job runs its campaign as a child `guestbench run` (or `run --resume` when the
group already has a campaign on this host that did not finish), so that a job run again
after its worker died takes up the campaign where it stopped.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import procrastinate
import sqlalchemy as sa

from guestbench import host, store
from guestbench.plan import build as plan_build
from guestbench.plan.errors import PlanError
from guestbench.pool import policy
from guestbench.process import proc, reaper
from guestbench.store import pool as pool_rows

TASK = "guestbench.run_on_host"


class JobFailed(Exception):
    """The campaign's guestbench ended with an error; its message has the end of its stderr."""


class JobRefused(JobFailed):
    """The worker's policy does not let it run the plan (pool/policy.py); nothing ran."""


def queue_of(host: str) -> str:
    return f"host:{host}"


def conninfo(url: str) -> str:
    """psycopg's connection string for the store's SQLAlchemy URL."""
    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def app_for(url: str, logs: Path | None = None,
            allow: list[str] | None = None) -> procrastinate.App:
    """The queue's app; logs: where the campaigns that its jobs run keep their run logs;
    allow: what the worker's operator lets plans run beyond the defaults (policy.py)."""
    # one job at a time needs few connections: one that listens for new jobs, one or two
    # for queries (psycopg_pool's default keeps 4 open per worker, 200 for 50 workers)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(
        conninfo=conninfo(url), min_size=1, max_size=3))

    @app.task(name=TASK)
    def run_on_host(group_id: int, host: str) -> None:
        run_job(url, group_id, host, logs or Path("guestbench-logs"), allow or [])

    return app


def ensure_schema(engine: sa.Engine, app: procrastinate.App) -> None:
    """procrastinate's tables, created once: under an advisory lock, so that workers that
    start together do not create them twice. Whether they exist is read from pg_class by
    a query, which sees what a worker that held the lock before committed; to_regclass
    reads the server process's own cache, which may still hold an earlier "no such
    table" (a worker checks its grants on the queue's tables first): 5 of 45 starts of
    three workers at once failed with "type procrastinate_job_status already exists"."""
    with engine.begin() as connection:
        connection.execute(sa.text("SELECT pg_advisory_xact_lock(7305119)"))
        if connection.execute(sa.text(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class WHERE relname = "
                "'procrastinate_jobs' AND relnamespace = "
                "(SELECT oid FROM pg_catalog.pg_namespace WHERE nspname = current_schema()))"
        )).scalar():
            return
        cursor = connection.connection.cursor()  # the driver's own: the SQL holds % signs
        cursor.execute(app.schema_manager.get_schema())


def run_job(url: str, group_id: int, host: str, logs: Path, allow: list[str]) -> None:
    """The job of one host of a group: a new campaign, or the rest of the one it began."""
    opened = store.open(url, create=False)
    try:
        group = pool_rows.group(opened.engine, str(group_id))
        mine = [row for row in pool_rows.campaigns_of(opened.engine, group_id)
                if row.pool_host == host]
    finally:
        opened.engine.dispose()
    if group is None:
        raise JobFailed(f"group {group_id} is not in the store")
    base = [sys.executable, "-m", "guestbench", "run", "--db", url, "--quiet",
            "--logs", str(logs.resolve())]
    with tempfile.TemporaryDirectory(prefix="guestbench-job-") as folder, _reaped(folder):
        if mine and mine[-1].status == "finished":
            return
        plan_file = Path(folder) / Path(group.plan_source).name
        plan_file.write_text(group.plan_text)
        refused = _refusal(plan_file, allow)
        if refused:
            opened = store.open(url, create=False)
            try:
                pool_rows.refuse(opened.engine, group_id, host, f"unsupported: {refused}")
            finally:
                opened.engine.dispose()
            raise JobRefused(refused)
        if mine:
            argv = [*base, "--resume", str(mine[-1].id)]
        else:
            argv = [*base, str(plan_file), "--pool-group", str(group_id), "--pool-host", host]
        logs.mkdir(parents=True, exist_ok=True)
        said = logs.resolve() / f"group{group_id}-{host}.stderr.log"  # kept on this host
        with open(said, "a") as stderr:
            done = subprocess.run(argv, cwd=folder, stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=stderr,
                                  env={**os.environ, proc.PARENT_ENV: str(os.getpid())})
    # a campaign that finished is done, whatever its runs gave: `run` exits 1 when some
    # did not end ok, and they are stored (a job run again would find it finished too)
    if done.returncode != 0 and not _finished(url, group_id, host):
        tail = said.read_text(errors="replace").strip()[-600:]
        raise JobFailed(f"guestbench exited with {done.returncode} ({said}): {tail}")


def _finished(url: str, group_id: int, host: str) -> bool:
    """Did the host's latest campaign of the group finish (every run it owed ran)?"""
    opened = store.open(url, create=False)
    try:
        mine = [row for row in pool_rows.campaigns_of(opened.engine, group_id)
                if row.pool_host == host]
    finally:
        opened.engine.dispose()
    return bool(mine) and mine[-1].status == "finished"


@contextlib.contextmanager
def _reaped(folder: str):
    """The job's folder goes even if the worker is killed (reaper.py)."""
    reaper.KEEPER.folder(folder)
    try:
        yield
    finally:
        reaper.KEEPER.folder_gone(folder)


def _refusal(plan_file: Path, allow: list[str]) -> str | None:
    """Why this worker may not run the plan, read as this host resolves it; None if it may."""
    try:
        the_plan = plan_build.load(plan_file, host.collect())
    except PlanError as error:
        return f"the plan does not load on this host: {error}"
    return policy.refusal(the_plan, allow)

