"""Names, column order, units, decimals and whole tables chosen at report time, for a stored
campaign: a table need not be run again to be reshaped (`report --label ENV=NAME`, `--style
FILE`).

A style file is TOML with a `[report]` table, `[[table]]` entries, or both:

    [report]
    labels = { "tcg-machinemicrovm" = "QEMU microvm (TCG)", native = "host" }
    order = ["native", "tcg-*"]          # columns: names or patterns, in this order
    units = { build = "m:ss", boot = "s", "*" = "us" }  # a time unit per table ("*": all);
                                         # m:ss writes 113 s as "1m53"
    decimals = 1                         # plain tables: digits after the point

    [[table]]                            # as a plan's [[table]] (plan/tables.py): which
    table = "boot-totals"                # table, its environments, workloads, metrics,
    environments = ["uml", "qemu-*"]     # title, labels, unit and decimals
    title = "Boot time (ms)"

The latest word wins: a plan's [[table]] entries are the default; a style file's entries
replace them, and its [report] keys beat what an entry says; --label beats both. The style
is active while a report renders (active()); report/select.py applies it to every table it
builds, and the terminal's summary takes its labels and order.
"""

from __future__ import annotations

import contextlib
import dataclasses
import contextvars
import tomllib
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from guestbench.plan.errors import PlanError, did_you_mean
from guestbench.plan.tables import TableSpec, matches, ordered, problem
from guestbench.report import model

Text = Annotated[str, Field(min_length=1)]
TimeUnit = Literal["ns", "us", "ms", "s", "m:ss"]


class ReportStyle(BaseModel):
    """How a report names, orders and writes its tables."""

    model_config = ConfigDict(extra="forbid", strict=True)

    labels: dict[str, Text] = Field(default_factory=dict,
                                    description="environment name -> the name shown for it")
    order: list[Text] | None = Field(None, min_length=1, description=(
        "environment names or shell patterns, the columns' order; the others after them"))
    units: dict[str, TimeUnit] = Field(default_factory=dict, description=(
        "table name (or '*') -> the time unit its values are written in"))
    decimals: int | None = Field(None, ge=0, le=9, description="plain tables: digits after "
                                                               "the point")
    tables: list[TableSpec] = Field(default_factory=list, description=(
        "the style file's [[table]] entries: the tables to give, instead of the plan's"))

    def unit_for(self, table: str) -> str | None:
        return self.units.get(table, self.units.get("*"))


STYLE: contextvars.ContextVar[ReportStyle | None] = contextvars.ContextVar("report_style",
                                                                           default=None)


@contextlib.contextmanager
def active(style: ReportStyle | None):
    """Tables rendered inside are named, ordered and written as the style says."""
    token = STYLE.set(style)
    try:
        yield
    finally:
        STYLE.reset(token)


@contextlib.contextmanager
def time_unit(table: str, given: str | None = None):
    """Inside, a time value is written in the unit the active style gives `table` (the
    latest word), else the one given (a [[table]] entry's), else each row's own."""
    style = STYLE.get()
    token = model.TIME_UNIT.set((style.unit_for(table) if style is not None else None) or given)
    try:
        yield
    finally:
        model.TIME_UNIT.reset(token)


def reordered(report):
    """The report (analysis/results.CampaignResults) with its columns in the style's order,
    the others after them; as it is without an order."""
    style = STYLE.get()
    if style is None or not style.order:
        return report
    names = report.results.environments
    first = ordered(style.order, names)
    order = first + [name for name in names if name not in first]
    by_name = {env.name: env for env in report.environments}
    return dataclasses.replace(
        report, results=dataclasses.replace(report.results, environments=order),
        environments=[by_name[name] for name in order if name in by_name]
        + [env for env in report.environments if env.name not in order])


def labels() -> dict[str, str]:
    style = STYLE.get()
    return dict(style.labels) if style is not None else {}


def decimals() -> int | None:
    style = STYLE.get()
    return style.decimals if style is not None else None


