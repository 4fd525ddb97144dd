"""The store's tables (SQLAlchemy Core, portable types) and the schema version history."""

from __future__ import annotations

import sqlalchemy as sa

# Version history (bump SCHEMA_VERSION and append a migration for every change):
#   1  campaign, host, environment, run, sample as in DESIGN.md, plus
#      campaign.baseline and campaign.log_dir, and schema_meta.
SCHEMA_VERSION = 1

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

campaign = sa.Table(
    "campaign", metadata,
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
)

environment = sa.Table(
    "environment", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("campaign_id", sa.Integer, sa.ForeignKey("campaign.id"), nullable=False, index=True),
    sa.Column("name", sa.String(128), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("spec", sa.JSON, nullable=False),
    sa.Column("available", sa.Boolean, nullable=False),
    sa.Column("probe", sa.Text, nullable=False),  # the probe's one-line answer
    sa.Column("position", sa.Integer, nullable=False),  # order in the plan = column order
)

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

# MIGRATIONS[n] takes a store at version n to n+1; version 0 is an empty database.
MIGRATIONS = {
    0: lambda connection: metadata.create_all(connection),
}
