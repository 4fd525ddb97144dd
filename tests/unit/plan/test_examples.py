"""Every example plan in examples/ is a valid plan: a newcomer copies them first."""

from pathlib import Path

import pytest

from guestbench.plan.build import load

FOLDER = Path(__file__).resolve().parents[3] / "examples"
EXAMPLES = sorted([*FOLDER.glob("*.toml"), *FOLDER.glob("ci/*.toml"), *FOLDER.glob("seeds/*.toml")])


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_the_example_plan_loads(path, host):
    plan = load(path, host)
    assert plan.environments and plan.workloads


def test_the_ci_workflow_runs_the_commands_guestbench_has():
    """examples/ci/guestbench.yml: every guestbench command and format it uses exists."""
    from click.testing import CliRunner

    from guestbench.cli import main
    text = (FOLDER / "ci" / "guestbench.yml").read_text()
    assert "examples/ci/plan.toml" in text
    for words in (["run", "--help"], ["compare", "--help"], ["report", "--help"]):
        assert CliRunner().invoke(main, words).exit_code == 0
    report_help = CliRunner().invoke(main, ["report", "--help"]).output
    for fmt in ("bmf", "github-action-benchmark"):
        assert f"--format {fmt}" in text and fmt in report_help
    assert "--fail-on-regression" in text and "customSmallerIsBetter" in text
