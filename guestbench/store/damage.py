"""A store that cannot be used as it is: a damaged SQLite file or a full disk, told as one
message that names the file and the fix (the CLI exits 2 with it), never a traceback."""

from __future__ import annotations

import errno

# SQLite's primary result codes (sqlite3.Error.sqlite_errorcode & 0xff)
SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 8, 11, 13, 26
# What Python's sqlite3 module says of a text column whose bytes are not UTF-8 (it gives
# the error no SQLite code: the bytes were read fine, the decoding failed)
UNDECODABLE = "Could not decode to UTF-8"


def explain(error: BaseException) -> str | None:
    """The message for an error that says the store or its disk is unusable, or that was
    raised while handling one (a full disk rolls SQLite's whole transaction back, and the
    savepoint's own rollback then fails with 'no such savepoint'); None for any other."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        told = _explain_one(error)
        if told is not None:
            return told
        error = error.__cause__ or error.__context__
    return None


def full_disk(error: BaseException) -> bool:
    """Whether error is (or was raised while handling) a full disk, the store's or another
    file's: a campaign it stops can be resumed once there is room again."""
    told = explain(error)
    return told is not None and ("no space left" in told or "is full" in told)


def _explain_one(error: BaseException) -> str | None:
    if isinstance(error, OSError) and error.errno == errno.ENOSPC:
        return (f"no space left on the disk of {error.filename or 'a file guestbench writes'}"
                " (fix: free some space, or give --logs and --db on another disk; the runs "
                "stored before are kept, and 'guestbench run --resume CAMPAIGN' completes a "
                "campaign it stopped)")
    driver_error = _sqlite_error(error)
    if driver_error is None:
        return None
    code = getattr(driver_error, "sqlite_errorcode", None)
    where = opened.get("sqlite", "(the SQLite store)")
    detail = " ".join(str(driver_error).split())[:200]
    if UNDECODABLE in str(driver_error) or (code is not None and code & 0xFF == SQLITE_CORRUPT):
        return damaged(where, detail)
    if code is not None and code & 0xFF == SQLITE_NOTADB:
        return (f"{where} is not a guestbench store, or its first page is damaged ({detail}) "
                "(fix: point --db at a guestbench store or a new file; if it was a store, "
                "restore it from a copy)")
    if code is not None and code & 0xFF == SQLITE_READONLY:
        return read_only(where, detail)
    if code is not None and code & 0xFF == SQLITE_FULL:
        return (f"the disk of the store {where} is full ({detail}) (fix: free some space, "
                "or point --db at a store on another disk; the runs stored before are kept)")
    return None


def _sqlite_error(error: BaseException) -> BaseException | None:
    """The sqlite3 module's error behind error (SQLAlchemy wraps it; a raw cursor's is
    itself), or None."""
    if type(error).__module__.startswith("sqlalchemy"):
        error = getattr(error, "orig", None)
    if error is None or type(error).__module__ != "sqlite3":
        return None
    return error


def damaged(where: str, detail: str) -> str:
    """The message for damage found in the store `where` (its file, or its URL); the store
    is marked found damaged, so that nothing of this process writes into it afterwards
    (Store.check_before_writing: a digest kept by the report that found the damage)."""
    found.add(where)
    return (f"the store {where} is damaged ({detail}); guestbench writes nothing into it "
            f"(fix: restore it from a copy; 'sqlite3 {where} .recover' may save its rows "
            "into a new file; or point --db at another store)")


def read_only(where: str, detail: str) -> str:
    return (f"the store {where} cannot be written ({detail}); nothing was stored (fix: "
            "make the file and its folder writable, or point --db at a store on a writable "
            "disk; report, compare and history read it as it is)")


# the SQLite file this process opened last (store.open), for the messages
opened: dict[str, str] = {}
# the stores (a SQLite file's resolved path, or a URL) that a reader of this process called
# damaged: nothing of this process writes into them any more
found: set[str] = set()
