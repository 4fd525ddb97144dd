"""`guestbench history`: every finished campaign of a host (or of a pool plan), one series
per cell, its change points (guestbench.analysis.history), as tables, JSON or an HTML page."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from guestbench.analysis import results as analysed
from guestbench.analysis import history
from guestbench.analysis.history import Change, Point, Series
from guestbench.report import model
from guestbench.report.model import Table
from guestbench.store import Store, StoreError
from guestbench.store import pool as pool_rows

SCHEMA = "guestbench-history/1"


@dataclass
class History:
    series: list[Series]
    campaigns: list[dict[str, Any]]  # the campaigns read: id, name, created_at, host
    left_out: list[tuple[int, str]] = field(default_factory=list)  # (campaign, why)
    order: str = "time"
    max_pvalue: float = history.MAX_PVALUE
    min_change: float = history.MIN_CHANGE

    @property
    def hosts(self) -> list[str]:
        return list(dict.fromkeys(row["host"] for row in self.campaigns))


def load(store: Store, host: str | None = None, group: str | None = None,
         environments: tuple[str, ...] = (), workloads: tuple[str, ...] = (),
         name: str | None = None, order: str = "time", max_pvalue: float = history.MAX_PVALUE,
         min_change: float = history.MIN_CHANGE) -> History:
    """Read the campaigns, build each cell's series and find its change points."""
    found = History([], [], order=order, max_pvalue=max_pvalue, min_change=min_change)
    series: dict[tuple[str, str, str, str], Series] = {}
    for campaign in _campaigns(store, group):
        where = campaign.get("pool_host") or campaign["host_facts"].get("hostname", "?")
        if (host and host != where) or (name and name != campaign["name"]):
            continue
        if campaign["status"] != "finished":
            found.left_out.append((campaign["id"], f"{campaign['status']}, not finished"))
            continue
        report = analysed.load(store, str(campaign["id"]), context_samples=False,
                            primary_only=True)
        found.campaigns.append({"id": campaign["id"], "name": campaign["name"],
                                "created_at": campaign["created_at"], "host": where})
        _add_points(series, report, where, environments, workloads)
    if not found.campaigns:
        raise StoreError(f"{store.engine.url}: no finished campaign matches"
                         + _filters(host, group, name)
                         + " (fix: 'guestbench report --list' shows the campaigns)")
    for one in series.values():
        if order == "version":
            one.points.sort(key=history.version_key)
        one.changes = history.find_changes(one, max_pvalue, min_change)
    found.series = [one for one in series.values() if one.points]
    if not found.series:
        raise StoreError("no cell of those campaigns matches" + _filters(
            None, None, None, environments, workloads) + " (fix: name an environment and a "
            "workload of the campaigns, or leave --env and --workload out)")
    return found


def _campaigns(store: Store, group: str | None):
    if group is None:
        ids = [row["id"] for row in store.campaigns()]
    else:
        row = pool_rows.group(store.engine, group)
        if row is None:
            raise StoreError(f"--group {group!r}: no such campaign group in this store "
                             "(fix: 'guestbench hosts' or 'guestbench report --list')")
        ids = pool_rows.campaigns_of_plan(store.engine, row["plan_hash"])
    for campaign_id in ids:
        yield store.campaign(str(campaign_id))


def _add_points(series: dict, report: analysed.CampaignResults, host: str, environments: tuple[str, ...],
                workloads: tuple[str, ...]) -> None:
    workload_of = {run["label"]: run["workload"] for run in report.runs}
    env_rows = {env["name"]: env for env in report.environments}
    for label, metric in report.performance_primary().items():
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
                campaign["id"], campaign["name"], campaign["created_at"], cell.stats.median,
                cell.stats.ci_low, cell.stats.ci_high, cell.n_runs,
                history.versions(env_rows.get(env, {}), campaign)))


