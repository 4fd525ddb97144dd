"""The results store, its face: open(url) gives a Store (SQLite or PostgreSQL) that keeps
every raw sample, run by run.

Where things are: engine.py (the Store, open, migrations, retries), records.py (what the
runner hands over), errors.py, version.py (the schema version), schema.py (the tables),
packed.py and columns.py (samples packed per campaign), damage.py (a damaged file
explained), digest_reader.py (a digest read without the engine), pool.py and grants.py
(the host pool's rows and database roles).
"""

from __future__ import annotations

from typing import Any

from guestbench.store.errors import StoreError
from guestbench.store.version import SCHEMA_VERSION

DEFAULT_URL = "sqlite:///guestbench.sqlite"  # where the store is when no --db is given

__all__ = ["DEFAULT_URL", "SCHEMA_VERSION", "Store", "StoreError", "Unreachable", "check", "open"]
_ENGINE_NAMES = {"Store", "Unreachable", "check", "open"}


def __getattr__(name: str) -> Any:
    """The engine's names, loaded on first use: SQLAlchemy takes 0.2 s to import, and a
    report answered from a campaign's digest, or a command that only names StoreError or
    RunRecord, never needs it."""
    if name in _ENGINE_NAMES:
        from guestbench.store import engine  # deferred: SQLAlchemy's import (reason above)
        return getattr(engine, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
