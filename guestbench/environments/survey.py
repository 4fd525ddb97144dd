"""Every environment preset probed on this host, as `guestbench envs` lists them."""

from __future__ import annotations

import time
from dataclasses import dataclass

from guestbench import environments
from guestbench.environments import kvm
from guestbench.environments.base import Availability, EnvironmentSpec


@dataclass(frozen=True)
class Probed:
    preset: str
    spec: EnvironmentSpec
    answer: Availability
    probe_s: float

    @property
    def options(self) -> str:
        """The preset's options that are set, as key=value."""
        return ", ".join(f"{key}={','.join(value) if isinstance(value, tuple) else value}"
                         for key, value in self.spec.options().items()
                         if value not in (None, ()))


def presets(host) -> list[Probed]:
    """Each preset with its probe's answer, and what a kept KVM test boot found."""
    found = []
    for name in environments.PRESETS:
        spec = environments.preset_spec(name)
        began = time.monotonic()
        answer = with_kvm_test_boot(spec, environments.create(spec).probe(host))
        found.append(Probed(name, spec, answer, time.monotonic() - began))
    return found


def with_kvm_test_boot(spec: EnvironmentSpec, answer: Availability) -> Availability:
    """A QEMU guest under KVM: the probe only sees /dev/kvm, and only a test boot tells
    whether guests boot (a campaign makes one and keeps its answer until the host
    reboots); the kept answer, with its time and how to test again, if there is one."""
    if spec.kind != "qemu" or spec.accel == "tcg" or not answer.available:
        return answer
    kept = kvm.remembered_for_vmm(spec.binary, spec.machine)
    if kept is None:
        return answer
    if spec.accel == "auto" and not kept.available:
        return Availability.yes(f"auto will choose tcg: {kept.reason}")
    return kept
