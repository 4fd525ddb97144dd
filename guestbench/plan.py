"""Plans: the TOML file or CLI flags, validated into environments x workloads x repetitions."""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import os
import re
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel, ConfigDict, Field, PlainValidator, ValidationError, model_validator)
from pydantic_core import PydanticCustomError

from guestbench import environments, plan_tables, workloads
from guestbench.environments.base import IDENTIFIER, EnvironmentSpec
from guestbench.host import Host
from guestbench.names import plain_value
from guestbench.spelling import did_you_mean

AUTO = "auto"
DEFAULT_REPEAT = 5  # runs of a workload whose family is not repeated adaptively by default
AUTO_BY_DEFAULT = frozenset({"micro"})  # families whose repeat is "auto" unless a plan says
MAX_REPEAT = 10000
DEFAULT_TIMEOUT_S = 120.0


class PlanError(Exception):
    """An invalid plan: the message names the file, the field path and the fix."""


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
    # parameters written "@vcpus": set per environment (_follow), then the case is split
    follows: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)

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


def load(path: Path, host: Host, overrides: Overrides = Overrides()) -> Plan:
    """Read and validate a TOML plan file; the campaign is named after the file by default."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file (fix: check the path; "
                        "examples/quick.toml is a starting point)") from None
    except IsADirectoryError:
        raise PlanError(f"{path}: is a folder, not a plan file (fix: name a .toml file)") from None
    except (OSError, UnicodeDecodeError) as error:
        raise PlanError(f"{path}: cannot read the plan: {error} "
                        "(fix: check the file's permissions and that it is UTF-8 TOML)") from None
    except tomllib.TOMLDecodeError as error:
        raise PlanError(f"{path}: TOML syntax error: {error} (fix: correct the TOML syntax)") from None
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)
    if isinstance(raw.get("campaign", {}), dict) and re.match(IDENTIFIER, stem):
        raw.setdefault("campaign", {}).setdefault("name", stem)
    return _build(raw, str(path), host, overrides)


def stored(document: dict[str, Any], where: str) -> Plan:
    """The plan a campaign stored (Plan.as_dict()), read back to run the rest of it.
    where names the campaign in an error."""
    import json

    try:
        campaign = CampaignSection.model_validate_json(json.dumps(document["campaign"]))
        specs = [environments.spec_model(spec["kind"]).model_validate_json(json.dumps(spec))
                 for spec in document["environments"]]
        cases = [WorkloadCase(
            case["name"],
            workloads.CATALOGUE[case["name"]].params_model.model_validate_json(
                json.dumps(case["params"])),
            case["label"], case["repeat"],
            tuple(case["environments"]) if "environments" in case else None)
            for case in document["workloads"]]
    except (KeyError, TypeError, ValidationError) as error:
        raise PlanError(f"{where}: its stored plan cannot be read by this guestbench "
                        f"({type(error).__name__}: {error}) (fix: resume it with the guestbench "
                        "version that started it, or run its plan again)") from None
    return Plan(campaign, tuple(specs), tuple(cases), document.get("source", "stored"),
                bool(document.get("interleave", False)),
                tuple(plan_tables.table_specs(document)))


# The default campaign (no plan file) stops its auto cells sooner than a plan
# does by default: it is the first thing a newcomer runs, and on a noisy
# 2-core host cells that never reach +/-2% would otherwise take 30 runs each.
QUICK_AUTO = {"max_runs": 10, "max_cell_s": 30.0}


def from_flags(host: Host, overrides: Overrides = Overrides()) -> Plan:
    """The plan of `guestbench run` without a file: presets x the quick suite."""
    env_names = overrides.environments or environments.DEFAULT_CAMPAIGN
    unknown = [name for name in env_names if name not in environments.PRESETS]
    if unknown:
        raise PlanError(f"--env: unknown environment {unknown[0]!r}"
                        f"{did_you_mean(unknown[0], environments.PRESETS)} (fix: use one of "
                        f"{', '.join(environments.PRESETS)}, or write a plan file)")
    raw = {
        "campaign": {"baseline": "native" if "native" in env_names else None,
                     "auto": QUICK_AUTO},
        "environment": [{"preset": name} for name in env_names],
        "workload": [{"name": name} for name in (overrides.workloads or workloads.QUICK_SUITE)],
    }
    raw["campaign"] = {k: v for k, v in raw["campaign"].items() if v is not None}
    return _build(raw, "command line", host, Overrides(
        repeat=overrides.repeat, timeout_s=overrides.timeout_s, name=overrides.name))


def _build(raw: dict[str, Any], source: str, host: Host, overrides: Overrides) -> Plan:
    try:
        top = PlanFile.model_validate(raw)
    except ValidationError as error:
        raise PlanError(_explain(source, error, model=PlanFile)) from None
    specs = _environments(top.environment, source)
    cases = _workloads(top.workload, source, host)
    # against the whole plan: --env and --workload narrow a run, not what its tables name
    tables = _tables(top.table, specs, cases, source)
    specs = _select(specs, overrides.environments, source, "--env", lambda s: s.name)
    cases = _select(cases, overrides.workloads, source, "--workload", lambda c: c.name)
    if not overrides.environments:
        _check_environment_patterns(cases, specs, source)
    cases = _follow(cases, specs, host, source)
    _check_shared_labels(cases, specs, source)
    campaign = _apply(top.campaign, overrides, specs, source)
    cases = [dataclasses.replace(case, repeat=_resolved_repeat(case, campaign, overrides, source))
             for case in cases]
    return Plan(campaign, tuple(specs), tuple(cases), source, tables=tuple(tables))


def _tables(entries: list[dict[str, Any]], specs: list[EnvironmentSpec],
            cases: list[WorkloadCase], source: str) -> list[plan_tables.TableSpec]:
    names = [spec.name for spec in specs]
    workload_names = [(case.label, case.name) for case in cases]
    checked = []
    for index, entry in enumerate(entries):
        where = f"table[{index}]"
        try:
            spec = plan_tables.TableSpec.model_validate(entry)
        except ValidationError as error:
            raise PlanError(_explain(source, error, prefix=where,
                                     model=plan_tables.TableSpec)) from None
        problem = plan_tables.problem(spec, names, workload_names)
        if problem:
            raise PlanError(f"{source}: {where}.{problem}")
        checked.append(spec)
    return checked


def _resolved_repeat(case: WorkloadCase, campaign: CampaignSection, overrides: Overrides,
                     source: str) -> int | str:
    """--repeat, else the workload's own repeat, else the campaign's, else its family's default."""
    if overrides.repeat is None and case.repeat is not None:
        return case.repeat  # checked where it was read
    if campaign.repeat is None:
        return AUTO if case.workload.family in AUTO_BY_DEFAULT else DEFAULT_REPEAT
    if campaign.repeat == AUTO and case.workload.primary_metric is None:
        where = "--repeat" if overrides.repeat is not None else f"{source}: campaign.repeat"
        raise PlanError(f"{where}: \"auto\" judges a workload's primary metric and {case.name} "
                        f"has none (fix: give a whole number, or give the {case.name} workload "
                        "its own repeat = N in a plan file)")
    return campaign.repeat


