"""guestbench run's exit status on the fake environment: 0 when every cell that could run
gave ok runs, 1 when a run failed, timed out or crashed (everything stored and reported, and
the last line says how many, by status), the same for run --resume; and a pool job whose
campaign finished with such runs is done, not failed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner

from guestbench import store as gb_store
from guestbench.cli import EXIT_RUNS_NOT_OK, main
from guestbench.host import Host
from guestbench.pool import queue
from guestbench.runner import Status
from tests.support.cli import campaigns_in, invoke
from tests.support.runner import QUIET_HOST, interrupting_create, run_interrupted

PLAN = """\
[campaign]
name = "exit"
repeat = 2
timeout_s = {timeout_s}

[[environment]]
name = "base"
kind = "fake"
{extra}
[[workload]]
name = "getpid"
"""


def run_cli(tmp_path: Path, agent: Path, extra: str = "", timeout_s: float = 5,
             workloads: str = ""):
    """`guestbench run` of the plan (base, plus the extra environment) into a new store."""
    plan = tmp_path / "plan.toml"
    plan.write_text(PLAN.format(extra=extra, timeout_s=timeout_s) + workloads)
    db_file = tmp_path / "s.sqlite"
    result = invoke(["run", str(plan), "--db", f"sqlite:///{db_file}", "--quiet"], agent)
    return result, db_file


def environment(name: str, **fields: object) -> str:
    said = "".join(f"{key} = {value!r}\n".replace("'", '"') for key, value in fields.items())
    return f'[[environment]]\nname = "{name}"\nkind = "fake"\n{said}'


def statuses(db_file: Path) -> dict[tuple[str, str], str]:
    """(environment, workload) -> the status of its runs (one each, where they agree)."""
    opened = gb_store.open(f"sqlite:///{db_file}")
    try:
        found = {}
        for run in opened.runs(1):
            found.setdefault((run.environment, run.workload), set()).add(run.status)
    finally:
        opened.engine.dispose()
    return {key: "/".join(sorted(said)) for key, said in found.items()}


def last_line(result) -> str:
    return result.stderr.strip().splitlines()[-1]


def test_every_run_ok_exits_0_and_says_nothing_of_it(tmp_path, fake_agent):
    result, db_file = run_cli(tmp_path, fake_agent, environment("slow", scale=2))
    assert result.exit_code == 0, result.output
    assert "did not end ok" not in result.stderr
    assert last_line(result).startswith("campaign 1 stored in")


def test_a_run_that_timed_out_exits_1_after_storing_everything(tmp_path, fake_agent):
    result, db_file = run_cli(tmp_path, fake_agent, environment("hung", behaviour="hang"),
                               timeout_s=0.2)
    assert result.exit_code == EXIT_RUNS_NOT_OK == 1, result.output
    assert last_line(result) == "guestbench: 2 of 4 runs did not end ok (2 timeout): exit 1"
    assert "Traceback" not in result.output
    assert "campaign 1 stored in" in result.stderr
    (campaign,) = campaigns_in(db_file)
    assert campaign.status == "finished"


def test_the_last_line_names_each_status_and_its_count(tmp_path, fake_agent):
    result, _ = run_cli(tmp_path, fake_agent,
                         environment("broken", behaviour="error")
                         + environment("dying", behaviour="crash")
                         + environment("unstartable", behaviour="infra")
                         + environment("gone", behaviour="unavailable"))  # 1 run says why
    assert result.exit_code == 1, result.output
    line = last_line(result)
    assert line.startswith("guestbench: 6 of 9 runs did not end ok (")
    assert sorted(line[line.index("(") + 1:line.index(")")].split(", ")) == [
        "2 crashed", "2 failed", "2 infra"]
    assert line.endswith("): exit 1")


def test_an_unavailable_environment_is_not_a_failure(tmp_path, fake_agent):
    result, db_file = run_cli(tmp_path, fake_agent, environment("gone", behaviour="unavailable"))
    assert result.exit_code == 0, result.output
    assert "did not end ok" not in result.stderr
    assert set(statuses(db_file).values()) == {Status.OK, Status.UNAVAILABLE}


def test_an_unsupported_cell_is_not_a_failure(tmp_path, fake_agent):
    # the tsc-only environment refuses pipe_switch before it runs: it needs processes
    result, db_file = run_cli(tmp_path, fake_agent, environment("tsconly", capabilities=["tsc"]),
                               workloads='[[workload]]\nname = "pipe_switch"\n')
    assert result.exit_code == 0, result.output
    assert statuses(db_file)["tsconly", "pipe_switch"] == Status.UNSUPPORTED


def test_a_resumed_campaign_is_judged_whole(build_plan, run_plan, store, fake_agent):
    """Killed after its first runs, one of them failed: the resume runs only ok ones, and
    still exits 1 for the campaign's failed runs, counted with the earlier ones."""
    from guestbench import host as host_module

    plan = build_plan([{"name": "a", "kind": "fake"},
                       {"name": "b", "kind": "fake", "behaviour": "error"}],
                      [{"name": "getpid"}], repeat=2)
    stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=3),
                           snapshot_host=lambda host: QUIET_HOST)
    store.reopen_campaign(stop.campaign_id, {"hostname": os.uname().nodename,
                                             "pid": os.getpid(), "started": -1})
    here = Host(dict(store.campaign(str(stop.campaign_id)).host_facts))
    old, host_module.collect = host_module.collect, lambda: here
    try:
        result = CliRunner().invoke(main, ["run", "--resume", str(stop.campaign_id), "--db",
                                           store.engine.url.render_as_string(False), "--quiet"],
                                    env={"GUESTBENCH_AGENT": str(fake_agent)})
    finally:
        host_module.collect = old
    assert result.exit_code == 1, result.output
    assert last_line(result) == "guestbench: 2 of 4 runs did not end ok (2 failed): exit 1"
    assert store.campaign(str(stop.campaign_id)).status == "finished"


# -- the pool: a job's campaign with failed runs is done ---------------------------------------

@pytest.fixture
def pool_job(monkeypatch, tmp_path):
    """queue.run_job with its store and child `guestbench run` stood in for: job(code,
    status) -> what run_job did when the child exited with code and left the host's
    campaign with status."""
    class Opened:
        engine = SimpleNamespace(dispose=lambda: None)

    def job(code: int, status: str):
        campaigns: list = []

        def child(argv, **kwargs):
            campaigns.append(SimpleNamespace(id=1, status=status, pool_host="h1"))
            return subprocess.CompletedProcess(argv, code)

        monkeypatch.setattr(queue.store, "open", lambda url, create=False: Opened())
        monkeypatch.setattr(queue.pool_rows, "group", lambda engine, selector: SimpleNamespace(
            plan_source="plan.toml", plan_text="[campaign]\n"))
        monkeypatch.setattr(queue.pool_rows, "campaigns_of", lambda engine, group: campaigns)
        monkeypatch.setattr(queue, "_refusal", lambda plan_file, allow: None)
        monkeypatch.setattr(queue.subprocess, "run", child)
        try:
            queue.run_job("postgresql://x/y", 7, "h1", tmp_path / "logs", [])
        except queue.JobFailed as failed:
            return failed
        return "done"

    return job


def test_a_pool_job_whose_campaign_finished_with_failed_runs_is_done(pool_job):
    assert pool_job(EXIT_RUNS_NOT_OK, "finished") == "done"


def test_a_pool_job_whose_campaign_did_not_finish_failed(pool_job):
    failed = pool_job(1, "failed")  # guestbench met an error: the campaign did not finish
    assert isinstance(failed, queue.JobFailed) and "exited with 1" in str(failed)
