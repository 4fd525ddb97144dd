"""A plan from a TOML file, from a campaign's stored plan, or from the command line's flags:
read, expanded and checked before anything runs."""

from __future__ import annotations

import dataclasses
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationError)

from guestbench import environments, programs, workloads
from guestbench.workloads import stream
from guestbench.plan import tables as plan_tables
from guestbench.environments.base import IDENTIFIER, EnvironmentSpec
from guestbench.host import Host
from guestbench.plan.errors import PlanError, explain, gathered
from guestbench.plan.expand import (
    check_environment_patterns, check_shared_labels, expand_environments, expand_workloads, follow,
    select)
from guestbench.plan.schema import (
    AUTO, AUTO_BY_DEFAULT, DEFAULT_REPEAT, CampaignSection, Overrides, Plan, PlanFile, WorkloadCase)
from guestbench.plan.errors import did_you_mean


def load(path: Path, host: Host, overrides: Overrides = Overrides()) -> Plan:
    """Read and validate a TOML plan file; the campaign is named after the file by default."""
    try:
        raw = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise PlanError(f"{path}: no such plan file (fix: check the path; "
                        f"{programs.examples() / 'quick.toml'} is a starting point)") from None
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
    return validated(raw, str(path), host, overrides)


def stored(document: dict[str, Any], where: str) -> Plan:
    """The plan a campaign stored (Plan.as_dict()), read back to run the rest of it.
    where names the campaign in an error."""
    try:
        campaign = CampaignSection.model_validate_json(json.dumps(document["campaign"]))
        specs = [environments.spec_model(spec["kind"]).model_validate_json(json.dumps(spec))
                 for spec in document["environments"]]
        cases = [WorkloadCase(
            case["name"],
            workloads.CATALOGUE[case["name"]].params_model.model_validate_json(
                json.dumps(case["params"])),
            case["label"], case["repeat"],
            tuple(case["environments"]) if "environments" in case else None,
            best_of=case.get("best_of"))
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
# A cell whose runs vary too much to reach the target by max_runs stops as soon as that is
# plain (out-of-reach): on a noisy host (runs varying by 10-15%) nearly every micro cell went
# on to its tenth run for an interval of +/-4-8% that its fifth run had already told. From
# its fourth run: three campaigns took 69-78 s here with five (the bound: 75 s), and a
# fourth run leaves an interval about 12% wider than a fifth would (sqrt(5/4)).
QUICK_AUTO = {"min_runs": 4, "max_runs": 10, "max_cell_s": 30.0, "stop_out_of_reach": True}


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
        "workload": [_quick_table(name, host) for name in (overrides.workloads or workloads.QUICK_SUITE)],
    }
    raw["campaign"] = {k: v for k, v in raw["campaign"].items() if v is not None}
    return validated(raw, "command line", host, Overrides(
        repeat=overrides.repeat, timeout_s=overrides.timeout_s, name=overrides.name))


def _quick_table(name: str, host: Host) -> dict[str, Any]:
    """A workload of the plan without a file: STREAM's bounded by its arrays' cost."""
    return stream.quick_table(host) if name == "stream" else {"name": name}


def validated(raw: dict[str, Any], source: str, host: Host, overrides: Overrides) -> Plan:
    """A plan from its TOML tables (source: where they came from, for the errors)."""
    # every problem of the plan is gathered and told at once: the top level's, then each
    # environment and workload table's (a table with a problem is left out), then the
    # tables' (their names checked only against a plan that had no other problem)
    problems: list[str] = []
    try:
        top = PlanFile.model_validate(raw)
    except ValidationError as error:
        problems += explain(source, error, model=PlanFile).splitlines()
        top = PlanFile.model_construct(**{key: _tables_of(raw, key) for key in (
            "environment", "workload", "table")}, campaign=CampaignSection())
    specs = expand_environments(top.environment, source, problems)
    cases = expand_workloads(top.workload, source, host, problems)
    # against the whole plan: --env and --workload narrow a run, not what its tables name
    tables = _tables(top.table, specs, cases, source, problems)
    if problems:
        raise gathered(problems)
    planned = [spec.name for spec in specs]
    specs = select(specs, overrides.environments, source, "--env", lambda s: s.name)
    cases = select(cases, overrides.workloads, source, "--workload", lambda c: c.name)
    if not overrides.environments:
        check_environment_patterns(cases, specs, source)
    cases = follow(cases, specs, host, source)
    check_shared_labels(cases, specs, source)
    campaign = _apply(top.campaign, overrides, specs, source, planned)
    cases = [dataclasses.replace(case, repeat=_resolved_repeat(case, campaign, overrides, source))
             for case in cases]
    return Plan(campaign, tuple(specs), tuple(cases), source, tables=tuple(tables))


def _tables_of(raw: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The [[key]] tables of a plan whose top level did not validate, as far as they are
    tables (the top level's own error says what the rest is)."""
    found = raw.get(key)
    return [table for table in found if isinstance(table, dict)] if isinstance(found, list) \
        else []


def _tables(entries: list[dict[str, Any]], specs: list[EnvironmentSpec],
            cases: list[WorkloadCase], source: str,
            problems: list[str]) -> list[plan_tables.TableSpec]:
    names = [spec.name for spec in specs]
    workload_names = [(case.label, case.name) for case in cases]
    checked = []
    named_right = not problems  # a name may be missing because its table had a problem
    for index, entry in enumerate(entries):
        where = f"table[{index}]"
        try:
            spec = plan_tables.TableSpec.model_validate(entry)
        except ValidationError as error:
            problems += explain(source, error, prefix=where,
                                model=plan_tables.TableSpec).splitlines()
            continue
        problem = plan_tables.problem(spec, names, workload_names) if named_right else None
        if problem:
            problems.append(f"{source}: {where}.{problem}")
        checked.append(spec)
    return checked


def _resolved_repeat(case: WorkloadCase, campaign: CampaignSection, overrides: Overrides,
                     source: str) -> int | str:
    """best_of's runs; else --repeat, else the workload's own repeat, else the campaign's,
    else its family's default."""
    if case.best_of is not None:
        return case.best_of  # the best of N is of N runs, whatever --repeat says
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
           source: str, planned: list[str] | None = None) -> CampaignSection:
    """The campaign section with the flags' changes; its baseline checked: an environment of
    the plan that --env leaves out is no baseline of this run (dropped, as the implicit native
    is), one the plan lacks an error. planned: the plan's environments before --env."""
    changes = {key: value for key, value in (("repeat", overrides.repeat),
                                             ("timeout_s", overrides.timeout_s),
                                             ("name", overrides.name)) if value is not None}
    try:
        campaign = CampaignSection.model_validate({**campaign.model_dump(), **changes})
    except ValidationError as error:
        field = error.errors()[0]["loc"][0]
        flag = {"repeat": "--repeat", "timeout_s": "--timeout", "name": "--name"}[field] \
            if field in changes else None
        raise PlanError(explain(flag or source, error, prefix="" if flag else "campaign",
                                 flag=bool(flag), model=CampaignSection)) from None
    names = [spec.name for spec in specs]
    if campaign.baseline is None:
        return campaign.model_copy(update={"baseline": "native" if "native" in names else None})
    if campaign.baseline not in names and campaign.baseline in (planned or ()):
        return campaign.model_copy(update={"baseline": None})  # --env left it out
    if campaign.baseline not in names:
        raise PlanError(f"{source}: campaign.baseline: {campaign.baseline!r} is not an environment "
                        f"of this plan (fix: use one of {', '.join(names)})")
    return campaign
