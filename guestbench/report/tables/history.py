"""`guestbench history`: every finished campaign of a host (or of a pool plan), one series
per cell, its change points (guestbench.analysis.history), as tables, JSON or an HTML page."""

from __future__ import annotations

from typing import Any

from guestbench.analysis.cells import MEMORY_METRICS
from guestbench.analysis.history import Change, History, Point, Series
from guestbench.report import functional, model
from guestbench.report.model import Table

SCHEMA = "guestbench-history/1"


# -- tables -------------------------------------------------------------------------------

def method_note(found: History) -> str:
    size = (f" and at least {found.min_change:.0%} in size" if found.min_change else "") + (
        f"; a memory series' change (MiB) must exceed {found.memory_threshold_mib:g} MiB"
        if any(one.metric in MEMORY_METRICS for one in found.series) else "")
    return (f"Change points: Apache Otava (E-Divisive means, t-test) on each campaign's median, "
            f"p < {found.max_pvalue:g}{size}; points in {found.order} order.")


def crossings_line(found: History) -> str:
    """Where the series cross host classes (analysis.history.crossings), said before any
    change point; "" where every host kept its class."""
    if not found.crossings:
        return ""
    many_hosts = len(found.hosts) > 1
    where = "; ".join(
        (f"on {crossing.host}, " if many_hosts else "")
        + f"from campaign {crossing.campaign} ({crossing.created_at:%Y-%m-%d %H:%M}) on, after "
          f"campaign {crossing.previous}: {crossing.differences}" for crossing in found.crossings)
    return (f"The series cross host classes ({where}): a change point there may be the "
            "host's, not a change of what ran.")


def summary_table(found: History) -> Table:
    many_hosts = len(found.hosts) > 1
    table = Table(f"History: {len(found.campaigns)} finished campaigns, "
                  f"{_span(found.campaigns)}",
                  [*(["host"] if many_hosts else []), "environment", "workload",
                   "metric", "campaigns", "first", "latest", "change points"], [],
                  label_columns=4 if many_hosts else 3, name="history", note=method_note(found),
                  lead=crossings_line(found))
    footnotes: list[str] = []
    for one in found.series:
        unit, divisor = _scale(one)
        table.add([*([one.host] if many_hosts else []), one.environment, one.label,
                   f"{one.metric} ({unit})", str(len(one.points)),
                   _value(one.points[0], divisor), _value(one.points[-1], divisor),
                   "; ".join(_change_text(one, change, footnotes) for change in one.changes)
                   or "none"])
    if found.left_out:
        footnotes.append("Left out: " + ", ".join(f"campaign {cid} ({why})"
                                                   for cid, why in found.left_out) + ".")
    table.footnotes = footnotes
    functional.mark_tables([table], functional.kept(found.functional), {})
    return table


def series_tables(found: History) -> list[Table]:
    """One table per series: each campaign's median and interval, the change points marked."""
    tables = []
    kept = functional.kept(found.functional)
    for one in found.series:
        at = {change.index: change for change in one.changes}
        unit, divisor = _scale(one)
        table = Table(f"{functional.named(kept, one.environment)} / {one.label} / "
                      f"{one.metric} ({unit})"
                      + (f" on {one.host}" if len(found.hosts) > 1 else ""),
                      ["campaign", "date", "median", "95% CI", "runs", "versions changed",
                       "change"],
                      [], label_columns=2, name="history-series")
        for index, point in enumerate(one.points):
            change = at.get(index)
            table.add([f"{point.campaign} {point.name}", f"{point.created_at:%Y-%m-%d %H:%M}",
                       _value(point, divisor), _interval(point, divisor), str(point.runs),
                       _versions_text(change),
                       (f"{change.change:+.1%} p={change.pvalue:.1g}"
                        + (" (host)" if change.host_explained else "")
                        + (" (host class)" if change.host_class_changed else ""))
                       if change else ""])
        tables.append(table)
    return tables


def functional_legend(found: History) -> list[str]:
    """The legend of the functional environments the series name (summary_table has it
    under itself): for a view without the summary."""
    return functional.legend(functional.kept(found.functional))


def _scale(one: Series) -> tuple[str, float]:
    """The series' unit, chosen from its own medians as a table's row is (model.value_scale):
    malloc reads 387.4 us, not 387.4k ns."""
    return model.value_scale(one.unit, [point.median for point in one.points
                                        if point.median is not None])


def _value(point: Point, divisor: float = 1.0) -> str:
    return model.format_value(point.median / divisor)


def _interval(point: Point, divisor: float = 1.0) -> str:
    if point.low is None or point.high is None:
        return "-"
    return (f"[{model.format_value(point.low / divisor)}, "
            f"{model.format_value(point.high / divisor)}]")


