"""Sweeps and labels: a table with lists becomes one environment or workload case per
combination, each named after its values; then the checks across them."""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import itertools
import os
import re
import typing
from collections.abc import Iterator
from typing import Any

from pydantic import (
    BaseModel, ValidationError)

from guestbench import environments, workloads
from guestbench.environments.base import IDENTIFIER, EnvironmentSpec
from guestbench.host import Host
from guestbench.plan.labels import plain_value
from guestbench.plan.errors import PlanError, explain, gathered, numbered_lines
from guestbench.plan.schema import AUTO, WorkloadBestOf, WorkloadCase, WorkloadRepeat
from guestbench.plan.errors import did_you_mean

def expand_environments(tables: list[dict[str, Any]], source: str,
                        problems: list[str] | None = None) -> list[EnvironmentSpec]:
    """Every table's environments; a table with a problem is left out and its problem
    added to `problems` (the next table is still read), or raised where none is given."""
    specs: list[EnvironmentSpec] = []
    for index, table in enumerate(tables):
        with _noted(problems):
            specs += _environment_table(index, table, source)
    with _noted(problems):
        _no_duplicates([spec.name for spec in specs], source, "environment", "name")
    return specs


# what an [[environment]] and a [[workload]] table take besides their model's fields
ENVIRONMENT_KEYS = ("preset",)
WORKLOAD_KEYS = ("name", "repeat", "best_of", "environments", "label")


def _environment_table(index: int, table: dict[str, Any], source: str) -> list[EnvironmentSpec]:
    where = f"environment[{index}]"
    table = dict(table)
    preset = table.pop("preset", None)
    if preset is not None:
        if not isinstance(preset, str) or preset not in environments.PRESETS:
            raise PlanError(f"{source}: {where}.preset: unknown preset {preset!r}"
                            f"{did_you_mean(str(preset), environments.PRESETS)} "
                            f"(fix: use one of {', '.join(environments.PRESETS)})")
        table = {**environments.PRESETS[preset], "name": preset, **table}
    kind = table.get("kind")
    if not isinstance(kind, str) or kind not in environments.plan_kinds():
        hint = f"set kind to one of {', '.join(environments.PUBLIC_KINDS)}, or use a preset"
        what = "missing kind" if kind is None else \
            f"unknown kind {kind!r}{did_you_mean(str(kind), environments.PUBLIC_KINDS)}"
        raise PlanError(f"{source}: {where}: {what} (fix: {hint})")
    model = environments.spec_model(kind)
    table = _one_item_lists_unwrapped(table, model)
    specs, problems = [], []
    for combination in _sweep(table, model, source, where):
        try:
            specs.append(model.model_validate(combination))
        except ValidationError as error:
            told = explain(source, error, prefix=where, model=model, also=ENVIRONMENT_KEYS)
            if told not in problems:  # each combination of a sweep says the same
                problems.append(told)
    if problems:
        raise gathered(problems)
    return specs


def expand_workloads(tables: list[dict[str, Any]], source: str, host: Host,
                     problems: list[str] | None = None) -> list[WorkloadCase]:
    """Every table's cases; a table with a problem is handled as in expand_environments."""
    cases: list[WorkloadCase] = []
    for index, table in enumerate(tables):
        with _noted(problems):
            cases += _workload_table(index, table, source, host)
    return cases


def _workload_table(index: int, table: dict[str, Any], source: str,
                    host: Host) -> list[WorkloadCase]:
    where = f"workload[{index}]"
    table = dict(table)
    name = table.pop("name", None)
    if not isinstance(name, str) or name not in workloads.CATALOGUE:
        what = "missing name" if name is None else \
            f"unknown workload {name!r}{did_you_mean(str(name), workloads.CATALOGUE)}"
        raise PlanError(f"{source}: {where}.name: {what} "
                        f"(fix: use one of {', '.join(workloads.CATALOGUE)})")
    workload = workloads.CATALOGUE[name]
    repeat = _workload_repeat(table, source, where)
    best_of = _workload_best_of(table, repeat, source, where)
    repeat = best_of or repeat
    only = _workload_environments(table, source, where)
    base_label = _workload_label(table, name, source, where)
    follows = _following(table, workload.params_model, source, where)
    table = _one_item_lists_unwrapped(table, workload.params_model)
    swept = [key for key, value in table.items() if _is_sweep(value, workload.params_model, key)]
    cases, problems = [], []
    for combination in _sweep(table, workload.params_model, source, where):
        # checked now with the host's CPUs; each environment's own count later (follow)
        given = {**combination, **{key: host_cpus(host) for key in follows}}
        try:
            params = workload.resolve(given, host)
        except ValidationError as error:
            told = explain(source, error, prefix=where, model=workload.params_model,
                           also=WORKLOAD_KEYS)
            if told not in problems:
                problems.append(told)
            continue
        label = base_label + "".join(f"[{key}={combination[key]}]" for key in swept)
        case = WorkloadCase(name, params, label, repeat, only, table=index, follows=follows,
                            best_of=best_of)
        if repeat == AUTO and case.workload.primary_metric is None:
            raise PlanError(f"{source}: {where}.repeat: \"auto\" judges a workload's "
                            f"primary metric and {name} has none (fix: give a whole number)")
        cases.append(case)
    if problems:
        raise gathered(problems)
    return cases


