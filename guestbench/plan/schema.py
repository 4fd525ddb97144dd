"""What a plan is: the [campaign] section's fields, a workload case, the plan itself and the
command line's overrides (pydantic models with a line of doc per field)."""

from __future__ import annotations

import dataclasses
import fnmatch
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel, ConfigDict, Field, PlainValidator, model_validator)
from pydantic_core import PydanticCustomError

from guestbench import workloads
from guestbench.plan import tables as plan_tables
from guestbench.environments.base import IDENTIFIER, EnvironmentSpec
from guestbench.plan.errors import PlanError

AUTO = "auto"


DEFAULT_REPEAT = 5  # runs of a workload whose family is not repeated adaptively by default


AUTO_BY_DEFAULT = frozenset({"micro"})  # families whose repeat is "auto" unless a plan says


MAX_REPEAT = 10000


DEFAULT_TIMEOUT_S = 120.0


def _checked_repeat(value: Any) -> int | str:
    """A whole number of runs or "auto"; strict: `true` or "3" are errors, not 1 or 3."""
    if value == AUTO or (type(value) is int and 1 <= value <= MAX_REPEAT):
        return value
    raise PydanticCustomError(
        "repeat_value", f'Input should be a whole number from 1 to {MAX_REPEAT}, or "auto"')


Repeat = Annotated[int | Literal["auto"], PlainValidator(_checked_repeat)]


class AutoSection(BaseModel):
    """When a cell (one environment x one workload) with repeat = "auto" stops repeating."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    target: float = Field(0.02, gt=0, lt=1,
                          description="stop once the median's 95% interval is within +/- this "
                                      "share of the median (0.02 = +/-2%)")
    min_runs: int = Field(5, ge=3, le=MAX_REPEAT, description="runs before a cell may stop")
    max_runs: int = Field(30, ge=3, le=MAX_REPEAT, description="runs after which a cell stops")
    max_cell_s: float = Field(60.0, gt=0, le=7 * 86400,
                              description="host seconds a cell may take, summed over its runs")
    stop_out_of_reach: bool = Field(
        False, description="stop a cell at min_runs or later once its runs vary so much that "
                           "max_runs would not bring the interval within the target either "
                           "(an interval narrows as 1/sqrt(runs)); the default campaign does")

    @model_validator(mode="after")
    def _max_not_below_min(self) -> "AutoSection":
        if self.max_runs < self.min_runs:
            raise PydanticCustomError(
                "max_below_min", "max_runs ({max_runs}) is below min_runs ({min_runs})",
                {"max_runs": self.max_runs, "min_runs": self.min_runs})
        return self


class CampaignSection(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    name: str = Field("quick", pattern=IDENTIFIER, description="campaign name, a plain identifier")
    baseline: str | None = Field(
        None, description="environment the others are normalised to; default native if planned")
    repeat: Repeat | None = Field(
        None, description='fresh runs of every workload in every environment, or "auto"; '
                          f'default "auto" for {", ".join(sorted(AUTO_BY_DEFAULT))} workloads '
                          f"and {DEFAULT_REPEAT} for the others")
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, le=86400,
                             description="per-run limit; the run is killed and recorded timeout")
    description: str = Field("", description="free text stored with the campaign")
    log_cap_mib: int = Field(64, ge=1, le=65536, description="each run's stdout and stderr "
                             "logs keep at most this much: the first and the last half")
    auto: AutoSection = Field(default_factory=AutoSection,
                              description='when repeat = "auto" stops repeating a cell')
    shared_rounds: bool = Field(
        True, description="each round, one fresh guest or container runs every workload that "
                          "needs only the agent, in a shuffled order (process kinds start one "
                          "per run anyway); false: one per run")


class WorkloadRepeat(BaseModel):
    """A [[workload]] table's own repeat, checked apart from the workload's parameters."""

    model_config = ConfigDict(extra="forbid", strict=True)

    repeat: Repeat


class WorkloadBestOf(BaseModel):
    """A [[workload]] table's best_of: N runs, each cell published as its best run."""

    model_config = ConfigDict(extra="forbid", strict=True)

    best_of: int = Field(ge=2, le=MAX_REPEAT)


