"""A KVM test boot's answer is kept for the rest of the host's boot, and not beyond it, nor
past a change of the VMM binary."""

from __future__ import annotations

import pytest

from guestbench.environments.fullsystem import kvm
from guestbench.environments.base import Availability


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GUESTBENCH_CACHE", str(tmp_path / "cache"))
    binary = tmp_path / "qemu-system-x86_64"
    binary.write_bytes(b"a VMM")
    return [str(binary), "image-id", "microvm"]


def test_an_answer_is_kept_for_the_rest_of_this_boot(cache):
    assert kvm.remembered(cache) is None
    kvm.remember(cache, Availability.no("a test guest did not boot"))
    kept = kvm.remembered(cache)
    assert kept is not None and not kept.available
    assert kept.reason.startswith("a test guest did not boot (a test boot at ")
    assert f"to test again: rm {kvm.remembered_file()}" in kept.reason
    assert kvm.remembered([cache[0], "another-image", "microvm"]) is None


def test_another_boot_or_another_binary_tests_again(cache, monkeypatch):
    kvm.remember(cache, Availability.yes("KVM test guest booted in 0.40 s"))
    assert kvm.remembered(cache).available
    with open(cache[0], "ab") as binary:  # an upgrade: size and time of change differ
        binary.write(b" 2")
    assert kvm.remembered(cache) is None
    kvm.remember(cache, Availability.yes("KVM test guest booted in 0.40 s"))
    monkeypatch.setattr(kvm, "_boot", lambda: "a later boot")
    assert kvm.remembered(cache) is None
    monkeypatch.setattr(kvm, "_boot", lambda: None)  # no boot id: nothing kept, nothing read
    kvm.remember(cache, Availability.no("hangs"))
    assert kvm.remembered(cache) is None


def test_a_damaged_memory_is_no_memory(cache):
    path = kvm.remembered_file()
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    assert kvm.remembered(cache) is None
    kvm.remember(cache, Availability.no("hangs"))  # replaces what it cannot read
    assert kvm.remembered(cache) is not None
