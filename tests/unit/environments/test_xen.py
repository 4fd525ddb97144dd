"""The xen kind before anything boots: its command line (Xen multiboot, dom0 and the image as
modules), the version read from the hypervisor's binary, what its spec refuses. It boots
for real in tests/integration/test_xen_real.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench import environments, images
from guestbench.environments.base import Capability
from guestbench.environments.kinds import xen


def test_the_version_comes_from_the_package_string_in_the_binary(tmp_path) -> None:
    binary = tmp_path / "xen"
    binary.write_bytes(b"\x7fELF junk 1.2 4.17\x00 Xen version %d.%d%s\x00"
                       b"4.17.7+13-g2445b30a44-0+deb12u1\x00 more")
    assert xen.xen_version(binary) == "4.17.7 (4.17.7+13-g2445b30a44-0+deb12u1)"
    plain = tmp_path / "plain"
    plain.write_bytes(b"\x00 4.19.1\x00")
    assert xen.xen_version(plain) == "4.19.1"
    assert xen.xen_version(tmp_path / "absent") is None


def test_commas_in_a_module_line_are_doubled() -> None:
    assert xen.multiboot_arg("gb.args=--min-time,0.1,getpid") == "gb.args=--min-time,,0.1,,getpid"


def test_the_command_line_boots_xen_with_dom0_and_the_image_as_modules(tmp_path) -> None:
    environment = environments.create(environments.preset_spec("xen-tcg"))
    environment.elf = Path("/cache/xen-4.17")
    environment.image = images.Image("id", Path("/boot/vmlinuz"), "6.1", Path("/cache/i.cpio"),
                                     (), (), None)
    argv = environment.command_line(["gb.args=--values,3,getpid"], tmp_path)
    assert argv[argv.index("-kernel") + 1] == "/cache/xen-4.17"
    assert argv[argv.index("-M") + 1] == "pc" and argv[argv.index("-cpu") + 1] == "max"
    xen_line = argv[argv.index("-append") + 1].split()
    assert {"console=com2", "smap=0", "dom0_mem=512M,max:512M"} <= set(xen_line)
    dom0, initramfs = argv[argv.index("-initrd") + 1].rsplit(",", 1)
    assert initramfs == "/cache/i.cpio"
    assert dom0.startswith("/boot/vmlinuz ") and "console=ttyS0" in dom0
    assert "gb.args=--values,,3,,getpid" in dom0 and "gb.shutdown=reboot" in dom0
    assert f"file:{tmp_path / xen.XEN_LOG}" in argv  # Xen's own console, kept with the logs
    assert int(argv[argv.index("-m") + 1]) == 512 + xen.XEN_OVERHEAD_MIB


@pytest.mark.parametrize("options, said", [
    ({"machine": "microvm"}, "machine"),
    ({"inside": "tcg"}, "emulation inside emulation"),
    ({"xen_args": ["smap=0 dom0_mem=1G"]}, "xen_args"),
])
def test_what_xen_cannot_be_given_is_refused(options, said) -> None:
    with pytest.raises(ValidationError, match=said):
        xen.XenSpec(name="x", kind="xen", **options)


def test_what_was_not_verified_in_dom0_is_refused_as_such() -> None:
    environment = environments.create(environments.preset_spec("xen-tcg"))
    assert "not been verified here yet" in environment.refusal(frozenset({Capability.NETWORK}))
    assert environment.refusal(frozenset({Capability.GUEST_KERNEL, Capability.TSC})) is None


def test_a_host_without_xen_makes_it_unavailable_with_the_fix(monkeypatch, host) -> None:
    monkeypatch.setattr(xen, "HYPERVISORS", "/nonexistent/xen-*.gz")
    environment = environments.create(environments.preset_spec("xen-tcg"))
    answer = environment.probe(host)
    assert not answer.available and "apt-get install xen-hypervisor" in answer.reason
