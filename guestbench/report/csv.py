"""CSV: one row per raw sample (with its run's and its cell's flags), and one row per run that
produced none (with its status)."""

from __future__ import annotations

import csv
import io
from collections import defaultdict

from guestbench.report.model import Report

COLUMNS = ["campaign", "environment", "workload", "label", "metric", "unit", "repetition",
           "status", "value", "reason", "run_id", "log_path", "run_flags", "cell_flags"]


def render(report: Report) -> str:
    by_run = defaultdict(list)
    for sample in report.samples:
        by_run[sample["run_id"]].append(sample)
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    cells = report.results.cells
    for run in report.runs:
        base = [report.campaign["id"], run["environment"], run["workload"], run["label"]]
        tail = [run["reason"], run["id"], run["log_path"] or "", " ".join(run["flags"] or [])]
        for sample in by_run.get(run["id"]) or [None]:
            if sample is None:
                writer.writerow([*base, "", "", run["repetition"], run["status"], "", *tail, ""])
                continue
            cell = cells.get((run["label"], sample["metric"]), {}).get(run["environment"])
            writer.writerow([*base, sample["metric"], sample["unit"], run["repetition"],
                             run["status"], repr(sample["value"]), *tail,
                             " ".join(cell.flag_names) if cell else ""])
    return buffer.getvalue()
