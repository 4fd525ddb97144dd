"""Commands that tell the truth: report -o writes what standard output shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_cli import GOOD_FAKE_PLAN, fake_agent, invoke  # noqa: F401 - fixture


@pytest.fixture
def stored(tmp_path: Path, fake_agent: Path):  # noqa: F811 - the fixture imported above
    """A store with campaigns of GOOD_FAKE_PLAN (environments base and slow, workload
    getpid); call it with how many more to run."""
    url = f"sqlite:///{tmp_path / 'x.sqlite'}"
    plan = tmp_path / "good.toml"
    plan.write_text(GOOD_FAKE_PLAN)

    def run(count: int = 1) -> str:
        for _ in range(count):
            result = invoke(["run", str(plan), "--db", url, "--quiet"], fake_agent)
            assert result.exit_code == 0, result.output
        return url
    run.plan, run.agent = plan, fake_agent
    return run


def command(stored, *args: str):
    return invoke(list(args), stored.agent)


# -- report -o writes what standard output shows ---------------------------------------

@pytest.mark.parametrize("detail", [[], ["--detail"]], ids=["summary", "detail"])
def test_report_to_a_file_holds_what_standard_output_shows(stored, tmp_path, detail):
    url = stored(1)
    shown = command(stored, "report", "--db", url, *detail)
    target = tmp_path / "report.txt"
    written = command(stored, "report", "--db", url, *detail, "-o", str(target))
    assert shown.exit_code == written.exit_code == 0, written.output
    assert written.stdout == "" and f"wrote {target}" in written.stderr
    assert target.read_text() == shown.stdout
    assert ("Measured: median" in shown.stdout) == bool(detail), shown.stdout


