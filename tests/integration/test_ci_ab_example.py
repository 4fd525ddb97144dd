"""examples/ci/ab.yml's A/B step run for real, as the workflow writes it: its line given to
bash in a folder laid out as the job's workspace, with base/ and head/ each holding a copy of
this host's qemu-x86_64 (two paths, one program: an A/A check).

An A/A run may still flag a cell when the host's noise shifts one side (this host is itself
a VM), so what is asserted is what must hold whatever the verdicts: every run of both sides
ended ok, every cell of the plan was judged, and the gate's exit code agrees with the
document (0 with no cell slower; 1 with them counted on stderr, named in the JSON)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench import store as gb_store
from guestbench.cli import main

pytestmark = pytest.mark.integration
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"
WORKFLOW = EXAMPLES / "ab.yml"
PLAN = EXAMPLES / "ab-plan.toml"
SIDES = ("a", "b")
VERDICTS = {"same", "slower", "faster"}
TRANSLATOR = "qemu-x86_64"


def ab_line(workflow: str) -> str:
    """The A/B step's command: the folded lines from `.venv/bin/guestbench ab` on, joined
    as YAML's `>-` joins them (one space between lines)."""
    lines = workflow.splitlines()
    first = next(index for index, line in enumerate(lines)
                 if line.strip().startswith(".venv/bin/guestbench ab "))
    indent = len(lines[first]) - len(lines[first].lstrip())
    folded = []
    for line in lines[first:]:
        if not line.strip() or len(line) - len(line.lstrip()) != indent:
            break
        folded.append(line.strip())
    return " ".join(folded)


def workspace(folder: Path) -> None:
    """The job's workspace after its build step: guestbench's .venv and examples, and the
    two builds; here guestbench is this interpreter's, and both builds are one program."""
    program = shutil.which(TRANSLATOR)
    if program is None:
        pytest.skip(f"{TRANSLATOR} not found (apt-get install qemu-user)")
    venv_bin = folder / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    launcher = venv_bin / "guestbench"
    launcher.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m guestbench "$@"\n')
    launcher.chmod(0o755)
    (folder / "examples" / "ci").mkdir(parents=True)
    shutil.copy(PLAN, folder / "examples" / "ci" / PLAN.name)
    for side in ("base", "head"):
        (folder / side).mkdir()
        shutil.copy(program, folder / side / TRANSLATOR)


def run_statuses(db_file: Path) -> dict[str, list[str]]:
    """Each environment's runs' statuses, read from the store the step left."""
    opened = gb_store.open(f"sqlite:///{db_file}", create=False)
    try:
        statuses: dict[str, list[str]] = {}
        for run in opened.runs(1):  # the step's one campaign
            statuses.setdefault(run.environment, []).append(run.status)
        return statuses
    finally:
        opened.engine.dispose()


def test_the_ab_step_uses_flags_ab_has():
    """Every --flag of the step is one `guestbench ab --help` lists."""
    help_text = CliRunner().invoke(main, ["ab", "--help"]).output
    flags = re.findall(r"(?<!\S)(--[a-z-]+)", ab_line(WORKFLOW.read_text()))
    assert {"--a", "--b", "--fail-on-regression", "--format"} <= set(flags)
    for flag in flags:
        assert re.search(rf"(?<!\S){flag}\b", help_text), flag


def test_the_ab_step_runs_both_sides_and_gates(tmp_path):
    workspace(tmp_path)
    step = subprocess.run(["bash", "-e", "-c", ab_line(WORKFLOW.read_text())], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180)
    assert step.returncode in (0, 1), step.stderr
    document = json.loads((tmp_path / "ab.json").read_text())
    assert document["schema"] == "guestbench-compare"

    # both sides ran every run of every cell, and each ended ok
    statuses = run_statuses(tmp_path / "ab.sqlite")
    assert sorted(statuses) == ["qemu-user.a", "qemu-user.b"], statuses
    plan = tomllib.loads(PLAN.read_text())
    repeat, workloads = plan["campaign"]["repeat"], {item["name"] for item in plan["workload"]}
    for environment, seen in statuses.items():
        assert seen == ["ok"] * (repeat * len(workloads)), (environment, seen)

    # every cell of the plan was judged, on runs of both sides, nothing left unpaired
    cells = document["cells"]
    assert {cell["workload"] for cell in cells} == workloads
    assert not document["broken"] and not document["unpaired"]
    for cell in cells:
        assert cell["verdict"] in VERDICTS, cell
        assert all(cell[side]["n"] >= repeat for side in SIDES), cell

    # the exit code is the gate's: 1 exactly when a cell is slower (nothing broke, above);
    # stderr counts them as the document does, which names them
    summary = document["summary"]
    assert step.returncode == (1 if summary["slower"] else 0), step.stderr
    assert (f"A/B: {summary['slower']} slower, {summary['faster']} faster, "
            f"{summary['same']} same of {len(cells)} cells") in step.stderr
    assert summary["slower"] == sum(cell["verdict"] == "slower" for cell in cells)
    if summary["slower"]:
        assert f"{summary['slower']} cell(s) slower in B (--fail-on-regression)" in step.stderr
