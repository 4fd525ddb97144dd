"""Metrics read from a program's text output by regular expressions.

A metric names one number a program prints: the regular expression that finds it (its
named group `value` captures the number), its unit, which direction is better, a scale
factor, how many times it must appear and in which stream. parse_metrics turns a text
into samples, or says which metric could not be read and which expression was expected.

It knows nothing of how the text was obtained: the exec workload gives it a program's
stdout and stderr, a guest that runs its own benchmark can give it its console.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from guestbench.analysis.cells import CONTEXT_METRICS
from guestbench.environments.base import IDENTIFIER
from guestbench.workloads.base import OutputError, Params, Sample

VALUE_GROUP = "value"
REGEX_EXAMPLE = r"'events per second:\s*(?P<value>[0-9.]+)'"
STREAMS = ("stdout", "stderr")


class Metric(Params):
    """One number in a program's output (a [[workload.metrics]] table of a plan)."""

    name: str = Field(pattern=IDENTIFIER, description="the metric's name in reports, a plain "
                                                     "identifier")
    regex: str = Field(description="a Python regular expression (re, MULTILINE: ^ and $ match "
                                   "at each line) whose named group `value` captures the number")
    unit: str = Field(min_length=1, description="the unit shown in reports, e.g. events/s")
    better: Literal["higher", "lower"] = Field(
        description="which direction is better: higher (a rate) or lower (a time)")
    kind: Literal["performance", "context", "verdict"] = Field(
        "performance", description="performance: ratios, % tables, geometric means and "
                                   "compare judge it; context: shown beside the results, "
                                   "never judged (bytes moved, a count); verdict: 1 for yes, "
                                   "0 for no, shown in its own table")
    scale: float = Field(1.0, description="the captured number is multiplied by this (e.g. "
                                          "1000 to turn s into ms); finite, not 0")
    count: int = Field(1, ge=1, le=100_000,
                       description="how many times the expression must match; with more than "
                                   "1 the run's value is the median of the matches")
    stream: Literal["stdout", "stderr"] = Field(
        "stdout", description="the output stream searched (a console has one: it is ignored)")

    @field_validator("name")
    @classmethod
    def _not_reserved(cls, name: str) -> str:
        if name in CONTEXT_METRICS:
            raise PydanticCustomError(
                "metric_name_reserved",
                "'{name}' is the name of a context metric, which reports hide",
                {"name": name, "fix": "choose another name"})
        return name

    @field_validator("regex")
    @classmethod
    def _valid_regex(cls, regex: str) -> str:
        try:
            pattern = re.compile(regex, re.MULTILINE)
        except re.error as error:
            raise PydanticCustomError(
                "regex_invalid", "not a valid Python regular expression: {error}",
                {"error": str(error), "fix": "correct the pattern; write it in single quotes "
                                             "('...', a TOML literal string) so backslashes stay "
                                             "as written"}) from None
        if VALUE_GROUP not in pattern.groupindex:
            raise PydanticCustomError(
                "regex_no_value", "the pattern has no named group 'value' for the number",
                {"fix": f"capture the number with (?P<value>...), e.g. regex = {REGEX_EXAMPLE}"})
        return regex

    @field_validator("scale")
    @classmethod
    def _nonzero_scale(cls, scale: float) -> float:
        if scale == 0:
            raise PydanticCustomError(
                "scale_zero", "a scale of 0 would turn every value into 0",
                {"fix": "give a finite factor other than 0, or leave scale out (1)"})
        return scale

    @property
    def higher_is_better(self) -> bool:
        return self.better == "higher"


def check_names(metrics: Sequence[Metric]) -> None:
    """PydanticCustomError when two metrics share a name (for a validator of a metrics list)."""
    seen: dict[str, int] = {}
    for index, metric in enumerate(metrics):
        if metric.name in seen:
            raise PydanticCustomError(
                "metric_name_twice", "metrics[{index}].name '{name}' is also the name of metrics[{first}]",
                {"index": index, "name": metric.name, "first": seen[metric.name],
                 "fix": "give each metric a distinct name"})
        seen[metric.name] = index


@functools.lru_cache(maxsize=256)
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex, re.MULTILINE)


def parse_metrics(metrics: Sequence[Metric], text: str | Mapping[str, str]) -> list[Sample]:
    """One sample per metric, in the metrics' order; OutputError names the first that fails.

    text: one string (a console: every metric reads it, whatever its stream), or the
    streams by name ({"stdout": ..., "stderr": ...}; a stream not given is empty).
    """
    samples: list[Sample] = []
    for metric in metrics:
        if isinstance(text, str):
            where, searched = "the output", text
        else:
            where, searched = metric.stream, text.get(metric.stream, "")
        samples.append((metric.name, metric.unit, _value(metric, searched, where)))
    return samples


def _value(metric: Metric, text: str, where: str) -> float:
    matches = list(_compiled(metric.regex).finditer(text))
    expected = "once" if metric.count == 1 else f"{metric.count} times"
    if len(matches) != metric.count:
        found = "no match" if not matches else \
            "1 match" if len(matches) == 1 else f"{len(matches)} matches"
        shown = f"; {where} ends: {tail(text)}" if not matches else \
            f": {', '.join(repr(match.group(0).strip()) for match in matches[:3])}" \
            + (", ..." if len(matches) > 3 else "")
        raise OutputError(f"metric {metric.name}: regex '{metric.regex}' was expected to match "
                          f"{expected} in {where}, found {found}{shown}")
    values = []
    for match in matches:
        captured = match.group(VALUE_GROUP)
        try:
            value = float((captured or "").strip()) * metric.scale
        except ValueError:
            value = math.nan
        if not math.isfinite(value):
            raise OutputError(f"metric {metric.name}: regex '{metric.regex}' captured "
                              f"{captured!r} in {where}, not a finite number (in "
                              f"{match.group(0).strip()!r})")
        values.append(value)
    return values[0] if len(values) == 1 else statistics.median(values)


def tail(text: str, limit: int = 200) -> str:
    """The last lines of a text, on one line, for a reason."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return " | ".join(lines[-3:])[-limit:] or "(no output)"
