"""The host pool's rows in the store: each worker's host (labels, facts, heartbeat) and
the campaign groups that `guestbench submit` queues, one campaign per host."""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import sqlalchemy as sa

from guestbench.store import schema
from guestbench.store.records import Campaign, CampaignGroup, PoolHost


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def register_host(engine: sa.Engine, name: str, labels: list[str], facts: dict[str, Any],
                  allow: list[str], worker: dict[str, Any]) -> None:
    """The host's row, new or replaced (a worker that starts again says who it is now)."""
    table = schema.pool_host
    now = _now()
    with engine.begin() as connection:
        connection.execute(sa.delete(table).where(table.c.name == name))
        connection.execute(sa.insert(table).values(
            name=name, labels=labels, facts=facts, allow=allow, worker=worker, started_at=now,
            heartbeat_at=now))


def heartbeat(engine: sa.Engine, name: str) -> None:
    table = schema.pool_host
    with engine.begin() as connection:
        connection.execute(sa.update(table).where(table.c.name == name)
                           .values(heartbeat_at=_now()))


def hosts(engine: sa.Engine) -> list[PoolHost]:
    table = schema.pool_host
    with engine.connect() as connection:
        return [PoolHost(**_utc(dict(row))) for row in
                connection.execute(sa.select(table).order_by(table.c.name)).mappings()]


def create_group(engine: sa.Engine, name: str, plan_text: str, plan_source: str,
                 hosts: list[str]) -> int:
    """A campaign group for a plan queued on these hosts; submitted_by is the database role
    that submitted it (PostgreSQL's current_user)."""
    table = schema.campaign_group
    with engine.begin() as connection:
        role = connection.execute(sa.select(sa.func.current_user())).scalar() \
            if connection.dialect.name == "postgresql" else "local"
        return connection.execute(sa.insert(table).values(
            name=name, plan_text=plan_text, plan_source=plan_source,
            plan_hash=hashlib.sha256(plan_text.encode()).hexdigest(), submitted_by=role,
            submitted_at=_now(), hosts=hosts, refusals={})).inserted_primary_key[0]


def refuse(engine: sa.Engine, group_id: int, host: str, reason: str) -> None:
    """Record that this host's worker refused the group's plan, and why."""
    table = schema.campaign_group
    with engine.begin() as connection:
        current = connection.execute(sa.select(table.c.refusals).where(table.c.id == group_id)
                                     .with_for_update()).scalar() or {}
        connection.execute(sa.update(table).where(table.c.id == group_id)
                           .values(refusals={**current, host: reason}))


def group(engine: sa.Engine, selector: str) -> CampaignGroup | None:
    """A group by id or name (the latest of that name)."""
    table = schema.campaign_group
    as_id = int(selector) if selector.isdigit() else -1
    with engine.connect() as connection:
        row = connection.execute(
            sa.select(table).where(sa.or_(table.c.id == as_id, table.c.name == selector))
            .order_by(table.c.id.desc())).mappings().first()
    return CampaignGroup(**_utc(dict(row))) if row else None


def campaigns_of(engine: sa.Engine, group_id: int) -> list[Campaign]:
    """The group's campaigns (id, name, status, pool_host read), in the order they were made."""
    table = schema.campaign
    with engine.connect() as connection:
        return [Campaign(**row) for row in connection.execute(
            sa.select(table.c.id, table.c.name, table.c.status, table.c.pool_host)
            .where(table.c.group_id == group_id).order_by(table.c.id)).mappings()]


def campaigns_of_plan(engine: sa.Engine, plan_hash: str) -> list[int]:
    """Every campaign of every group that was submitted this plan (same hash), in order."""
    campaign, grouped = schema.campaign, schema.campaign_group
    with engine.connect() as connection:
        return list(connection.execute(
            sa.select(campaign.c.id).join(grouped, campaign.c.group_id == grouped.c.id)
            .where(grouped.c.plan_hash == plan_hash).order_by(campaign.c.id)).scalars())


def _utc(row: dict[str, Any]) -> dict[str, Any]:
    for key, value in row.items():
        if isinstance(value, str) and key.endswith("_at"):
            value = dt.datetime.fromisoformat(value)
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=dt.timezone.utc)
        row[key] = value
    return row
