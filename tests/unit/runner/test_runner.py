"""The runner on the fake environment: statuses, samples, the matrix, interruption."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from guestbench.environments.kinds.fake import Fake
from guestbench.runner import Outcome, Progress, Status
from tests.support.runner import Recorder, interrupting_create, run_interrupted

# the runner's logic above the store: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True

EXPECTED_STATUS = {
    "ok": Status.OK,
    "hang": Status.TIMEOUT,
    "garbled": Status.FAILED,
    "truncated": Status.FAILED,
    "error": Status.FAILED,
    "crash": Status.CRASHED,
    "infra": Status.INFRA,
    "unavailable": Status.UNAVAILABLE,
}

REASON_WORDS = {
    "hang": "timeout",
    "garbled": "checksum",
    "truncated": "truncated",
    "error": "told to fail",
    "crash": "SIGSEGV",
    "infra": "could not start",
    "unavailable": "unavailable",
}


def runs_by_env(store, campaign_id: int) -> dict[str, list[dict]]:
    names = {env.id: env.name for env in store.environments(campaign_id)}
    out: dict[str, list[dict]] = {}
    for run in store.runs(campaign_id):
        out.setdefault(names[run.environment_id], []).append(run)
    return out


@pytest.mark.parametrize("behaviour", list(EXPECTED_STATUS))
def test_fake_behaviour_gives_its_status(build_plan, run_plan, store, behaviour: str) -> None:
    plan = build_plan([{"name": "env", "kind": "fake", "behaviour": behaviour}],
                      repeat=1, timeout_s=0.2)
    campaign_id = run_plan(plan)
    (run,) = store.runs(campaign_id)
    assert run.status == EXPECTED_STATUS[behaviour]
    samples = [s for s in store.samples(campaign_id) if s.run_id == run.id]
    if behaviour == "ok":
        assert run.reason == ""
        assert {(s.metric, s.unit) for s in samples} == {
            ("time_per_op", "ns"), ("tsc_per_op", "cycles"),
            ("in_agent", "s")}  # the agent's span on the host's clock (the runner's)
        assert all(s.value > 0 for s in samples)
    else:
        assert run.reason.strip(), f"{behaviour}: a non-ok run needs a reason"
        assert REASON_WORDS[behaviour] in run.reason
        assert samples == [], "samples are stored only for ok runs"
    assert store.campaign(str(campaign_id)).status == "finished"


def test_timeout_reason_names_the_limit(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "env", "kind": "fake", "behaviour": "hang"}],
                      repeat=1, timeout_s=0.2)
    (run,) = store.runs(run_plan(plan))
    assert run.reason == "killed after the 0.2 s run timeout"
    assert run.host_seconds >= 0.2


def test_every_behaviour_in_one_campaign(build_plan, run_plan, store) -> None:
    behaviours = [b for b in EXPECTED_STATUS if b != "hang"]
    plan = build_plan([{"name": b, "kind": "fake", "behaviour": b} for b in behaviours],
                      [{"name": "getpid"}, {"name": "clock_gettime"}], repeat=2, timeout_s=1)
    campaign_id = run_plan(plan)
    by_env = runs_by_env(store, campaign_id)
    for behaviour in behaviours:
        # 2 workloads x repeat 2; an unavailable environment's cells stop at their one run
        runs = 2 if EXPECTED_STATUS[behaviour] == "unavailable" else 4
        assert [r.status for r in by_env[behaviour]] == [EXPECTED_STATUS[behaviour]] * runs
    sampled_runs = {s.run_id for s in store.samples(campaign_id)}
    ok_runs = {r.id for r in store.runs(campaign_id) if r.status == "ok"}
    assert sampled_runs == ok_runs and len(ok_runs) == 4


def test_unsupported_when_a_capability_is_missing(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "tsconly", "kind": "fake", "capabilities": ["tsc"]}],
                      [{"name": "getpid"}, {"name": "pipe_switch"}], repeat=1)
    campaign_id = run_plan(plan)
    getpid, pipe_switch = store.runs(campaign_id)
    assert getpid.status == Status.OK
    assert pipe_switch.status == Status.UNSUPPORTED
    assert "processes" in pipe_switch.reason
    assert pipe_switch.log_path is None
    assert not [s for s in store.samples(campaign_id) if s.run_id == pipe_switch.id]


def test_no_capabilities_makes_timing_workloads_unsupported(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "bare", "kind": "fake", "capabilities": []}],
                      [{"name": "getpid"}, {"name": "stream"}], repeat=1)
    getpid, stream = store.runs(run_plan(plan))
    assert (getpid.status, stream.status) == (Status.UNSUPPORTED, Status.OK)
    assert "tsc" in getpid.reason


@pytest.mark.both_stores
def test_whole_matrix_is_stored(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake", "scale": 2},
                       {"name": "c", "kind": "fake", "behaviour": "error"}],
                      [{"name": "getpid"}, {"name": "stream_triad", "array_mib": [16, 32]}],
                      repeat=3)
    progress = Recorder()
    campaign_id = run_plan(plan, progress)
    runs = store.runs(campaign_id)
    assert len(runs) == 3 * 3 * 3 == progress.total
    assert len(progress.started) == len(progress.finished) == 27
    keys = {(r.environment_id, r.label, r.repetition) for r in runs}
    assert len(keys) == 27  # every combination once
    assert {r.label for r in runs} == {
        "getpid", "stream_triad[array_mib=16]", "stream_triad[array_mib=32]"}
    assert {r.repetition for r in runs} == {0, 1, 2}
    swept = [r for r in runs if r.label == "stream_triad[array_mib=32]"]
    assert all(r.params == {"array_mib": 32, "ntimes": 10, "enough_s": 1.0} for r in swept)
    # 2 ok environments x 3 workloads x 3 repetitions x 2 samples, and each run's in_agent
    assert len(list(store.samples(campaign_id))) == 36 + 18


def test_repetitions_are_the_outer_loop(build_plan, run_plan) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake"}],
                      [{"name": "getpid"}, {"name": "sched_yield"}], repeat=2)
    progress = Recorder()
    run_plan(plan, progress)
    assert progress.started == [
        ("a", "getpid", 0), ("a", "sched_yield", 0), ("b", "getpid", 0), ("b", "sched_yield", 0),
        ("a", "getpid", 1), ("a", "sched_yield", 1), ("b", "getpid", 1), ("b", "sched_yield", 1)]


@pytest.mark.both_stores
def test_each_run_is_stored_when_it_finishes(build_plan, run_plan, store) -> None:
    stored_at_finish: list[int] = []

    class Watcher(Progress):
        def run_finished(self, environment: str, label: str, outcome: Outcome) -> None:
            campaign = store.campaign()
            stored_at_finish.append(len(store.runs(campaign.id)))
            assert campaign.status == "running"

    plan = build_plan([{"name": "a", "kind": "fake"}], [{"name": "getpid"}], repeat=3)
    run_plan(plan, Watcher())
    assert stored_at_finish == [1, 2, 3]


def test_campaign_row_and_environments(build_plan, run_plan, store, tmp_path: Path) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"},
                       {"name": "gone", "kind": "fake", "behaviour": "unavailable"}],
                      name="camp", repeat=1)
    progress = Recorder()
    campaign_id = run_plan(plan, progress)
    campaign = store.campaign(str(campaign_id))
    assert (campaign.name, campaign.status) == ("camp", "finished")
    assert campaign.plan == plan.as_dict()
    assert campaign.host_facts["cpu_model"] == "Test CPU 3000"
    assert Path(campaign.log_dir).parent == (tmp_path / "logs").resolve()
    envs = store.environments(campaign_id)
    assert [(e.name, e.kind, e.available, e.position) for e in envs] == [
        ("a", "fake", True, 0), ("gone", "fake", False, 1)]
    assert "unavailable" in envs[1].probe
    assert progress.unavailable_envs == [("gone", envs[1].probe)]


def test_logs_are_kept_for_started_guests_only(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"},
                       {"name": "broken", "kind": "fake", "behaviour": "infra"}], repeat=1)
    ok, infra = store.runs(run_plan(plan))
    log = Path(ok.log_path) / "stdout.log"
    campaign_logs = store.campaign().log_dir
    assert ok.log_path == f"{campaign_logs}/a/getpid/rep0"
    assert b"fake console noise" in log.read_bytes()
    assert infra.status == Status.INFRA and infra.log_path is None


@pytest.mark.both_stores
def test_interrupt_during_a_run(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake"}], repeat=3)
    stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=3))
    assert stop.signal_name == "SIGINT"
    campaign = store.campaign(str(stop.campaign_id))
    assert campaign.status == Status.INTERRUPTED
    runs = store.runs(stop.campaign_id)
    assert [r.status for r in runs] == ["ok", "ok", "interrupted"]
    assert "stopped" in runs[2].reason
    assert len(list(store.samples(stop.campaign_id))) == 6  # the two finished runs, 3 each


def test_sigterm_interrupt_is_named(build_plan, run_plan, store) -> None:
    class Term(Fake):
        def start(self, job, logdir, deadline_ns):
            raise KeyboardInterrupt("SIGTERM")

    plan = build_plan([{"name": "a", "kind": "fake"}], repeat=2)
    stop = run_interrupted(run_plan, plan, create=Term)
    assert stop.signal_name == "SIGTERM"
    (run,) = store.runs(stop.campaign_id)
    assert run.status == Status.INTERRUPTED
    assert "SIGTERM" in run.reason
    assert store.campaign(str(stop.campaign_id)).end_reason.startswith("stopped by SIGTERM at ")


@pytest.mark.both_stores
def test_a_stop_stores_every_open_cell_s_stop_in_one_write(build_plan, run_plan, store,
                                                            monkeypatch) -> None:
    """A SIGTERM to a campaign of 10,000 cells took 17-46 s to end (2026-11-27): each open
    cell's stop was a transaction of its own. Now they are one, whatever their number."""
    writes: list[int] = []
    batch = type(store).add_cell_stops

    def counted(self, campaign_id, stops):
        writes.append(len(stops))
        return batch(self, campaign_id, stops)
    monkeypatch.setattr(type(store), "add_cell_stops", counted)
    plan = build_plan([{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake"}],
                      [{"name": "getpid", "values": list(range(3, 43))}], repeat=2)
    stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=3))
    assert writes == [80]  # every cell was open at the stop: all written at once
    stops = store.cell_stops(stop.campaign_id)
    assert len(stops) == 80 and {one.reason for one in stops} == {"interrupted"}


