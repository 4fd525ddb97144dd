"""The stored default campaign of tests/unit/data/default-campaign: a copy to read and write
(commands keep digests in the store: never in the original).

Its runs' logs were kept under /tmp/golden on the host that ran it, and the HTML lists a
run's folder as it finds it on disk: the copy names a folder that exists on no host, so
that every output is the same wherever the tests run (one host still had that folder, and
its listing went into the expected HTML)."""

from __future__ import annotations

import gzip
import shutil
import sqlite3
from pathlib import Path

DATA = Path(__file__).parents[1] / "unit" / "data" / "default-campaign"
RECORDED, NOWHERE = "/tmp/golden/", "/nonexistent/golden/"


def unpacked(folder: Path) -> Path:
    path = folder / "guestbench.sqlite"
    with gzip.open(DATA / "guestbench.sqlite.gz") as packed, path.open("wb") as out:
        shutil.copyfileobj(packed, out)
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE campaign SET log_dir = replace(log_dir, ?, ?)",
                           (RECORDED, NOWHERE))
        connection.execute("UPDATE run SET log_path = replace(log_path, ?, ?)",
                           (RECORDED, NOWHERE))
    connection.close()
    return path
