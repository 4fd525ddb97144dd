"""An A/B plan: every environment twice, NAME.a and NAME.b, run interleaved."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from typing import Any

from pydantic import (
    ValidationError)

from guestbench.environments.base import IDENTIFIER
from guestbench.plan.errors import PlanError, explain
from guestbench.plan.schema import Plan

AB_TAGS = ("a", "b")


AB_RESERVED = frozenset({"name", "kind", "preset"})


def assignments(items: tuple[str, ...], flag: str) -> dict[str, Any]:
    """--a KEY=VALUE ... as options: VALUE is read as TOML (2, true, "x", [1, 2]), else text.
    KEY is an option of every environment, or ENV.KEY one of environment ENV alone
    (--b runsc.platform=systrap, where runc has no platform)."""
    out: dict[str, Any] = {}
    for item in items:
        key, equals, text = item.partition("=")
        key = key.strip()
        scope, _, option = key.rpartition(".")
        if not equals or not re.match(IDENTIFIER, option) or (
                scope and not re.match(IDENTIFIER, scope)):
            raise PlanError(f"{flag}: {item!r} is not KEY=VALUE or ENV.KEY=VALUE (fix: e.g. "
                            "{flag} vcpus=2, or {flag} runsc.platform=systrap)"
                            .replace("{flag}", flag))
        if option in AB_RESERVED:
            raise PlanError(f"{flag}: {option} cannot differ between A and B (fix: vary an "
                            "option of the environment, e.g. runtime=runsc)")
        try:
            out[key] = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            out[key] = text
    return out


def option_keys(options: dict[str, Any]) -> tuple[str, ...]:
    """The spec keys the options set (runsc.platform sets platform): what A and B may differ in."""
    return tuple(dict.fromkeys(key.rpartition(".")[2] for key in options))


def _scoped(options: dict[str, Any], environment: str) -> dict[str, Any]:
    """The options that apply to this environment: those of all, then its own."""
    return {**{key: value for key, value in options.items() if "." not in key},
            **{key.rpartition(".")[2]: value for key, value in options.items()
               if key.rpartition(".")[0] == environment}}


def _unknown_scopes(plan: Plan, options: dict[str, Any], flag: str) -> None:
    names = [spec.name for spec in plan.environments]
    for key in options:
        scope = key.rpartition(".")[0]
        if scope and scope not in names:
            raise PlanError(f"{flag} {key}: the plan has no environment {scope} (it has: "
                            f"{', '.join(names)}) (fix: {flag} ENV.KEY=VALUE with one of them)")


def ab_plan(plan: Plan, a: dict[str, Any], b: dict[str, Any]) -> Plan:
    """Every environment of the plan twice, as NAME.a with a's options and NAME.b with b's,
    run interleaved in one campaign."""
    # neither side changed: an A/A check, which shows what noise alone gives
    _unknown_scopes(plan, a, "--a")
    _unknown_scopes(plan, b, "--b")
    specs = []
    for spec in plan.environments:
        for tag, options in zip(AB_TAGS, (a, b)):
            data = {**spec.model_dump(), **_scoped(options, spec.name),
                    "name": f"{spec.name}.{tag}"}
            model = type(spec)
            try:
                specs.append(model.model_validate(data))
            except ValidationError as error:
                raise PlanError(explain(f"--{tag} (environment {spec.name})", error,
                                         flag=True, model=model)) from None
    baseline = f"{plan.baseline}.a" if plan.baseline else None
    campaign = plan.campaign.model_copy(update={"baseline": baseline})
    cases = tuple(dataclasses.replace(case, environments=tuple(
        name for pattern in case.environments for name in (pattern, *(f"{pattern}.{tag}"
                                                                      for tag in AB_TAGS))))
                  if case.environments is not None else case for case in plan.workloads)
    return dataclasses.replace(plan, campaign=campaign, environments=tuple(specs),
                               workloads=cases, interleave=True)
