"""The density workload's plots: each environment's start time, and its host memory per
instance, against N, from the campaign's density cells (one label per N of a sweep)."""

from __future__ import annotations

from guestbench.analysis.results import CampaignResults
from guestbench.report import functional, model
from guestbench.report.formats.html import svg

METRICS = (("density_start", "each instance's start to its agent"),
           ("density_pss", "host memory per instance (PSS)"))


def _labels_by_count(report: CampaignResults) -> dict[int, str]:
    """N -> the density label that started N instances."""
    found: dict[int, str] = {}
    for run in report.runs:
        count = (run.params or {}).get("instances")
        if report.workload_of.get(run.label) == "density" and isinstance(count, int):
            found.setdefault(count, run.label)
    return dict(sorted(found.items()))


def figures(report: CampaignResults) -> list[tuple[str, str, str]]:
    """(metric, caption, svg) of each density metric measured; [] without density runs. A row
    per environment and N, in that order: the environment's rows read as its curve."""
    labels = _labels_by_count(report)
    drawn = []
    for metric, what in METRICS:
        picked = [(env, count, report.results.cells[(label, metric)][env])
                  for env in report.results.environments
                  for count, label in labels.items()
                  if (label, metric) in report.results.cells
                  and report.results.cells[(label, metric)][env].values]
        if not picked:
            continue
        unit, divisor = model.row_scale(picked[0][2].unit, [cell for _, _, cell in picked])
        dots = []
        for env, count, cell in picked:
            dots.append(svg.cell_dot(f"{functional.named(report, env)}, N={count}", cell,
                                     divisor))
        caption = f"density: {what} against N, median (dot) and 95% CI (whisker)"
        drawn.append((metric, caption, svg.dots(caption, unit, dots)))
    return drawn
