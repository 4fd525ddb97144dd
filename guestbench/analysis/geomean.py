"""The geometric means of a campaign: one definition, taken once, shown by every view.

A geometric mean of ratios to the baseline (the one ratio rule: x baseline, above 1 is
worse) is taken per group of workloads that measure one kind of thing (GROUPS): code that
runs in the guest (micro workloads, STREAM, builds, programs), start-up (boot, start),
network and uploads, disk. A campaign with micro and start-up figures gets a mean of each,
never one over milliseconds of start-up and nanoseconds of getpid together.

Within a group, every environment's mean covers the same rows, so that the means stand side
by side: the group's primary performance metrics that the baseline measured and that every
environment with any value in the group measured too (`common`). An environment that
measured none of them has no mean. An environment whose figures are functional only (its
facts say so, report/functional.py) has none and does not narrow the rows; with a
functional baseline no mean is taken.

derive() (results.py) stores the campaign's means in CampaignResults.geomeans; the summary,
the "Relative to" and "% of" tables, the HTML overview and JSON all read them, and a table
of chosen rows or environments (a plan's published table) calls `over` with its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from guestbench.analysis.cells import Cell, Interval, Results, slowdown_pair

# workload family -> the group its means are taken in (workloads/base.py's families)
GROUPS = {"micro": "in the guest", "stream": "in the guest", "build": "in the guest",
          "tool": "in the guest", "test": "in the guest", "boot": "start-up",
          "instance": "start-up", "network": "network", "transfer": "network",
          "disk": "disk", "durability": "disk"}
ORDER = ("in the guest", "start-up", "network", "disk")


@dataclass(frozen=True)
class Geomean:
    """One environment's geometric mean of ratios over some rows (above 1 is worse)."""

    interval: Interval
    workloads: int  # how many rows it covers (the same for every environment of a group)
    of: int  # how many rows of its group the baseline measured
    labels: tuple[str, ...] = ()  # the rows it covers, by label
    left_out: tuple[str, ...] = ()  # the rows of `of` it does not cover


def group_of(family: str | None) -> str:
    return GROUPS.get(family or "", "in the guest")


def title(group: str, groups: int) -> str:
    """The row's name: "geometric mean", or with its group where a campaign has several."""
    return "geometric mean" if groups == 1 else f"geometric mean, {group}"


def campaign(results: Results, baseline: str | None, primary: Mapping[str, str],
             family_of: Mapping[str, str | None], functional: set[str]
             ) -> dict[str, dict[str, Geomean]]:
    """{group: {environment: its mean}} in ORDER, for the groups that have a mean."""
    if baseline is None or baseline in functional:
        return {}
    by_group: dict[str, list[tuple[str, str]]] = {}
    for label, metric in primary.items():
        by_group.setdefault(group_of(family_of.get(label)), []).append((label, metric))
    judged = [env for env in results.environments if env not in functional]
    out = {}
    for group in sorted(by_group, key=lambda name: ORDER.index(name) if name in ORDER else 99):
        means = over(results, baseline, by_group[group], judged)
        if means:
            out[group] = means
    return out


def over(results: Results, baseline: str | None, rows: Sequence[tuple[str, str]],
         environments: Sequence[str]) -> dict[str, Geomean]:
    """Each of `environments`' mean over the `rows` (label, primary metric) that the baseline
    measured as a performance figure (above its tool's resolution) and every environment
    with a value among them measured; {} where no row is common. `of` counts the rows the
    baseline measured, those under its resolution too (they have no ratio)."""
    if baseline is None:
        return {}
    base = [row for row in rows if results.cells[row][baseline].values
            and results.cells[row][baseline].is_performance]
    rows = [row for row in base if _measured(results.cells[row][baseline])]
    measuring = [env for env in environments if env != baseline and any(
        _measured(results.cells[row][env]) for row in rows)]
    common = [row for row in rows
              if all(_measured(results.cells[row][env]) for env in measuring)]
    if not common:
        return {}
    from guestbench.analysis import stats  # deferred: numpy (0.1 s); a digest's summary needs none
    out = {}
    for env in measuring:
        pairs = [slowdown_pair(results.cells[row][baseline], results.cells[row][env])
                 for row in common]
        interval = stats.geometric_mean_interval(pairs)
        if interval is not None:
            out[env] = Geomean(interval, len(common), len(base),
                               tuple(label for label, _metric in common),
                               tuple(label for label, _metric in base if (label, _metric)
                                     not in common))
    return out


def _measured(cell: Cell) -> bool:
    return bool(cell.values) and not cell.too_fast and cell.stats is not None