def noise_table(found: History) -> Table:
    """Each campaign's host noise (analysis/host_noise.py): its load, steal and typical CV."""
    many_hosts = len(found.hosts) > 1
    table = Table("Host noise of each campaign",
                  ["campaign", "date", *(["host"] if many_hosts else []), "load (1 min)",
                   "steal", "typical CV"], [], label_columns=3 if many_hosts else 2,
                  name="history-noise",
                  note="A change point whose campaign's host was loaded, or lost CPU time to "
                       "steal, against the campaign before it, is marked '(host)' where that "
                       "noise goes the change's way: it may be the host's, not the change's.")
    for campaign in found.campaigns:
        table.add([f"{campaign.id} {campaign.name}", f"{campaign.created_at:%Y-%m-%d %H:%M}",
                   *([campaign.host] if many_hosts else []),
                   *(campaign.noise.cells() if campaign.noise else ["-"] * 3)])
    return table


def _change_text(one: Series, change: Change, footnotes: list[str]) -> str:
    text = (f"campaign {change.campaign}: {change.change:+.1%} "
            f"{'worse' if one.worse(change) else 'better'}, p={change.pvalue:.0e}")
    if change.host_explained:
        footnotes.append(f"[{len(footnotes) + 1}] {change.host_explained}: the change may be "
                         "the host's (rerun on a quiet host, or use 'guestbench ab')")
        text += f" (host) [{len(footnotes)}]"
    if change.host_class_changed:
        footnotes.append(f"[{len(footnotes) + 1}] campaign {change.campaign} ran on another host "
                         f"class than the campaign before it ({change.host_class_changed}): "
                         "the change may be the host's, not a change of what ran")
        text += f" (host class) [{len(footnotes)}]"
    if change.versions_changed:
        footnotes.append(f"[{len(footnotes) + 1}] campaign {change.campaign}: " + ", ".join(
            f"{key} {old} -> {new}" for key, (old, new) in change.versions_changed.items()))
        text += f" [{len(footnotes)}]"
    return text


def _versions_text(change: Change | None) -> str:
    """At a change point, what its campaign ran that the one before did not."""
    if change is None:
        return ""
    return ", ".join(f"{key} -> {new}" for key, (_old, new) in change.versions_changed.items()) \
        or "none"


def _span(campaigns: list[dict[str, Any]]) -> str:
    first, last = campaigns[0].created_at, campaigns[-1].created_at
    return f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC"


# -- JSON ---------------------------------------------------------------------------------

def document(found: History) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "method": {"name": "Apache Otava change points (E-Divisive means, t-test)",
                   "of": "each campaign's median", "max_pvalue": found.max_pvalue,
                   "min_change": found.min_change, "order": found.order,
                   "memory_threshold_mib": found.memory_threshold_mib},
        "campaigns": [{"id": campaign.id, "name": campaign.name,
                       "created_at": campaign.created_at.isoformat(), "host": campaign.host,
                       "host_noise": campaign.noise.document() if campaign.noise else None,
                       "host_class": campaign.host_class.document()}
                      for campaign in found.campaigns],
        # where a host's campaigns move to another CPU or kernel (time order)
        "host_crossings": [{"host": crossing.host, "campaign": crossing.campaign,
                            "created_at": crossing.created_at.isoformat(),
                            "previous": crossing.previous, "differences": crossing.differences}
                           for crossing in found.crossings],
        "left_out": [{"campaign": cid, "why": why} for cid, why in found.left_out],
        "series": [_series_document(one) for one in found.series],
        # environment -> why its figures are functional only (as report's JSON says it)
        "functional": {env: told[functional.FUNCTIONAL]
                       for env, told in found.functional.items()},
    }


def _series_document(one: Series) -> dict[str, Any]:
    return {
        "host": one.host, "environment": one.environment, "workload": one.label,
        "metric": one.metric, "unit": one.unit, "higher_is_better": one.higher_is_better,
        "points": [{"campaign": p.campaign, "name": p.name,
                    "created_at": p.created_at.isoformat(), "median": p.median,
                    "ci_low": p.low, "ci_high": p.high, "runs": p.runs,
                    "versions": p.versions} for p in one.points],
        "change_points": [{"index": c.index, "campaign": c.campaign,
                           "created_at": c.created_at.isoformat(), "mean_before": c.before,
                           "mean_after": c.after, "change": c.change, "pvalue": c.pvalue,
                           "worse": one.worse(c), "host_explained": c.host_explained or None,
                           "host_class_changed": c.host_class_changed or None,
                           "versions_changed": {key: list(pair) for key, pair
                                                in c.versions_changed.items()}}
                          for c in one.changes],
    }