def test_plain_ctrl_c_reason_names_sigint(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}], repeat=2)
    stop = run_interrupted(run_plan, plan, create=interrupting_create(on_start=1))
    (run,) = store.runs(stop.campaign_id)
    assert "SIGINT" in run.reason


class InterruptOnThirdStart(Progress):
    def __init__(self) -> None:
        self.calls = 0

    def run_started(self, environment: str, label: str, repetition: int) -> None:
        self.calls += 1
        if self.calls == 3:
            raise KeyboardInterrupt


def test_interrupt_from_progress_keeps_finished_runs(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake"}],
                      [{"name": "getpid"}], repeat=3)
    stop = run_interrupted(run_plan, plan, progress=InterruptOnThirdStart())
    assert store.campaign(str(stop.campaign_id)).status == Status.INTERRUPTED
    runs = store.runs(stop.campaign_id)
    assert [r.status for r in runs[:2]] == ["ok", "ok"]
    assert not [r for r in runs if r.status == "ok"][2:]  # nothing ran after the stop


def test_interrupt_from_progress_stores_the_current_run(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake"}],
                      [{"name": "getpid"}], repeat=3)
    stop = run_interrupted(run_plan, plan, progress=InterruptOnThirdStart())
    assert [r.status for r in store.runs(stop.campaign_id)] == ["ok", "ok", "interrupted"]


