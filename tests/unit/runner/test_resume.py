"""run --resume: an interrupted or killed campaign completed with only the runs it owes,
no run stored twice, adaptive cells taking up their values; and the campaigns that must
not be resumed here, refused with the reason (fake environment, both store backends)."""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

from guestbench.store import schema
from click.testing import CliRunner

from guestbench.plan import build as plan_build
from guestbench.process import proc
from guestbench.cli import EXIT_BAD_INPUT, main
from guestbench.host import Host
from guestbench.runner import Runner, Status, StopReason

from tests.support.runner import (QUIET_HOST, Recorder, interrupting_create, run_interrupted,
                                  runs_of, stops)

ENVIRONMENTS = [{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake"}]
WORKLOADS = [{"name": "getpid", "repeat": 4},  # fixed
             {"name": "sched_yield", "repeat": "auto"}]  # adaptive
AUTO = {"target": 0.03, "min_runs": 5, "max_runs": 30}


def resume(store, host: Host, tmp_path: Path, campaign_id: int, progress=None) -> int:
    campaign = store.campaign(str(campaign_id))
    the_plan = plan_build.stored(campaign.plan, f"campaign {campaign_id}")
    return Runner(the_plan, store, host, tmp_path / "logs", Path("/bin/true"), progress,
                  snapshot_host=lambda host: QUIET_HOST).resume(campaign)


def repetitions(store, campaign_id: int) -> Counter:
    """How many rows each (environment, label, repetition) has."""
    return Counter((key[0], key[1], run.repetition)
                   for key, runs in runs_of(store, campaign_id).items() for run in runs)


@pytest.mark.parametrize("shared", [False, True], ids=["one-per-run", "shared-rounds"])
def test_an_interrupted_campaign_resumed_ends_as_a_straight_one(build_plan, run_plan, store,
                                                                host, tmp_path, shared) -> None:
    environments = [{**spec, "full_system": True} for spec in ENVIRONMENTS] if shared \
        else ENVIRONMENTS  # a full-system kind shares its rounds
    plan = build_plan(environments, WORKLOADS, auto=AUTO)
    straight = run_plan(plan, snapshot_host=lambda host: QUIET_HOST)
    stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=7 if not shared
                                                                      else 4),
                           snapshot_host=lambda host: QUIET_HOST)
    before = store.runs(stop.campaign_id)
    # a shared round's one environment served both workloads: both runs were interrupted
    assert [run.status for run in before].count(Status.INTERRUPTED) == (2 if shared else 1)

    recorder = Recorder()
    assert resume(store, host, tmp_path, stop.campaign_id, recorder) == stop.campaign_id
    assert store.campaign(str(stop.campaign_id)).status == "finished"
    rows = repetitions(store, stop.campaign_id)
    assert set(rows.values()) == {1}  # no (environment, workload, repetition) twice
    assert rows == repetitions(store, straight)  # the same runs as a campaign never stopped
    after = store.runs(stop.campaign_id)
    assert all(run.status == Status.OK for run in after)
    kept = [run.id for run in before if run.status == Status.OK]
    assert [run.id for run in after][:len(kept)] == kept  # finished runs are kept as they were
    assert len(recorder.finished) == len(after) - len(kept)  # only the runs still owed ran
    assert {key: (stop.reason, stop.runs) for key, stop in stops(store, straight).items()} \
        == {key: (stop.reason, stop.runs)
            for key, stop in stops(store, stop.campaign_id).items()}


def test_an_adaptive_cell_takes_up_the_values_it_had(build_plan, run_plan, store, host,
                                                     tmp_path) -> None:
    """Stopped after 3 of the 5 runs it needs to converge: resumed, it converges after 2 more,
    not 5 (its first values count)."""
    plan = build_plan([{"name": "a", "kind": "fake"}], [{"name": "sched_yield"}],
                      repeat="auto", auto=AUTO)
    stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=4),
                           snapshot_host=lambda host: QUIET_HOST)
    resume(store, host, tmp_path, stop.campaign_id)
    (cell_stop,) = store.cell_stops(stop.campaign_id)
    assert (cell_stop.reason, cell_stop.runs) == (StopReason.CONVERGED, 5)
    assert sorted(run.repetition for run in store.runs(stop.campaign_id)) == [0, 1, 2, 3, 4]


def test_the_interrupted_runs_logs_go_with_it(build_plan, run_plan, store, host,
                                              tmp_path) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}], [{"name": "getpid"}], repeat=3)
    stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=2),
                           snapshot_host=lambda host: QUIET_HOST)
    (dropped,) = [run for run in store.runs(stop.campaign_id)
                  if run.status == Status.INTERRUPTED]
    Path(dropped.log_path).mkdir(parents=True, exist_ok=True)
    (Path(dropped.log_path) / "stdout.log").write_text("half a run\n")
    resume(store, host, tmp_path, stop.campaign_id)
    redone = [run for run in store.runs(stop.campaign_id) if run.repetition == 1]
    assert [run.status for run in redone] == [Status.OK]
    assert "half a run" not in (Path(redone[0].log_path) / "stdout.log").read_text()


# -- the CLI: what may be resumed -------------------------------------------------------------

@pytest.fixture
def killed_campaign(build_plan, run_plan, store, tmp_path):
    """A campaign of 2 runs of 3 left 'running' with the given owner, as a SIGKILL leaves it."""
    def make(owner) -> int:
        plan = build_plan([{"name": "a", "kind": "fake"}], [{"name": "getpid"}], repeat=3)
        stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=3),
                               snapshot_host=lambda host: QUIET_HOST)
        store.reopen_campaign(stop.campaign_id, owner)  # 'running', as a killed process left it
        return stop.campaign_id
    return make


