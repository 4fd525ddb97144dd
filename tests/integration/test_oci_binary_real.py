"""An OCI runtime's `binary`: a build of runc or runsc at a path, as a team's A/B of two builds
runs them (`ab PLAN --a runc.binary=base/runc --b runc.binary=head/runc`). Each side's build
is a wrapper that logs its arguments, then runs this host's runtime: every command of a run
(the probe's, the start's, the delete's) went through the side's own program, and the
version the results record is that program's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.cli import guestbench

pytestmark = pytest.mark.integration

PLAN = """\
[campaign]
name = "builds"
repeat = 3
timeout_s = 60

[[environment]]
preset = "{preset}"

[[workload]]
name = "start"
"""


def _build(folder: Path, runtime: str) -> tuple[Path, Path]:
    """A 'build' of the runtime: a script that logs each call's arguments and runs it."""
    real = shutil.which(runtime)
    assert real is not None
    folder.mkdir()
    log = folder / "calls.log"
    program = folder / runtime
    program.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    program.chmod(0o755)
    return program, log


@pytest.mark.parametrize("preset", ["runc", "runsc"])
def test_ab_runs_each_side_s_own_build_of_the_runtime(preset, available, tmp_path):
    available(preset)
    base, base_log = _build(tmp_path / "base", preset)
    head, head_log = _build(tmp_path / "head", preset)
    (tmp_path / "plan.toml").write_text(PLAN.format(preset=preset))
    done = guestbench("ab", "plan.toml", "--a", f"{preset}.binary={base}", "--b",
                      f"{preset}.binary={head}", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["broken"] == [] and document["cells"], document  # the binary is paired
    for log in (base_log, head_log):
        calls = log.read_text().splitlines()
        assert any(call.split()[-1:] == ["--version"] for call in calls), calls  # probe, version
        assert sum(" delete " in f" {call} " for call in calls) >= 3, calls  # each run's
    runs = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)["runs"]
    assert {run["status"] for run in runs} == {"ok"} and len(runs) == 6


def test_a_binary_that_is_not_there_is_unavailable_with_the_fix(available, tmp_path):
    available("runc")
    (tmp_path / "plan.toml").write_text(PLAN.format(preset="runc").replace(
        'preset = "runc"', 'preset = "runc"\nbinary = "/nonexistent/runc"'))
    done = guestbench("run", "plan.toml", "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # an unavailable environment is no failure
    environments = json.loads(guestbench("report", "--format", "json",
                                         cwd=tmp_path).stdout)["environments"]
    assert environments[0]["available"] is False
    assert environments[0]["probe"].startswith(
        "/nonexistent/runc not found or not executable (fix: binary = the path of a runc build)")
