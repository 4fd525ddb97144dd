"""A finished campaign's samples kept a second time, as one row of three packed columns.

report and compare read every sample of a campaign. As rows, 340,000 samples cost
0.5 s to read and convert here; as one block of little-endian arrays (run ids, a
code per sample into the campaign's (metric, unit) pairs, values) they cost a few
milliseconds. The sample rows stay the record: the block is written when a
campaign ends (Store.finish_campaign), and a reader uses it only if it holds as
many samples as the rows do, so a block that a later write left behind is never
read (it is replaced when the campaign ends again). Anything else, and every
campaign still running, is read from the rows.

A block is checked before it is used: a CRC-32 of its kinds and columns, each column's
length, every code within the kinds, every run id one of the campaign's. A block that
fails is damage (SQLite's own checks do not look inside a blob), and is said so with the
file and the fix, never turned into an IndexError deep in a report.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import numpy as np
import sqlalchemy as sa

from guestbench.store import damage, schema
from guestbench.store.columns import Samples
from guestbench.store.errors import StoreError

# How the block's columns are laid out; a reader ignores a block of another layout.
# 2: with its checksum (1 had none: a store migrated to schema 9 packs its blocks again).
LAYOUT = 2
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
    kinds = [list(kind) for kind in samples.kinds]
    columns = (samples.run_id.astype(_RUN_ID).tobytes(), samples.kind.astype(_KIND).tobytes(),
               samples.value.astype(_VALUE).tobytes())
    connection.execute(sa.delete(block).where(block.c.campaign_id == campaign_id))
    connection.execute(sa.insert(block).values(
        campaign_id=campaign_id, layout=LAYOUT, size=len(samples), kinds=kinds,
        run_id=columns[0], kind=columns[1], value=columns[2],
        checksum=checksum(kinds, *columns)))
    return len(samples)


def checksum(kinds: list[list[str]], *columns: bytes) -> int:
    """CRC-32 of the kinds (as canonical JSON) and the three columns' bytes."""
    crc = zlib.crc32(json.dumps(kinds, separators=(",", ":")).encode())
    for column in columns:
        crc = zlib.crc32(column, crc)
    return crc


def pack_ended(connection: sa.Connection) -> None:
    """Pack every campaign that has ended (a store migrated from before the blocks)."""
    campaign = schema.campaign
    ended = connection.execute(sa.select(campaign.c.id).where(campaign.c.status != "running")
                               .order_by(campaign.c.id)).scalars().all()
    for campaign_id in ended:
        pack(connection, campaign_id)


def unpack(connection: sa.Connection, campaign_id: int) -> Samples | None:
    """The campaign's samples from its block, or None when there is no block to trust:
    none, another layout, or not as many samples as the rows hold now. A block that
    fails its checks raises StoreError (damaged)."""
    block = schema.sample_block
    try:
        row = connection.execute(sa.select(block).where(block.c.campaign_id == campaign_id)).first()
    except ValueError as error:  # its kinds' JSON does not parse
        raise _damaged(campaign_id, f"its kinds do not parse ({error})") from None
    if row is None or row.layout != LAYOUT:
        return None
    s, r = schema.sample, schema.run
    stored = connection.execute(
        sa.select(sa.func.count()).select_from(s).join(r, r.c.id == s.c.run_id)
        .where(r.c.campaign_id == campaign_id)).scalar()
    if stored != row.size:
        return None  # a later write left it behind (see the top): the rows are read
    run_ids = connection.execute(sa.select(r.c.id).where(r.c.campaign_id == campaign_id)).scalars()
    return checked(row, campaign_id, np.fromiter(run_ids, dtype=np.int64))


def checked(row: Any, campaign_id: int, run_ids: np.ndarray | None) -> Samples:
    """The block's samples after its checks (run_ids None: not checked against the runs)."""
    def fail(what: str) -> StoreError:
        return _damaged(campaign_id, what)

    kinds = row.kinds
    if not (isinstance(kinds, list) and all(isinstance(kind, list) and len(kind) == 2 and
                                            all(isinstance(part, str) for part in kind)
                                            for kind in kinds)):
        raise fail("its kinds are not [metric, unit] pairs")
    blobs = (bytes(row.run_id), bytes(row.kind), bytes(row.value))
    if row.checksum != checksum(kinds, *blobs):
        raise fail(f"checksum {row.checksum} where its bytes give {checksum(kinds, *blobs)}")
    for blob, dtype, name in zip(blobs, (_RUN_ID, _KIND, _VALUE), ("run ids", "codes", "values")):
        if len(blob) != row.size * dtype.itemsize:
            raise fail(f"{len(blob)} bytes of {name} for {row.size} samples")
    run_id, kind, value = (np.frombuffer(blob, dtype=dtype).astype(native) for blob, dtype, native
                           in zip(blobs, (_RUN_ID, _KIND, _VALUE),
                                  (np.int64, np.int32, np.float64)))
    if kind.size and (kind.min() < 0 or kind.max() >= len(kinds)):
        raise fail(f"codes {kind.min()} to {kind.max()} for {len(kinds)} kinds")
    if run_ids is not None and not np.isin(run_id, run_ids).all():
        raise fail("run ids that are not the campaign's")
    return Samples(run_id, kind, value, tuple((metric, unit) for metric, unit in kinds))


def verify_all(connection: sa.Connection) -> None:
    """Check every block of the current layout (before a command writes into the store):
    StoreError at the first that fails."""
    block = schema.sample_block
    ids = connection.execute(sa.select(block.c.campaign_id).where(block.c.layout == LAYOUT)
                             .order_by(block.c.campaign_id)).scalars().all()
    for campaign_id in ids:  # one block in memory at a time
        try:
            row = connection.execute(sa.select(block).where(
                block.c.campaign_id == campaign_id)).one()
        except ValueError as error:
            raise _damaged(campaign_id, f"its kinds do not parse ({error})") from None
        checked(row, campaign_id, None)


def _damaged(campaign_id: int, what: str) -> StoreError:
    return StoreError(damage.damaged(damage.opened.get("sqlite", "(the store)"),
                                     f"the packed samples of campaign {campaign_id}: {what}"))
