"""A campaign group (one plan submitted to several pool hosts) as tables: one column per
host and environment, and each host's facts, for the same plan on several machines."""

from __future__ import annotations

from guestbench.analysis import results as analysed
from guestbench.report import model
from guestbench.report.model import Footnotes, Table
from guestbench.store import pool as pool_rows, Store, StoreError

FACTS = (("CPU", "cpu_model"), ("CPUs", "logical_cpus"), ("kernel", "kernel"),
         ("memory (MiB)", "memory_mib"), ("virtualised", "virtualised"))


def tables(store: Store, selector: str) -> list[Table]:
    group = pool_rows.group(store.engine, selector)
    if group is None:
        raise StoreError(f"{store.engine.url}: no campaign group {selector!r} in this store "
                         "(fix: 'guestbench submit' makes one)")
    reports = []
    latest = {}  # each host's latest campaign of the group, hosts in name order
    for row in pool_rows.campaigns_of(store.engine, group.id):
        latest[row.pool_host or f"campaign {row.id}"] = row
    for _, row in sorted(latest.items()):
        reports.append((row.pool_host or f"campaign {row.id}",
                        analysed.load(store, str(row.id), context_samples=False,
                                   primary_only=True)))
    if not reports:
        raise StoreError(f"group {group.id} ({group.name!r}) has no campaign yet "
                         f"(queued on {', '.join(group.hosts)}; see 'guestbench hosts')")
    return [_medians(group, reports), _facts(group, reports)]


def campaign_of_host(store: Store, selector: str, host: str) -> str:
    """The id of the group's latest campaign on a pool host (compare --group G HOST HOST)."""
    group = pool_rows.group(store.engine, selector)
    if group is None:
        raise StoreError(f"--group {selector!r}: no such campaign group in this store "
                         "(fix: 'guestbench report --list', or 'guestbench hosts')")
    mine = [row for row in pool_rows.campaigns_of(store.engine, group.id)
            if row.pool_host == host]
    if not mine:
        ran = sorted({row.pool_host for row in pool_rows.campaigns_of(store.engine,
                                                                         group.id)})
        raise StoreError(f"--group {selector!r}: host {host!r} has no campaign in group "
                         f"{group.id} (fix: name one of {', '.join(ran) or 'none yet'})")
    return str(mine[-1].id)


def _medians(group: dict, reports: list[tuple[str, analysed.CampaignResults]]) -> Table:
    footnotes = Footnotes()
    columns = [(host, env, report) for host, report in reports
               for env in report.results.environments]
    table = Table(f"Group {group.id} ({group.name!r}): median ±95% CI per host",
                  ["workload", "metric", *(f"{host} {env}" for host, env, _ in columns)], [],
                  name="group",
                  note="The same plan on each host of the group, one campaign per host. Hosts "
                       "differ: compare a host's environments with each other, and the hosts "
                       "with care.")
    rows = list(dict.fromkeys((label, metric, unit) for _, report in reports
                              for label, metric, unit in report.results.rows
                              if metric and metric == report.primary.get(label)))
    for label, metric, unit in rows:
        cells = [report.results.cells.get((label, metric), {}).get(env)
                 for _, env, report in columns]
        present = [cell for cell in cells if cell is not None]
        shown_unit, divisor = model.row_scale(unit, present)
        table.add([label, f"{metric} ({shown_unit})", *(
            model._measured_text(cell, footnotes, divisor, show_n=False) if cell is not None
            else "-" for cell in cells)])
    table.footnotes = footnotes.lines()
    return table


def _facts(group: dict, reports: list[tuple[str, analysed.CampaignResults]]) -> Table:
    table = Table(f"Group {group.id}: the hosts", ["host", "campaign", *(
        name for name, _ in FACTS)], [], name="group-hosts", label_columns=2,
        note=f"Plan sha256 {group.plan_hash[:16]}..., submitted by {group.submitted_by}"
             + (f"; refused: {', '.join(group.refusals)}" if group.refusals else ""))
    for host, report in reports:
        facts = report.host_facts
        table.add([host, f"{report.campaign.id} ({report.campaign.status})",
                   *(str(facts.get(key, "?")) for _, key in FACTS)])
    return table
