"""What report, compare, ab and history read from the store, and the one place each of
them calls its loader: a campaign's report, compare's two sides, ab's two halves, the
history, a pool group's campaigns. This is where stored rows meet analysis/: a campaign
is read here (or its digest, the summary kept in the store) and derived there, so that
analysis never opens a store. A name that matches nothing stored ends the command with
the nearest names."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from guestbench import store
from guestbench.analysis import digest, history as trend
from guestbench.analysis.cells import CONTEXT_METRICS
from guestbench.analysis.results import CampaignResults, derive
from guestbench.plan.errors import did_you_mean
from guestbench.process import forked
from guestbench.store import digest_reader
from guestbench.store.errors import StoreError
from guestbench.store.records import Campaign, CampaignGroup

if TYPE_CHECKING:  # the store's engine loads only where a command reads through it
    from guestbench.store.engine import Store


def digested(url: str, selector: str | None, baseline: str | None, all_metrics: bool,
             summary: bool):
    """A campaign's summary results from its digest (analysis/digest.py), for the summary
    of the campaign's own baseline; None where there is none to trust, or another view."""
    if not summary or baseline is not None or all_metrics:
        return None
    return read_digest(url, selector)


def report(opened: Store, selector: str | None, baseline: str | None, all_metrics: bool,
           summary: bool):
    """One campaign's report; summary: only what the summary shows is described, and kept
    as the campaign's digest for the next summary."""
    if baseline is not None:
        _check_baseline(opened, selector, baseline)
    keep = summary and baseline is None and not all_metrics
    # a summary to keep describes every cell, so that compare can read the digest too
    loaded = load(opened, selector, baseline, all_metrics, context_samples=not summary,
                  primary_only=summary and not keep)
    if keep:
        keep_digest(opened, loaded)
    return loaded


def _check_baseline(opened: Store, selector: str | None, baseline: str) -> None:
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
    stores = (store.open(urls[0], create=False),)
    stores += (store.open(urls[1], create=False),) if urls[1] != urls[0] else stores
    if group is not None:
        selectors = tuple(campaign_of_host(opened, group, host)
                          for opened, host in zip(stores, selectors))
    return sides(stores, selectors)


def digested_sides(urls: tuple[str, str], selectors: tuple[str, str]):
    """Both campaigns as compare reads them, from their digests, where both have one that
    describes every cell; else None."""
    from guestbench.analysis import compare as comparing  # deferred: numpy (0.11 s)
    out = []
    for url, selector in zip(urls, selectors):
        read = read_digest(url, selector)
        side = comparing.side_of(read) if read is not None else None
        if side is None:
            return None
        out.append(side)
    return out


def sides(stores: tuple[Store, Store], selectors: tuple[str, str]):
    """Both campaigns as compare reads them: A in a child process while this one reads B
    (guestbench/process/forked.py), when the host has two CPUs."""

    def read_a():
        stores[0].engine.dispose(close=False)  # the child's own connections, not the parent's
        return _side(stores[0], selectors[0])
    with forked.beside(read_a) as side_a:
        side_b = _side(stores[1], selectors[1])
        return [side_a(), side_b]


def _side(opened: Store, selector: str):
    """One campaign as compare reads it: context metrics (iterations, clock ratios) are
    never compared, and are left unread."""
    from guestbench.analysis import compare as comparing  # deferred: numpy (0.11 s)
    campaign = opened.campaign(selector)
    return comparing.side(campaign, opened.environments(campaign.id),
                          opened.runs(campaign.id, comparing.RUN_COLUMNS),
                          opened.samples(campaign.id, CONTEXT_METRICS), too_fast_rules())


def too_fast_rules() -> dict[str, str]:
    """Workload -> its tool's own too-fast rule (Workload.too_fast_rule), where it has one."""
    from guestbench.workloads import CATALOGUE  # deferred: 0.3 s; compare's tables load it
    return {name: workload.too_fast_rule for name, workload in CATALOGUE.items()
            if workload.too_fast_rule}


def with_itself(urls: tuple[str, str], sides_read) -> str:
    """What compare says when both sides are one campaign of one store; else ""."""
    a, b = (side.campaign for side in sides_read)
    if urls[0] != urls[1] or a.id != b.id:
        return ""
    return (f"guestbench: compare: campaign {a.id} ({a.name!r}) with itself: every cell "
            "is 'same' by construction (fix: name two campaigns; 'guestbench report --list' "
            "shows them)")


