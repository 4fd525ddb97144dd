"""What report, compare, ab and history read from the store, and the one place each of
them calls its loader: a campaign's report, compare's two sides, ab's two halves, the
history. A name that matches nothing stored ends the command with the nearest names."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from guestbench.plan.errors import did_you_mean
from guestbench.store.records import Campaign

if TYPE_CHECKING:  # the store's engine loads only where a command reads through it
    from guestbench.store import Store


def digested(url: str, selector: str | None, baseline: str | None, all_metrics: bool,
             summary: bool):
    """A campaign's summary results from its digest (analysis/digest.py), for the summary
    of the campaign's own baseline; None where there is none to trust, or another view."""
    if not summary or baseline is not None or all_metrics:
        return None
    from guestbench.analysis import digest
    return digest.read(url, selector)


def report(opened: Store, selector: str | None, baseline: str | None, all_metrics: bool,
           summary: bool):
    """One campaign's report; summary: only what the summary shows is described, and kept
    as the campaign's digest for the next summary."""
    from guestbench.analysis import digest, results
    if baseline is not None:
        _check_baseline(opened, selector, baseline)
    keep = summary and baseline is None and not all_metrics
    # a summary to keep describes every cell, so that compare can read the digest too
    loaded = results.load(opened, selector, baseline, all_metrics, context_samples=not summary,
                          primary_only=summary and not keep)
    if keep:
        digest.keep(opened, loaded)
    return loaded


def _check_baseline(opened: Store, selector: str | None, baseline: str) -> None:
    from guestbench.store import StoreError
    campaign = opened.campaign(selector)
    names = [env.name for env in opened.environments(campaign.id)]
    if baseline not in names:
        raise StoreError(f"--baseline: {baseline!r} is not an environment of campaign "
                         f"{campaign.id}{did_you_mean(baseline, names)} (fix: use one of "
                         f"{', '.join(names)})")


def compared(urls: tuple[str, str], selectors: tuple[str, str], group: str | None):
    """compare's two sides: from the campaigns' digests where both have one that serves,
    else read from the stores (with a pool group, its two hosts' campaigns)."""
    found = None if group else digested_sides(urls, selectors)
    if found is not None:
        return found
    from guestbench import store
    stores = (store.open(urls[0], create=False),)
    stores += (store.open(urls[1], create=False),) if urls[1] != urls[0] else stores
    if group is not None:
        from guestbench.report.tables.group import campaign_of_host
        selectors = tuple(campaign_of_host(opened, group, host)
                          for opened, host in zip(stores, selectors))
    return sides(stores, selectors)


def digested_sides(urls: tuple[str, str], selectors: tuple[str, str]):
    """Both campaigns as compare reads them, from their digests, where both have one that
    describes every cell; else None."""
    from guestbench.analysis import compare as comparing, digest
    out = []
    for url, selector in zip(urls, selectors):
        read = digest.read(url, selector)
        side = comparing.side_of(read) if read is not None else None
        if side is None:
            return None
        out.append(side)
    return out


def sides(stores: tuple[Store, Store], selectors: tuple[str, str]):
    """Both campaigns as compare reads them: A in a child process while this one reads B
    (guestbench/process/forked.py), when the host has two CPUs."""
    from guestbench.process import forked

    def read_a():
        stores[0].engine.dispose(close=False)  # the child's own connections, not the parent's
        return _side(stores[0], selectors[0])
    with forked.beside(read_a) as side_a:
        side_b = _side(stores[1], selectors[1])
        return [side_a(), side_b]


def _side(opened: Store, selector: str):
    """One campaign as compare reads it: context metrics (iterations, clock ratios) are
    never compared, and are left unread."""
    from guestbench.analysis import compare as comparing
    from guestbench.analysis.summary import CONTEXT_METRICS
    campaign = opened.campaign(selector)
    return comparing.side(campaign, opened.environments(campaign.id),
                          opened.runs(campaign.id, comparing.RUN_COLUMNS),
                          opened.samples(campaign.id, CONTEXT_METRICS))


def with_itself(urls: tuple[str, str], sides_read) -> str:
    """What compare says when both sides are one campaign of one store; else ""."""
    a, b = (side.campaign for side in sides_read)
    if urls[0] != urls[1] or a.id != b.id:
        return ""
    return (f"guestbench: compare: campaign {a.id} ({a.name!r}) with itself: every cell "
            "is 'same' by construction (fix: name two campaigns; 'guestbench report --list' "
            "shows them)")


