"""Whether KVM can run a guest here: /dev/kvm usable, and a test guest that really boots."""

from __future__ import annotations

import os

from guestbench import proc
from guestbench.environments.base import Availability

# A KVM guest of guestbench's image reaches its agent in well under a second where KVM
# works; where /dev/kvm exists but guests hang (nested PVM hosts), we give up here.
KVM_PROBE_S = 8.0


def device() -> Availability:
    """Whether /dev/kvm is there and usable by this user (a file check; no guest)."""
    if not os.path.exists("/dev/kvm"):
        return Availability.no("no /dev/kvm (not a KVM host, or the kvm module is not loaded)")
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return Availability.no("/dev/kvm is not readable and writable (fix: join group kvm)")
    return Availability.yes("/dev/kvm")


def boots(argv: list[str]) -> Availability:
    """Whether argv (a VMM booting the image with gb.args=--version) reaches the agent."""
    try:
        result = proc.run(argv, timeout_s=KVM_PROBE_S)
    except proc.DeadlineExceeded:
        return Availability.no(f"/dev/kvm exists but a test guest did not boot under KVM within "
                               f"{KVM_PROBE_S:g} s (nested or paravirtual host?)")
    except proc.ProcessError as error:
        return Availability.no(str(error))
    if "agent exited with status 0" in result.stdout:
        return Availability.yes(f"KVM test guest booted in {result.seconds:.2f} s")
    said = (result.stderr.strip() or result.stdout.strip()).splitlines()[-1:] or ["no output"]
    return Availability.no(f"a test guest failed under KVM: {said[0][:200]}")