def stored_ab(url: str, selector: str):
    """The A and B halves of a campaign `ab` stored (compare --ab): its environments are
    NAME.a and NAME.b, each NAME on both sides; StoreError for any other campaign."""
    opened = store.open(url, create=False)
    campaign = opened.campaign(selector)
    names = [env.name for env in opened.environments(campaign.id)]
    halves = [{name[:-2] for name in names if name.endswith(suffix)} for suffix in (".a", ".b")]
    if not halves[0] or halves[0] != halves[1] or len(names) != 2 * len(halves[0]):
        raise StoreError(f"compare --ab {selector}: campaign {campaign.id} ({campaign.name!r}) "
                         "was not run by 'guestbench ab': its environments are "
                         f"{', '.join(names[:6]) or 'none'}, not NAME.a and NAME.b pairs "
                         "(fix: compare --ab with a campaign of 'guestbench ab', or compare "
                         "two campaigns: compare A B)")
    return ab_sides(opened, campaign.id)


def ab_sides(opened: Store, campaign_id: int):
    """The A and B halves of an ab campaign, each with its environments' plain names."""
    from guestbench.analysis import compare as comparing  # deferred: numpy (0.11 s)
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
        halves.append(comparing.side(campaign, mine, side_runs, samples.of_runs(run_ids),
                                     too_fast_rules()))
    return halves


def history(url: str, host: str | None, group: str | None,
            environments: tuple[str, ...], workloads: tuple[str, ...], name: str | None,
            order: str, max_pvalue: float, min_change: float,
            memory_threshold_mib: float = 1.0):
    """Every finished campaign's cells as series with their change points: from the
    campaigns' digests where every finished one has one, else read from the store (and
    each campaign's digest kept for the next time, once every campaign was read: a
    campaign found damaged after another's digest was made leaves the store untouched).
    An --env or --workload that no stored campaign has ends it with the nearest names."""
    asked = (host, group, environments, workloads, name, order, max_pvalue, min_change,
             memory_threshold_mib)
    quick = _digested_readings(url) if group is None else None
    if quick is not None:
        try:
            found = trend.build(quick, *asked, where=url)
            if not (set(environments) - {one.environment for one in found.series}
                    or set(workloads) - {one.label for one in found.series}):
                return found
        except StoreError:
            pass  # said again below, with the names a misspelling may have meant
    opened = store.open(url, create=False)
    made: list[Digest] = []
    try:
        found = trend.build(_store_readings(opened, group, made), *asked,
                            where=str(opened.engine.url))
    except StoreError:
        _check_names(opened, environments, workloads)
        raise
    if (set(environments) - {one.environment for one in found.series}
            or set(workloads) - {one.label for one in found.series}):
        _check_names(opened, environments, workloads)  # read only when one may be misspelt
    keep_digests(opened, made)
    return found


def _digested_readings(url: str):
    """Every campaign from its digest, or None where a finished one has none to trust."""
    every = read_every_digest(url)
    if every is None or any(status == "finished" and results is None
                            for _id, status, results in every):
        return None
    return [(results.campaign if results else Campaign(campaign_id, status=status),
             (lambda found=results: found)) for campaign_id, status, results in every]


def _store_readings(opened: Store, group: str | None, made: list[Digest]):
    """Every campaign of the store (or of a pool group's plan), each derived from its
    samples when history asks for it, its digest added to made (kept by the caller)."""
    from guestbench.store import pool as pool_rows  # deferred: see group_reports
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
            loaded = load(opened, selector, context_samples=False, primary_only=True)
            made.append(digest_of(opened, loaded))
            return loaded
        yield campaign, derived


def _check_names(opened: Store, environments: tuple[str, ...],
                 workloads: tuple[str, ...]) -> None:
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


def load(opened: Store, selector: str | None = None, baseline: str | None = None,
         all_metrics: bool = False, resamples: int | None = None,
         context_samples: bool = True, primary_only: bool = False) -> CampaignResults:
    """One campaign's results, read from the store and derived (analysis/results.py). For a
    view that shows neither (the summary): context_samples=False leaves the context
    metrics' samples (iterations, clock ratios) unread, a third of a micro campaign's
    samples; primary_only=True describes only the primary metrics' cells."""
    # the workloads' catalogue (pydantic) and numpy load only where a campaign is derived
    # from its samples; a summary read from its digest needs neither
    from guestbench.workloads import CATALOGUE  # deferred: 0.3 s, reason above
    campaign = opened.campaign(selector)
    environments = opened.environments(campaign.id)
    names = [env.name for env in environments]
    baseline = baseline or campaign.baseline
    if baseline is not None and baseline not in names:
        raise StoreError(f"--baseline: {baseline!r} is not an environment of campaign "
                         f"{campaign.id} (fix: use one of {', '.join(names)})")
    samples = opened.samples(campaign.id, () if context_samples or all_metrics
                             else CONTEXT_METRICS)
    return derive(campaign, environments, opened.runs(campaign.id), samples,
                  opened.cell_stops(campaign.id), baseline, CATALOGUE, all_metrics, resamples,
                  primary_only)


