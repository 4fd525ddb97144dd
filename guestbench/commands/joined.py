"""Several campaigns of one store read as one, for `guestbench report A B`: the same plan
run with two versions of a VMM (two QEMU binaries, a VMM before and after a change) gives
the Seoul write-up's "19.02 vs current" rows.

Each campaign is named by a tag (`report 4=19.02 7=current`; without one, its campaign
name where the names differ, else its id). Its environments are renamed "NAME (TAG)"
(NAME alone for an empty tag, `7=`), and their specs carry `campaign = TAG`, so that every
table sees one environment per campaign: the scaling table gives a row per campaign, the
versions table a column per campaign, the others a column each. The runs, samples and
stopped cells keep their own, and the statistics are each cell's own as in its campaign.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np

from guestbench.analysis.results import CampaignResults, derive
from guestbench.store import Store
from guestbench.store.columns import Samples
from guestbench.store.errors import StoreError


class Chosen(NamedTuple):
    """A campaign as `report` names it: its selector and its tag (None: chosen here)."""

    selector: str
    tag: str | None


def parse(given: tuple[str, ...]) -> list[Chosen]:
    """report's CAMPAIGN arguments: "4", "4=19.02", "seed-002=current", "7=" (no tag)."""
    out = []
    for one in given:
        selector, sep, tag = one.partition("=")
        if not selector.strip():
            raise StoreError(f"campaign {one!r}: no campaign before '=' (fix: ID=TAG, e.g. "
                             "4=19.02)")
        out.append(Chosen(selector.strip(), tag.strip() if sep else None))
    if len(out) == 1 and out[0].tag is not None:
        raise StoreError(f"campaign {given[0]!r}: a tag names a campaign's rows among several "
                         f"(fix: give two campaigns, e.g. 'report {out[0].selector}=A 7=B', "
                         f"or drop '={out[0].tag}')")
    return out


def load(opened: Store, chosen: list[Chosen], baseline: str | None,
         all_metrics: bool) -> CampaignResults:
    """The campaigns as one (the module's docstring); baseline: a joined name."""
    from guestbench.workloads import CATALOGUE  # deferred: 0.3 s, as reading.load's
    campaigns = [opened.campaign(one.selector) for one in chosen]
    ids = [campaign.id for campaign in campaigns]
    if len(set(ids)) < len(ids):
        repeated = next(one for one in ids if ids.count(one) > 1)
        raise StoreError(f"report: campaign {repeated} is named twice (fix: name each "
                         "campaign once)")
    names = [campaign.name for campaign in campaigns]
    default = (lambda campaign: campaign.name) if len(set(names)) == len(names) else \
        (lambda campaign: str(campaign.id))
    tags = [one.tag if one.tag is not None else default(campaign)
            for one, campaign in zip(chosen, campaigns)]
    environments, runs, parts, stops = [], [], [], []
    for campaign, tag in zip(campaigns, tags):
        own = opened.environments(campaign.id)
        renamed = {env.name: f"{env.name} ({tag})" if tag else env.name for env in own}
        environments += [dataclasses.replace(
            env, name=renamed[env.name], position=len(environments) + env.position,
            spec={**(env.spec or {}), "name": renamed[env.name], "campaign": tag})
            for env in own]
        runs += [dataclasses.replace(run, environment=renamed.get(run.environment,
                                                                  run.environment))
                 for run in opened.runs(campaign.id)]
        parts.append(opened.samples(campaign.id, ()))
        stops += [dataclasses.replace(stop, environment=renamed.get(stop.environment or "",
                                                                    stop.environment))
                  for stop in opened.cell_stops(campaign.id)]
    joined_names = [env.name for env in environments]
    if len(set(joined_names)) < len(joined_names):
        twice = next(name for name in joined_names if joined_names.count(name) > 1)
        raise StoreError(f"report: two campaigns' environments would both read {twice!r} "
                         "(fix: give each campaign its own tag, e.g. 'report 4=old 7=new')")
    first = campaigns[0]
    if baseline is None and first.baseline:
        baseline = f"{first.baseline} ({tags[0]})" if tags[0] else first.baseline
    if baseline is not None and baseline not in joined_names:
        raise StoreError(f"--baseline: {baseline!r} is none of the joined environments (fix: "
                         f"use one of {', '.join(joined_names)})")
    campaign = dataclasses.replace(first, name=" + ".join(
        f"{campaign.name} ({tag})" if tag else campaign.name
        for campaign, tag in zip(campaigns, tags)), plan=_plan_tables(first.plan, tags))
    return derive(campaign, environments, runs, joined(parts), stops, baseline, CATALOGUE,
                  all_metrics)


def _plan_tables(plan: dict | None, tags: list[str]) -> dict | None:
    """The first campaign's plan, its [[table]] entries naming every campaign's environment:
    an entry's "tcg" shows "tcg (19.02)" and "tcg (current)", each labelled with its tag."""
    if not plan or not isinstance(plan.get("tables"), list):
        return plan
    entries = []
    for entry in plan["tables"]:
        if not isinstance(entry, dict):
            entries.append(entry)
            continue
        entry = dict(entry)
        if isinstance(entry.get("environments"), list):
            entry["environments"] = [f"{name} ({tag})" if tag else name
                                     for name in entry["environments"] for tag in tags]
        if isinstance(entry.get("labels"), dict):
            entry["labels"] = {(f"{name} ({tag})" if tag else name):
                               (f"{label} ({tag})" if tag else label)
                               for name, label in entry["labels"].items() for tag in tags}
        entries.append(entry)
    return {**plan, "tables": entries}


def joined(parts: list[Samples]) -> Samples:
    """Samples of several campaigns as one set (run ids of one store are unique)."""
    kinds = list(dict.fromkeys(kind for part in parts for kind in part.kinds))
    code = {kind: index for index, kind in enumerate(kinds)}
    return Samples(
        np.concatenate([part.run_id for part in parts]),
        np.concatenate([np.array([code[kind] for kind in part.kinds] or [0],
                                 dtype=np.int32)[part.kind] for part in parts]),
        np.concatenate([part.value for part in parts]), tuple(kinds))