def resume_cli(store, campaign_id: int, *extra: str, facts=None, agent: Path | None = None):
    """guestbench run --resume on a host with the campaign's own facts (or these)."""
    from guestbench import host as host_module
    here = Host(dict(facts or store.campaign(str(campaign_id)).host_facts))
    old = host_module.collect
    host_module.collect = lambda: here
    try:
        return CliRunner().invoke(main, ["run", "--resume", str(campaign_id), "--db",
                                         store.engine.url.render_as_string(False),
                                         "--quiet", *extra],
                                  env={"GUESTBENCH_AGENT": str(agent)} if agent else None)
    finally:
        host_module.collect = old


def test_a_campaign_left_running_by_a_killed_process_is_resumed(killed_campaign, store,
                                                                fake_agent) -> None:
    gone = {"hostname": os.uname().nodename, "pid": os.getpid(), "started": -1}  # pid reused
    campaign_id = killed_campaign(gone)
    result = resume_cli(store, campaign_id, agent=fake_agent)
    assert result.exit_code == 0, result.output
    campaign = store.campaign(str(campaign_id))
    assert campaign.status == "finished"
    assert campaign.owner["pid"] == os.getpid()  # the resuming process, now
    assert sorted(run.repetition for run in store.runs(campaign_id)) == [0, 1, 2]


def test_the_resumed_command_s_time_line_counts_its_own_runs(killed_campaign, store,
                                                             fake_agent) -> None:
    """After run --resume the time line read "runs that time no region of their own 143%":
    the runs of the command that was killed were counted in the resuming command's time."""
    import re
    gone = {"hostname": os.uname().nodename, "pid": os.getpid(), "started": -1}
    campaign_id = killed_campaign(gone)
    with store.engine.begin() as connection:  # the killed command's two runs took 100 s each
        connection.execute(sa.update(schema.run).values(host_seconds=100.0))
    result = resume_cli(store, campaign_id, agent=fake_agent)
    assert result.exit_code == 0, result.output
    line = " ".join(result.output[result.output.index("Time: "):].split())
    line = line[:line.index(" campaign ")]
    shares = [int(share) for share in re.findall(r" (-?\d+)%", line)]
    assert shares and min(shares) >= 0 and sum(shares) <= 101, line


def test_a_campaign_whose_process_still_runs_is_not_resumed(killed_campaign, store) -> None:
    campaign_id = killed_campaign(proc.identity())  # this test's own process: alive
    result = resume_cli(store, campaign_id)
    assert result.exit_code == EXIT_BAD_INPUT
    assert f"still being run by process {os.getpid()}" in result.output
    assert "fix:" in result.output
    assert store.campaign(str(campaign_id)).status == "running"  # untouched


def test_a_finished_campaign_or_one_of_another_host_is_not_resumed(killed_campaign, store) -> None:
    campaign_id = killed_campaign({"hostname": os.uname().nodename, "pid": 1, "started": -1})
    other = {**store.campaign(str(campaign_id)).host_facts, "kernel": "6.12.0-other"}
    result = resume_cli(store, campaign_id, facts=other)
    assert result.exit_code == EXIT_BAD_INPUT
    assert "ran on another host (kernel" in result.output
    store.finish_campaign(campaign_id, "finished")
    result = resume_cli(store, campaign_id)
    assert result.exit_code == EXIT_BAD_INPUT and "finished already" in result.output


def test_resume_takes_no_plan_or_flags(killed_campaign, store) -> None:
    campaign_id = killed_campaign({"hostname": os.uname().nodename, "pid": 1, "started": -1})
    result = resume_cli(store, campaign_id, "--repeat", "9")
    assert result.exit_code == EXIT_BAD_INPUT
    assert "--repeat would change it (fix: drop --repeat)" in result.output


def test_the_next_run_marks_campaigns_left_running_by_a_gone_process(killed_campaign, store, fake_agent,
                                                                     tmp_path) -> None:
    gone = killed_campaign({"hostname": os.uname().nodename, "pid": os.getpid(), "started": -1})
    alive = killed_campaign(proc.identity())
    elsewhere = killed_campaign({"hostname": "another-host", "pid": 1, "started": 1})
    plan = tmp_path / "next.toml"
    plan.write_text('[campaign]\nrepeat = 1\n[[environment]]\nname = "a"\nkind = "fake"\n'
                    '[[workload]]\nname = "getpid"\n')
    result = CliRunner().invoke(main, ["run", str(plan), "--db",
                                       store.engine.url.render_as_string(False), "--quiet"],
                                env={"GUESTBENCH_AGENT": str(fake_agent)})
    assert result.exit_code == 0, result.output
    assert f"campaign {gone} " in result.output and "was left running" in result.output
    assert f"guestbench run --resume {gone}" in result.output
    marked = store.campaign(str(gone))
    assert marked.status == "interrupted" and "ended without closing it" in marked.end_reason
    assert store.campaign(str(alive)).status == "running"  # its process lives: untouched
    assert store.campaign(str(elsewhere)).status == "running"  # cannot be told from here
    assert resume_cli(store, gone, agent=fake_agent).exit_code == 0
    assert store.campaign(str(gone)).end_reason is None
