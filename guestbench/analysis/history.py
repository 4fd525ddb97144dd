"""A cell's median over many campaigns, and where it changed: Apache Otava's change points.

Each campaign gives one point per cell (environment, workload, metric): its median, the
95% interval of that median and the versions it ran (the VMM's, the guest kernel's,
the host kernel's, guestbench's). The change points come from Apache Otava's
E-Divisive means with Student's t-test significance (Fleming et al., "Hunter: Using
Change Point Detection to Hunt for Performance Regressions", ICPE 2023): it looks for a
shift in the mean of the series of medians, one value per campaign, as Otava does for
one value per commit.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from guestbench import host as host_facts
from guestbench.analysis import host_noise
from guestbench.analysis.cells import MEMORY_METRICS
from guestbench.analysis.host_noise import HostNoise
from guestbench.store.errors import StoreError
from guestbench.store import records
from guestbench.store.records import Campaign, Environment

# Otava's own defaults (its command line): a change must beat p = 0.001; no minimum size.
MAX_PVALUE = 0.001
MIN_CHANGE = 0.0
WINDOW = 50  # Otava's sliding window, in points (campaigns)
VERSION_FACTS = ("vmm_version", "guest_kernel")  # the environment's own (environment.facts)


@dataclass(frozen=True)
class Point:
    """One campaign's reading of a cell."""

    campaign: int
    name: str
    created_at: dt.datetime
    median: float
    low: float | None
    high: float | None
    runs: int
    versions: dict[str, str]  # what ran: see versions()


@dataclass(frozen=True)
class Change:
    """A change point: the series' mean shifted at `index` (the first point after it)."""

    index: int
    campaign: int
    created_at: dt.datetime
    before: float  # mean of the medians since the previous change point
    after: float  # ... until the next one
    pvalue: float
    versions_changed: dict[str, tuple[str, str]]  # key -> (before, after), what differs
    # why the hosts' noise may explain it: the campaign's against the one before (host_noise)
    host_explained: str = ""
    # what sets its campaign's host apart from the one before's as classes (host.HostClass)
    host_class_changed: str = ""

    @property
    def change(self) -> float:
        """Relative change of the mean: +0.10 is 10% more."""
        return self.after / self.before - 1 if self.before else math.inf


@dataclass
class Series:
    host: str
    environment: str
    label: str
    metric: str
    unit: str
    higher_is_better: bool
    points: list[Point] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)

    def worse(self, change: Change) -> bool:
        """Did the change make the cell slower (worse)?"""
        return change.after < change.before if self.higher_is_better \
            else change.after > change.before


def versions(environment: Environment, campaign: Campaign) -> dict[str, str]:
    """What a campaign's environment ran: the VMM and guest kernel it recorded, the host's
    kernel, and guestbench's version."""
    facts = environment.facts or {}
    found = {key: str(facts[key]) for key in VERSION_FACTS if facts.get(key)}
    kernel = (campaign.host_facts or {}).get("kernel")
    if kernel:
        found["host_kernel"] = str(kernel)
    found["guestbench"] = str(campaign.guestbench_version or "?")
    return found


def find_changes(series: Series, max_pvalue: float = MAX_PVALUE,
                 min_change: float = MIN_CHANGE) -> list[Change]:
    """Otava's change points of the series' medians (none under 4 points: Otava's t-test
    needs two points a side to have a spread)."""
    medians = [point.median for point in series.points]
    if len(medians) < 4 or len(set(medians)) == 1:
        return []
    from otava.analysis import compute_change_points  # only where it can find one
    found, _weak = compute_change_points(medians, window_len=WINDOW, max_pvalue=max_pvalue,
                                         min_magnitude=min_change)
    changes = []
    for change_point in found:
        index = int(change_point.index)
        point, previous = series.points[index], series.points[index - 1]
        changes.append(Change(
            index, point.campaign, point.created_at, float(change_point.stats.mean_1),
            float(change_point.stats.mean_2), float(change_point.stats.pvalue),
            _differences(previous.versions, point.versions)))
    return changes


def _differences(before: dict[str, str], after: dict[str, str]) -> dict[str, tuple[str, str]]:
    return {key: (before.get(key, "-"), after.get(key, "-"))
            for key in sorted(set(before) | set(after)) if before.get(key) != after.get(key)}


