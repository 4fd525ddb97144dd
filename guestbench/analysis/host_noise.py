"""How noisy a campaign's host was, and whether two campaigns' hosts differ enough to explain
a verdict between them (compare, history).

A campaign keeps its host checks (host.py): the 1-minute load average when it started, the
load sampled while it ran, steal time. Its results give the typical variation (the median
coefficient of variation of its performance cells). Two campaigns of one plan put the same
load on their host by themselves, so a difference in load is other work's. Where the load
of one side is high enough to compete for CPUs and well above the other's, or one side
lost CPU time to steal, a verdict that goes the way that noise pushes (slower on the noisy
side) is the host's as much as the change's: compare marks it, and --fail-on-regression
counts it unless --forgive-host-noise.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

from guestbench import host as host_checks
from guestbench.analysis.cells import Results

# One side's load explains a verdict when it is at least LOADED_SHARE of the logical CPUs
# (the runs compete for them) and above the other side's by LOAD_MARGIN_SHARE of them, and
# by at least LOAD_MARGIN_MIN: two campaigns of one plan differ by a few tenths at rest.
LOADED_SHARE = 0.75
LOAD_MARGIN_SHARE = 0.25
LOAD_MARGIN_MIN = 1.0
STEAL_MARGIN_PCT = host_checks.STEAL_PCT_LIMIT  # and steal above the other's by this much


@dataclass(frozen=True)
class HostNoise:
    """One campaign's host noise; None where it was not recorded."""

    load: float | None  # 1-minute load average: median of the samples taken while it ran,
    load_when: str  # "while it ran", or "at its start" for campaigns without samples
    load_max: float | None
    steal_pct: float | None
    typical_cv: float | None  # median coefficient of variation of its performance cells
    logical_cpus: int | None

    def cells(self) -> list[str]:
        """A table's cells: load (1 min), steal, typical CV; "-" where unknown."""
        load = "-" if self.load is None else (
            f"{self.load:.2f} {self.load_when}"
            + (f", max {self.load_max:.2f}" if self.load_max is not None else ""))
        return [load, "-" if self.steal_pct is None else f"{self.steal_pct:.1f}%",
                "-" if self.typical_cv is None else f"{self.typical_cv:.1%}"]

    def document(self) -> dict[str, Any]:
        return {"load_avg_1min": self.load, "load_when": self.load_when,
                "load_max": self.load_max, "steal_pct": self.steal_pct,
                "typical_cv": self.typical_cv, "logical_cpus": self.logical_cpus}


@dataclass(frozen=True)
class Explanation:
    """Which side's host was the noisier, and why, in words a reader can act on."""

    side: str  # "A" or "B"
    reason: str  # "B's host was loaded (load 5.70 against 0.40)"


def of(host_checks_row: dict[str, Any] | None, results: Results | None) -> HostNoise:
    """A campaign's host noise from its stored host checks and its results."""
    checks = host_checks_row or {}
    before = checks.get("before") or {}
    during = checks.get("load_during") or {}
    load, when, peak = _number(during.get("median")), "while it ran", _number(during.get("max"))
    if load is None:
        loads = before.get("load_avg") or []
        load, when, peak = (_number(loads[0]) if loads else None), "at its start", None
    return HostNoise(load, when, peak, _number(checks.get("steal_pct")), typical_cv(results),
                     before.get("logical_cpus") if isinstance(before.get("logical_cpus"), int)
                     else None)


def typical_cv(results: Results | None) -> float | None:
    """The median coefficient of variation over the cells that measure performance."""
    if results is None:
        return None
    cvs = [cell.stats.cv for row in results.cells.values() for cell in row.values()
           if cell.is_performance and cell.stats is not None and cell.stats.cv is not None]
    return statistics.median(cvs) if cvs else None


def explain(a: HostNoise, b: HostNoise, names: tuple[str, str] = ("A's", "B's")
            ) -> Explanation | None:
    """Whether one side's host was noisy enough, against the other's, to explain a verdict;
    names: how the reason calls each side's host's owner."""
    cpus = a.logical_cpus or b.logical_cpus or 1
    called = {"A": names[0], "B": names[1]}
    if a.load is not None and b.load is not None:
        high, low, side = (b.load, a.load, "B") if b.load >= a.load else (a.load, b.load, "A")
        if high >= LOADED_SHARE * cpus and high - low >= max(LOAD_MARGIN_MIN,
                                                             LOAD_MARGIN_SHARE * cpus):
            return Explanation(side, f"{called[side]} host was loaded (load {high:.2f} against "
                                     f"{low:.2f}, {cpus} CPUs)")
    if a.steal_pct is not None and b.steal_pct is not None:
        high, low, side = ((b.steal_pct, a.steal_pct, "B") if b.steal_pct >= a.steal_pct
                           else (a.steal_pct, b.steal_pct, "A"))
        if high > host_checks.STEAL_PCT_LIMIT and high - low >= STEAL_MARGIN_PCT:
            return Explanation(side, f"{called[side]} host lost {high:.1f}% of its CPU time to "
                                     f"steal, against {low:.1f}%")
    return None


def explains(explanation: Explanation | None, worse_in_b: bool) -> bool:
    """Whether the noisy side is the one a verdict finds worse: slower in B with B noisy,
    or faster in B (worse in A) with A noisy."""
    return explanation is not None and (explanation.side == "B") == worse_in_b


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None
