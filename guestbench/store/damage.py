"""A store that cannot be used as it is: a damaged SQLite file or a full disk, told as one
message that names the file and the fix (the CLI exits 2 with it), never a traceback."""

from __future__ import annotations

import errno

# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xff)
SQLITE_CORRUPT, SQLITE_FULL = 11, 13


def explain(error: BaseException) -> str | None:
    """The message for an error that says the store or its disk is unusable; None for any
    other error."""
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return (f"no space left on the disk of {error.filename or 'a file guestbench writes'}"
                " (fix: free some space, or give --logs and --db on another disk; the runs "
                "stored before are kept)")
    if not type(error).__module__.startswith("sqlalchemy"):
        return None
    import sqlalchemy as sa
    if not isinstance(error, sa.exc.DBAPIError):
        return None
    code = getattr(error.orig, "sqlite_errorcode", None)
    if code is None:
        return None
    where = opened.get("sqlite", "(the SQLite store)")
    if code & 0xFF == SQLITE_CORRUPT:  # (not a database at all: store.migrate says so)
        return damaged(where, str(error.orig))
    if code & 0xFF == SQLITE_FULL:
        return (f"the disk of the store {where} is full ({error.orig}) (fix: free some space, "
                "or point --db at a store on another disk; the runs stored before are kept)")
    return None


def damaged(where: str, detail: str) -> str:
    return (f"the store {where} is damaged ({detail}); guestbench writes nothing into it "
            f"(fix: restore it from a copy; 'sqlite3 {where} .recover' may save its rows "
            "into a new file; or point --db at another store)")


# the SQLite file this process opened last (store.open), for the messages
opened: dict[str, str] = {}