def version_key(point: Point) -> tuple:
    """Order points by the versions they ran (natural order: 6.1.10 after 6.1.9), then time."""
    return (*(_natural(point.versions.get(key, "")) for key in
              (*VERSION_FACTS, "host_kernel", "guestbench")), point.created_at)


def _natural(text: str) -> tuple:
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.findall(r"\d+|\D+", text))


@dataclass(frozen=True)
class HistoryCampaign:
    """A campaign history read, and the host it ran on (its pool name, else its hostname)."""

    id: int
    name: str
    created_at: dt.datetime
    host: str
    noise: HostNoise | None = None  # its host's load, steal and typical variation
    host_class: host_facts.HostClass = host_facts.HostClass()  # its CPU, kernel, ...


@dataclass(frozen=True)
class Crossing:
    """Where a host's campaigns, in time order, move to another host class (another CPU or
    kernel on one hostname or pool host): from `campaign` on, after `previous`."""

    host: str
    campaign: int
    created_at: dt.datetime
    previous: int
    differences: str  # "kernel 6.18.44 vs 6.18.50" (host.HostClass.differences)


@dataclass
class History:
    series: list[Series]
    campaigns: list[HistoryCampaign]  # the campaigns read
    left_out: list[tuple[int, str]] = field(default_factory=list)  # (campaign, why)
    order: str = "time"
    max_pvalue: float = MAX_PVALUE
    min_change: float = MIN_CHANGE
    memory_threshold_mib: float = 1.0  # a memory series' change must exceed it
    crossings: list[Crossing] = field(default_factory=list)
    # environment -> its functional sentence and VMM version (records.functional_facts)
    functional: dict[str, dict[str, str]] = field(default_factory=dict)

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(campaign.host for campaign in self.campaigns))


# One campaign as history reads it: its stored row (id, name, status, created_at, host
# facts, pool host) and what gives its results (its digest, or a derivation from its
# samples), called only for the finished campaigns the filters keep.
Reading = tuple[Campaign, Callable[[], Any]]


def build(readings: Iterable[Reading], host: str | None = None, group: str | None = None,
          environments: tuple[str, ...] = (), workloads: tuple[str, ...] = (),
          name: str | None = None, order: str = "time", max_pvalue: float = MAX_PVALUE,
          min_change: float = MIN_CHANGE, memory_threshold_mib: float = 1.0,
          where: str = "this store") -> History:
    """Each cell's series over the finished campaigns, and its change points."""
    found = History([], [], order=order, max_pvalue=max_pvalue, min_change=min_change,
                    memory_threshold_mib=memory_threshold_mib)
    series: dict[tuple[str, str, str, str], Series] = {}
    for campaign, results_of in readings:
        on = campaign.pool_host or (campaign.host_facts or {}).get("hostname", "?")
        if (host and host != on) or (name and name != campaign.name):
            continue
        if campaign.status != "finished":
            found.left_out.append((campaign.id, f"{campaign.status}, not finished"))
            continue
        results = results_of()
        found.campaigns.append(HistoryCampaign(
            campaign.id, campaign.name, campaign.created_at, on,
            host_noise.of(campaign.host_checks, results.results),
            host_facts.host_class(campaign.host_facts or {})))
        _add_points(series, results, on, environments, workloads)
        found.functional.update(records.functional_facts(results.environments))
    if not found.campaigns:
        raise StoreError(f"{where}: no finished campaign matches"
                         + _filters(host, group, name)
                         + " (fix: 'guestbench report --list' shows the campaigns)")
    found.crossings = crossings(found.campaigns)
    classes = {campaign.id: campaign.host_class for campaign in found.campaigns}
    for one in series.values():
        if order == "version":
            one.points.sort(key=version_key)
        changes = beyond_memory_threshold(one, find_changes(one, max_pvalue, min_change),
                                          memory_threshold_mib)
        changes = _marked(one, changes,
                          {campaign.id: campaign.noise for campaign in found.campaigns})
        one.changes = [_class_changed(one, change, classes) for change in changes]
    found.series = [one for one in series.values() if one.points]
    if not found.series:
        raise StoreError("no cell of those campaigns matches" + _filters(
            None, None, None, environments, workloads) + " (fix: name an environment and a "
            "workload of the campaigns, or leave --env and --workload out)")
    return found


