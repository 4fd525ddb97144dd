"""The VMM threads' host CPU: readings parsed, threads classed, the share over a window."""

import os
import threading
import time

import pytest

from guestbench.process import threads


def _stat(tid: int, name: str, session: int, utime: int, stime: int) -> str:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
    return (f"/proc/{tid}/task/{tid}/stat:{tid} ({name}) S 1 {session} {session} 0 -1 0 0 0 0 0 "
            f"{utime} {stime} 0 0 20 0 1 0 0 0 0")


def _reading(at_s: float, *lines: str) -> str:
    return "\n".join([f"/proc/uptime:{at_s} 99.0", *lines])


def test_schedstat_nanoseconds_win_over_ticks_and_the_session_picks_the_threads():
    text = _reading(10.0,
                    _stat(7, "CPU 0/KVM", 5, 100, 0), "/proc/7/task/7/schedstat:123456789 5 6",
                    _stat(8, "sh", 9, 3, 0))
    reading = threads.parse(text, session=5)
    assert reading.at_ns == 10_000_000_000
    assert reading.threads == {7: ("CPU 0/KVM", 123456789)}
    assert set(threads.parse(text).threads) == {7, 8}


def test_a_name_with_spaces_and_parentheses_is_read_whole():
    reading = threads.parse(_reading(1, _stat(3, "a) (b", 1, 2, 3)))
    assert reading.threads == {3: ("a) (b", 5 * threads.TICK_NS)}


def test_a_reading_without_its_clock_is_refused():
    with pytest.raises(threads.ReadingError, match="no clock line"):
        threads.parse(_stat(1, "x", 1, 0, 0))
    with pytest.raises(threads.ReadingError, match="no number"):
        threads.parse("/proc/uptime:soon")


@pytest.mark.parametrize("name, kind", [
    ("CPU 0/KVM", "vcpus"), ("CPU 3/TCG", "vcpus"), ("ALL CPUs/TCG", "vcpus"),
    ("fc_vcpu 0", "vcpus"), ("vcpu1", "vcpus"), ("kvm-vcpu-0", "vcpus"),
    ("IO iothread0", "io"), ("worker", "io"), ("_disk0_q0", "io"), ("virtio-blk-io", "io"),
    ("qemu-system-x86", "vmm"), ("firecracker", "vmm"), ("fc_api", "vmm"),
    ("cloud-hyperviso", "vmm"), ("http-server", "vmm"), ("socat", None), ("sh", None),
])
def test_threads_are_classed_by_name(name, kind):
    assert threads.classifier()(name) == kind


def test_the_share_of_each_class_over_the_window():
    before = threads.parse(_reading(1.0, _stat(1, "CPU 0/KVM", 1, 10, 0),
                                    _stat(2, "qemu-system-x86", 1, 0, 0)))
    after = threads.parse(_reading(3.0, _stat(1, "CPU 0/KVM", 1, 110, 50),
                                   _stat(2, "qemu-system-x86", 1, 10, 0),
                                   _stat(4, "worker", 1, 20, 0)))  # began in the window
    shares = threads.usage(before, after, threads.classifier())
    tick_s = threads.TICK_NS / 1e9
    assert shares["vcpus"] == pytest.approx(100 * 150 * tick_s / 2)
    assert shares["vmm"] == pytest.approx(100 * 10 * tick_s / 2)
    assert shares["io"] == pytest.approx(100 * 20 * tick_s / 2)
    assert threads.samples(shares)[0] == ("threads_cpu_vcpus", "%", shares["vcpus"])


def test_no_vmm_thread_or_no_time_gives_no_share():
    only_shell = threads.parse(_reading(1.0, _stat(1, "sh", 1, 0, 0)))
    later = threads.parse(_reading(2.0, _stat(1, "sh", 1, 90, 0)))
    assert threads.usage(only_shell, later, threads.classifier()) == {}
    vmm = threads.parse(_reading(2.0, _stat(2, "firecracker", 1, 1, 0)))
    assert threads.usage(vmm, vmm, threads.classifier()) == {}


def test_a_real_busy_thread_of_this_process_is_read_on_the_host():
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            pass
    worker = threading.Thread(target=spin, name="spinner")
    worker.start()
    try:
        before = threads.parse(threads.host_text(os.getpid()))
        time.sleep(0.3)
        after = threads.parse(threads.host_text(os.getpid()))
    finally:
        stop.set()
        worker.join()
    assert worker.native_id in after.threads
    each = {tid: ns for tid, _, _, ns in threads.used(before, after, lambda name: "vmm")}
    span = after.at_ns - before.at_ns
    # the spinning thread was on a CPU for a good part of the window (it shares the CPUs
    # with this test's other threads and whatever else runs), never more than all of it
    assert 0.2 * span < each[worker.native_id] <= 1.05 * span


def test_a_process_that_is_gone_gives_only_the_clock():
    reading = threads.parse(threads.host_text(2 ** 22 + 1))
    assert reading.threads == {} and reading.at_ns > 0


def test_a_vcpu_thread_gone_by_the_second_reading_gives_no_share():
    """Its time since the first reading went with it: a share without it would be wrong."""
    before = threads.parse(_reading(1.0, _stat(1, "fc_vcpu 0", 1, 10, 0),
                                    _stat(2, "firecracker", 1, 0, 0)))
    after = threads.parse(_reading(2.0, _stat(2, "firecracker", 1, 5, 0)))
    assert threads.vcpus_gone(before, after, threads.classifier()) == ["fc_vcpu 0"]
    assert threads.usage(before, after, threads.classifier()) == {}
