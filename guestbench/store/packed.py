"""A finished campaign's samples kept a second time, as one row of three packed columns.

report and compare read every sample of a campaign. As rows, 340,000 samples cost
0.5 s to read and convert here; as one block of little-endian arrays (run ids, a
code per sample into the campaign's (metric, unit) pairs, values) they cost a few
milliseconds. The sample rows stay the record: the block is written when a
campaign ends (Store.finish_campaign), and a reader uses it only if it holds as
many samples as the rows do, so a block that a later write left behind is never
read (it is replaced when the campaign ends again). Anything else, and every
campaign still running, is read from the rows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import sqlalchemy as sa

from guestbench.store import schema
from guestbench.store.columns import Samples

# How the block's columns are laid out; a reader ignores a block of another layout.
LAYOUT = 1
_RUN_ID, _KIND, _VALUE = np.dtype("<i8"), np.dtype("<i4"), np.dtype("<f8")


def rows_query(campaign_id: int, leave_out: tuple[str, ...] = ()) -> sa.Select:
    """(run_id, metric, unit, value) of the campaign's samples, in the order they were stored."""
    s, r = schema.sample, schema.run
    query = (sa.select(s.c.run_id, s.c.metric, s.c.unit, s.c.value)
             .join(r, r.c.id == s.c.run_id).where(r.c.campaign_id == campaign_id)
             .order_by(s.c.id))
    if leave_out:
        query = query.where(s.c.metric.not_in(sorted(leave_out)))
    return query


def fetch(connection: sa.Connection, query: sa.Select) -> list[tuple[Any, ...]]:
    """The rows of a query through the driver's own cursor: SQLAlchemy's result rows and
    type processing cost more than the fetch itself (0.8 s of 1.4 s for 500,000
    samples). Callers convert timestamps and JSON themselves."""
    sql = str(query.compile(dialect=connection.dialect, compile_kwargs={"literal_binds": True}))
    cursor = connection.connection.cursor()
    try:
        cursor.execute(sql)
        return cursor.fetchall()
    finally:
        cursor.close()


def pack(connection: sa.Connection, campaign_id: int) -> int:
    """Write (or replace) the campaign's block from its sample rows; how many it holds."""
    samples = Samples.from_tuples(fetch(connection, rows_query(campaign_id)))
    block = schema.sample_block
    connection.execute(sa.delete(block).where(block.c.campaign_id == campaign_id))
    connection.execute(sa.insert(block).values(
        campaign_id=campaign_id, layout=LAYOUT, size=len(samples),
        kinds=[list(kind) for kind in samples.kinds],
        run_id=samples.run_id.astype(_RUN_ID).tobytes(),
        kind=samples.kind.astype(_KIND).tobytes(),
        value=samples.value.astype(_VALUE).tobytes()))
    return len(samples)


def pack_ended(connection: sa.Connection) -> None:
    """Pack every campaign that has ended (a store migrated from before the blocks)."""
    campaign = schema.campaign
    ended = connection.execute(sa.select(campaign.c.id).where(campaign.c.status != "running")
                               .order_by(campaign.c.id)).scalars().all()
    for campaign_id in ended:
        pack(connection, campaign_id)


def unpack(connection: sa.Connection, campaign_id: int) -> Samples | None:
    """The campaign's samples from its block, or None when there is no block to trust:
    none, another layout, or not as many samples as the rows hold now."""
    block = schema.sample_block
    row = connection.execute(sa.select(block).where(block.c.campaign_id == campaign_id)).first()
    if row is None or row.layout != LAYOUT:
        return None
    s, r = schema.sample, schema.run
    stored = connection.execute(
        sa.select(sa.func.count()).select_from(s).join(r, r.c.id == s.c.run_id)
        .where(r.c.campaign_id == campaign_id)).scalar()
    columns = [np.frombuffer(row.run_id, dtype=_RUN_ID), np.frombuffer(row.kind, dtype=_KIND),
               np.frombuffer(row.value, dtype=_VALUE)]
    if stored != row.size or any(column.size != row.size for column in columns):
        return None
    run_id, kind, value = columns  # native, writable copies of the stored bytes
    return Samples(run_id.astype(np.int64), kind.astype(np.int32), value.astype(np.float64),
                   tuple((metric, unit) for metric, unit in row.kinds))
