"""CSV: one row per raw sample (with its run's and its cell's flags, and what its environment
ran), and one row per run that produced none (with its status). A campaign with an environment
of functional figures only (report/functional.py) has one more column, `functional`: why,
in that environment's rows, else empty."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

from guestbench.analysis.results import CampaignResults
from guestbench.report import functional
from guestbench.report.formats.request import Request
from guestbench.report.tables.platform import what_ran

COLUMNS = ["campaign", "environment", "workload", "label", "metric", "unit", "repetition",
           "status", "value", "reason", "run_id", "log_path", "run_flags", "cell_flags", "version"]


def render(report: CampaignResults) -> str:
    by_run = defaultdict(list)
    for sample in report.samples:
        by_run[sample.run_id].append(sample)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    said = functional.sentences(report)
    writer.writerow(COLUMNS + ([functional.FUNCTIONAL] if said else []))
    cells = report.results.cells
    flags_of: dict[tuple[str, str, str], str] = {}
    host_kernel = report.host_facts.get("kernel")
    version_of = {env.name: what_ran(env, host_kernel) for env in report.environments}
    for run in report.runs:
        base = [report.campaign.id, run.environment, run.workload, run.label]
        version = version_of.get(run.environment, "")
        last = [version, said.get(run.environment, "")] if said else [version]
        tail = [run.reason, run.id, run.log_path or "", " ".join(run.flags or [])]
        for sample in by_run.get(run.id) or [None]:
            if sample is None:
                writer.writerow([*base, "", "", run.repetition, run.status, "", *tail, "",
                                 *last])
                continue
            key = (run.label, sample.metric, run.environment)
            if key not in flags_of:
                cell = cells.get(key[:2], {}).get(key[2])
                flags_of[key] = " ".join(cell.flag_names) if cell else ""
            writer.writerow([*base, sample.metric, sample.unit, run.repetition,
                             run.status, repr(sample.value), *tail, flags_of[key], *last])
    return buffer.getvalue()


def report(results: CampaignResults, request: Request) -> str:
    return render(results)
