"""The snapshot workloads' plot: each environment's cold start beside its restore from a
snapshot, median (dot) and 95% interval (whisker), on one axis, a row per environment and
way of starting."""

from __future__ import annotations

from guestbench.analysis.results import CampaignResults
from guestbench.report import functional, model
from guestbench.report.formats.html import svg
from guestbench.report.tables.snapshot import first_labels

WAYS = (("start", "start_ready", "cold start"), ("restore", "restore", "restore"))


def figures(report: CampaignResults) -> list[tuple[str, str, str]]:
    """[(metric, caption, svg)] once the campaign restored anything; else []."""
    first = first_labels(report)
    if "restore" not in first:
        return []
    cells = report.results.cells
    picked = [(env, what, cells[(first[workload], metric)][env])
              for env in report.results.environments for workload, metric, what in WAYS
              if workload in first and (first[workload], metric) in cells
              and cells[(first[workload], metric)][env].values]
    if not picked:
        return []
    unit, divisor = model.row_scale(picked[0][2].unit, [cell for _, _, cell in picked])
    dots = []
    for env, what, cell in picked:
        dots.append(svg.cell_dot(f"{functional.named(report, env)}, {what}", cell, divisor))
    caption = ("snapshots: a cold start against a restore, per environment: median (dot) and "
               "95% CI (whisker)")
    return [("restore", caption, svg.dots(caption, unit, dots))]