def unit(table: str) -> str | None:
    """The time unit the style gives this table, or None."""
    style = STYLE.get()
    return style.unit_for(table) if style is not None else None


def tables() -> list[TableSpec]:
    """The style file's [[table]] entries ([] without a style or without entries)."""
    style = STYLE.get()
    return list(style.tables) if style is not None else []


def load(path: Path | None, labels: tuple[str, ...] = ()) -> ReportStyle | None:
    """The style of --style FILE, with each --label ENV=NAME over its labels; None without
    either. Bad input is a PlanError naming the file, the key and the fix."""
    given: dict = {}
    if path is not None:
        try:
            document = tomllib.loads(path.read_text())
        except OSError as error:
            raise PlanError(f"--style {path}: cannot be read ({error.strerror or error}) "
                            "(fix: name a TOML file with a [report] table)") from None
        except tomllib.TOMLDecodeError as error:
            raise PlanError(f"--style {path}: not TOML: {error} (fix: correct the file; "
                            "docs/results.md has an example)") from None
        unknown = sorted(set(document) - {"report", "table"})
        if unknown or not isinstance(document.get("report", {}), dict) \
                or not ("report" in document or "table" in document):
            raise PlanError(f"--style {path}: " + (
                f"unknown table {unknown[0]!r}" if unknown else "no [report] table")
                + " (fix: put labels, order, units and decimals under [report], and tables "
                  "as [[table]] entries)")
        given = dict(document.get("report", {}))
        if "table" in document:
            given["tables"] = _tables(path, document["table"])
    for item in labels:
        name, sep, shown = item.partition("=")
        if not sep or not name.strip() or not shown.strip():
            raise PlanError(f"--label {item!r}: not ENV=NAME (fix: e.g. --label "
                            "tcg-machinemicrovm='QEMU microvm')")
        given = {**given, "labels": {**given.get("labels", {}), name.strip(): shown.strip()}}
    if not given:
        return None
    try:
        return ReportStyle(**given)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        raise PlanError(f"{'--style ' + str(path) if path else '--label'}: {where}: "
                        f"{first['msg']} (fix: labels = {{ENV = \"NAME\"}}, order = [ENV, ...], "
                        "units = {TABLE = \"ns|us|ms|s|m:ss\"}, decimals = 0-9)") from None


def _tables(path: Path, entries: object) -> list[TableSpec]:
    """The style file's [[table]] entries, each checked as a plan's is: an unknown table or
    key is a PlanError naming the file, the entry and the fix."""
    from guestbench.plan.errors import explain  # deferred: only a style with tables needs it
    if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
        raise PlanError(f"--style {path}: table: not a list of [[table]] entries (fix: write "
                        "each as [[table]] with table = \"NAME\")")
    specs = []
    for index, entry in enumerate(entries):
        try:
            specs.append(TableSpec.model_validate(entry))
        except ValidationError as error:
            raise PlanError(explain(f"--style {path}", error, prefix=f"table[{index}]",
                                    model=TableSpec)) from None
    return specs


def check_names(style: ReportStyle, environments: list[str],
                workloads: list[tuple[str, str]] | None = None) -> None:
    """Every label and order entry names an environment of the campaign; each [[table]]
    entry's environments, labels and workloads fit it (workloads: (label, workload name))."""
    for index, spec in enumerate(style.tables):
        known = workloads if workloads is not None else \
            [(pattern, pattern) for pattern in spec.workloads or ()]  # not checked: unknown
        found = problem(spec, environments, known)
        if found:
            raise PlanError(f"--style: table[{index}].{found}")
    for name in style.labels:
        if name not in environments:
            raise PlanError(f"labels: {name!r} is not an environment of this campaign"
                            f"{did_you_mean(name, environments)} (fix: use one of "
                            f"{', '.join(environments)})")
    for pattern in style.order or ():
        if not any(matches(pattern, name) for name in environments):
            raise PlanError(f"order: {pattern!r} matches no environment of this campaign "
                            f"(fix: use one of {', '.join(environments)})")