# -- fixed repeats and host checks ---------------------------------------------------------

def test_fixed_repeat_cells_stop_as_fixed(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"},
                       {"name": "bad", "kind": "fake", "behaviour": "error"}],
                      [{"name": "getpid"}, {"name": "stream_triad", "array_mib": 16}], repeat=3)
    progress = Recorder()
    campaign_id = run_plan(plan, progress)
    assert progress.totals == [12]  # known up front, never changed
    names = {env.id: env.name for env in store.environments(campaign_id)}
    stops = [(names[s.environment_id], s.label, s.runs, s.ok_runs, s.reason,
              s.target) for s in store.cell_stops(campaign_id)]
    assert stops == [("a", "getpid", 3, 3, "fixed", None),
                     ("a", "stream_triad", 3, 3, "fixed", None),
                     ("bad", "getpid", 3, 0, "fixed", None),
                     ("bad", "stream_triad", 3, 0, "fixed", None)]
    half_widths = [s.half_width for s in store.cell_stops(campaign_id)]
    assert half_widths[0] is not None and half_widths[2:] == [None, None]


BUSY_VIRTUAL = {"load_avg": [3.5, 2.0, 1.0], "logical_cpus": 4, "governors": None,
                "cpu_ticks": {"user": 100, "idle": 800, "steal": 0}, "virtualised": True}
STOLEN = {**BUSY_VIRTUAL, "cpu_ticks": {"user": 200, "idle": 1500, "steal": 200}}
QUIET = {"load_avg": [0.0, 0.0, 0.0], "logical_cpus": 4, "governors": {"cpu0": "performance"},
         "cpu_ticks": {"user": 100, "idle": 800, "steal": 0}, "virtualised": False}


def recorded_host(*snapshots: dict):
    """A snapshot_host for the runner that hands out recorded snapshots in turn."""
    given = iter(snapshots)
    return lambda host: next(given)


