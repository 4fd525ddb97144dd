"""JSON: every raw sample with its run, environment spec, host facts and a schema version."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from guestbench import __version__
from guestbench.report.model import Report

# Bump on any change of shape; docs/results.md keeps the history.
JSON_SCHEMA_VERSION = 1


def document(report: Report) -> dict[str, Any]:
    by_run = defaultdict(list)
    for sample in report.samples:
        by_run[sample["run_id"]].append(
            {"metric": sample["metric"], "unit": sample["unit"], "value": sample["value"]})
    campaign = report.campaign
    return {
        "schema": "guestbench-results",
        "schema_version": JSON_SCHEMA_VERSION,
        "generated_by": f"guestbench {__version__}",
        "campaign": {
            "id": campaign["id"], "name": campaign["name"], "status": campaign["status"],
            "created_at": campaign["created_at"].isoformat(),
            "finished_at": campaign["finished_at"].isoformat() if campaign["finished_at"] else None,
            "guestbench_version": campaign["guestbench_version"],
            "baseline": report.baseline, "plan": campaign["plan"], "log_dir": campaign["log_dir"],
        },
        "host": campaign["host_facts"],
        "environments": [
            {"name": env["name"], "kind": env["kind"], "spec": env["spec"],
             "available": env["available"], "probe": env["probe"]}
            for env in report.environments],
        "runs": [
            {"id": run["id"], "environment": run["environment"], "workload": run["workload"],
             "label": run["label"], "params": run["params"], "repetition": run["repetition"],
             "status": run["status"], "reason": run["reason"], "flags": run["flags"],
             "started_at": run["started_at"].isoformat(), "host_seconds": run["host_seconds"],
             "log_path": run["log_path"], "samples": by_run.get(run["id"], [])}
            for run in report.runs],
    }


def render(report: Report) -> str:
    return json.dumps(document(report), indent=2) + "\n"
