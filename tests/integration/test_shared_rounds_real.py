"""Shared rounds with the real agent, natively: one process per round runs every workload
that needs only the agent, each round in its own order, and each workload stores its run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_cli import guestbench

pytestmark = pytest.mark.integration


def test_one_process_per_round_for_every_workload(tmp_path, available):
    available("native")
    run = guestbench("run", "--env", "native", "--workload", "getpid,fork_exit,stream_triad",
                     "--repeat", "3", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    runs = [entry for entry in document["runs"] if entry["environment"] == "native"]
    assert len(runs) == 9 and all(entry["status"] == "ok" for entry in runs)
    folders = {entry["log_path"] for entry in runs}
    assert len(folders) == 3  # one process per round, for the three workloads
    for folder in folders:
        command = Path(folder, "command").read_text().split()
        assert {"getpid", "fork_exit", "stream_triad"} <= set(command)
    for entry in runs:  # each run has its own workload's samples, none of the others'
        metrics = {sample["metric"] for sample in entry["samples"]}
        mine, not_mine = (("bandwidth", "time_per_op") if entry["workload"] == "stream_triad"
                          else ("time_per_op", "bandwidth"))
        assert mine in metrics and not_mine not in metrics, (entry["workload"], metrics)
