"""The command line: in process (click's CliRunner) with a fake agent and a good fake plan, and
as a real `python -m guestbench` process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from guestbench import store as gb_store
from guestbench.cli import main


GOOD_FAKE_PLAN = """\
[campaign]
name = "cli-fake"
repeat = 2
timeout_s = 5

[[environment]]
name = "base"
kind = "fake"

[[environment]]
name = "slow"
kind = "fake"
scale = 2

[[workload]]
name = "getpid"
"""


def invoke(args: list[str], agent: Path) -> Result:
    return CliRunner().invoke(main, args, env={"GUESTBENCH_AGENT": str(agent)})


def campaigns_in(db_file: Path) -> list:
    opened = gb_store.open(f"sqlite:///{db_file}")
    try:
        return opened.campaigns()
    finally:
        opened.engine.dispose()


GUESTBENCH = [sys.executable, "-m", "guestbench"]


def guestbench(*args: str, cwd: Path, timeout_s: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*GUESTBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout_s)


def ok_runs(folder: Path, count: int, *args: str) -> list[dict]:
    """`guestbench run ARGS --quiet` in folder: its `count` runs, every one asserted ok."""
    run = guestbench("run", *args, "--quiet", cwd=folder)
    assert run.returncode == 0, run.stderr
    runs = json.loads(guestbench("report", "--format", "json", cwd=folder).stdout)["runs"]
    assert len(runs) == count and all(entry["status"] == "ok" for entry in runs), [
        (entry["workload"], entry["status"], entry["reason"]) for entry in runs]
    return runs
