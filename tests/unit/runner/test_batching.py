"""One full-system guest per round serves several workloads; each cell keeps its own run."""

from __future__ import annotations

from guestbench import environments
from guestbench.runner.batching import Part, job_arguments, merged_options, part_of
from guestbench.environments.base import JobNeeds
from guestbench.runner import Status


def test_options_merge_once_and_conflicts_split():
    timing = Part("getpid", ("--min-time", "0.1"))
    assert merged_options([timing, Part("fork_exit", ("--min-time", "0.1"))]) == [
        "--min-time", "0.1"]
    assert merged_options([timing, Part("getppid", ("--min-time", "0.2"))]) is None
    stream = Part("stream", ("--array-mib", "128", "--ntimes", "10"))
    assert merged_options([timing, stream]) == [
        "--min-time", "0.1", "--array-mib", "128", "--ntimes", "10"]


def test_the_order_is_shuffled_per_round_and_the_options_come_first():
    parts = [Part(name, ("--min-time", "0.1")) for name in ("a", "b", "c", "d", "e")]
    orders = {tuple(job_arguments(parts, round_number)[2:]) for round_number in range(6)}
    assert len(orders) > 1 and all(sorted(order) == list("abcde") for order in orders)
    assert job_arguments(parts + parts[:1], 0) is None  # a workload twice: not one job


def test_what_cannot_share_a_guest(build_plan):
    plan = build_plan([{"name": "f", "kind": "fake"}],
                      [{"name": "getpid"}, {"name": "boot"}, {"name": "fio_seq_write"},
                       {"name": "hang", "seconds": 1}])
    getpid, boot, fio, hang = plan.workloads
    # it measures nothing: in a shared guest it was 'failed (no samples)' under qemu-tcg
    # and UML and 'ok' under runc (fault run of 2026-11-25); alone it is ok everywhere
    assert part_of(hang, JobNeeds()) is None
    assert part_of(getpid, JobNeeds()) == Part("getpid", ("--min-time", "0.02", "--values", "3"))
    assert part_of(boot, JobNeeds()) is None  # its phases are its own boot's
    assert part_of(fio, JobNeeds(scratch=True)) is None  # a tool, a disk, derived samples
    assert part_of(getpid, JobNeeds(scratch=True)) is None


def test_a_round_boots_one_guest_for_every_plain_workload(build_plan, run_plan, store):
    made = []

    def create(spec):
        made.append(environments.create(spec))
        return made[-1]

    plan = build_plan([{"name": "vm", "kind": "fake", "full_system": True}],
                      [{"name": "getpid"}, {"name": "sched_yield"}, {"name": "fork_exit"},
                       {"name": "boot"}], repeat=3)
    campaign_id = run_plan(plan, create=create)
    runs = store.runs(campaign_id)
    assert len(runs) == 12 and all(run.status == Status.OK for run in runs)
    assert made[0].started == 3 + 3  # one shared guest per round, and boot alone
    shared = [run for run in runs if run.label != "boot"]
    assert len({run.log_path for run in shared}) == 3  # one folder per round
    samples = {}
    for sample in store.samples(campaign_id):
        samples.setdefault(sample.run_id, set()).add(sample.metric)
    assert all({"time_per_op", "tsc_per_op"} <= samples[run.id] for run in shared)


def test_process_kinds_keep_one_process_per_run(build_plan, run_plan, store):
    made = []

    def create(spec):
        made.append(environments.create(spec))
        return made[-1]

    plan = build_plan([{"name": "p", "kind": "fake"}],
                      [{"name": "getpid"}, {"name": "sched_yield"}], repeat=2)
    run_plan(plan, create=create)
    assert made[0].started == 4  # a process starts in milliseconds: one per run


def test_stream_runs_alone_in_a_shared_round(build_plan, run_plan, store):
    made = []

    def create(spec):
        made.append(environments.create(spec))
        return made[-1]

    plan = build_plan([{"name": "vm", "kind": "fake", "full_system": True}],
                      [{"name": "getpid"}, {"name": "sched_yield"},
                       {"name": "stream_triad", "array_mib": 16}], repeat=2)
    run_plan(plan, create=create)
    assert made[0].started == 2 + 2  # getpid and sched_yield share; STREAM's arrays alone


def test_a_plan_can_ask_for_one_environment_per_run(build_plan, run_plan):
    made = []

    def create(spec):
        made.append(environments.create(spec))
        return made[-1]

    plan = build_plan([{"name": "vm", "kind": "fake", "full_system": True}],
                      [{"name": "getpid"}, {"name": "sched_yield"}], repeat=2,
                      shared_rounds=False)
    run_plan(plan, create=create)
    assert made[0].started == 4



def test_a_workload_that_times_out_in_a_shared_guest_keeps_the_others_samples(
        build_plan, run_plan, store):
    """The fault run of 2026-11-25: the finished workloads of the round were stored as
    `timeout` with no samples, and the reason named 20 s where the run timeout was 10."""
    plan = build_plan([{"name": "vm", "kind": "fake", "full_system": True,
                        "behaviour": "hang_midway"}],
                      [{"name": "getpid"}, {"name": "sched_yield"}, {"name": "fork_exit"}],
                      repeat=1, timeout_s=0.2)
    campaign_id = run_plan(plan)
    runs = {run.label: run for run in store.runs(campaign_id)}
    order = [run.label for run in sorted(runs.values(), key=lambda run: run.id)]
    statuses = [runs[label].status for label in order]
    assert sorted(statuses) == [Status.OK, Status.OK, Status.TIMEOUT]
    hung = next(run for run in runs.values() if run.status == Status.TIMEOUT)
    assert "killed after the 0.6 s timeout of a guest shared by 3 workloads (the run " \
           "timeout, 0.2 s, for each)" in hung.reason
    kept = {sample.run_id for sample in store.samples(campaign_id)}
    assert kept == {run.id for run in runs.values() if run.status == Status.OK}