def crossings(campaigns: list[HistoryCampaign]) -> list[Crossing]:
    """Each host's moves to another host class, its campaigns in time order. A fact a
    campaign did not record (a store older than it) is no move: each is compared with the
    facts its host's campaigns recorded last."""
    found, known = [], {}  # host -> (its class as last recorded, the campaign last read)
    for campaign in sorted(campaigns, key=lambda one: one.created_at):
        before = known.get(campaign.host)
        now = campaign.host_class
        if before is not None:
            last, previous = before
            if now.apart_from(last):
                found.append(Crossing(campaign.host, campaign.id, campaign.created_at, previous,
                                      "; ".join(last.differences(now))))
            now = dataclasses.replace(last, **{key: value for key, value in
                                               dataclasses.asdict(now).items()
                                               if value is not None})
        known[campaign.host] = (now, campaign.id)
    return found


def _class_changed(one: Series, change: Change, classes: dict[int, host_facts.HostClass]
                   ) -> Change:
    """The change, with what sets its campaign's host class apart from the point before's."""
    before, at = classes.get(one.points[change.index - 1].campaign), classes.get(change.campaign)
    if before is None or at is None or not at.apart_from(before):
        return change
    return dataclasses.replace(change, host_class_changed="; ".join(before.differences(at)))


def beyond_memory_threshold(one: Series, changes: list[Change], threshold_mib: float
                            ) -> list[Change]:
    """A memory series' changes that exceed threshold_mib (compare judges memory so: 2 MiB
    on a 5 MiB overhead counts, 0.3 MiB on 300 does not, whatever the ratio); others all."""
    if one.metric not in MEMORY_METRICS:
        return changes
    return [change for change in changes if abs(change.after - change.before) > threshold_mib]


def _marked(one: Series, changes: list[Change], noise: dict[int, HostNoise | None]
            ) -> list[Change]:
    """The changes whose campaign's host, against the campaign before it, was noisy enough to
    explain the change's direction (worse on the noisier host), marked with the reason."""
    out = []
    for change in changes:
        if one.metric in MEMORY_METRICS:  # memory is not the CPUs'
            out.append(change)
            continue
        before, at = one.points[change.index - 1].campaign, change.campaign
        if noise.get(before) is not None and noise.get(at) is not None:
            explanation = host_noise.explain(noise[before], noise[at],
                                             (f"campaign {before}'s", f"campaign {at}'s"))
            if host_noise.explains(explanation, one.worse(change)):
                change = dataclasses.replace(change, host_explained=explanation.reason)
        out.append(change)
    return out


def _add_points(series: dict, report, host: str, environments: tuple[str, ...],
                workloads: tuple[str, ...]) -> None:
    workload_of = report.workload_of
    env_rows = {env.name: env for env in report.environments}
    # the performance figures, and the memory an instance holds (cells.is_memory)
    judged = {**report.performance_primary(), **{
        label: metric for label, metric in report.primary.items() if metric in MEMORY_METRICS}}
    for label, metric in judged.items():
        if workloads and label not in workloads and workload_of.get(label) not in workloads:
            continue
        for env, cell in report.results.cells.get((label, metric), {}).items():
            if (environments and env not in environments) or cell.stats is None:
                continue
            key = (host, env, label, metric)
            if key not in series:
                series[key] = Series(host, env, label, metric, cell.unit, cell.higher_is_better)
            campaign = report.campaign
            series[key].points.append(Point(
                campaign.id, campaign.name, campaign.created_at, cell.stats.median,
                cell.stats.ci_low, cell.stats.ci_high, cell.n_runs,
                versions(env_rows.get(env, {}), campaign)))


def _filters(host, group, name, environments=(), workloads=()) -> str:
    parts = [f"{flag} {value}" for flag, value in (
        ("--host", host), ("--group", group), ("--name", name),
        ("--env", ",".join(environments)), ("--workload", ",".join(workloads))) if value]
    return f" ({'; '.join(parts)})" if parts else ""