def test_host_checks_are_stored_and_warned_at_start_and_end(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}], repeat=1)
    progress = Recorder()
    campaign_id = run_plan(plan, progress, snapshot_host=recorded_host(BUSY_VIRTUAL, STOLEN))
    checks = store.campaign(str(campaign_id)).host_checks
    assert (checks["before"], checks["after"]) == (BUSY_VIRTUAL, STOLEN)
    assert checks["steal_pct"] == 20.0
    when = [(moment, message.split(" ")[0]) for moment, message in progress.warnings]
    assert when == [("start", "the"), ("start", "this"), ("end", "steal")]
    assert [message for _, message in progress.warnings] == checks["warnings"]


def test_a_quiet_host_warns_nothing(build_plan, run_plan, store) -> None:
    progress = Recorder()
    campaign_id = run_plan(build_plan([{"name": "a", "kind": "fake"}], repeat=1), progress,
                           snapshot_host=recorded_host(QUIET, QUIET))
    assert progress.warnings == []
    assert store.campaign(str(campaign_id)).host_checks["warnings"] == []


def test_host_checks_end_also_when_interrupted(build_plan, run_plan, store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}], repeat=3)
    progress = InterruptOnThirdStart()
    stop = run_interrupted(run_plan, plan, progress=progress,
                           snapshot_host=recorded_host(QUIET, STOLEN))
    checks = store.campaign(str(stop.campaign_id)).host_checks
    assert checks["after"] == STOLEN and checks["steal_pct"] == 20.0
    assert any(message.startswith("steal time") for message in checks["warnings"])


@pytest.mark.both_stores
def test_the_before_half_is_stored_while_the_campaign_runs(build_plan, run_plan, store) -> None:
    seen: list[dict] = []

    class Watcher(Progress):
        def run_finished(self, environment: str, label: str, outcome: Outcome) -> None:
            seen.append(store.campaign().host_checks)

    run_plan(build_plan([{"name": "a", "kind": "fake"}], repeat=1), Watcher(),
             snapshot_host=recorded_host(BUSY_VIRTUAL, QUIET))
    (during,) = seen
    assert (during["before"], during["after"], during["steal_pct"]) == (BUSY_VIRTUAL, None, None)
    assert len(during["warnings"]) == 2  # the start's: load and virtualised


def test_an_unsupported_error_record_makes_the_run_unsupported() -> None:
    from guestbench.protocol import Record
    from guestbench.runner.outcomes import Seen

    seen = Seen()
    seen.add(Record(0, "error", {"type": "error", "workload": "rdtscp", "unsupported": True,
                                 "message": "this CPU does not offer rdtscp"}, 0))
    assert seen.unsupported == ["rdtscp: this CPU does not offer rdtscp"] and not seen.errors
    seen.add(Record(1, "error", {"type": "error", "workload": "rdtscp", "message": "boom"}, 0))
    assert seen.errors == ["rdtscp: boom"]
    assert "boom" in seen.problem("rdtscp", True)


def test_inputs_the_host_lacks_make_the_cell_unsupported_with_the_fix(
        build_plan, run_plan, store, tmp_path) -> None:
    # a kernel_build whose source is not there: nothing to prepare, so nothing to retry
    plan = build_plan([{"name": "fs", "kind": "fake",
                        "capabilities": ["filesystem", "processes", "exec_children"]}],
                      [{"name": "kernel_build", "source": str(tmp_path / "linux-9.9.tar.xz")}],
                      repeat=3)
    [run] = store.runs(run_plan(plan))
    assert run.status == Status.UNSUPPORTED
    assert "does not exist" in run.reason and "apt-get install linux-source" in run.reason


class LoseSignalOnSecondStart(Progress):
    """SIGTERM comes during the second run and its exception is lost (as in a weakref
    callback): the run ends, and the campaign stops before the next one."""

    def __init__(self) -> None:
        self.calls = 0

    def run_started(self, environment: str, label: str, repetition: int) -> None:
        self.calls += 1
        if self.calls == 2:
            from guestbench.process import stopping
            try:
                raise stopping.of(signal.SIGTERM)
            except KeyboardInterrupt:
                pass


def test_a_lost_signal_stops_the_campaign_before_its_next_run(build_plan, run_plan,
                                                              store) -> None:
    plan = build_plan([{"name": "a", "kind": "fake"}, {"name": "b", "kind": "fake"}],
                      [{"name": "getpid"}], repeat=3)
    stop = run_interrupted(run_plan, plan, progress=LoseSignalOnSecondStart())
    assert stop.signal_name == "SIGTERM"
    assert store.campaign(str(stop.campaign_id)).status == Status.INTERRUPTED
    assert [r.status for r in store.runs(stop.campaign_id)] == ["ok", "ok"]
