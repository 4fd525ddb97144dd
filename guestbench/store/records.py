"""What the runner hands to the store: one finished run, and why a cell stopped repeating;
and where the store is when no URL is given."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, NamedTuple

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


class Sample(NamedTuple):
    """One value a run measured, as the runner hands it to the store."""

    metric: str
    unit: str
    value: float


class StoredSample(NamedTuple):
    """One stored sample, as reading a campaign's samples one by one gives it (csv, json)."""

    run_id: int
    metric: str
    unit: str
    value: float


class _Row:
    """Rows read by string key, as they were when the store gave dicts: kept only while the
    readers move to attributes."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        return getattr(self, key)

    def get(self, key: str, default: Any = None) -> Any:
        return getattr(self, key, default)


@dataclass(frozen=True, slots=True)
class Campaign(_Row):
    """One stored campaign: a plan run on one host (a listing reads only some fields)."""

    id: int
    name: str = ""
    created_at: dt.datetime | None = None
    finished_at: dt.datetime | None = None
    guestbench_version: str = ""
    plan: dict[str, Any] | None = None
    host_id: int | None = None
    host_facts: dict[str, Any] = field(default_factory=dict)
    baseline: str | None = None
    log_dir: str = ""
    status: str = ""
    host_checks: dict[str, Any] | None = None
    owner: dict[str, Any] | None = None  # the guestbench process that runs it (identity())
    group_id: int | None = None  # its pool group
    pool_host: str | None = None
    end_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Environment(_Row):
    """One environment of a campaign: its name, kind, full resolved spec and probe's answer."""

    id: int
    campaign_id: int | None = None
    name: str = ""
    kind: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    available: bool = True
    probe: str = ""
    position: int = 0
    facts: dict[str, Any] | None = None  # what it ran: versions, gVisor's platform


@dataclass(frozen=True, slots=True)
class Run(_Row):
    """One stored run (a reader may ask for some fields only: the others keep defaults);
    environment is its environment's name."""

    id: int
    campaign_id: int | None = None
    environment_id: int | None = None
    workload: str = ""
    label: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    repetition: int = 0
    status: str = ""
    reason: str = ""
    flags: list[str] = field(default_factory=list)
    started_at: dt.datetime | None = None
    host_seconds: float = 0.0
    log_path: str | None = None
    environment: str = ""


@dataclass(frozen=True, slots=True)
class StoredCellStop(_Row):
    """Why one cell stopped repeating, as stored; environment is its environment's name."""

    id: int
    campaign_id: int | None = None
    environment_id: int | None = None
    label: str = ""
    runs: int = 0
    ok_runs: int = 0
    reason: str = ""
    half_width: float | None = None
    target: float | None = None
    environment: str | None = None
