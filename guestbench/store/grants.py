"""What each role of a pool may do in the PostgreSQL store: the GRANT statements, made from
the schema itself so that they follow it.

Three roles, each given only what its commands do (docs/pool.md lists them):

* ``worker`` (guestbench worker): reads everything; adds campaigns, environments, runs,
  samples, cell stops and packed blocks; updates its campaigns' status (and owner, host
  checks); deletes the runs of a campaign it resumes that were cut off midway (and their
  samples, cell stops, packed block); registers its host and beats its heartbeat; notes
  a refusal on a group; takes, finishes and retries the queue's jobs.
* ``submitter`` (guestbench submit, hosts, report, compare, history): reads everything;
  adds campaign groups; queues jobs.
* ``reader`` (report, compare, history, hosts): reads everything.

None of them may change the schema, drop or empty a table, or delete a campaign or a
group: the store's owner (who runs the migrations) keeps those rights.
"""

from __future__ import annotations

import sqlalchemy as sa

from guestbench.store import schema

ROLES = ("worker", "submitter", "reader")

# table -> privileges (a tuple of column names after a privilege limits it to them)
_WORKER = {
    "host": ["INSERT"],
    "campaign": ["INSERT", ("UPDATE", ("status", "finished_at", "host_checks", "owner",
                                       "end_reason"))],
    "environment": ["INSERT"],
    "run": ["INSERT", "DELETE"],
    "sample": ["INSERT", "DELETE"],
    "sample_block": ["INSERT", "DELETE"],
    "cell_stop": ["INSERT", "DELETE"],
    "campaign_digest": ["INSERT", "UPDATE", "DELETE"],
    "pool_host": ["INSERT", "DELETE", ("UPDATE", ("heartbeat_at",))],
    "campaign_group": [("UPDATE", ("refusals",))],
    "procrastinate_jobs": ["UPDATE"],
    "procrastinate_events": ["INSERT"],
    "procrastinate_workers": ["INSERT", "UPDATE", "DELETE"],
}
_SUBMITTER = {
    "campaign_group": ["INSERT"],
    "procrastinate_jobs": ["INSERT"],
    "procrastinate_events": ["INSERT"],
}
QUEUE_TABLES = ("procrastinate_jobs", "procrastinate_events", "procrastinate_workers",
                "procrastinate_periodic_defers")


def statements(role: str, kind: str, schema_name: str = "public") -> list[str]:
    """The SQL that gives `role` (an existing PostgreSQL role) what `kind` needs in the
    store whose tables are in schema `schema_name`."""
    if kind not in ROLES:
        raise ValueError(f"{kind!r} is not one of {', '.join(ROLES)}")
    who, where = _quoted(role), _quoted(schema_name)
    tables = [*schema.metadata.tables, *QUEUE_TABLES]
    out = [f"GRANT USAGE ON SCHEMA {where} TO {who}",
           f"GRANT SELECT ON {', '.join(f'{where}.{_quoted(t)}' for t in tables)} TO {who}"]
    extra = {"worker": _WORKER, "submitter": _SUBMITTER, "reader": {}}[kind]
    for table, privileges in extra.items():
        for privilege in privileges:
            if isinstance(privilege, tuple):
                name, columns = privilege
                text = f"{name} ({', '.join(_quoted(c) for c in columns)})"
            else:
                text = privilege
            out.append(f"GRANT {text} ON {where}.{_quoted(table)} TO {who}")
    if extra:  # new rows take ids from the tables' sequences
        out.append(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {where} TO {who}")
    return out


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# What storing a campaign takes (guestbench run, on any PostgreSQL store): the worker's
# rights over the result tables.
_STORE = {table: rights for table, rights in _WORKER.items()
          if table in ("host", "campaign", "environment", "run", "sample", "sample_block",
                       "cell_stop", "campaign_digest")}
NEEDS = {"run": _STORE, "worker": _WORKER, "submitter": _SUBMITTER}


def missing(connection, what: str) -> list[str]:
    """The rights that the connection's role lacks for `what` (run, worker, submitter), as
    'INSERT on run'; tables not made yet are left out (whoever makes them owns them)."""
    lacking = []
    for table, privileges in NEEDS[what].items():
        if connection.execute(sa.text("SELECT to_regclass(:t)"), {"t": table}).scalar() is None:
            continue
        for privilege in privileges:
            if isinstance(privilege, tuple):
                name, columns = privilege
                checks = [("SELECT has_column_privilege(:t, :c, :p)",
                           {"t": table, "c": column, "p": name}, f"{name} ({column}) on {table}")
                          for column in columns]
            else:
                checks = [("SELECT has_table_privilege(:t, :p)", {"t": table, "p": privilege},
                           f"{privilege} on {table}")]
            lacking += [text for sql, args, text in checks
                        if not connection.execute(sa.text(sql), args).scalar()]
    return lacking
