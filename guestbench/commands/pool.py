"""The pool's commands: worker (one host of the pool), submit (a plan to some hosts), hosts
(the pool as it is now) and grants (what each role of the pool may do in the store)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click

from guestbench import store
from guestbench.commands.arguments import BadInput, names
from guestbench.plan.errors import PlanError

# Every pool command reads the store through SQLAlchemy, and most through procrastinate: they
# are imported inside the commands (each line says what it costs), which --help, run and
# report never pay.


@click.command()
@click.option("--db", required=True, help="the pool's store: a PostgreSQL URL")
@click.option("--name", help="this host's name in the pool  [default: its hostname]")
@click.option("--labels", default="", help="what this host offers, comma-separated "
                                           "(kvm,xen-dom0,...): submit --labels picks by them")
@click.option("--logs", "logs_dir", type=click.Path(path_type=Path),
              default=Path("guestbench-logs"), show_default=True,
              help="where the campaigns this worker runs keep their run logs")
@click.option("--allow", "allowed", default="", help="also run plans with these, comma-"
              "separated: command (environments), exec (workloads), binary (own program or "
              "kernel paths)  [default: none of them]")
def worker(db: str, name: str | None, labels: str, logs_dir: Path, allowed: str) -> None:
    """Serve as one host of the pool: run the campaigns queued for it, one at a time."""
    import socket  # deferred: 3 ms

    from guestbench.pool import worker as serving  # deferred: procrastinate, 230 ms
    opened = _pool_store(db, "worker")
    name = name or socket.gethostname()
    _no_other_worker(opened, name)
    click.echo(f"guestbench: worker {name!r} ({labels or 'no labels'}) takes the jobs of "
               f"queue host:{name} from {opened.engine.url.render_as_string()}", err=True)
    from guestbench.pool import policy  # deferred: the plans' schema, 120 ms
    allow = list(names(allowed, "--allow")) if allowed else []
    unknown = [word for word in allow if word not in policy.PERMISSIONS]
    if unknown:
        raise BadInput(f"--allow: unknown {', '.join(unknown)} (fix: use "
                       f"{', '.join(policy.PERMISSIONS)})")
    click.echo(f"guestbench: plans this worker runs: built-in kinds and workloads"
               f"{' and ' + ', '.join(allow) if allow else ' only'}", err=True)
    serving.serve(opened, name, list(names(labels, "--labels")) if labels else [], allow,
                  logs_dir)


@click.command()
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option("--db", required=True, help="the pool's store: a PostgreSQL URL")
@click.option("--hosts", "host_names", help="the pool hosts to run it on, comma-separated")
@click.option("--labels", help="or every host with all of these labels, comma-separated")
@click.option("--name", help="the group's name  [default: the plan's file name]")
def submit(plan_file: Path, db: str, host_names: str | None, labels: str | None,
           name: str | None) -> None:
    """Queue PLAN_FILE as one campaign on each chosen host of the pool (a campaign group)."""
    from guestbench import host  # deferred: 13 ms
    from guestbench.plan import build as plan_build  # deferred: pydantic, 160 ms
    from guestbench.pool import queue  # deferred: procrastinate, 230 ms
    from guestbench.store import pool as pool_rows  # deferred: SQLAlchemy, 140 ms

    try:
        plan_build.load(plan_file, host.collect())  # a plan that cannot run anywhere is caught here
    except PlanError as error:
        raise BadInput(str(error)) from None
    opened = _pool_store(db, "submitter")
    known = {row.name: row for row in pool_rows.hosts(opened.engine)}
    if bool(host_names) == bool(labels):
        raise BadInput("submit: give --hosts or --labels, one of them (fix: e.g. --hosts "
                       f"{','.join(known) or 'NAME'})")
    if host_names:
        chosen = list(names(host_names, "--hosts"))
        unknown = [name for name in chosen if name not in known]
        if unknown:
            raise BadInput(f"--hosts: {', '.join(unknown)} not in the pool (fix: start "
                           "'guestbench worker' there, or pick from 'guestbench hosts': "
                           f"{', '.join(known) or 'none yet'})")
    else:
        wanted = set(names(labels, "--labels"))
        chosen = [name for name, row in known.items() if wanted <= set(row.labels)]
        if not chosen:
            raise BadInput(f"--labels: no host of the pool has {', '.join(sorted(wanted))} "
                           "(fix: see 'guestbench hosts')")
    group_name = name or plan_file.stem
    group_id = pool_rows.create_group(opened.engine, group_name, plan_file.read_text(),
                                      str(plan_file), chosen)
    app = queue.app_for(db)
    queue.ensure_schema(opened.engine, app)
    with app.open():
        task = app.tasks[queue.TASK]
        for host_name in chosen:
            task.configure(queue=queue.queue_of(host_name), lock=queue.queue_of(host_name)) \
                .defer(group_id=group_id, host=host_name)
    click.echo(f"group {group_id} ({group_name!r}): queued on {', '.join(chosen)}")


@click.command()
@click.option("--db", required=True, help="the pool's store: a PostgreSQL URL")
def hosts(db: str) -> None:
    """The pool's hosts: labels, facts, last heartbeat, the job each runs now."""
    from guestbench.report.listing import Column, draw  # deferred: rich, 21 ms
    from guestbench.store import pool as pool_rows  # deferred: SQLAlchemy, 140 ms
    opened = _pool_store(db)
    busy = _running_jobs(opened)
    now = dt.datetime.now(dt.timezone.utc)
    rows = []
    for row in pool_rows.hosts(opened.engine):
        facts = row.facts
        age = (now - row.heartbeat_at).total_seconds()
        rows.append([row.name, ",".join(row.labels) or "-",
                     f"{facts.get('cpu_model', '?')} x{facts.get('logical_cpus', '?')}",
                     str(facts.get("kernel", "?")), f"{age:.0f} s ago",
                     busy.get(row.name, "-")])
    click.echo(draw("Hosts of the pool", [
        Column("host", whole=True), Column("labels"), Column("CPU"), Column("kernel"),
        Column("heartbeat", whole=True), Column("running now")], rows), nl=False)


