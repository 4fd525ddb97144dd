"""The burst workload's plot: each environment's p50 and p99 (where a burst supports it) of
launch to ready against N, the success rate written beside each dot, from the campaign's
burst cells (one label per N and mode of a sweep)."""

from __future__ import annotations

from guestbench.analysis.results import CampaignResults
from guestbench.report import functional, model
from guestbench.report.formats.html import svg
from guestbench.report.tables.burst import mode_rank

FIGURES = (("burst_p50", "p50"), ("burst_p99", "p99"))


def _labels_by_shape(report: CampaignResults) -> dict[tuple[str, int], str]:
    """(mode, N) -> the burst label that launched N instances that way, in that order."""
    found: dict[tuple[str, int], str] = {}
    for run in report.runs:
        params = run.params or {}
        count = params.get("instances")
        if report.workload_of.get(run.label) == "burst" and isinstance(count, int):
            found.setdefault((str(params.get("mode", "together")), count), run.label)
    return dict(sorted(found.items(), key=lambda item: (mode_rank(item[0][0]), item[0][1])))


def figures(report: CampaignResults) -> list[tuple[str, str, str]]:
    """(metric, caption, svg) per percentile measured; [] without bursts. A row per
    environment and burst, in that order: the environment's rows read as its curve."""
    labels = _labels_by_shape(report)
    cells = report.results.cells
    drawn = []
    for metric, name in FIGURES:
        picked = [(env, shape, cells[(label, metric)][env])
                  for env in report.results.environments for shape, label in labels.items()
                  if (label, metric) in cells and cells[(label, metric)][env].values]
        if not picked:
            continue
        unit, divisor = model.row_scale(picked[0][2].unit, [cell for _, _, cell in picked])
        dots = []
        for env, (mode, count), cell in picked:
            success = cells.get((labels[(mode, count)], "burst_success"), {}).get(env)
            ready = (f", ready {model.format_value(min(success.values))}%"
                     if success is not None and success.values else "")
            how = "" if mode == "together" else f" {mode}"
            dots.append(svg.cell_dot(f"{functional.named(report, env)}, N={count}{how}{ready}",
                                     cell, divisor))
        caption = (f"bursts: {name} of each instance's launch to ready against N, median over "
                   "the bursts (dot) and 95% CI (whisker); ready: the worst burst's success rate")
        drawn.append((metric, caption, svg.dots(caption, unit, dots)))
    return drawn
