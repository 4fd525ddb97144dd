"""Every environment preset probed on this host, as `guestbench envs` lists them."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from guestbench import environments
from guestbench.environments.base import Availability, EnvironmentSpec


@dataclass(frozen=True)
class Probed:
    preset: str
    spec: EnvironmentSpec
    answer: Availability
    probe_s: float

    @property
    def options(self) -> str:
        """The options the preset sets (the kind's defaults for the rest), as key=value."""
        chosen = environments.PRESETS.get(self.preset, self.spec.options())
        return ", ".join(f"{key}={','.join(value) if isinstance(value, tuple) else value}"
                         for key, value in chosen.items()
                         if key != "kind" and value not in (None, ()))


@contextlib.contextmanager
def started(host) -> Iterator[Callable[[], list[Probed]]]:
    """Every preset's probe, each started in a thread of its own as soon as its kind has
    loaded; the caller may do other work meanwhile, then call what this yields for the
    answers, in the presets' order. Each probe waits on programs of its own (a container
    in a bundle of its own, a translator's --version), so together they take about as
    long as the slowest (runsc's container) rather than the sum, and the full-system
    kinds load while the container probes run. An interrupt waits for the probes, each
    bounded by its own timeout, so that none leaves a container or a bundle behind."""
    with ThreadPoolExecutor(max_workers=len(environments.PRESETS),
                            thread_name_prefix="probe") as pool:
        pending = [pool.submit(probed, environments.preset_spec(name), host)
                   for name in environments.PRESETS]
        yield lambda: [one.result() for one in pending]


def presets(host) -> list[Probed]:
    """Each preset with its probe's answer, and what a kept KVM test boot found."""
    with started(host) as answers:
        return answers()


def probed(spec: EnvironmentSpec, host) -> Probed:
    """One preset's probe, timed."""
    began = time.monotonic()
    answer = with_kvm_test_boot(spec, environments.create(spec).probe(host))
    return Probed(spec.name, spec, answer, time.monotonic() - began)


def with_kvm_test_boot(spec: EnvironmentSpec, answer: Availability) -> Availability:
    """A QEMU guest under KVM: the probe only sees /dev/kvm, and only a test boot tells
    whether guests boot (a campaign makes one and keeps its answer until the host
    reboots); the kept answer, with its time and how to test again, if there is one."""
    if (spec.kind != "qemu" or spec.accel == "tcg" or spec.inside != "none"
            or not answer.available):
        return answer
    # loaded with the qemu kind (it reads the image cache's folder), after the container
    # probes have started
    from guestbench.environments.fullsystem import kvm  # deferred: reason above
    kept = kvm.remembered_for_vmm(spec.binary, spec.machine)
    if kept is None:
        return answer
    if spec.accel == "auto" and not kept.available:
        return Availability.yes(f"auto will choose tcg: {kept.reason}")
    return kept
