"""The store's tables (SQLAlchemy Core, portable types) and the schema version history."""

from __future__ import annotations

import sqlalchemy as sa

# Version history (bump SCHEMA_VERSION and append a migration for every change):
#   1  campaign, host, environment, run, sample (docs/results.md), plus
#      campaign.baseline and campaign.log_dir, and schema_meta.
#   2  campaign.host_checks (noise checks before and after the campaign) and
#      cell_stop (why each cell stopped repeating).
#   3  environment.facts (what ran: the VMM's version output, the guest kernel's version).
#   4  sample_block: each ended campaign's samples a second time, as packed columns
#      (what report and compare read; store/packed.py). Campaigns that had ended
#      are packed when a store is migrated to it.
#   5  campaign.owner: the process that runs the campaign (host, pid, start time), so that
#      a campaign left 'running' by a killed process can be told from one still running.
#   6  the host pool: pool_host (each worker's host: labels, facts, heartbeat),
#      campaign_group (a plan submitted to several hosts) and campaign.group_id,
#      campaign.pool_host (which host of the pool ran it).
#   7  campaign.end_reason: why a campaign ended other than by finishing, where that is
#      known (its process gone while the campaign was still 'running').
#   8  campaign_digest: a campaign's summary as report draws it (analysis/digest.py), kept so
#      that report answers at once; it names the runs it was made from, and a campaign whose
#      runs changed since is summarised again.
#   9  sample_block.checksum: a CRC-32 of the block's kinds and columns, checked before a
#      block is used (store/packed.py); the ended campaigns are packed again when a store
#      is migrated to it.
from guestbench.store.version import SCHEMA_VERSION  # noqa: E402 - after its history
PACKED_SINCE = 4  # the version that added sample_block
CHECKSUM_SINCE = 9  # the version that added its checksum: older blocks are packed again

metadata = sa.MetaData()

schema_meta = sa.Table(
    "schema_meta", metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(256), nullable=False),
)

host = sa.Table(
    "host", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("fingerprint", sa.String(64), nullable=False, unique=True),
    sa.Column("facts", sa.JSON, nullable=False),
)



def _campaign_columns(version: int) -> list[sa.Column]:
    """The campaign table's columns as they were at a schema version (fresh objects each call)."""
    columns = [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True)),
        sa.Column("guestbench_version", sa.String(32), nullable=False),
        sa.Column("plan", sa.JSON, nullable=False),
        sa.Column("host_id", sa.Integer, sa.ForeignKey("host.id"), nullable=False),
        sa.Column("host_facts", sa.JSON, nullable=False),  # this campaign's reading (load changes)
        sa.Column("baseline", sa.String(128)),
        sa.Column("log_dir", sa.Text, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),  # running, finished, interrupted
    ]
    if version >= 2:
        columns.append(_host_checks_column())
    if version >= 5:
        columns.append(_owner_column())
    if version >= 6:
        columns += _group_columns()
    if version >= 7:
        columns.append(_end_reason_column())
    return columns


def _end_reason_column() -> sa.Column:
    return sa.Column("end_reason", sa.Text)


def _group_columns() -> list[sa.Column]:
    return [sa.Column("group_id", sa.Integer),  # campaign_group.id; null outside the pool
            sa.Column("pool_host", sa.String(128))]  # the pool host (worker --name) that ran it


def _owner_column() -> sa.Column:
    # {"hostname", "pid", "started"}: started is the process's start time in clock ticks
    # since boot (/proc/PID/stat), which tells a live owner from a later process of that pid
    return sa.Column("owner", sa.JSON)


def _host_checks_column() -> sa.Column:
    # {"before", "after", "steal_pct", "warnings"}: see guestbench.host.noise_checks
    return sa.Column("host_checks", sa.JSON)


campaign = sa.Table("campaign", metadata, *_campaign_columns(SCHEMA_VERSION))

def _environment_columns(version: int) -> list[sa.Column]:
    """The environment table's columns as they were at a schema version (fresh objects each call)."""
    columns = [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), nullable=False,
                  index=True),
        sa.Column("name", sa.String(128), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("spec", sa.JSON, nullable=False),
        sa.Column("available", sa.Boolean, nullable=False),
        sa.Column("probe", sa.Text, nullable=False),  # the probe's one-line answer
        sa.Column("position", sa.Integer, nullable=False),  # order in the plan = column order
    ]
    if version >= 3:
        columns.append(_environment_facts_column())
    return columns


