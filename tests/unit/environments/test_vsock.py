"""vsock_rr's device and peer, and the API VMMs' tap NIC: the shell that runs the peer beside the VMM and ends it; the
peer itself (the agent's net_peer on a Unix socket, as a hybrid vsock hands a connection
on); each kind's device; the kinds that have none say why. The real round trips, nested:
tests/integration/test_api_vmms_real.py."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import pytest

from guestbench import environments
from guestbench.environments.base import Job
from guestbench.environments.fullsystem import vsock
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.kinds import qemu
from guestbench.network.paths import NetPath
from tests.unit.environments.test_firecracker import IMAGE, deadline, vmm


def test_the_peer_runs_beside_the_vmm_and_ends_with_it(tmp_path) -> None:
    leftover = tmp_path / "v.vsock_5000"
    leftover.write_text("")
    pid_file = tmp_path / "peer.pid"
    # the "VMM" ends once the peer has started (else the shell could end it before it ran)
    vmm = f"until [ -s {pid_file} ]; do sleep 0.01; done; echo the vmm; exit 3"
    argv = vsock.beside(["sh", "-c", vmm],
                        [["sh", "-c", f"echo $$ >{pid_file}.part && mv {pid_file}.part "
                                      f"{pid_file}; exec sleep 30"]],
                        tmp_path / "beside.log", [str(leftover)])
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    assert done.returncode == 3 and done.stdout == "the vmm\n"  # its status and its output
    peer = int(pid_file.read_text())
    for _ in range(100):  # killed with the VMM's end (reaped by init once orphaned)
        if not Path(f"/proc/{peer}").exists() or "Z" in Path(f"/proc/{peer}/stat").read_text().split()[2]:
            break
        time.sleep(0.02)
    else:
        os.kill(peer, 9)
        pytest.fail("the peer outlived the VMM")
    assert not leftover.exists()


def test_the_agent_s_peer_echoes_round_trips_on_a_unix_socket(agent_path, tmp_path) -> None:
    """As Firecracker and Cloud Hypervisor hand the guest's connection to port P on:
    the Unix socket UDS_P, then the agent's header and its bytes."""
    path = tmp_path / "v.vsock_5000"
    peer = subprocess.Popen(vsock.unix_peer(agent_path, tmp_path / "v.vsock", 5000),
                            stdout=subprocess.PIPE, text=True)
    try:
        assert peer.stdout.readline() == f"gbagent-peer listening unix:{path}\n"
        with socket.socket(socket.AF_UNIX) as client:
            client.connect(str(path))
            client.sendall(b"GBN1R\0\0\0\0\0\0\0")
            for byte in (b"r", b"s"):
                client.sendall(byte)
                assert client.recv(1) == byte
    finally:
        peer.kill()
        peer.wait()


def test_firecracker_gets_a_hybrid_vsock_and_the_peer_beside_it(fake, tmp_path) -> None:
    options, requests, _ = fake
    environment = vmm(**options)
    job = Job("vsock_rr", Path("/gbagent"), ("--vsock-port", "5000", "vsock_rr"),
              vsock_port=5000)
    guest = environment.start(job, tmp_path / "logs", deadline())
    try:
        said = requests()
        [device] = [r["body"] for r in said[1:] if r.get("path") == "/vsock"]
        assert device["guest_cid"] == vsock.GUEST_CID
        assert device["uds_path"].endswith("api.vsock")
        calls = [r.get("path") for r in said[1:]]
        assert calls.index("/vsock") < calls.index("/actions")  # before the start
        command = (tmp_path / "logs" / "command").read_text()
        assert f"/gbagent --listen-unix {device['uds_path']}_5000 net_peer" in command
    finally:
        guest.stop()


def test_cloud_hypervisor_gets_its_vsock_on_the_command_line(tmp_path) -> None:
    environment = environments.create(environments.preset_spec("cloud-hypervisor"))
    environment.image, environment.boot_kernel = IMAGE, Path("/cache/vmlinux")
    devices = GuestDevices()
    environment.attach_vsock(tmp_path, devices, Path("/gbagent"), 5000)
    argv = environment.vmm_argv(str(tmp_path / "api.sock"), tmp_path, [], devices)
    assert argv[argv.index("--vsock") + 1] == f"cid=3,socket={tmp_path / 'api.vsock'}"
    assert devices.beside == [["/gbagent", "--listen-unix", f"{tmp_path / 'api.vsock'}_5000",
                               "net_peer"]]


def test_qemu_gets_vhost_vsock_where_the_host_has_it(tmp_path, monkeypatch) -> None:
    environment = environments.create(environments.preset_spec("qemu-tcg"))
    devices = GuestDevices()
    environment.attach_vsock(tmp_path, devices, Path("/gbagent"), 5000)
    device, option = devices.args[1].split(",")
    assert devices.args[0] == "-device" and device.startswith("vhost-vsock-")
    assert int(option.removeprefix("guest-cid=")) >= 3
    assert devices.beside == [["/gbagent", "--listen-vsock", "5000", "net_peer"]]
    monkeypatch.setattr(qemu, "VHOST_VSOCK", str(tmp_path / "none"))
    assert "modprobe vhost_vsock" in environment.vsock_refusal()
    monkeypatch.setattr(qemu, "VHOST_VSOCK", str(tmp_path))
    assert environment.vsock_refusal() is None


@pytest.mark.parametrize("preset, said", [
    ("uml", "User-Mode Linux has no virtio-vsock device"),
    ("native", "lacks vsock"),
    ("xen-pv-tcg", "lacks vsock"),
])
def test_a_kind_without_vsock_says_so(preset, said) -> None:
    from guestbench.environments.base import Capability
    environment = environments.create(environments.preset_spec(preset))
    assert said in environment.refusal(frozenset({Capability.VSOCK}))


def test_firecracker_gets_its_nic_on_the_run_s_tap_through_the_api(fake, tmp_path) -> None:
    """Not run here for real: a tap cannot reach into the L1 machine, and this host's own
    KVM runs no guest (environments.md)."""
    options, requests, _ = fake
    path = NetPath("tap", "10.77.0.1", "10.77.0.1", guest_cidr="10.77.0.2/30",
                   host_if="gb1n0", mac="52:54:00:12:34:56")
    job = Job("net_rr", Path("/gbagent"), ("net_rr",), network=path)
    guest = vmm(**options).start(job, tmp_path / "logs", deadline())
    try:
        [nic] = [r["body"] for r in requests()[1:]
                 if r.get("path") == "/network-interfaces/eth0"]
        assert nic == {"iface_id": "eth0", "host_dev_name": "gb1n0",
                       "guest_mac": "52:54:00:12:34:56"}
    finally:
        guest.stop()


def test_cloud_hypervisor_gets_its_nic_on_the_command_line_and_none_inside(tmp_path) -> None:
    environment = environments.create(environments.preset_spec("cloud-hypervisor"))
    environment.image, environment.boot_kernel = IMAGE, Path("/cache/vmlinux")
    devices = GuestDevices(nic=NetPath("tap", "10.77.0.1", "10.77.0.1", host_if="gb1n0",
                                       mac="52:54:00:12:34:56"))
    argv = environment.vmm_argv(str(tmp_path / "api.sock"), tmp_path, [], devices)
    assert argv[argv.index("--net") + 1] == "tap=gb1n0,mac=52:54:00:12:34:56"
    assert environment.network_refusal() is None
    inside = environments.create(environments.preset_spec("cloud-hypervisor-nested"))
    assert "cannot be handed into the L1 machine" in inside.network_refusal()
