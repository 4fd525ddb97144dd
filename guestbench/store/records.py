"""What the runner hands to the store: one finished run, and why a cell stopped repeating;
and where the store is when no URL is given."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

DEFAULT_URL = "sqlite:///guestbench.sqlite"


@dataclass(frozen=True)
class RunRecord:
    """One finished run, as the runner hands it to the store."""

    environment_id: int
    workload: str
    label: str
    params: dict[str, Any]
    repetition: int
    status: str
    reason: str
    started_at: dt.datetime
    host_seconds: float
    log_path: str | None
    samples: tuple[tuple[str, str, float], ...] = ()
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class CellStop:
    """Why one cell (an environment x a workload label) stopped repeating."""

    environment_id: int
    label: str
    runs: int
    ok_runs: int
    reason: str
    half_width: float | None  # the last relative half-width of the median's interval
    target: float | None  # None for a fixed repeat