def _apply(campaign: CampaignSection, overrides: Overrides, specs: list[EnvironmentSpec],
           source: str) -> CampaignSection:
    changes = {key: value for key, value in (("repeat", overrides.repeat),
                                             ("timeout_s", overrides.timeout_s),
                                             ("name", overrides.name)) if value is not None}
    try:
        campaign = CampaignSection.model_validate({**campaign.model_dump(), **changes})
    except ValidationError as error:
        field = error.errors()[0]["loc"][0]
        flag = {"repeat": "--repeat", "timeout_s": "--timeout", "name": "--name"}[field] \
            if field in changes else None
        raise PlanError(_explain(flag or source, error, prefix="" if flag else "campaign",
                                 flag=bool(flag), model=CampaignSection)) from None
    names = [spec.name for spec in specs]
    if campaign.baseline is None:
        return campaign.model_copy(update={"baseline": "native" if "native" in names else None})
    if campaign.baseline not in names:
        raise PlanError(f"{source}: campaign.baseline: {campaign.baseline!r} is not an environment "
                        f"of this plan (fix: use one of {', '.join(names)})")
    return campaign


def _environments(tables: list[dict[str, Any]], source: str) -> list[EnvironmentSpec]:
    specs: list[EnvironmentSpec] = []
    for index, table in enumerate(tables):
        where = f"environment[{index}]"
        table = dict(table)
        preset = table.pop("preset", None)
        if preset is not None:
            if not isinstance(preset, str) or preset not in environments.PRESETS:
                raise PlanError(f"{source}: {where}.preset: unknown preset {preset!r} "
                                f"(fix: use one of {', '.join(environments.PRESETS)})")
            table = {**environments.PRESETS[preset], "name": preset, **table}
        kind = table.get("kind")
        if not isinstance(kind, str) or kind not in environments.plan_kinds():
            hint = f"set kind to one of {', '.join(environments.PUBLIC_KINDS)}, or use a preset"
            what = "missing kind" if kind is None else f"unknown kind {kind!r}"
            raise PlanError(f"{source}: {where}: {what} (fix: {hint})")
        model = environments.spec_model(kind)
        table = _one_item_lists_unwrapped(table, model)
        for combination in _sweep(table, model, source, where):
            try:
                specs.append(model.model_validate(combination))
            except ValidationError as error:
                raise PlanError(_explain(source, error, prefix=where, model=model)) from None
    _no_duplicates([spec.name for spec in specs], source, "environment", "name")
    return specs


