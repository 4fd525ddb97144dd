"""Every example plan in examples/ is a valid plan: a newcomer copies them first."""

from pathlib import Path

import pytest

from guestbench.plan.build import load

FOLDER = Path(__file__).resolve().parents[3] / "examples"
EXAMPLES = sorted(path for path in [*FOLDER.glob("*.toml"), *FOLDER.glob("ci/*.toml"),
                                     *FOLDER.glob("seeds/*.toml")]
                  if not path.name.endswith("-style.toml"))
# report --style files beside the seed plans they shape (NNN-style.toml for NNN.toml)
STYLES = sorted(FOLDER.glob("seeds/*-style.toml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_the_example_plan_loads(path, host):
    plan = load(path, host)
    assert plan.environments and plan.workloads


@pytest.mark.parametrize("path", STYLES, ids=[path.name for path in STYLES])
def test_the_example_style_fits_its_seed_plan(path, host):
    """Each style file loads, and its labels, order and tables name the environments and
    workloads of the plan it shapes, as `report --style` checks them against a campaign."""
    from guestbench.report import restyle
    style = restyle.load(path)
    assert style is not None and style.tables
    plan = load(path.with_name(path.name.replace("-style", "")), host)
    restyle.check_names(style, [spec.name for spec in plan.environments],
                        [(case.label, case.name) for case in plan.workloads])


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
