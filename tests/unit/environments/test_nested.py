"""What `inside` accepts and refuses, before any L1 machine boots: the plan's errors, the
probe's answers on a host that cannot nest, and the runs a VMM inside a VM cannot have.
The L1 machine itself runs in tests/integration/test_nested_real.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from guestbench import environments, workloads
from guestbench.environments.base import Capability, JobNeeds, Upload
from guestbench.environments.fullsystem import nested
from guestbench.host import Host
from guestbench.plan.build import load
from guestbench.plan.errors import PlanError

WORKLOAD = '[[workload]]\nname = "getpid"\n'


@pytest.mark.parametrize("kind", ["native", "namespace", "oci", "qemu-user"])
def test_inside_on_a_kind_that_cannot_nest_names_the_field(write_plan, host: Host,
                                                           kind: str) -> None:
    path = write_plan(f'[[environment]]\nname = "x"\nkind = "{kind}"\ninside = "tcg"\n'
                      + WORKLOAD)
    with pytest.raises(PlanError) as caught:
        load(path, host)
    message = str(caught.value)
    assert message.startswith(f"{path}: environment[0].inside: "), message
    assert "full-system kinds (qemu, uml, command)" in message


@pytest.mark.parametrize("body, said", [
    ('kind = "qemu"\ninside = "tcg"\nplacement = "same"', "placement same pins"),
    ('kind = "qemu"\ninside = "virtualbox"', "environment[0].inside"),
    ('kind = "command"\ninside = "tcg"\nconsole = "file"\nargv = ["vmm", "{initrd}", '
     '"{cmdline}"]', "console must be its stdout"),
])
def test_inside_with_options_that_cannot_follow_it_is_refused(write_plan, host: Host,
                                                              body: str, said: str) -> None:
    path = write_plan(f'[[environment]]\nname = "x"\n{body}\n' + WORKLOAD)
    with pytest.raises(PlanError, match=re.escape(said)):
        load(path, host)


def nested_qemu(**options) -> environments.Environment:
    spec = environments.spec_model("qemu")(name="q", kind="qemu", accel="kvm", inside="tcg",
                                           **options)
    return environments.create(spec)


def test_runs_that_need_the_host_side_of_a_guest_are_unsupported_with_the_reason() -> None:
    environment = nested_qemu()
    upload = JobNeeds(upload=Upload("virtio-serial", Path("/etc/hostname")))
    assert "host sockets and pipes" in environment.refusal(frozenset(), upload)
    assert "traced disk" in environment.refusal(frozenset(), JobNeeds(traced_disk=True))
    for name, reason in (("footprint", "L1 machine's"), ("density", "L1 machine's"),
                         ("net_rr", "host's peer")):
        assert reason in environment.refusal(workloads.CATALOGUE[name].requires), name
    # what does follow it: the agent, a scratch disk, the VM-exit instructions, boot phases
    assert environment.refusal(workloads.CATALOGUE["cpuid"].requires, JobNeeds(scratch=True)) is None
    assert environment.refusal(frozenset({Capability.GUEST_KERNEL, Capability.PORT_IO})) is None


def test_the_same_workloads_run_on_the_host_as_before() -> None:
    environment = environments.create(environments.preset_spec("qemu-kvm"))
    assert environment.refusal(workloads.CATALOGUE["footprint"].requires) is None
    assert environment.inside is None


def test_inside_kvm_needs_the_hosts_kvm_with_nesting_on(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(nested.os, "access", lambda path, mode: False)
    assert "needs the host's /dev/kvm" in nested._host_nesting().reason
    monkeypatch.setattr(nested.os, "access", lambda path, mode: True)
    off = tmp_path / "nested"
    off.write_text("N\n")
    monkeypatch.setattr(nested, "KVM_NESTED", {"intel": off})
    answer = nested._host_nesting()
    assert not answer.available
    assert "kvm_intel, which is off" in answer.reason and "nested=1" in answer.reason
    off.write_text("Y\n")
    assert nested._host_nesting().available


def test_a_kernel_without_kvm_modules_cannot_be_the_l1_machines(monkeypatch, tmp_path) -> None:
    kernel = tmp_path / "vmlinuz-9.9.9-test"
    kernel.write_bytes(b"")
    monkeypatch.setattr(nested.images, "default_kernel", lambda: kernel)
    monkeypatch.setattr(nested.images, "kernel_version", lambda path: "9.9.9-test")
    monkeypatch.setattr(nested, "which", lambda name: "/usr/bin/" + name)
    answer = nested.probe("tcg")
    assert not answer.available and "has no kvm_amd or kvm_intel module" in answer.reason


def test_one_l1_machine_serves_every_environment_of_its_shape(monkeypatch) -> None:
    booted = []
    monkeypatch.setattr(nested.Machine, "boot", lambda machine: booted.append(machine))
    monkeypatch.setattr(nested.Machine, "alive", property(lambda machine: True))
    stopped = []
    monkeypatch.setattr(nested.Machine, "stop", lambda machine: stopped.append(machine))
    shape = nested.Shape("tcg", 1536, 1)
    first, second = nested.acquire(shape), nested.acquire(shape)
    other = nested.acquire(nested.Shape("tcg", 2048, 1))
    assert first is second and other is not first and len(booted) == 2
    nested.release(first)
    assert not stopped
    nested.release(second)
    nested.release(other)
    assert stopped == [first, other]