def _workloads(tables: list[dict[str, Any]], source: str, host: Host) -> list[WorkloadCase]:
    cases: list[WorkloadCase] = []
    for index, table in enumerate(tables):
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
        only = _workload_environments(table, source, where)
        base_label = _workload_label(table, name, source, where)
        follows = _following(table, workload.params_model, source, where)
        table = _one_item_lists_unwrapped(table, workload.params_model)
        swept = [key for key, value in table.items() if _is_sweep(value, workload.params_model, key)]
        for combination in _sweep(table, workload.params_model, source, where):
            # checked now with the host's CPUs; each environment's own count later (_follow)
            given = {**combination, **{key: host_cpus(host) for key in follows}}
            try:
                params = workload.resolve(given, host)
            except ValidationError as error:
                raise PlanError(_explain(source, error, prefix=where,
                                         model=workload.params_model)) from None
            label = base_label + "".join(f"[{key}={combination[key]}]" for key in swept)
            case = WorkloadCase(name, params, label, repeat, only, table=index, follows=follows)
            if repeat == AUTO and case.workload.primary_metric is None:
                raise PlanError(f"{source}: {where}.repeat: \"auto\" judges a workload's "
                                f"primary metric and {name} has none (fix: give a whole number)")
            cases.append(case)
    return cases


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


