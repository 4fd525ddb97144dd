"""The efficiency table: where a campaign's time went, over all and per workload, as a
profiler shows it (analysis/efficiency.py says what each share is)."""

from __future__ import annotations

from collections import defaultdict

from guestbench.analysis import efficiency
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import Footnotes, Table, small
from guestbench.workloads import HOST_TIMED


def efficiency_table(report: CampaignResults, footnotes: Footnotes | None = None) -> Table | None:
    wall = efficiency.campaign_wall(report.campaign)
    if wall is None or report.samples is None:
        return None
    samples = list(report.samples.of_metrics(*efficiency.metrics(HOST_TIMED)))
    spent = efficiency.of(wall, report.runs, samples, host_timed=HOST_TIMED)
    table = Table(f"Time: where the campaign's {efficiency.duration(wall)} went",
                  ["part", "runs", "host s", "timed s", "timed share"], [], label_columns=1,
                  name="efficiency",
                  note="timed: inside the agent's timed batches (the values); in the agent, not "
                       "timed: its warm-up and calibration, STREAM's set-up and check, a "
                       "guest's clock check; starting and stopping environments: the rest of "
                       "a run's host time; outside runs: the store between runs, from the "
                       "campaign's start to its end. A start, a save and a restore are timed on "
                       "the host's clock (their spans); a workload that times no region of its "
                       "own (boot, build, exec) has no timed share. The first thing to drive "
                       "down is the largest host time with the smallest timed share.")
    table.add(["campaign", str(spent.runs), _seconds(wall), _seconds(spent.timed_s),
               _share(spent.timed_s, wall)])
    if spent.split_runs_s > 0:
        table.add(["in the agent, not timed", "-", _seconds(spent.agent_s - spent.timed_s),
                   "-", "-"])
        table.add(["starting and stopping environments", "-", _seconds(spent.starting_s),
                   "-", "-"])
    table.add(["outside runs", "-", _seconds(spent.between_s), "-", "-"])
    by_run, _agent, _by_host = efficiency.timed_by_run(report.runs, samples, HOST_TIMED)
    per_workload: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0])
    for run in report.runs:
        row = per_workload[run.workload]
        row[0] += 1
        row[1] += run.host_seconds or 0.0
        if run.id in by_run:
            row[2] += by_run[run.id]
            row[3] += 1
    for workload, (runs, host_s, timed_s, reporting) in sorted(
            per_workload.items(), key=lambda item: -item[1][1]):
        table.add([workload, str(runs), _seconds(host_s),
                   _seconds(timed_s) if reporting else "-",
                   _share(timed_s, host_s) if reporting else "-"])
    return table


def _share(part: float, whole: float) -> str:
    return f"{part / whole * 100:.0f}%" if whole > 0 and part > 0 else "-"


def _seconds(value: float) -> str:
    """Three significant digits, never scientific; "-" for none at all."""
    if value <= 0:
        return "-"
    return small(value, 3) if value < 1e-4 else f"{float(f'{value:.3g}'):g}"
