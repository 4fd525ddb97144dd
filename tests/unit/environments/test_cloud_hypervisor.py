"""The cloud-hypervisor kind against a stand-in that serves Cloud Hypervisor's HTTP API
(tests/support/fake_vmm.py): its command line, the API's first answer as the start's
step, the snapshot's and the restore's requests, a refusal in its own words. The real
Cloud Hypervisor runs in tests/integration/test_api_vmms_real.py."""

from __future__ import annotations


import pytest

from guestbench.environments.base import GuestStartError
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.kinds import cloud_hypervisor
from guestbench.process import proc
from tests.unit.environments import test_firecracker as firecracker_test
from tests.unit.environments.test_firecracker import job


def vmm(**options) -> cloud_hypervisor.CloudHypervisor:
    return firecracker_test.vmm("cloud-hypervisor", **options)


def test_its_command_line_boots_the_image_with_the_job_and_the_disk(tmp_path) -> None:
    devices = GuestDevices()
    devices.args.append("/run/disk.img")
    environment = vmm(memory_mib=384, vcpus=2, binary="/opt/ch/cloud-hypervisor",
                      extra_args=("--rng", "src=/dev/urandom"))
    environment.binary = lambda: "/opt/ch/cloud-hypervisor"
    argv = environment.command_line(["gb.args=--values,3,getpid"], tmp_path, devices)
    assert argv[:3] == ["/opt/ch/cloud-hypervisor", "--api-socket", f"path={tmp_path}/api.sock"]
    pairs = dict(zip(argv[3::2], argv[4::2]))
    assert pairs["--kernel"] == "/cache/vmlinux" and pairs["--initramfs"] == "/cache/i.cpio"
    assert pairs["--cpus"] == "boot=2" and pairs["--memory"] == "size=384M"
    # the serial port is its stdout, the console the guest's; the job ends its command line
    assert pairs["--serial"] == "tty" and pairs["--console"] == "off"
    assert pairs["--cmdline"].split()[0] == "console=ttyS0"
    assert pairs["--cmdline"].endswith("gb.args=--values,3,getpid")
    assert pairs["--disk"] == "path=/run/disk.img"
    assert argv[-2:] == ["--rng", "src=/dev/urandom"]
    assert environment.configure([], devices) is None  # the command line says it all


def test_a_start_waits_for_its_api_and_a_snapshot_is_its_requests(fake, tmp_path) -> None:
    options, requests, _ = fake
    environment = vmm(memory_restore_mode="OnDemand", **options)
    guest = environment.start(job(), tmp_path / "logs", proc.now_ns() + int(30e9))
    try:
        assert set(guest.start_phases()) == {"api_ready"}
        saved = environment.save_requests(guest.api, tmp_path / "image")
        restored = environment.restore_requests(guest.api, tmp_path / "image")
    finally:
        guest.stop()
    assert set(saved) == {"pause", "write"} and set(restored) == {"load", "resume"}
    said = [(r["method"], r["path"], r["body"]) for r in requests() if "method" in r]
    assert said == [
        ("GET", "/api/v1/vmm.ping", None),
        ("PUT", "/api/v1/vm.pause", None),
        ("PUT", "/api/v1/vm.snapshot", {"destination_url": f"file://{tmp_path}/image"}),
        ("PUT", "/api/v1/vm.restore", {"source_url": f"file://{tmp_path}/image",
                                       "memory_restore_mode": "OnDemand"}),
        ("PUT", "/api/v1/vm.resume", None)]


def test_a_refused_snapshot_is_told_in_its_words(fake, tmp_path) -> None:
    options, _, replies = fake
    replies({"PUT /api/v1/vm.snapshot": [500, "Error from API: The VM could not be "
                                              "snapshotted: InvalidState"]})
    environment = vmm(**options)
    guest = environment.start(job(), tmp_path / "logs", proc.now_ns() + int(30e9))
    try:
        with pytest.raises(GuestStartError) as refused:
            environment.save_requests(guest.api, tmp_path / "image")
    finally:
        guest.stop()
    assert str(refused.value) == ("Cloud Hypervisor refused PUT /api/v1/vm.snapshot: 500 Error "
                                  "from API: The VM could not be snapshotted: InvalidState")


def test_without_the_binary_it_is_unavailable_with_the_fix() -> None:
    answer = vmm(binary="no-such-cloud-hypervisor").vmm_probe()
    assert not answer.available
    assert answer.reason.startswith("no-such-cloud-hypervisor not found (fix: cargo build")


def test_a_restore_gives_it_a_terminal_for_the_console_s_input() -> None:
    """Its serial manager reads stdin only where isatty says so; the restored agent waits
    for the host's line."""
    environment = vmm(binary="/opt/ch/cloud-hypervisor")
    environment.binary = lambda: "/opt/ch/cloud-hypervisor"
    argv = environment.restore_argv("/dev/shm/gb.sock")
    assert argv == ["script", "-qfec",
                    "/opt/ch/cloud-hypervisor --api-socket path=/dev/shm/gb.sock", "/dev/null"]
