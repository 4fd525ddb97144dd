"""A full-system guest's failure reads from its cause: the reason of a run whose guest crashed
starts with the fault the console told of and the line before it, not with the boot banner;
the whole console stays in the run's log. Consoles of UML, QEMU and Xen, played by scripted
child processes (no VMM)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from guestbench.environments.fullsystem.console import ConsoleGuest
from guestbench.process import proc
from guestbench.protocol import encode
from guestbench.runner import Status
from guestbench.runner.outcomes import watch

BANNER = [
    "Linux version 6.1.176 (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) "
    "12.2.0, GNU ld (GNU Binutils for Debian) 2.40) #1 SMP PREEMPT_DYNAMIC Debian 6.1.176-1",
    "Zone ranges:",
    "  Normal   [mem 0x0000000000000000-0x0000000063ffffff]",
    "Kernel command line: mem=512M root=/dev/root rootflags=/ quiet panic=-1 con=null "
    "con0=fd:0,fd:1 console=tty0",
    "Calibrating delay loop... 6325.04 BogoMIPS (lpj=31625216)",
    "SELinux:  Initializing.",
    "Checking that host ptys support output SIGIO...Yes",
    "devtmpfs: initialized",
    "SELinux:  Registering netfilter hooks",
    "Freeing unused kernel image (initmem) memory: 1108K",
    "guestbench-init: userspace",
]
UML_CAUSE = "userspace - ptrace set fp regs failed, errno = 14"
UML_PANIC = "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b"
UML_AFTER = [
    "CPU: 0 PID: 1 Comm: init Not tainted 6.1.176 #1",
    "Stack:",
    " 60475b52 6083e1e0 00000001 6064f0a6",
    "Call Trace:",
    " [<600b1b5e>] ? do_exit+0x0/0xb10",
    " [<6004b2f5>] panic+0x16d/0x3b8",
    "---[ end Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b ]---",
]


def console_script(before: list[str], after: list[str], end: str = "time.sleep(30)") -> str:
    """A child that prints the lines before, and after a short pause (a serial line's pace)
    the lines after, then ends as end says."""
    return "\n".join([
        "import os, sys, time",
        *(f"print({text!r}, flush=True)" for text in before),
        "time.sleep(0.05)",
        *(f"print({text!r}, flush=True)" for text in after),
        end])


def crashed(tmp_path: Path, script: str):
    guest = ConsoleGuest([sys.executable, "-c", textwrap.dedent(script)], tmp_path / "logs",
                         proc.now_ns() + int(30e9), boot_timeout_s=30)
    with guest:
        outcome = watch(guest, 30, "getpid")
    return outcome, (tmp_path / "logs" / "stdout.log").read_text()


def test_a_uml_panic_reads_from_its_cause_and_the_whole_console_is_logged(tmp_path):
    outcome, log = crashed(tmp_path, console_script(
        [*BANNER, UML_CAUSE, UML_PANIC], UML_AFTER, "os.abort()"))  # UML dumps core
    assert outcome.status == Status.CRASHED, outcome.reason
    assert outcome.reason.startswith(f"{UML_CAUSE} | {UML_PANIC} | {UML_AFTER[0]}"), \
        outcome.reason
    assert "SELinux" not in outcome.reason
    for text in [*BANNER, UML_CAUSE, UML_PANIC, *UML_AFTER]:
        assert text in log


def test_a_qemu_guest_s_oops_then_panic_reads_from_the_bug(tmp_path):
    before = ["SeaBIOS (version 1.16.2-debian-1.16.2-1)", "Booting from ROM..",
              *(f"[    0.000000] {text}" for text in BANNER[:-1]),
              "guestbench-init: userspace",
              "[    1.204511] gbagent[61]: segfault at 0 ip 0000000000401a2b sp 00007ffd error 4",
              "[    1.210032] BUG: kernel NULL pointer dereference, address: 0000000000000008",
              "[    1.210220] #PF: supervisor read access in kernel mode",
              "[    1.210361] Oops: 0000 [#1] PREEMPT SMP NOPTI",
              "[    1.210502] CPU: 0 PID: 61 Comm: gbagent Not tainted 6.1.0-18-amd64 #1",
              "[    1.210700] Call Trace:",
              "[    1.211000]  <TASK>",
              "[    1.212345] Kernel panic - not syncing: Fatal exception"]
    outcome, log = crashed(tmp_path, console_script(
        before, ["[    1.212400] Kernel Offset: disabled"], "sys.exit(0)"))  # -no-reboot
    assert outcome.status == Status.CRASHED, outcome.reason
    assert outcome.reason.startswith(
        f"{before[-8]} | {before[-7]} | {before[-6]} | ... | {before[-1]}"), outcome.reason
    assert "Kernel Offset: disabled" in outcome.reason and "SeaBIOS" not in outcome.reason
    assert "Kernel Offset: disabled" in log and "SeaBIOS" in log


def test_a_qemu_guest_that_cannot_mount_its_root_reads_from_the_panic(tmp_path):
    before = ["SeaBIOS (version 1.16.2-debian-1.16.2-1)",
              "[    0.000000] Linux version 6.1.0-18-amd64",
              "[    0.000000] Command line: console=ttyS0 quiet panic=-1 reboot=t",
              "[    0.912400] List of all partitions:",
              "[    0.912450] No filesystem could mount root, tried:",
              "[    0.912500] Kernel panic - not syncing: VFS: Unable to mount root fs on "
              "unknown-block(0,0)"]
    outcome, _ = crashed(tmp_path, console_script(
        before, ["[    0.912600] CPU: 0 PID: 1 Comm: swapper/0 Not tainted 6.1.0-18-amd64 #1"]))
    assert outcome.status == Status.CRASHED
    assert outcome.reason.startswith(f"{before[-2]} | {before[-1]} | [    0.912600] CPU: 0"), \
        outcome.reason


def test_xen_s_panic_is_a_crash_that_reads_from_its_message(tmp_path):
    before = ["(XEN) Xen version 4.17.3 (Debian 4.17.3+10-g091466ba55-1)",
              "(XEN) Xen call trace:",
              "(XEN)    [<ffff82d040243d2e>] R do_page_fault+0x3ae/0x5d0",
              "(XEN) ",
              "(XEN) ****************************************",
              "(XEN) Panic on CPU 0:"]
    after = ["(XEN) FATAL PAGE FAULT", "(XEN) [error_code=0000]",
             "(XEN) ****************************************", "(XEN) Reboot in five seconds..."]
    outcome, _ = crashed(tmp_path, console_script(before, after))
    assert outcome.status == Status.CRASHED
    assert outcome.reason.startswith(
        f"{before[2]} | ... | (XEN) Panic on CPU 0: | (XEN) FATAL PAGE FAULT"), outcome.reason


def test_a_fault_that_did_not_end_the_guest_leads_the_console_in_another_reason(tmp_path):
    """An Oops that killed the agent, not the kernel: the run fails as its records stopped,
    and the console it quotes starts from the Oops."""
    hello = encode(0, {"type": "hello", "t_ns": 0, "protocol": 1}).decode()
    outcome, _ = crashed(tmp_path, console_script(
        [*BANNER, hello, "[    2.000000] general protection fault, probably for "
                         "non-canonical address 0xdead000000000100: 0000 [#1] SMP"],
        ["[    2.000100] CPU: 0 PID: 61 Comm: gbagent", "guestbench-init: powering off"],
        "sys.exit(0)"))
    assert outcome.status == Status.FAILED, outcome.reason
    assert ("console: guestbench-init: userspace | [    2.000000] general protection fault"
            in outcome.reason), outcome.reason
    assert outcome.reason.index("general protection") < outcome.reason.index("powering off")


def test_the_fault_is_shown_once_with_what_is_left_out_marked():
    from guestbench.environments.fullsystem.console import Faults, joined

    faults = Faults()
    lines = list(enumerate(["booting", "BUG: unable to handle page fault", "#PF: oops",
                            "Call Trace:", "Kernel panic - not syncing: Fatal exception",
                            "---[ end Kernel panic - not syncing: Fatal exception ]---"], 1))
    assert [faults.see(line) for line in lines] == [False, False, False, False, True, True]
    assert joined(faults.shown) == ("booting | BUG: unable to handle page fault | #PF: oops | "
                                    "... | Kernel panic - not syncing: Fatal exception")
