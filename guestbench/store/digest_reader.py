"""A campaign's digest read straight from a SQLite store, with Python's own sqlite3.

The summary of a campaign needs one row (campaign_digest) and two counts; loading the
store's engine to read them costs more than the rest of `report`. Only an existing
SQLite store at this schema version is read here, read-only; anything else (another
database, an older or newer store, a damaged file, a missing digest) answers None, and
the caller takes the ordinary path, which migrates, checks and explains.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from guestbench.store.version import SCHEMA_VERSION

PREFIX = "sqlite:///"


def digest_text(url: str, selector: str | None, form: int) -> str | None:
    """The digest of the campaign `selector` names (id or name; None: the latest), if it is
    of this format and was made from the runs the campaign has now; else None."""
    connection = _connect(url)
    if connection is None:
        return None
    try:
        return _read(connection, selector, form)
    except (sqlite3.Error, ValueError, TypeError):
        return None
    finally:
        connection.close()


def every_digest(url: str, form: int) -> list[tuple[int, str, str | None]] | None:
    """Every campaign of the store in id order: (id, status, its digest or None where it has
    no digest of its present runs); None where the store cannot be read here."""
    connection = _connect(url)
    if connection is None:
        return None
    try:
        if not _current(connection):
            return None
        out = []
        for campaign_id, status in connection.execute(
                "SELECT id, status FROM campaign ORDER BY id").fetchall():
            out.append((campaign_id, status, _digest(connection, campaign_id, status, form)))
        return out
    except (sqlite3.Error, ValueError, TypeError):
        return None
    finally:
        connection.close()


def _connect(url: str) -> sqlite3.Connection | None:
    if not url.startswith(PREFIX) or "?" in url:
        return None
    path = Path(url[len(PREFIX):])
    if not path.is_file():
        return None
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return None


def _current(connection: sqlite3.Connection) -> bool:
    version = connection.execute(
        "SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
    return version is not None and version[0] == str(SCHEMA_VERSION)


def _digest(connection: sqlite3.Connection, campaign_id: int, status: str,
            form: int) -> str | None:
    row = connection.execute(
        "SELECT format, status, runs, last_run_id, body FROM campaign_digest "
        "WHERE campaign_id = ?", (campaign_id,)).fetchone()
    if row is None:
        return None
    runs, last = connection.execute(
        "SELECT count(id), max(id) FROM run WHERE campaign_id = ?", (campaign_id,)).fetchone()
    if tuple(row[:4]) != (form, status, runs, last):
        return None  # made from other runs, or of another format: derived again
    return row[4]


def _read(connection: sqlite3.Connection, selector: str | None, form: int) -> str | None:
    if not _current(connection):
        return None
    campaign = _campaign(connection, selector)
    if campaign is None:
        return None
    return _digest(connection, *campaign, form)


def _campaign(connection: sqlite3.Connection, selector: str | None) -> tuple[int, str] | None:
    """(id, status) of the campaign as Store.campaign chooses it."""
    if selector is None:
        return connection.execute(
            "SELECT id, status FROM campaign ORDER BY id DESC LIMIT 1").fetchone()
    as_id = int(selector) if selector.isdigit() and 0 < int(selector) < 2**63 else -1
    return connection.execute(
        "SELECT id, status FROM campaign WHERE id = ? OR name = ? ORDER BY id DESC LIMIT 1",
        (as_id, selector)).fetchone()