@contextlib.contextmanager
def _noted(problems: list[str] | None) -> Iterator[None]:
    """A PlanError inside is added to problems (one entry per line) rather than raised;
    with problems None it is raised."""
    try:
        yield
    except PlanError as error:
        if problems is None:
            raise
        problems += numbered_lines(str(error))


FOLLOW_VCPUS = "@vcpus"


def host_cpus(host: Host) -> int:
    return int(host.facts.get("logical_cpus") or os.cpu_count() or 1)


def _following(table: dict[str, Any], model: type[BaseModel], source: str,
               where: str) -> tuple[str, ...]:
    """Takes out the parameters written "@vcpus": each environment's CPU count (make -jN
    following the vCPUs). Only whole-number parameters may follow it."""
    # a key the workload does not have stays in the table: its error lists the parameters
    keys = tuple(key for key, value in table.items()
                 if value == FOLLOW_VCPUS and key in model.model_fields)
    for key in keys:
        field = model.model_fields[key]
        if field.annotation is not int:
            raise PlanError(f"{source}: {where}.{key}: \"{FOLLOW_VCPUS}\" gives a whole number "
                            "(each environment's CPUs) and this parameter takes none (fix: give "
                            "a value, or use it for a count such as build's jobs)")
        del table[key]
    return keys


def follow(cases: list[WorkloadCase], specs: list[EnvironmentSpec], host: Host,
            source: str) -> list[WorkloadCase]:
    """A case with parameters that follow the environment becomes one case per value, each
    for the environments with that many CPUs, under the one label (rows align)."""
    out = []
    for case in cases:
        if not case.follows:
            out.append(case)
            continue
        groups: dict[int, list[str]] = {}
        for spec in specs:
            if case.runs_in(spec.name):
                groups.setdefault(spec.cpu_count(host_cpus(host)), []).append(spec.name)
        for cpus, names in groups.items():
            params = case.params.model_copy(update={key: cpus for key in case.follows})
            params = type(params).model_validate(params.model_dump())  # checked again
            out.append(dataclasses.replace(case, params=params, environments=tuple(names)))
    return out


def check_shared_labels(cases: list[WorkloadCase], specs: list[EnvironmentSpec],
                         source: str) -> None:
    """Two tables may give one label only as one measurement whose parameters belong to the
    environment: the same workload, each table with `environments` matching none of the
    other's. Their rows then align across environments (docs/plan-format.md)."""
    names = [spec.name for spec in specs]
    seen: dict[str, list[WorkloadCase]] = {}
    for case in cases:
        for other in seen.get(case.label, []):
            index = case.table
            overlap = [name for name in names if case.runs_in(name) and other.runs_in(name)]
            if other.name != case.name or case.environments is None \
                    or other.environments is None or overlap:
                why = f" (both run in {', '.join(overlap[:3])})" if overlap and \
                    other.name == case.name and None not in (case.environments,
                                                             other.environments) else ""
                raise PlanError(
                    f"{source}: workload[{index}].name: {case.label!r} appears twice{why} "
                    "(fix: give one [[workload]] table per workload and sweep with a list, e.g. "
                    "array_mib = [32, 128]; tell tables of one workload apart with label = "
                    '"..."; or, for one measurement whose parameters differ by environment, '
                    "give each table environments = [...] that share none)")
        seen.setdefault(case.label, []).append(case)


def _workload_label(table: dict[str, Any], name: str, source: str, where: str) -> str:
    """Takes the table's own `label` (no parameter either): the row's name in reports,
    the workload's name by default; two exec tables need one each."""
    if "label" not in table:
        return name
    label = table.pop("label")
    if not isinstance(label, str) or not re.match(IDENTIFIER, label):
        raise PlanError(f"{source}: {where}.label: {label!r} is not a plain identifier "
                        "(fix: a letter, then letters, digits, _ . -, e.g. label = "
                        '"sysbench-cpu")')
    return label


