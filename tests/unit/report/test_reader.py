"""A published footnote in a reader's words: one line, the decisive console line of a crash,
no banner, URL or host path, and a device's name kept whole."""

from __future__ import annotations

from guestbench.report.reader import said

UML_CRASH = ("userspace - ptrace set fp regs failed, errno = 14 | Kernel panic - not syncing: "
             "Attempted to kill init! exitcode=0x0000000b | CPU: 0 PID: 1 Comm: init | ---[ end "
             "Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b ]---")


def test_a_crash_is_its_panic_line_and_the_error_before_it():
    assert said("crashed", UML_CRASH) == (
        "crashed: Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b, "
        "after: userspace - ptrace set fp regs failed, errno = 14")


def test_banners_urls_and_kernel_times_go_and_the_error_stays():
    reason = ("[    0.000000] SELinux:  Initializing. | [    0.1] Please report it at "
              "https://bugs.debian.org/linux | [    2.5] mount: cannot mount /dev/vda on "
              "/mnt/scratch: No such device | [    2.6] reboot: Power down")
    assert said("failed", reason) == (
        "failed: mount: cannot mount /dev/vda on scratch: No such device")


def test_a_device_keeps_its_name_and_an_instruction_goes():
    assert said("unavailable", "/dev/kvm exists but a test guest did not boot under KVM within "
                               "8 s (to test again: rm /root/.cache/guestbench/kvm.json)") == (
        "not run here: /dev/kvm exists but a test guest did not boot under KVM within 8 s")


def test_a_reason_of_one_line_is_kept_whole():
    assert said("timeout", "killed after the 0.085 s run timeout") == (
        "timed out: killed after the 0.085 s run timeout")


def test_an_assertion_says_what_failed_without_where_in_the_source():
    """QEMU's failed assertion, as the KVM check recorded it on 2026-11-29."""
    assert said("unavailable", "a test guest failed under KVM: qemu-system-x86_64: "
                               "../../target/i386/kvm/kvm.c:3183: kvm_buf_set_msrs: Assertion "
                               "`ret == cpu->kvm_msr_buf->nmsrs' failed.") == (
        "not run here: a test guest failed under KVM: qemu-system-x86_64: kvm_buf_set_msrs: "
        "Assertion `ret == cpu->kvm_msr_buf->nmsrs' failed")