def _follow(cases: list[WorkloadCase], specs: list[EnvironmentSpec], host: Host,
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


def _check_shared_labels(cases: list[WorkloadCase], specs: list[EnvironmentSpec],
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


def _check_environment_patterns(cases: list[WorkloadCase], specs: list[EnvironmentSpec],
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
        raise PlanError(_explain(source, error, prefix=where)) from None


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


def _select(items: list, wanted: tuple[str, ...], source: str, flag: str, key) -> list:
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


_FIXES = {
    "extra_forbidden": "remove it or check its spelling",
    "missing": "add it",
    "string_pattern_mismatch": "use a plain identifier: a letter, then letters, digits, _ . -",
    "greater_than": "use a larger value",
    "greater_than_equal": "use a larger value",
    "less_than": "use a smaller value",
    "less_than_equal": "use a smaller value",
    "repeat_value": 'give a whole number of runs such as 5, or "auto" to repeat until the '
                    "median is known well enough",
    "model_type": "give a table: a [section] with its keys",
    "max_below_min": "make max_runs at least min_runs",
    "too_short": "give at least one",
    "int_from_float": "give a whole number",
    "finite_number": "give a finite number",
    "int_type": "give a whole number",
    "float_type": "give a number",
    "string_type": "give a quoted string",
    "bool_type": "give true or false",
    "list_type": 'give a list, e.g. ["a", "b"] (a list of tables: one [[name]] header each)',
    "dict_type": "give a table: { key = \"value\" }",
    "enum": "use one of the values listed",
    "literal_error": "use one of the values listed",
}


def _explain(source: str, error: ValidationError, prefix: str = "", flag: bool = False,
             model: type[BaseModel] | None = None) -> str:
    """Pydantic's first error as 'FILE: field.path: what (fix: how)'.

    An unknown key comes first: it is usually a misspelling that also causes
    the 'field required' error of the key that was meant.
    """
    errors = sorted(error.errors(), key=lambda item: item["type"] != "extra_forbidden")
    first = errors[0]
    # a validator's own error (a metric's regex) may carry its fix in its context
    context = first.get("ctx") or {}
    fix = context.get("fix") or _FIXES.get(first["type"], "see docs/plan-format.md for this field")
    if first["type"] == "string_pattern_mismatch" and context.get("pattern") != IDENTIFIER:
        fix = f"write it in the form {context.get('pattern')} (docs/plan-format.md)"
    if first["type"] == "extra_forbidden" and model is not None:
        allowed = _allowed_keys(model, first["loc"])
        fix = f"{fix}; allowed here: {allowed}" if allowed else fix
    if flag:
        return f"{source}: {first['msg']} (fix: {fix})"
    parts = [prefix] if prefix else []
    for item in first["loc"]:
        if isinstance(item, int):
            parts[-1:] = [f"{parts[-1]}[{item}]"] if parts else [f"[{item}]"]
        else:
            parts.append(str(item))
    path = ".".join(parts) or "(top level)"
    extra = f" ({len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{source}: {path}: {first['msg']}{extra} (fix: {fix})"


def _allowed_keys(model: type[BaseModel], loc: tuple) -> str:
    """The keys of the (nested) model that holds the unknown key at loc."""
    for item in loc[:-1]:
        field = model.model_fields.get(item) if isinstance(item, str) else None
        annotation = field.annotation if field else None
        if typing.get_origin(annotation) in (tuple, list):  # a list of tables (exec's metrics)
            annotation = typing.get_args(annotation)[0]
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            model = annotation
    return ", ".join(model.model_fields)


AB_TAGS = ("a", "b")
AB_RESERVED = frozenset({"name", "kind", "preset"})


def assignments(items: tuple[str, ...], flag: str) -> dict[str, Any]:
    """--a KEY=VALUE ... as options: VALUE is read as TOML (2, true, "x", [1, 2]), else text."""
    out: dict[str, Any] = {}
    for item in items:
        key, equals, text = item.partition("=")
        key = key.strip()
        if not equals or not re.match(IDENTIFIER, key):
            raise PlanError(f"{flag}: {item!r} is not KEY=VALUE (fix: e.g. {flag} "
                            "platform=systrap, or {flag} vcpus=2)".replace("{flag}", flag))
        if key in AB_RESERVED:
            raise PlanError(f"{flag}: {key} cannot differ between A and B (fix: vary an "
                            "option of the environment, e.g. runtime=runsc)")
        try:
            out[key] = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            out[key] = text
    return out


def ab_plan(plan: Plan, a: dict[str, Any], b: dict[str, Any]) -> Plan:
    """Every environment of the plan twice, as NAME.a with a's options and NAME.b with b's,
    run interleaved in one campaign."""
    # neither side changed: an A/A check, which shows what noise alone gives
    specs = []
    for spec in plan.environments:
        for tag, options in zip(AB_TAGS, (a, b)):
            data = {**spec.model_dump(), **options, "name": f"{spec.name}.{tag}"}
            model = type(spec)
            try:
                specs.append(model.model_validate(data))
            except ValidationError as error:
                raise PlanError(_explain(f"--{tag} (environment {spec.name})", error,
                                         flag=True, model=model)) from None
    baseline = f"{plan.baseline}.a" if plan.baseline else None
    campaign = plan.campaign.model_copy(update={"baseline": baseline})
    cases = tuple(dataclasses.replace(case, environments=tuple(
        name for pattern in case.environments for name in (pattern, *(f"{pattern}.{tag}"
                                                                      for tag in AB_TAGS))))
                  if case.environments is not None else case for case in plan.workloads)
    return dataclasses.replace(plan, campaign=campaign, environments=tuple(specs),
                               workloads=cases, interleave=True)

