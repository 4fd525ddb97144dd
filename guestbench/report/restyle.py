"""Names, column order, units and decimals chosen at report time, for a stored campaign: a
table need not be run again to be relabelled (`report --label ENV=NAME`, `--style FILE`).

A style file is TOML with one `[report]` table:

    [report]
    labels = { "tcg-machinemicrovm" = "QEMU microvm (TCG)", native = "host" }
    order = ["native", "tcg-*"]          # columns: names or patterns, in this order
    units = { build = "m:ss", boot = "s", "*" = "us" }  # a time unit per table ("*": all);
                                         # m:ss writes 113 s as "1m53"
    decimals = 1                         # plain tables: digits after the point

The style is active while a report renders (active()); report/select.py applies it to
every table it builds, and the terminal's summary takes its labels and order.
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
from guestbench.plan.tables import matches, ordered
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
    """Inside, a time value is written in the unit given (a [[table]] entry's), else the one
    the active style gives `table`, else each row's own."""
    style = STYLE.get()
    token = model.TIME_UNIT.set(given or (style.unit_for(table) if style is not None else None))
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
        unknown = sorted(set(document) - {"report"})
        if unknown or not isinstance(document.get("report"), dict):
            raise PlanError(f"--style {path}: " + (
                f"unknown table {unknown[0]!r}" if unknown else "no [report] table")
                + " (fix: put labels, order, units and decimals under [report])")
        given = document["report"]
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


def check_names(style: ReportStyle, environments: list[str]) -> None:
    """Every label and order entry names an environment of the campaign."""
    for name in style.labels:
        if name not in environments:
            raise PlanError(f"labels: {name!r} is not an environment of this campaign"
                            f"{did_you_mean(name, environments)} (fix: use one of "
                            f"{', '.join(environments)})")
    for pattern in style.order or ():
        if not any(matches(pattern, name) for name in environments):
            raise PlanError(f"order: {pattern!r} matches no environment of this campaign "
                            f"(fix: use one of {', '.join(environments)})")
