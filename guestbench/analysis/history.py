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

import datetime as dt
import math
import re
from dataclasses import dataclass, field
from typing import Any

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


def versions(environment: dict[str, Any], campaign: dict[str, Any]) -> dict[str, str]:
    """What a campaign's environment ran: the VMM and guest kernel it recorded, the host's
    kernel, and guestbench's version."""
    facts = environment.get("facts") or {}
    found = {key: str(facts[key]) for key in VERSION_FACTS if facts.get(key)}
    kernel = (campaign.get("host_facts") or {}).get("kernel")
    if kernel:
        found["host_kernel"] = str(kernel)
    found["guestbench"] = str(campaign.get("guestbench_version", "?"))
    return found


def find_changes(series: Series, max_pvalue: float = MAX_PVALUE,
                 min_change: float = MIN_CHANGE) -> list[Change]:
    """Otava's change points of the series' medians (none under 4 points: Otava's t-test
    needs two points a side to have a spread)."""
    from otava.analysis import compute_change_points

    medians = [point.median for point in series.points]
    if len(medians) < 4 or len(set(medians)) == 1:
        return []
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