def _workload_environments(table: dict[str, Any], source: str,
                           where: str) -> tuple[str, ...] | None:
    """Takes the table's own `environments` (no parameter either): names or patterns."""
    if "environments" not in table:
        return None
    value = table.pop("environments")
    if (not isinstance(value, list) or not value
            or not all(isinstance(item, str) and item for item in value)):
        raise PlanError(f"{source}: {where}.environments: a list of environment names or "
                        f"patterns is needed, not {value!r} (fix: e.g. environments = "
                        '["native", "qemu-tcg*"])')
    return tuple(value)


def check_environment_patterns(cases: list[WorkloadCase], specs: list[EnvironmentSpec],
                                source: str) -> None:
    names = [spec.name for spec in specs]
    for case in cases:
        for pattern in case.environments or ():
            if not any(fnmatch.fnmatchcase(name, pattern) for name in names):
                raise PlanError(f"{source}: workload {case.label}: environments: {pattern!r} "
                                f"matches no environment (fix: use one of {', '.join(names)}, "
                                "or a pattern like \"qemu-tcg*\")")


def _workload_repeat(table: dict[str, Any], source: str, where: str) -> int | str | None:
    """Takes the table's own `repeat` out of it (it is no parameter) and checks it."""
    if "repeat" not in table:
        return None
    try:
        return WorkloadRepeat.model_validate({"repeat": table.pop("repeat")}).repeat
    except ValidationError as error:
        raise PlanError(explain(source, error, prefix=where)) from None


def _workload_best_of(table: dict[str, Any], repeat: int | str | None, source: str,
                      where: str) -> int | None:
    """Takes the table's `best_of` out of it: its runs, which a repeat may not contradict."""
    if "best_of" not in table:
        return None
    try:
        best_of = WorkloadBestOf.model_validate({"best_of": table.pop("best_of")}).best_of
    except ValidationError as error:
        raise PlanError(explain(source, error, prefix=where)) from None
    if repeat is not None and repeat != best_of:
        raise PlanError(f"{source}: {where}: repeat = {repeat!r} and best_of = {best_of}: "
                        f"best_of = {best_of} runs the workload {best_of} times (fix: drop "
                        "repeat)")
    return best_of


def _is_sweep(value: Any, model: type[BaseModel], key: str) -> bool:
    """A list sweeps unless the field itself takes a list; then a list of lists sweeps."""
    if not isinstance(value, list):
        return False
    field = model.model_fields.get(key)
    takes_list = field is not None and typing.get_origin(field.annotation) in (tuple, list)
    return not takes_list or (bool(value) and all(isinstance(item, list) for item in value))


def _one_item_lists_unwrapped(table: dict[str, Any], model: type[BaseModel]) -> dict[str, Any]:
    """A sweep over one value is that value: `channel = ["serial"]` labels and names its
    case as `channel = "serial"` does, so that it pairs with a table that wrote a plain value
    (a field that takes a list is swept by a list of lists: [["pid"]] is ["pid"])."""
    return {key: value[0] if _is_sweep(value, model, key) and len(value) == 1 else value
            for key, value in table.items()}


def _sweep(table: dict[str, Any], model: type[BaseModel], source: str,
           where: str) -> list[dict[str, Any]]:
    swept = {key: value for key, value in table.items() if _is_sweep(value, model, key)}
    for key, values in swept.items():
        if not values:
            raise PlanError(f"{source}: {where}.{key}: an empty list sweeps over nothing "
                            "(fix: give at least one value)")
    if not swept:
        return [table]
    combinations = []
    for values in itertools.product(*swept.values()):
        chosen = dict(zip(swept, values))
        suffix = "-".join(f"{key}{plain_value(value)}" for key, value in chosen.items())
        name = f"{table['name']}-{suffix}" if "name" in table else None
        combinations.append({**table, **chosen, **({"name": name} if name else {})})
    return combinations


def select(items: list, wanted: tuple[str, ...], source: str, flag: str, key) -> list:
    if not wanted:
        return items
    known = {key(item) for item in items}
    for name in wanted:
        if name not in known:
            raise PlanError(f"{flag}: {name!r} is not in the plan {source}"
                            f"{did_you_mean(name, sorted(known))} "
                            f"(fix: use one of {', '.join(sorted(known))})")
    return [item for item in items if key(item) in wanted]


def _no_duplicates(names: list[str], source: str, table: str, field: str,
                   fix: str = "") -> None:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if name in seen:
            raise PlanError(f"{source}: {table}[{index}].{field}: {name!r} appears twice "
                            f"(fix: {fix or f'give each {table} a distinct {field}'})")
        seen.add(name)