def _pool_store(db: str, role: str | None = None):
    """The pool's store, opened (made or migrated); role: what this command will do in it
    (worker, submitter), checked now."""
    try:
        if store.check(db).dialect.name != "postgresql":  # said before anything is written
            raise BadInput(f"--db {db!r}: a host pool shares one PostgreSQL store (fix: "
                           "--db postgresql://USER@HOST/DATABASE)")
        opened = store.open(db)
        if role:
            opened.require(role)
    except store.StoreError as error:
        raise BadInput(str(error)) from None
    return opened


def _no_other_worker(opened, name: str) -> None:
    from guestbench.process import proc  # deferred: 8 ms
    from guestbench.store import pool as pool_rows  # deferred: SQLAlchemy, 140 ms
    for row in pool_rows.hosts(opened.engine):
        if row.name == name and proc.still_running(row.worker):
            raise BadInput(f"worker {name!r} runs already here (process {row.worker['pid']})"
                           " (fix: stop it, or give this one another --name)")


def _running_jobs(opened) -> dict[str, str]:
    """host name -> 'job N (group G)' for the jobs being done now."""
    import sqlalchemy as sa  # deferred: 140 ms
    with opened.engine.connect() as connection:
        if not connection.execute(sa.text("SELECT to_regclass('procrastinate_jobs')")).scalar():
            return {}
        rows = connection.execute(sa.text(
            "SELECT id, queue_name, args FROM procrastinate_jobs WHERE status = 'doing'")).all()
    return {queue.removeprefix("host:"): f"job {job} (group {args.get('group_id')})"
            for job, queue, args in rows}


@click.command()
@click.argument("role")
@click.option("--as", "kind", required=True, type=click.Choice(["worker", "submitter", "reader"]),
              help="what the role is for: worker (guestbench worker), submitter (submit, "
                   "hosts, report), reader (report, compare, history, hosts)")
@click.option("--db", required=True, help="the pool's store: a PostgreSQL URL, as its owner")
@click.option("--apply", "apply_now", is_flag=True, help="grant now; without it, print the "
              "SQL (either way the store and the queue's tables are made or migrated first)")
def grants(role: str, kind: str, db: str, apply_now: bool) -> None:
    """Give ROLE (an existing PostgreSQL role) what a pool worker, submitter or reader needs
    in the store, and nothing more (docs/pool.md)."""
    import sqlalchemy as sa  # deferred: 140 ms

    from guestbench.pool import queue  # deferred: procrastinate, 230 ms
    from guestbench.store import grants as granting  # deferred: SQLAlchemy, 140 ms
    opened = _pool_store(db)
    with opened.engine.connect() as connection:
        exists = connection.execute(sa.text("SELECT 1 FROM pg_roles WHERE rolname = :r"),
                                    {"r": role}).scalar()
        where = connection.execute(sa.text("SELECT current_schema()")).scalar()
    sql = granting.statements(role, kind, where)
    queue.ensure_schema(opened.engine, queue.app_for(db))  # the queue's tables, granted too
    if not apply_now:
        click.echo(";\n".join(sql) + ";")
        return
    if not exists:
        raise BadInput(f"grants: no role {role!r} in this server (fix: CREATE ROLE "
                       f"{role} LOGIN PASSWORD '...' as a superuser first)")
    try:
        with opened.engine.begin() as connection:
            for statement in sql:
                connection.execute(sa.text(statement))
    except sa.exc.ProgrammingError as error:
        raise BadInput(f"grants: {error.orig} (fix: run it as the store's owner)") from None
    click.echo(f"granted {role!r} what a {kind} needs ({len(sql)} statements)")


COMMANDS = (worker, submit, hosts, grants)
