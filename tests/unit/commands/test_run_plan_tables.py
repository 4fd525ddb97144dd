"""The end of `guestbench run`: after the summary, every table the plan's [[table]] entries
ask for, as `report --table plan` draws them (the summary alone left out a startup table)."""

from __future__ import annotations

from tests.support.cli import invoke

PLAN = """\
[campaign]
name = "tables"
repeat = 3
timeout_s = 5

[[environment]]
name = "base"
kind = "fake"

[[workload]]
name = "start"

[[workload]]
name = "getpid"
{tables}"""

STARTUP = '\n[[table]]\ntable = "startup"\n'
BASIC = '\n[[table]]\ntable = "basic"\ntitle = "Basic, as planned"\n'
STARTUP_TITLE = "Start-up: time per instance"


def run_plan(tmp_path, agent, tables: str, *flags: str):
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(tables=tables))
    return invoke(["run", str(plan), "--db", f"sqlite:///{tmp_path / 's.sqlite'}", *flags],
                  agent)


def test_run_shows_the_plans_startup_table_after_the_summary(tmp_path, fake_agent):
    result = run_plan(tmp_path, fake_agent, STARTUP)
    assert result.exit_code == 0, result.output
    summary = result.stdout.index("Summary - campaign 1")
    assert result.stdout.index(STARTUP_TITLE) > summary


def test_run_shows_every_table_of_the_plan_in_its_order(tmp_path, fake_agent):
    result = run_plan(tmp_path, fake_agent, BASIC + STARTUP)
    assert result.exit_code == 0, result.output
    basic = result.stdout.index("Basic, as planned")
    assert result.stdout.index(STARTUP_TITLE) > basic


def test_run_without_tables_shows_the_summary_alone(tmp_path, fake_agent):
    result = run_plan(tmp_path, fake_agent, "")
    assert result.exit_code == 0, result.output
    assert "Summary - campaign 1" in result.stdout
    assert STARTUP_TITLE not in result.stdout


def test_run_detail_draws_the_startup_table_once(tmp_path, fake_agent):
    result = run_plan(tmp_path, fake_agent, STARTUP, "--detail")
    assert result.exit_code == 0, result.output
    assert result.stdout.count(STARTUP_TITLE) == 1


def test_run_quiet_draws_no_table(tmp_path, fake_agent):
    result = run_plan(tmp_path, fake_agent, STARTUP, "--quiet")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
