"""Shared rounds with the real agent: a container per round runs every agent-only workload
(STREAM alone), while native keeps one process per run; each workload stores its own run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import guestbench

pytestmark = pytest.mark.integration


def _runs(tmp_path: Path, environment: str) -> list[dict]:
    run = guestbench("run", "--env", environment, "--workload", "getpid,fork_exit,stream_triad",
                     "--repeat", "3", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    runs = [entry for entry in document["runs"] if entry["environment"] == environment]
    assert len(runs) == 9 and all(entry["status"] == "ok" for entry in runs)
    for entry in runs:  # each run has its own workload's samples, none of the others'
        metrics = {sample["metric"] for sample in entry["samples"]}
        mine, not_mine = (("bandwidth", "time_per_op") if entry["workload"] == "stream_triad"
                          else ("time_per_op", "bandwidth"))
        assert mine in metrics and not_mine not in metrics, (entry["workload"], metrics)
        assert "in_agent" in metrics  # the agent's span: the efficiency line's split
    return runs


def test_a_container_per_round_for_the_micro_workloads(tmp_path, available):
    available("runc")
    runs = _runs(tmp_path, "runc")
    micro = {entry["log_path"] for entry in runs if entry["workload"] != "stream_triad"}
    assert len(micro) == 3  # one container per round, for getpid and fork_exit
    for folder in micro:  # one agent's records, for both
        log = Path(folder, "stdout.log").read_text()
        assert '"workload":"getpid"' in log and '"workload":"fork_exit"' in log
    stream = {entry["log_path"] for entry in runs if entry["workload"] == "stream_triad"}
    assert len(stream) == 3 and not stream & micro  # STREAM's arrays run alone


def test_native_keeps_one_process_per_run(tmp_path, available):
    available("native")
    runs = _runs(tmp_path, "native")
    assert len({entry["log_path"] for entry in runs}) == 9
