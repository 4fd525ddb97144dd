"""The VMM threads' CPU over each agent workload's window: opened by its workload record,
closed by the next one or the agent's end, read off the record loop's thread."""

import threading

from guestbench.process import threads
from guestbench.protocol import Record
from guestbench.runner import thread_cpu
from guestbench.runner.outcomes import Outcome, Status


class Clockwork:
    """Readings whose clock advances a second each, the vCPU thread busy half of it."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.count = 0
        self.fail_at = fail_at
        self.threads: set[str] = set()

    def __call__(self):
        self.count += 1
        self.threads.add(threading.current_thread().name)
        if self.count == self.fail_at:
            raise OSError("the L1 machine is gone")
        ns = self.count * 500_000_000
        return (f"/proc/uptime:{self.count}.0 0\n"
                f"/proc/9/task/9/stat:9 (fc_vcpu 0) S 1 4 4 0 -1 0 0 0 0 0 0 0 0 0\n"
                f"/proc/9/task/9/schedstat:{ns} 0 0\n"
                f"/proc/8/task/8/stat:8 (firecracker) S 1 4 4 0 -1 0 0 0 0 0 0 0 0 0\n"
                f"/proc/8/task/8/schedstat:{self.count * 10_000_000} 0 0\n"
                f"/proc/7/task/7/stat:7 (socat) S 1 4 4 0 -1 0 0 0 0 0 0 0 0 0\n"
                f"/proc/7/task/7/schedstat:{ns * 2} 0 0"), 4


def _records(*names):
    out = [Record(0, "hello", {"type": "hello"})]
    out += [Record(i + 1, "workload", {"type": "workload", "workload": name})
            for i, name in enumerate(names)]
    return out + [Record(len(out), "end", {"type": "end", "status": "ok"})]


def test_each_workload_gets_its_own_window_read_off_the_record_thread(tmp_path):
    read = Clockwork()
    watch = thread_cpu.ThreadWatch(read, threads.classifier(), tmp_path / "vmm-threads.txt")
    for record in _records("getpid", "stream"):
        watch.on_record(record)
    by_workload = watch.finish()
    assert read.count == 3  # getpid's start, stream's start, the end
    assert set(by_workload) == {"getpid", "stream"}
    assert dict((m, v) for m, _, v in by_workload["getpid"]) == {
        "threads_cpu_vcpus": 50.0, "threads_cpu_vmm": 1.0, "threads_cpu_io": 0.0}
    assert read.threads == {"guestbench-thread-cpu"}
    log = (tmp_path / "vmm-threads.txt").read_text()
    assert "getpid: 1000.0 ms" in log and "fc_vcpu 0" in log and "socat" not in log


def test_a_failed_reading_loses_only_the_windows_it_bounds(tmp_path):
    watch = thread_cpu.ThreadWatch(Clockwork(fail_at=2), threads.classifier(),
                                   tmp_path / "vmm-threads.txt")
    for record in _records("getpid", "stream", "cpuid"):
        watch.on_record(record)
    by_workload = watch.finish()
    assert set(by_workload) == {"cpuid"}  # the second reading bounded getpid and stream
    assert "the L1 machine is gone" in (tmp_path / "vmm-threads.txt").read_text()


def test_only_an_ok_outcome_gets_the_figures():
    figures = {"getpid": [("threads_cpu_vcpus", "%", 50.0)]}
    ok, failed = Outcome(Status.OK), Outcome(Status.FAILED, "no")
    thread_cpu.add(ok, figures, "getpid")
    thread_cpu.add(failed, figures, "getpid")
    thread_cpu.add(ok, figures, "stream")  # no window closed for it
    assert ok.samples == [("threads_cpu_vcpus", "%", 50.0)] and failed.samples == []


def test_the_runner_adds_each_workload_s_figures_alone_and_in_a_shared_guest(
        build_plan, run_plan, store):
    """The fake kind reads guestbench's own threads as its VMM's: every ok run of an agent
    workload has the three figures, whether it ran alone (boot is never shared) or in the
    round's shared guest; a run that times the instance's own life (start) has none."""
    plan = build_plan([{"name": "vm", "kind": "fake", "full_system": True,
                        "vmm_threads": True}],
                      [{"name": "getpid"}, {"name": "sched_yield"}, {"name": "boot"},
                       {"name": "start"}], repeat=1)
    campaign_id = run_plan(plan)
    runs = {run.id: run for run in store.runs(campaign_id)}
    metrics: dict[str, set] = {run.label: set() for run in runs.values()}
    for sample in store.samples(campaign_id):
        metrics[runs[sample.run_id].label].add(sample.metric)
    assert all(run.status == Status.OK for run in runs.values()), runs
    figures = {"threads_cpu_vcpus", "threads_cpu_vmm", "threads_cpu_io"}
    for label in ("getpid", "sched_yield"):
        assert figures <= metrics[label], (label, metrics[label])
    assert not figures & metrics["start"]


def test_a_shared_guest_killed_midway_ends_its_watch(build_plan, run_plan, store):
    plan = build_plan([{"name": "vm", "kind": "fake", "full_system": True,
                        "behaviour": "hang_midway", "vmm_threads": True}],
                      [{"name": "getpid"}, {"name": "sched_yield"}], repeat=1, timeout_s=0.2)
    before = {thread.name for thread in threading.enumerate()}
    run_plan(plan)
    assert "guestbench-thread-cpu" not in {thread.name for thread in threading.enumerate()} - before