def _environment_facts_column() -> sa.Column:
    # {"vmm_version": first line of the VMM's --version, "guest_kernel": "6.1.0-41-amd64", ...};
    # null when the environment recorded none (kinds without a VMM or guest kernel, old stores)
    return sa.Column("facts", sa.JSON)


environment = sa.Table("environment", metadata, *_environment_columns(SCHEMA_VERSION))

run = sa.Table(
    "run", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), nullable=False, index=True),
    sa.Column("environment_id", sa.Integer, sa.ForeignKey("environment.id"), nullable=False),
    sa.Column("workload", sa.String(128), nullable=False),
    sa.Column("label", sa.String(256), nullable=False),  # workload with swept parameters
    sa.Column("params", sa.JSON, nullable=False),
    sa.Column("repetition", sa.Integer, nullable=False),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text, nullable=False),
    sa.Column("flags", sa.JSON, nullable=False),
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("host_seconds", sa.Float, nullable=False),
    sa.Column("log_path", sa.Text),
)

sample = sa.Table(
    "sample", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("run.id"), nullable=False, index=True),
    sa.Column("metric", sa.String(128), nullable=False),
    sa.Column("unit", sa.String(32), nullable=False),
    sa.Column("value", sa.Float, nullable=False),
)

# One row per cell (environment x workload label): how many runs it got and why it stopped.
# If it ever changes, freeze its version-2 shape for MIGRATIONS[1] as campaign's is frozen.
cell_stop = sa.Table(
    "cell_stop", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), nullable=False, index=True),
    sa.Column("environment_id", sa.Integer, sa.ForeignKey("environment.id"), nullable=False),
    sa.Column("label", sa.String(256), nullable=False),
    sa.Column("runs", sa.Integer, nullable=False),
    sa.Column("ok_runs", sa.Integer, nullable=False),
    # converged, max-runs, max-time, out-of-reach, failing, unavailable, unsupported, interrupted, fixed
    sa.Column("reason", sa.String(16), nullable=False),
    sa.Column("half_width", sa.Float),  # relative half-width of the median's 95% interval
    sa.Column("target", sa.Float),  # the plan's target; null for a fixed repeat
)


def _sample_block_columns(version: int) -> list[sa.Column]:
    columns = [
        sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), primary_key=True,
                  autoincrement=False),
        sa.Column("layout", sa.Integer, nullable=False),  # packed.LAYOUT when written
        sa.Column("size", sa.Integer, nullable=False),  # samples in the block
        sa.Column("kinds", sa.JSON, nullable=False),  # [[metric, unit], ...]: what a code means
        sa.Column("run_id", sa.LargeBinary, nullable=False),  # little-endian int64 per sample
        sa.Column("kind", sa.LargeBinary, nullable=False),  # little-endian int32 per sample
        sa.Column("value", sa.LargeBinary, nullable=False),  # little-endian float64 per sample
    ]
    if version >= CHECKSUM_SINCE:
        columns.append(_checksum_column())
    return columns


def _checksum_column() -> sa.Column:
    return sa.Column("checksum", sa.BigInteger)  # CRC-32 (packed.checksum); None before 9


sample_block = sa.Table("sample_block", metadata, *_sample_block_columns(SCHEMA_VERSION))


campaign_digest = sa.Table(
    "campaign_digest", metadata,
    sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), primary_key=True,
              autoincrement=False),
    sa.Column("format", sa.Integer, nullable=False),  # analysis/digest.py's FORMAT
    sa.Column("status", sa.String(16), nullable=False),  # the campaign's, when it was made
    sa.Column("runs", sa.Integer, nullable=False),  # the campaign's runs, when it was made
    sa.Column("last_run_id", sa.Integer),  # the newest of them
    sa.Column("body", sa.Text, nullable=False),  # JSON: plain text, read without the engine
)


