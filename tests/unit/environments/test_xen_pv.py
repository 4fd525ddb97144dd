"""The xen-pv kind before anything boots: the domU's config and the script that starts it in
dom0, dom0's own command line and toolstack script, what the spec refuses and what a PV
domU lacks. It boots for real in tests/integration/test_xen_pv_real.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from guestbench import environments, images
from guestbench.environments.base import Capability, GuestStartError
from guestbench.environments.fullsystem import dom0, nested
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.kinds import xen_pv
from guestbench.report.tables import platform

IMAGE = images.Image("id", Path("/boot/vmlinuz-6.1"), "6.1", Path("/cache/i.cpio"), (), (), None)


def domu(**options) -> xen_pv.XenPv:
    spec = environments.preset_spec("xen-pv-tcg")
    environment = environments.create(spec.model_copy(update=options) if options else spec)
    environment.image = IMAGE
    return environment


def config(workdir: Path) -> dict[str, str]:
    pairs = (line.split(" = ", 1) for line in (workdir / xen_pv.CONFIG).read_text().splitlines())
    return {key: value for key, value in pairs}


def test_the_domu_s_config_carries_the_image_the_plan_s_sizes_and_the_job(tmp_path) -> None:
    workdir = tmp_path / "run-abc"
    workdir.mkdir()
    environment = domu(memory_mib=384, vcpus=2, kernel_args=("loglevel=4",))
    argv = environment.command_line(["gb.args=--values,3,getpid"], workdir, GuestDevices())
    assert argv == ["/bin/sh", str(workdir / xen_pv.SCRIPT)]
    said = config(workdir)
    assert said["name"] == '"gb-run-abc"' and said["type"] == '"pv"'
    assert said["kernel"] == '"/boot/vmlinuz-6.1"' and said["ramdisk"] == '"/cache/i.cpio"'
    assert said["memory"] == "384" and said["vcpus"] == "2"
    extra = said["extra"].strip('"').split()
    assert extra[0] == "console=hvc0" and extra[-2:] == ["loglevel=4",
                                                        "gb.args=--values,3,getpid"]
    # a domU that powers off, reboots or crashes is gone, and `xl create -c` returns
    assert {said[key] for key in ("on_poweroff", "on_reboot", "on_crash")} == {'"destroy"'}
    assert said["tsc_mode"] == '"native"'


def test_the_script_ends_the_domus_a_run_before_left_then_becomes_xl(tmp_path) -> None:
    """A run cut short by its timeout leaves its domain running in Xen: the next run's
    script destroys it first; the plan's extra_args are xl's KEY=VALUE config lines."""
    environment = domu(extra_args=("cpu_weight=512",))
    argv = environment.command_line([], tmp_path, GuestDevices())
    assert argv[-1] == "cpu_weight=512"
    script = (tmp_path / xen_pv.SCRIPT).read_text().splitlines()
    destroy = next(i for i, line in enumerate(script) if " destroy " in line)
    assert " list " in script[0] and destroy < len(script) - 1
    assert script[-1].startswith("exec ") and script[-1].endswith(
        f"xl create -c {tmp_path / xen_pv.CONFIG} \"$@\"")


@pytest.mark.parametrize("options, said", [
    ({"inside": "tcg"}, "always runs in its dom0"),
    ({"memory_mib": 16}, "memory_mib"),
    ({"vcpus": 0}, "vcpus"),
    ({"tsc_mode": "magic"}, "tsc_mode"),
])
def test_what_a_pv_domu_cannot_be_given_is_refused(options, said) -> None:
    with pytest.raises(ValidationError, match=said):
        xen_pv.XenPvSpec(name="x", kind="xen-pv", **options)


def test_what_a_pv_domu_lacks_is_refused_with_the_reason() -> None:
    environment = domu()
    assert "not driven by guestbench yet" in environment.refusal(frozenset({Capability.NETWORK}))
    assert "I/O ports" in environment.refusal(frozenset({Capability.PORT_IO}))
    # footprint reads the machine's QEMU, which holds Xen, dom0 and the domU; its facts say so
    assert environment.refusal(frozenset({Capability.HOST_PROCESSES})) is None
    environment.machine = SimpleNamespace(shape=nested.Shape("tcg", 1536, 1, xen="x"),
                                          facts=dict)
    assert environment.facts()["footprint_counts"] == (
        "the Xen machine's QEMU process, which holds the instance: the Xen machine's memory "
        "as touched (Xen, dom0 with its kernel, page cache and toolstack, and the domU) and "
        "QEMU's own; beyond guest RAM is QEMU's own, outside the Xen machine's 1536 MiB")
    usage = environment.guest_ram()  # the machine's RAM block is what footprint reads
    assert usage(1536 * 1024, "") and not usage(512 * 1024, "")
    assert environment.refusal(frozenset({Capability.GUEST_KERNEL, Capability.TSC})) is None
    assert "one inner guest at a time" in environment.one_at_a_time()


def test_its_figures_are_functional_and_say_what_ran_them() -> None:
    environment = domu()
    environment.xen_version = "4.17.7"
    facts = environment.facts()
    assert facts["vmm_version"] == "Xen 4.17.7" and "PV domU" in facts["functional"]
    env = SimpleNamespace(facts=facts, spec={"kind": "xen-pv", "accel": "tcg"}, kind="xen-pv")
    assert platform.accelerator(env) == "Xen PV on TCG (QEMU's emulation)"


def test_dom0_boots_xen_with_the_l1_image_and_its_devices_on_pci(tmp_path) -> None:
    shape = nested.Shape("tcg", 256 + dom0.DOM0_MIB + dom0.XEN_OVERHEAD_MIB, 1,
                         xen="/cache/xen.elf", xen_args=("smap=0",))
    machine = SimpleNamespace(shape=shape, folder=tmp_path / "work,1", logs=tmp_path / "logs")
    argv = dom0.command_line(machine, IMAGE, tmp_path / "ctl.sock", "qemu-system-x86_64")
    assert argv[argv.index("-kernel") + 1] == "/cache/xen.elf"
    assert argv[argv.index("-M") + 1] == "pc" and argv[argv.index("-cpu") + 1] == "max"
    assert {"console=com2", "smap=0", f"dom0_mem={dom0.DOM0_MIB}M,max:{dom0.DOM0_MIB}M"} <= set(
        argv[argv.index("-append") + 1].split())
    dom0_line, initramfs = argv[argv.index("-initrd") + 1].rsplit(",", 1)
    assert initramfs == "/cache/i.cpio"
    # the shared folder's comma doubled: one word of multiboot's module list
    assert dom0_line.startswith("/boot/vmlinuz-6.1 ") and f"gb.work={tmp_path}/work,,1" in dom0_line
    devices = [argv[i + 1].split(",")[0] for i, arg in enumerate(argv) if arg == "-device"]
    assert devices == ["virtio-9p-pci", "virtio-9p-pci", "virtio-serial-pci", "virtserialport"]
    assert f"file:{tmp_path / 'logs' / dom0.XEN_LOG}" in argv


def test_dom0_s_toolstack_script_starts_each_daemon_and_names_the_step_that_failed() -> None:
    script = dom0.toolstack(Path("/usr/lib/xen-4.17/bin"))
    assert script.startswith("export PATH=/usr/lib/xen-4.17/bin:")
    steps = ["mount -t tmpfs", "modprobe -a xen-privcmd", "mount -t xenfs", "xenstored ",
             "xenstore-read -s /", "xen-init-dom0", "xenconsoled ", "xl info"]
    places = [script.index(step) for step in steps]
    assert places == sorted(places)
    assert script.count("|| fail") >= 7


def test_a_host_without_xen_s_toolstack_makes_it_unavailable_with_the_fix(monkeypatch,
                                                                          host) -> None:
    monkeypatch.setattr(dom0, "TOOLS", "/nonexistent/xen-*/bin")
    answer = domu().probe(host)
    assert not answer.available
    assert "apt-get install --no-install-recommends xen-utils-4.17" in answer.reason


def test_a_scratch_disk_is_a_pv_block_device_in_the_domu_s_disk_list(tmp_path) -> None:
    """Each disk a quoted line of xl's disk list, on xvda, xvdb...; a raw file only (a qcow2
    would need QEMU in dom0)."""
    environment = domu()
    first = environment.attach_disk(0, tmp_path / "scratch.img", "raw")
    second = environment.attach_disk(1, tmp_path / "other.img", "raw")
    assert (first.guest_device, second.guest_device) == ("/dev/xvda", "/dev/xvdb")
    assert first.vmm_args == (f'"format=raw, vdev=xvda, access=rw, '
                              f'target={tmp_path / "scratch.img"}"',)
    devices = GuestDevices()
    devices.args += [*first.vmm_args, *second.vmm_args]
    environment.command_line([], tmp_path, devices)
    assert config(tmp_path)["disk"] == f"[ {first.vmm_args[0]}, {second.vmm_args[0]} ]"
    with pytest.raises(GuestStartError, match="qcow2"):
        environment.attach_disk(0, tmp_path / "scratch.qcow2", "qcow2")


def test_the_image_gets_the_pv_disk_driver_only_when_a_workload_needs_a_disk() -> None:
    environment = domu()
    assert environment.image_modules() == ()
    environment.needs_disk = lambda: True  # a plan with a disk workload
    assert environment.image_modules() == ("xen-blkfront", "ext4")


def test_a_command_line_xen_would_cut_is_refused_with_the_fix(tmp_path) -> None:
    environment = domu()
    with pytest.raises(GuestStartError, match="Xen keeps 1023"):
        environment.command_line(["gb.args=" + "x" * 1100], tmp_path, GuestDevices())