def _filters(host, group, name, environments=(), workloads=()) -> str:
    parts = [f"{flag} {value}" for flag, value in (
        ("--host", host), ("--group", group), ("--name", name),
        ("--env", ",".join(environments)), ("--workload", ",".join(workloads))) if value]
    return f" ({'; '.join(parts)})" if parts else ""


# -- tables -------------------------------------------------------------------------------

def method_note(found: History) -> str:
    size = f" and at least {found.min_change:.0%} in size" if found.min_change else ""
    return (f"Change points: Apache Otava (E-Divisive means, t-test) on each campaign's median, "
            f"p < {found.max_pvalue:g}{size}; points in {found.order} order.")


def summary_table(found: History) -> Table:
    many_hosts = len(found.hosts) > 1
    table = Table(f"History: {len(found.campaigns)} finished campaigns, "
                  f"{_span(found.campaigns)}",
                  [*(["host"] if many_hosts else []), "environment", "workload",
                   "metric", "campaigns", "first", "latest", "change points"], [],
                  label_columns=4 if many_hosts else 3, name="history", note=method_note(found))
    footnotes: list[str] = []
    for one in found.series:
        table.add([*([one.host] if many_hosts else []), one.environment, one.label,
                   f"{one.metric} ({one.unit})", str(len(one.points)),
                   _value(one.points[0]), _value(one.points[-1]),
                   "; ".join(_change_text(one, change, footnotes) for change in one.changes)
                   or "none"])
    if found.left_out:
        footnotes.append("Left out: " + ", ".join(f"campaign {cid} ({why})"
                                                   for cid, why in found.left_out) + ".")
    table.footnotes = footnotes
    return table


def series_tables(found: History) -> list[Table]:
    """One table per series: each campaign's median and interval, the change points marked."""
    tables = []
    for one in found.series:
        at = {change.index: change for change in one.changes}
        table = Table(f"{one.environment} / {one.label} / {one.metric} ({one.unit})"
                      + (f" on {one.host}" if len(found.hosts) > 1 else ""),
                      ["campaign", "date", "median", "95% CI", "runs", "versions changed",
                       "change"],
                      [], label_columns=2, name="history-series")
        for index, point in enumerate(one.points):
            change = at.get(index)
            table.add([f"{point.campaign} {point.name}", f"{point.created_at:%Y-%m-%d %H:%M}",
                       model.format_value(point.median), _interval(point), str(point.runs),
                       _versions_text(change),
                       f"{change.change:+.1%} p={change.pvalue:.1g}" if change else ""])
        tables.append(table)
    return tables


def _value(point: Point) -> str:
    return model.format_value(point.median)


def _interval(point: Point) -> str:
    if point.low is None or point.high is None:
        return "-"
    return f"[{model.format_value(point.low)}, {model.format_value(point.high)}]"


def _change_text(one: Series, change: Change, footnotes: list[str]) -> str:
    text = (f"campaign {change.campaign}: {change.change:+.1%} "
            f"{'worse' if one.worse(change) else 'better'}, p={change.pvalue:.0e}")
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
    first, last = campaigns[0]["created_at"], campaigns[-1]["created_at"]
    return f"{first:%Y-%m-%d %H:%M} to {last:%Y-%m-%d %H:%M} UTC"


# -- JSON ---------------------------------------------------------------------------------

def document(found: History) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "method": {"name": "Apache Otava change points (E-Divisive means, t-test)",
                   "of": "each campaign's median", "max_pvalue": found.max_pvalue,
                   "min_change": found.min_change, "order": found.order},
        "campaigns": [{**row, "created_at": row["created_at"].isoformat()}
                      for row in found.campaigns],
        "left_out": [{"campaign": cid, "why": why} for cid, why in found.left_out],
        "series": [_series_document(one) for one in found.series],
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
                           "worse": one.worse(c),
                           "versions_changed": {key: list(pair) for key, pair
                                                in c.versions_changed.items()}}
                          for c in one.changes],
    }


def render_json(found: History) -> str:
    return json.dumps(document(found), indent=2) + "\n"