class PlanFile(BaseModel):
    """The top level of a plan file; environment and workload tables are checked per kind."""

    model_config = ConfigDict(extra="forbid")

    campaign: CampaignSection = Field(default_factory=CampaignSection)
    environment: list[dict[str, Any]] = Field(min_length=1)
    workload: list[dict[str, Any]] = Field(min_length=1)
    table: list[dict[str, Any]] = Field(default_factory=list)  # checked in plan_tables


@dataclass(frozen=True)
class WorkloadCase:
    """One workload with fully resolved parameters; `label` names it in reports."""

    name: str
    params: workloads.Params
    label: str
    repeat: int | str | None = None  # runs or "auto"; resolved for every case of a Plan
    # environment names (shell-style patterns) it runs in; None: every environment
    environments: tuple[str, ...] | None = None
    # the [[workload]] table it came from (for errors); -1 when not from a plan file
    table: int = dataclasses.field(default=-1, compare=False, repr=False)
    # parameters written "@vcpus": set per environment (follow), then the case is split
    follows: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)
    # best_of = N: N runs whatever --repeat says, and published tables show each cell's best
    best_of: int | None = None

    def stored_params(self) -> dict[str, Any]:
        """Its parameters as each run stores them, with best_of (what the tables publish)."""
        return {**self.params.model_dump(mode="json"),
                **({"best_of": self.best_of} if self.best_of else {})}

    def runs_in(self, environment: str) -> bool:
        return self.environments is None or any(
            fnmatch.fnmatchcase(environment, pattern) for pattern in self.environments)

    @property
    def workload(self) -> workloads.Workload:
        workload = workloads.CATALOGUE[self.name]
        # a workload whose parameters name its metrics (exec) has its primary metric there
        own = getattr(self.params, "primary_metric", None)
        return dataclasses.replace(workload, primary_metric=own) if own else workload

    @property
    def adaptive(self) -> bool:
        return self.repeat == AUTO


@dataclass(frozen=True)
class Plan:
    campaign: CampaignSection
    environments: tuple[EnvironmentSpec, ...]
    workloads: tuple[WorkloadCase, ...]
    source: str  # the plan file's path, or "command line"
    # A/B in one campaign: every other round runs its cells in reverse order (A B, B A, ...)
    interleave: bool = False
    tables: tuple[plan_tables.TableSpec, ...] = ()  # [[table]]: what `report` gives, in order

    @property
    def baseline(self) -> str | None:
        return self.campaign.baseline

    def as_dict(self) -> dict[str, Any]:
        """The resolved plan, as stored with the campaign."""
        return {
            "source": self.source,
            **({"interleave": True} if self.interleave else {}),
            "campaign": self.campaign.model_dump(),
            "environments": [spec.model_dump(mode="json") for spec in self.environments],
            "workloads": [{"name": case.name, "label": case.label, "repeat": case.repeat,
                           "params": case.params.model_dump(mode="json"),
                           **({"best_of": case.best_of} if case.best_of else {}),
                           **({"environments": list(case.environments)}
                              if case.environments is not None else {})}
                          for case in self.workloads],
            **({"tables": [spec.model_dump(mode="json", exclude_none=True)
                           for spec in self.tables]} if self.tables else {}),
        }


@dataclass(frozen=True)
class Overrides:
    """CLI flags that narrow or change a plan."""

    environments: tuple[str, ...] = ()
    workloads: tuple[str, ...] = ()
    repeat: int | str | None = None  # beats every repeat of the plan, per workload too
    timeout_s: float | None = None
    name: str | None = None


def repeat_flag(text: str | None) -> int | str | None:
    """--repeat's text as a number of runs or "auto"; its range is checked with the plan."""
    if text is None:
        return None
    if text.strip() == AUTO:
        return AUTO
    try:
        return int(text)
    except ValueError:
        raise PlanError(f"--repeat: {text!r} is neither a number of runs nor auto "
                        "(fix: e.g. --repeat 5, or --repeat auto)") from None
