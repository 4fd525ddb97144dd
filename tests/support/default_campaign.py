"""The stored default campaign of tests/unit/data/default-campaign: a copy to read and write
(commands keep digests in the store: never in the original)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path

DATA = Path(__file__).parents[1] / "unit" / "data" / "default-campaign"


def unpacked(folder: Path) -> Path:
    path = folder / "guestbench.sqlite"
    with gzip.open(DATA / "guestbench.sqlite.gz") as packed, path.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return path