def _create_version_1(connection: sa.Connection) -> None:
    """The first schema exactly as it was, so that every later migration applies to it."""
    version_1 = sa.MetaData()
    for table in (schema_meta, host, run, sample):
        table.to_metadata(version_1)
    sa.Table("campaign", version_1, *_campaign_columns(1))
    sa.Table("environment", version_1, *_environment_columns(1))
    version_1.create_all(connection)


def _add_host_checks_and_cell_stop(connection: sa.Connection) -> None:
    column = _host_checks_column()
    column_type = column.type.compile(dialect=connection.dialect)
    connection.execute(sa.text(f"ALTER TABLE campaign ADD COLUMN {column.name} {column_type}"))
    cell_stop.create(connection)


def _add_environment_facts(connection: sa.Connection) -> None:
    column = _environment_facts_column()
    column_type = column.type.compile(dialect=connection.dialect)
    connection.execute(sa.text(f"ALTER TABLE environment ADD COLUMN {column.name} {column_type}"))


def _add_campaign_owner(connection: sa.Connection) -> None:
    column = _owner_column()
    column_type = column.type.compile(dialect=connection.dialect)
    connection.execute(sa.text(f"ALTER TABLE campaign ADD COLUMN {column.name} {column_type}"))


pool_host = sa.Table(
    "pool_host", metadata,
    sa.Column("name", sa.String(128), primary_key=True),  # guestbench worker --name
    sa.Column("labels", sa.JSON, nullable=False),  # ["kvm", "xen-dom0", ...]
    sa.Column("facts", sa.JSON, nullable=False),  # the host's facts when its worker started
    sa.Column("allow", sa.JSON, nullable=False),  # what its operator lets plans run (--allow)
    sa.Column("worker", sa.JSON, nullable=False),  # the worker process (proc.identity())
    sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
)

campaign_group = sa.Table(
    "campaign_group", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("plan_text", sa.Text, nullable=False),  # the plan file as submitted
    sa.Column("plan_source", sa.Text, nullable=False),  # its path where it was submitted
    sa.Column("plan_hash", sa.String(64), nullable=False),  # sha256 of plan_text
    sa.Column("submitted_by", sa.String(128), nullable=False),  # the database role
    sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
    sa.Column("hosts", sa.JSON, nullable=False),  # the pool hosts it was queued for
    sa.Column("refusals", sa.JSON, nullable=False),  # host -> why its worker ran nothing
)


def _add_pool(connection: sa.Connection) -> None:
    for column in _group_columns():
        column_type = column.type.compile(dialect=connection.dialect)
        connection.execute(sa.text(f"ALTER TABLE campaign ADD COLUMN {column.name} {column_type}"))
    pool_host.create(connection)
    campaign_group.create(connection)


def _add_sample_block(connection: sa.Connection) -> None:
    # its version-4 shape; the campaigns that had ended: Store.migrate packs them
    version_4 = sa.MetaData()
    campaign.to_metadata(version_4)  # what its foreign key names (not created here)
    sa.Table("sample_block", version_4, *_sample_block_columns(PACKED_SINCE)).create(connection)


def _add_end_reason(connection: sa.Connection) -> None:
    column = _end_reason_column()
    column_type = column.type.compile(dialect=connection.dialect)
    connection.execute(sa.text(f"ALTER TABLE campaign ADD COLUMN {column.name} {column_type}"))


def _add_campaign_digest(connection: sa.Connection) -> None:
    campaign_digest.create(connection)


def _add_block_checksum(connection: sa.Connection) -> None:
    column = _checksum_column()  # the blocks themselves: Store.migrate packs them again
    column_type = column.type.compile(dialect=connection.dialect)
    connection.execute(sa.text(f"ALTER TABLE sample_block ADD COLUMN {column.name} {column_type}"))


# MIGRATIONS[n] takes a store at version n to n+1; version 0 is an empty database.
# A migration must not change once released: a new schema gets a new migration.
MIGRATIONS = {
    0: _create_version_1,
    1: _add_host_checks_and_cell_stop,
    2: _add_environment_facts,
    3: _add_sample_block,
    4: _add_campaign_owner,
    5: _add_pool,
    6: _add_end_reason,
    7: _add_campaign_digest,
    8: _add_block_checksum,
}
