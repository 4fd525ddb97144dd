"""What a pool worker runs by default, and what needs its operator's --allow."""

from __future__ import annotations

from guestbench.pool import policy

EXEC = {"name": "exec", "label": "touch", "argv": ["touch", "/tmp/x"],
        "metrics": [{"name": "t", "regex": "(?P<value>[0-9]+)", "unit": "s", "better": "lower"}]}


def test_built_in_kinds_and_workloads_need_nothing(build_plan) -> None:
    plan = build_plan([{"preset": "native"}, {"preset": "runc"}, {"preset": "qemu-tcg"},
                       {"preset": "uml"}], [{"name": "getpid"}, {"name": "stream"}])
    assert policy.needs(plan) == {}
    assert policy.refusal(plan, []) is None


def test_command_exec_and_own_programs_each_need_leave(build_plan) -> None:
    plan = build_plan(
        [{"name": "vmm", "kind": "command", "argv": ["/usr/bin/true", "{cmdline}", "{initrd}"]},
         {"name": "own-qemu", "kind": "qemu", "binary": "/opt/qemu/bin/qemu-system-x86_64"},
         {"name": "own-kernel", "kind": "qemu", "kernel": "/boot/vmlinuz-test"}],
        [{"name": "getpid"}, EXEC])
    assert policy.needs(plan) == {
        "command": ["environment vmm"],
        "binary": ["environment own-qemu: binary = '/opt/qemu/bin/qemu-system-x86_64'",
                   "environment own-kernel: kernel = '/boot/vmlinuz-test'"],
        "exec": ["workload touch"]}
    refused = policy.refusal(plan, ["command"])
    assert refused.startswith("this worker is not allowed to run binary (environment own-qemu")
    assert "; exec (workload touch)" in refused
    assert "fix: its operator starts it with --allow binary,exec" in refused
    assert policy.refusal(plan, ["command", "exec", "binary"]) is None


def test_worker_log_lines_carry_the_cause_in_one_line_and_no_traceback():
    import logging

    from guestbench.pool.worker import _OneLine

    try:
        try:
            raise OSError("connection to server failed:\n\tIs the server running?")
        except OSError as cause:
            raise RuntimeError("\n    Database error.\n    ") from cause
    except RuntimeError:
        import sys
        record = logging.LogRecord("procrastinate.utils", logging.WARNING, __file__, 1,
                                   "listener error: %r", (sys.exc_info()[1],), sys.exc_info())
    assert _OneLine().filter(record)
    text = logging.Formatter("%(message)s").format(record)
    assert "\n" not in text and "Traceback" not in text
    assert text.startswith("listener error: RuntimeError(")
    assert text.endswith(": connection to server failed:")
