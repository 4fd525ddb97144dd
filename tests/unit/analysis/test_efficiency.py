"""Where a campaign's time went: timed, in runs, outside runs, and per workload."""

from __future__ import annotations

import datetime as dt

from guestbench.analysis import efficiency
from guestbench.report.tables.efficiency import efficiency_table
from guestbench.store.records import Campaign, Run, StoredSample

RUNS = [
    Run(id=1, workload="getpid", status="ok", host_seconds=0.4),
    Run(id=2, workload="getpid", status="ok", host_seconds=0.6),
    Run(id=3, workload="boot", status="ok", host_seconds=5.0),
    Run(id=4, workload="getpid", status="unavailable", host_seconds=0.0),
]
TIMED = [StoredSample(run_id=1, metric="timed", unit="s", value=0.1),
         StoredSample(run_id=2, metric="timed", unit="s", value=0.3)]


def test_the_shares_add_up_to_the_wall_time() -> None:
    spent = efficiency.of(10.0, RUNS, TIMED)
    assert spent.timed_s == 0.4 and spent.runs_s == 6.0 and spent.between_s == 4.0
    assert spent.untimed_runs == 1 and spent.untimed_runs_s == 5.0  # the boot times no region
    line = " ".join(spent.line().split())
    assert line.startswith("Time: timed 4% of this command's 10 s; in runs, not timed 6% (")
    assert "runs that time no region of their own 50% (1 runs" in line
    assert "outside runs 40% (" in line


AGENT = [StoredSample(run_id=1, metric="in_agent", unit="s", value=0.3),
         StoredSample(run_id=2, metric="in_agent", unit="s", value=0.4)]


def test_the_agent_span_splits_starting_environments_from_calibrating() -> None:
    spent = efficiency.of(10.0, RUNS, TIMED + AGENT, preparing_s=2.0)
    assert spent.agent_s == 0.7 and spent.split_runs_s == 1.0
    assert round(spent.starting_s, 9) == 0.3  # host time 1.0 s, of which the agent 0.7 s
    assert spent.between_s == 2.0  # 10 s - 6 s of runs - 2 s preparing
    line = " ".join(spent.line().split())
    assert line.startswith("Time: timed 4% of this command's 10 s; in the agent, not timed 3% (")
    assert "starting and stopping environments 3%;" in line
    assert "preparing 20% (probes, images); outside runs 20% (the store, the report)." in line
    assert "in runs, not timed" not in line


def _shares(line: str) -> list[int]:
    import re
    return [int(share) for share in re.findall(r" (-?\d+)%", " ".join(line.split()))]


def test_timed_runs_without_an_agent_span_never_make_a_share_negative() -> None:
    """A campaign where some timed runs had no agent span (a shared guest's) said "in the
    agent, not timed -1%" (2026-11-27): their timed time was taken from the others' span."""
    runs = [Run(id=1, workload="getpid", status="ok", host_seconds=1.0),
            Run(id=2, workload="getpid", status="ok", host_seconds=3.0)]
    samples = [StoredSample(run_id=1, metric="timed", unit="s", value=0.5),
               StoredSample(run_id=1, metric="in_agent", unit="s", value=0.6),
               StoredSample(run_id=2, metric="timed", unit="s", value=2.0)]
    spent = efficiency.of(5.0, runs, samples)
    shares = _shares(spent.line())
    assert min(shares) >= 0 and sum(shares) <= 101, spent.line()
    # run 1: 0.1 s in its agent beyond its timed region; run 2 (no span): 1.0 s beyond its
    assert "in the agent, not timed 22%" in " ".join(spent.line().split())


def test_another_command_s_runs_are_not_this_command_s_time() -> None:
    """After run --resume the line read "runs that time no region of their own 143%": the
    earlier command's runs were counted in the resumed command's wall time."""
    spent = efficiency.of(10.0, RUNS[2:], TIMED + AGENT)  # run 3 alone is this command's
    shares = _shares(spent.line())
    assert spent.timed_s == 0 and spent.agent_s == 0
    assert min(shares) >= 0 and sum(shares) <= 101, spent.line()


def test_durations_read_as_a_person_says_them() -> None:
    assert efficiency.duration(9.44) == "9.4 s"
    assert efficiency.duration(228) == "3 min 48 s"
    assert efficiency.duration(3720) == "1 h 2 min"


class _Samples(list):
    def of_metrics(self, *metrics):
        return [sample for sample in self if sample.metric in metrics]


class _Report:
    start = dt.datetime(2026, 11, 25, 20, 0, tzinfo=dt.timezone.utc)
    campaign = Campaign(id=1, created_at=start, finished_at=start + dt.timedelta(seconds=10))
    runs = RUNS
    samples = _Samples(TIMED)


class _SplitReport(_Report):
    samples = _Samples(TIMED + AGENT)


def test_the_table_splits_the_runs_untimed_time_where_the_agent_said_its_span() -> None:
    table = efficiency_table(_SplitReport())
    assert table.rows[1] == ["in the agent, not timed", "-", "0.3", "-", "-"]
    assert table.rows[2] == ["starting and stopping environments", "-", "0.3", "-", "-"]
    assert table.rows[3] == ["outside runs", "-", "4", "-", "-"]


def test_the_table_puts_the_costliest_workload_first_with_its_timed_share() -> None:
    table = efficiency_table(_Report())
    assert table.title == "Time: where the campaign's 10 s went"
    assert table.rows[0] == ["campaign", "4", "10", "0.4", "4%"]
    assert table.rows[1] == ["outside runs", "-", "4", "-", "-"]
    assert table.rows[2] == ["boot", "1", "5", "-", "-"]
    assert table.rows[3] == ["getpid", "3", "1", "0.4", "40%"]


def test_a_campaign_without_an_end_has_no_table() -> None:
    class Running(_Report):
        campaign = Campaign(id=1, created_at=_Report.start, finished_at=None)
    assert efficiency_table(Running()) is None


def test_the_command_s_time_names_the_campaign_s_as_report_gives_it() -> None:
    """'timed 0% of 10 min 30 s' in the terminal against 'the campaign's 10 min 22 s' in the
    Markdown (2026-11-27): both are now named for what they are."""
    line = efficiency.of(630.0, [], []).line(622.0)
    assert line.startswith("Time: timed 0% of this command's 10 min 30 s (the campaign itself, "
                           "start to end: 10 min 22 s);")


def test_a_campaign_of_starts_is_timed_on_the_host_s_clock() -> None:
    """A campaign of start runs said "timed 0%": the host times a start, not the agent."""
    from guestbench.workloads import HOST_TIMED
    runs = [Run(id=1, workload="start", status="ok", host_seconds=0.5),
            Run(id=2, workload="start", status="ok", host_seconds=0.5)]
    samples = [StoredSample(run_id=run, metric=metric, unit="ms", value=value)
               for run in (1, 2) for metric, value in (("start_ready", 300.0),
                                                       ("start_teardown", 100.0))]
    samples += [StoredSample(run_id=run, metric="in_agent", unit="s", value=0.01)
                for run in (1, 2)]
    spent = efficiency.of(2.0, runs, samples, host_timed=HOST_TIMED)
    assert round(spent.timed_s, 9) == 0.8 and spent.untimed_runs == 0
    line = " ".join(spent.line().split())
    assert line.startswith("Time: timed 40% of this command's 2.0 s")
    assert "start" in HOST_TIMED and "getpid" not in HOST_TIMED
    assert efficiency.of(2.0, runs, samples).timed_s == 0  # without the workloads' rule