def ab_sides(opened: Store, campaign_id: int):
    """The A and B halves of an ab campaign, each with its environments' plain names."""
    from guestbench.analysis import compare as comparing
    from guestbench.analysis.summary import CONTEXT_METRICS
    campaign = opened.campaign(str(campaign_id))
    environments = opened.environments(campaign_id)
    runs, samples = opened.runs(campaign_id), opened.samples(campaign_id, CONTEXT_METRICS)
    halves = []
    for tag in ("a", "b"):
        mine = [dataclasses.replace(env, name=env.name.rsplit(".", 1)[0])
                for env in environments if env.name.endswith(f".{tag}")]
        ids = {env.id for env in mine}
        side_runs = [dataclasses.replace(run, environment=run.environment.rsplit(".", 1)[0])
                     for run in runs if run.environment_id in ids]
        run_ids = {run.id for run in side_runs}
        halves.append(comparing.side(campaign, mine, side_runs, samples.of_runs(run_ids)))
    return halves


def history(url: str, host: str | None, group: str | None,
            environments: tuple[str, ...], workloads: tuple[str, ...], name: str | None,
            order: str, max_pvalue: float, min_change: float):
    """Every finished campaign's cells as series with their change points: from the
    campaigns' digests where every finished one has one, else read from the store (and
    each campaign's digest kept for the next time). An --env or --workload that no stored
    campaign has ends it with the nearest names."""
    from guestbench.analysis import history as trend
    from guestbench.store.errors import StoreError
    asked = (host, group, environments, workloads, name, order, max_pvalue, min_change)
    quick = _digested_readings(url) if group is None else None
    if quick is not None:
        try:
            found = trend.build(quick, *asked, where=url)
            if not (set(environments) - {one.environment for one in found.series}
                    or set(workloads) - {one.label for one in found.series}):
                return found
        except StoreError:
            pass  # said again below, with the names a misspelling may have meant
    from guestbench import store
    opened = store.open(url, create=False)
    try:
        found = trend.build(_store_readings(opened, group), *asked, where=str(opened.engine.url))
    except StoreError:
        _check_names(opened, environments, workloads)
        raise
    if (set(environments) - {one.environment for one in found.series}
            or set(workloads) - {one.label for one in found.series}):
        _check_names(opened, environments, workloads)  # read only when one may be misspelt
    return found


def _digested_readings(url: str):
    """Every campaign from its digest, or None where a finished one has none to trust."""
    from guestbench.analysis import digest
    every = digest.read_every(url)
    if every is None or any(status == "finished" and results is None
                            for _id, status, results in every):
        return None
    return [(results.campaign if results else Campaign(campaign_id, status=status),
             (lambda found=results: found)) for campaign_id, status, results in every]


def _store_readings(opened: Store, group: str | None):
    """Every campaign of the store (or of a pool group's plan), each derived from its
    samples when history asks for it, its digest kept."""
    from guestbench.analysis import digest, results
    from guestbench.store import pool as pool_rows, StoreError
    if group is None:
        ids = [campaign.id for campaign in opened.campaigns()]
    else:
        row = pool_rows.group(opened.engine, group)
        if row is None:
            raise StoreError(f"--group {group!r}: no such campaign group in this store "
                             "(fix: 'guestbench hosts' or 'guestbench report --list')")
        ids = pool_rows.campaigns_of_plan(opened.engine, row.plan_hash)
    for campaign_id in ids:
        campaign = opened.campaign(str(campaign_id))

        def derived(selector=str(campaign_id)):
            loaded = results.load(opened, selector, context_samples=False, primary_only=True)
            digest.keep(opened, loaded)
            return loaded
        yield campaign, derived


def _check_names(opened: Store, environments: tuple[str, ...],
                 workloads: tuple[str, ...]) -> None:
    from guestbench.store import StoreError
    stored_environments: set[str] = set()
    stored_workloads: set[str] = set()
    for campaign in opened.campaigns():
        stored_environments |= {env.name for env in opened.environments(campaign.id)}
        for run in opened.runs(campaign.id, ("label", "workload")):
            stored_workloads |= {run.label, run.workload}
    for flag, kind, given, stored in (("--env", "environment", environments, stored_environments),
                                      ("--workload", "workload", workloads, stored_workloads)):
        for one in given:
            if one not in stored:
                raise StoreError(f"no cell of those campaigns matches ({flag} {one}): no "
                                 f"stored campaign has this {kind}{did_you_mean(one, stored)} "
                                 f"(fix: use one of {', '.join(sorted(stored))})")
