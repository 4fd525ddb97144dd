"""A plan's [[table]] entries: the published tables `report` gives for its campaign, shaped."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from guestbench.plan.catalogue import NAMES
from guestbench.plan.errors import did_you_mean

Text = Annotated[str, Field(min_length=1)]


class TableSpec(BaseModel):
    """One [[table]]: a table of the catalogue, its environments, workloads and style."""

    model_config = ConfigDict(extra="forbid", strict=True)

    table: str = Field(description="the table's stable name (report --table NAME)")
    title: str | None = Field(None, description="the caption shown instead of the table's own")
    environments: list[Text] | None = Field(
        None, min_length=1, description="environment names or shell patterns, in the order "
                                        "to show them; default every environment")
    labels: dict[str, Text] = Field(
        default_factory=dict, description="environment name -> the name shown for it")
    workloads: list[Text] | None = Field(
        None, min_length=1, description="workload labels, names or patterns; default every one")
    metrics: list[Text] | None = Field(None, min_length=1, description="metric names to show")
    statistic: Literal["median", "mean", "best"] | None = Field(
        None, description="the value each cell shows; default the table's own")
    spread: bool | None = Field(None, description="show each value's spread; default the "
                                                  "table's own")
    plain: bool = Field(True, description="values only, in the unit of the header")
    links: bool = Field(False, description="each value links to its runs' logs")
    decimals: int | None = Field(None, ge=0, le=9, description="digits after the point")
    headers: dict[Text, Text] = Field(
        default_factory=dict, description="a column's header as the table shows it -> the "
                                          "words shown instead (a seed's own, 'Per Chr KB/sec')")
    row_decimals: dict[Text, Annotated[int, Field(ge=0, le=9)]] = Field(
        default_factory=dict, description="a row's name as the table shows it (or a "
                                          "pattern) -> digits after the point in that row")
    unit: Literal["ns", "us", "ms", "s", "m:ss"] | None = Field(
        None, description="the time unit of its values; default each row's own")

    @field_validator("table")
    @classmethod
    def _known_table(cls, name: str) -> str:
        if name not in NAMES:
            # pydantic fills the template key by key in this order: what the user typed
            # comes last, so braces in it stay as typed
            raise PydanticCustomError(
                "unknown_table", "unknown table {name}{near}",
                {"fix": f"use one of {', '.join(NAMES)}", "near": did_you_mean(name, NAMES),
                 "name": repr(name)})
        return name


def matches(pattern: str, name: str) -> bool:
    """A name as written, or a shell pattern: the label `upload[mode=write]` matches itself
    although fnmatch reads its brackets as a character class."""
    return name == pattern or fnmatch.fnmatchcase(name, pattern)


def ordered(patterns: Sequence[str] | None, names: Sequence[str]) -> list[str]:
    """The names the patterns choose, in the patterns' order (each name once); every name,
    in its own order, without patterns."""
    if patterns is None:
        return list(names)
    chosen = [name for pattern in patterns for name in names if matches(pattern, name)]
    return list(dict.fromkeys(chosen))


def problem(spec: TableSpec, environments: Sequence[str],
            workloads: Sequence[tuple[str, str]]) -> str | None:
    """What in a valid entry does not fit its plan, as 'field: what (fix: how)', or None.
    environments: the plan's names after sweeps; workloads: each case's (label, name)."""
    return (_environments_problem(spec, environments) or _labels_problem(spec, environments)
            or _workloads_problem(spec, workloads))


def _environments_problem(spec: TableSpec, environments: Sequence[str]) -> str | None:
    for pattern in spec.environments or ():
        if not any(matches(pattern, name) for name in environments):
            return (f"environments: {pattern!r} matches no environment (fix: use one of "
                    f"{', '.join(environments)}, or a pattern like \"qemu-*\")")
    return None


def _labels_problem(spec: TableSpec, environments: Sequence[str]) -> str | None:
    for name in spec.labels:
        if name not in environments:
            return (f"labels: {name!r} is not an environment of this plan"
                    f"{did_you_mean(name, environments)} (fix: use one of "
                    f"{', '.join(environments)})")
    shown = list(spec.labels.values())
    for label in shown:
        if shown.count(label) > 1:  # two columns under one name: a reader cannot tell them apart
            return (f"labels: {label!r} names two environments (fix: give each environment "
                    "a name of its own)")
    return None


def _workloads_problem(spec: TableSpec, workloads: Sequence[tuple[str, str]]) -> str | None:
    known = list(dict.fromkeys([label for label, _ in workloads] +
                               [name for _, name in workloads]))
    for pattern in spec.workloads or ():
        if not any(matches(pattern, text) for text in known):
            return (f"workloads: {pattern!r} matches no workload{did_you_mean(pattern, known)} "
                    f"(fix: use one of {', '.join(known)}, or a pattern like \"upload*\")")
    return None


def table_specs(document: dict[str, Any]) -> list[TableSpec]:
    """The [[table]] entries a campaign stored (its plan's as_dict()); [] for plans stored
    before there were any. Never raises: see unreadable()."""
    return _read(document)[0]


def unreadable(document: dict[str, Any]) -> list[str]:
    """Why stored entries were left out of table_specs(), one line each.

    An entry was valid when its campaign ran; a later guestbench may have renamed or
    removed its table or an option. The campaign's other tables stay readable: its report
    gives them and may say what it left out, rather than refusing the whole campaign.
    """
    return _read(document)[1]


def _read(document: dict[str, Any]) -> tuple[list[TableSpec], list[str]]:
    entries = document.get("tables", [])
    if not isinstance(entries, list):
        return [], [f"tables: a list was stored, not {type(entries).__name__}"]
    specs, left_out = [], []
    for index, entry in enumerate(entries):
        try:
            specs.append(TableSpec.model_validate(entry))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(item) for item in first["loc"])
            left_out.append(f"table[{index}]{'.' + field if field else ''}: {first['msg']}")
    return specs, left_out