def read_digest(url: str, selector: str | None) -> CampaignResults | None:
    """A campaign's results from its digest, where one was kept from its present runs."""
    text = digest_reader.digest_text(url, selector, digest.FORMAT)
    return None if text is None else digest.decode(text)


def read_every_digest(url: str) -> list[tuple[int, str, CampaignResults | None]] | None:
    """Every campaign of a SQLite store as (id, status, results from its digest or None);
    None where the store cannot be read without its engine."""
    found = digest_reader.every_digest(url, digest.FORMAT)
    if found is None:
        return None
    return [(campaign_id, status, None if text is None else digest.decode(text))
            for campaign_id, status, text in found]


# A campaign's digest as it is kept: (campaign id, its status, the runs it was made from
# (Store.run_mark), its body)
Digest = tuple[int, str, tuple[int, int | None], str]


def keep_digest(opened: Store, results: CampaignResults) -> None:
    """Keep a summary's results as the campaign's digest (keep_digests)."""
    keep_digests(opened, [digest_of(opened, results)])


def digest_of(opened: Store, results: CampaignResults) -> Digest:
    campaign = results.campaign
    return (campaign.id, campaign.status, opened.run_mark(campaign.id),
            digest.encode(results))


def keep_digests(opened: Store, made: list[Digest]) -> None:
    """Keep the digests made, where the store lets this command write; a store it may not
    write (a reader's role, a read-only file, a file found damaged: Store.put_digest)
    goes without."""
    try:
        for campaign_id, status, mark, body in made:
            opened.put_digest(campaign_id, digest.FORMAT, status, mark, body)
    except Exception:  # noqa: BLE001 - a digest is a convenience; its absence costs time only
        opened.engine.dispose()


def group_reports(opened: Store, selector: str, whole: bool = False,
                  baseline: str | None = None, all_metrics: bool = False
                  ) -> tuple[CampaignGroup, list[tuple[str, CampaignResults]]]:
    """A pool group and each host's latest campaign of it, derived: (host, results) in host
    name order, for report --group; whole: every cell described (each host's own report,
    --by host), not only the primary metrics'."""
    # as wherever the pool's rows are read here: their queries load SQLAlchemy, which a
    # report of one campaign from its digest never needs
    from guestbench.store import pool as pool_rows  # deferred: 0.2 s, reason above
    group = pool_rows.group(opened.engine, selector)
    if group is None:
        raise StoreError(f"{opened.engine.url}: no campaign group {selector!r} in this store "
                         "(fix: 'guestbench submit' makes one)")
    latest = {}  # each host's latest campaign of the group, hosts in name order
    for row in pool_rows.campaigns_of(opened.engine, group.id):
        latest[row.pool_host or f"campaign {row.id}"] = row
    if baseline is not None:
        for row in latest.values():
            _check_baseline(opened, str(row.id), baseline)
    reports = [(host, load(opened, str(row.id), baseline, all_metrics,
                           context_samples=whole, primary_only=not whole))
               for host, row in sorted(latest.items())]
    if not reports:
        raise StoreError(f"group {group.id} ({group.name!r}) has no campaign yet "
                         f"(queued on {', '.join(group.hosts)}; see 'guestbench hosts')")
    return group, reports


def campaign_of_host(opened: Store, selector: str, host: str) -> str:
    """The id of the group's latest campaign on a pool host (compare --group G HOST HOST)."""
    from guestbench.store import pool as pool_rows  # deferred: see group_reports
    group = pool_rows.group(opened.engine, selector)
    if group is None:
        raise StoreError(f"--group {selector!r}: no such campaign group in this store "
                         "(fix: 'guestbench report --list', or 'guestbench hosts')")
    mine = [row for row in pool_rows.campaigns_of(opened.engine, group.id)
            if row.pool_host == host]
    if not mine:
        ran = sorted({row.pool_host for row in pool_rows.campaigns_of(opened.engine, group.id)})
        raise StoreError(f"--group {selector!r}: host {host!r} has no campaign in group "
                         f"{group.id} (fix: name one of {', '.join(ran) or 'none yet'})")
    return str(mine[-1].id)
