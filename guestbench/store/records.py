"""What the runner hands to the store (one finished run, and why a cell stopped repeating), and
the rows the store gives back: campaigns, environments, runs and samples."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, NamedTuple

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


@dataclass(frozen=True, slots=True)
class Campaign:
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


# The fact an environment states when its figures are functional only (it ran, and how its
# parts compare) and not the speed of what it is named after: a sentence saying why. Set by
# environments/fullsystem/base.py (a guest nested under TCG) and environments/kinds/xen.py;
# reports mark its columns and keep it out of geometric means and heatmaps
# (report/functional.py; docs/environments.md, "Inside a VM").
FUNCTIONAL = "functional"


def functional_facts(environments) -> dict[str, dict[str, str]]:
    """{environment: its FUNCTIONAL sentence and vmm_version} of the environments (records
    with .name and .facts) whose figures are functional only: what compare and history keep
    of a campaign to mark them as report does."""
    return {env.name: {FUNCTIONAL: str(facts[FUNCTIONAL]),
                       "vmm_version": str(facts.get("vmm_version") or "")}
            for env in environments for facts in [env.facts or {}] if facts.get(FUNCTIONAL)}


@dataclass(frozen=True, slots=True)
class Environment:
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
class Run:
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
class StoredCellStop:
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


@dataclass(frozen=True, slots=True)
class PoolHost:
    """One host of the pool, as its worker registered it."""

    name: str  # guestbench worker --name
    labels: list[str]  # what it offers: kvm, xen-dom0, ...
    facts: dict[str, Any]  # the host's facts when its worker started
    allow: list[str]  # what its operator lets plans run (--allow)
    worker: dict[str, Any]  # the worker process (process/identity.py)
    started_at: dt.datetime
    heartbeat_at: dt.datetime


@dataclass(frozen=True, slots=True)
class CampaignGroup:
    """One plan submitted to several pool hosts: a campaign on each."""

    id: int
    name: str
    plan_text: str  # the plan file as submitted
    plan_source: str  # its path where it was submitted
    plan_hash: str  # sha256 of plan_text
    submitted_by: str  # the database role
    submitted_at: dt.datetime
    hosts: list[str]  # the pool hosts it was queued for
    refusals: dict[str, str]  # host -> why its worker ran nothing
