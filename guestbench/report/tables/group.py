"""A campaign group (one plan submitted to several pool hosts) as tables: one column per
host and environment, and each host's facts, for the same plan on several machines."""

from __future__ import annotations

from guestbench.analysis.results import CampaignResults
from guestbench.report import functional, model
from guestbench.report.model import Footnotes, Table
from guestbench.store.records import CampaignGroup

FACTS = (("CPU", "cpu_model"), ("CPUs", "logical_cpus"), ("kernel", "kernel"),
         ("memory (MiB)", "memory_mib"), ("virtualised", "virtualised"))


def tables(group: CampaignGroup, reports: list[tuple[str, CampaignResults]]) -> list[Table]:
    """The group's medians side by side, one column per host and environment, and each
    host's facts; reports: (host, its latest campaign's results), in host order."""
    return [_medians(group, reports), _facts(group, reports)]


def _medians(group: CampaignGroup, reports: list[tuple[str, CampaignResults]]) -> Table:
    footnotes = Footnotes()
    columns = [(host, env, report) for host, report in reports
               for env in report.results.environments]
    table = Table(f"Group {group.id} ({group.name!r}): median ±95% CI per host",
                  ["workload", "metric", *(f"{host} {functional.named(report, env)}"
                                           for host, env, report in columns)], [],
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
    legends = dict.fromkeys(line for _, report in reports for line in functional.legend(report))
    table.footnotes = [*legends, *footnotes.lines()]
    return table


def _facts(group: dict, reports: list[tuple[str, CampaignResults]]) -> Table:
    table = Table(f"Group {group.id}: the hosts", ["host", "campaign", *(
        name for name, _ in FACTS)], [], name="group-hosts", label_columns=2,
        note=f"Plan sha256 {group.plan_hash[:16]}..., submitted by {group.submitted_by}"
             + (f"; refused: {', '.join(group.refusals)}" if group.refusals else ""))
    for host, report in reports:
        facts = report.host_facts
        table.add([host, f"{report.campaign.id} ({report.campaign.status})",
                   *(str(facts.get(key, "?")) for _, key in FACTS)])
    return table
