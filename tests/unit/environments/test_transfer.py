"""The upload workload's pieces without a guest: parameters, agent arguments, the source
file's pattern, the channels' VMM arguments and refusals, and the host feeders."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from guestbench import environments
from guestbench.environments.fullsystem import channels
from guestbench.environments.base import Capability, JobNeeds, Upload
from guestbench.environments.kinds.qemu import qemu_channel
from guestbench.environments.kinds.uml import uml_channel
from guestbench.workloads import transfer
from guestbench.workloads.base import InputError

MIB = 2**20
UPLOAD = transfer.WORKLOADS[0]


# ---- parameters and agent arguments ----

def test_defaults_and_agent_arguments(host):
    params = UPLOAD.resolve({}, host)
    assert (params.channel, params.mode, params.size_mib) == ("virtio-serial", "write", 256)
    assert UPLOAD.agent_args(params) == ["--mode", "write", "--size-mib", "256", "upload"]
    params = UPLOAD.resolve({"channel": "9p", "mode": "no_upload", "size_mib": 8}, host)
    assert UPLOAD.agent_args(params) == ["--mode", "no_upload", "--size-mib", "8", "upload"]


def test_declaration():
    assert UPLOAD.name == "upload" and UPLOAD.family == "transfer"
    assert UPLOAD.capabilities == frozenset({Capability.BLOCK_DEVICE, Capability.UPLOAD})
    assert UPLOAD.primary_metric == "bandwidth" and UPLOAD.agent_workload == "upload"
    assert set(transfer.CHANNELS) == {"serial", "virtio-serial", "9p", "hostfs"}
    assert set(transfer.MODES) == {"write", "no_write", "no_upload"}


@pytest.mark.parametrize("given, field", [
    ({"channel": "usb"}, "channel"),
    ({"mode": "read"}, "mode"),
    ({"size_mib": 0}, "size_mib"),
    ({"size_mib": 1 << 17}, "size_mib"),
    ({"size_mib": "8"}, "size_mib"),     # strict: a string is not a number
    ({"size_mib": True}, "size_mib"),
    ({"sizemib": 8}, "sizemib"),         # unknown keys are errors
])
def test_invalid_parameters(host, given, field):
    with pytest.raises(ValidationError) as error:
        UPLOAD.resolve(given, host)
    assert field in str(error.value)


def test_job_needs(tmp_path):
    params = transfer.UploadParams(channel="9p", mode="no_write", size_mib=2)
    needs = UPLOAD.job_needs(params, tmp_path)
    assert needs.scratch and needs.scratch_mib == 2 + 64
    assert needs.upload == Upload("9p", tmp_path / "upload-2m" / "upload.bin")
    assert needs.upload.source.stat().st_size == 2 * MIB


# ---- the source file ----

def test_source_file_pattern(tmp_path):
    path = transfer.source_file(3, tmp_path)
    data = path.read_bytes()
    assert len(data) == 3 * MIB
    assert data[:8] == b"gbupload"  # block 0's word is MAGIC itself
    for block in (0, 1, 255, 256, 257, 3 * 256 - 1):
        at = block * 4096
        assert struct.unpack_from("<Q", data, at)[0] == block ^ transfer.MAGIC
        body = data[at + 8:at + 4096]
        assert body == bytes((block + j) & 0xFF for j in range(8, 4096))
    assert transfer.pattern_mib(2) == data[2 * MIB:]
    # alone in its folder: 9p and hostfs share the folder
    assert sorted(p.name for p in path.parent.iterdir()) == ["upload.bin"]
    assert not list(tmp_path.glob(".*part"))


def test_source_file_made_once(tmp_path):
    path = transfer.source_file(1, tmp_path)
    stamp = path.stat().st_mtime_ns
    time.sleep(0.01)
    assert transfer.source_file(1, tmp_path) == path and path.stat().st_mtime_ns == stamp
    path.write_bytes(b"short")  # a wrong size is made again
    assert transfer.source_file(1, tmp_path).stat().st_size == MIB


def test_source_file_unwritable(tmp_path):
    (tmp_path / "inputs").write_text("a file where the folder should be")
    with pytest.raises(InputError, match="cannot write"):
        transfer.source_file(1, tmp_path / "inputs")


# ---- channels: what each one asks of QEMU and UML ----

@pytest.fixture
def source(tmp_path) -> Path:
    return transfer.source_file(1, tmp_path / "inputs")


def test_qemu_virtio_serial(source, tmp_path):
    setup = qemu_channel("virtio-serial", source, "microvm", tmp_path)
    sock = tmp_path / "upload.sock"
    assert setup.vmm_args == (
        "-chardev", f"socket,id=gbupload,path={sock}",
        "-device", "virtio-serial-device,id=gbuploadbus,max_ports=2",
        "-device", "virtserialport,bus=gbuploadbus.0,nr=1,chardev=gbupload,"
                   "name=org.guestbench.upload")
    assert setup.modules == ("virtio_mmio", "virtio_console")
    assert setup.guest_source == "/dev/virtio-ports/org.guestbench.upload"
    assert setup.kernel_args == () and setup.mount is None
    assert isinstance(setup.feeder, channels.SocketFeeder)
    pc = qemu_channel("virtio-serial", source, "pc", tmp_path)
    assert "virtio-serial-pci,id=gbuploadbus,max_ports=2" in pc.vmm_args
    assert pc.modules == ("virtio_pci", "virtio_console")


@pytest.mark.parametrize("machine", ["microvm", "pc", "q35"])
def test_qemu_serial(source, tmp_path, machine):
    setup = qemu_channel("serial", source, machine, tmp_path)
    assert setup.vmm_args[-2:] == ("-device", "isa-serial,chardev=gbupload,index=1")
    assert setup.guest_source == "/dev/ttyS1" and setup.modules == ()


def test_qemu_9p(source, tmp_path):
    setup = qemu_channel("9p", source, "microvm", tmp_path)
    assert setup.vmm_args == (
        "-fsdev", f"local,id=gbupload,path={source.parent},security_model=none,readonly=on",
        "-device", "virtio-9p-device,fsdev=gbupload,mount_tag=gbupload")
    assert setup.modules == ("virtio_mmio", "9pnet_virtio", "9p")
    assert setup.guest_source == "/upload/upload.bin"
    assert setup.mount == channels.GuestMount(
        "9p", "gbupload", "/upload", "ro,trans=virtio,version=9p2000.L,msize=512000")
    assert setup.kernel_args == (
        "gb.mount=9p:gbupload:/upload:ro,trans=virtio,version=9p2000.L,msize=512000",)
    assert type(setup.feeder) is channels.Feeder
    assert "virtio-9p-pci,fsdev=gbupload,mount_tag=gbupload" in qemu_channel(
        "9p", source, "q35", tmp_path).vmm_args


def test_uml_hostfs(source, tmp_path):
    setup = uml_channel("hostfs", source)
    assert setup.vmm_args == (f"hostfs={source.parent}",)
    assert setup.kernel_args == ("gb.mount=hostfs:none:/upload:ro",)
    assert setup.modules == () and setup.guest_source == "/upload/upload.bin"
    assert setup.mount.init_command() == ("/bin/busybox mkdir -p /upload && /bin/busybox mount "
                                          "-t hostfs -o ro none /upload")


def test_uml_serial(source, tmp_path):
    setup = uml_channel("serial", source)
    try:
        feeder = setup.feeder
        assert isinstance(feeder, channels.PipeFeeder)
        assert setup.vmm_args == (f"ssl1=fd:{feeder.guest_in},fd:{feeder.guest_out}",)
        assert setup.pass_fds == (feeder.guest_in, feeder.guest_out)
        # high numbers: a VMM not given them must not find one of its own there
        assert min(setup.pass_fds) >= channels.HIGH_FD
        assert not any(os.get_inheritable(fd) for fd in setup.pass_fds)
        assert setup.guest_source == "/dev/ttyS1" and setup.kernel_args == ()
        assert feeder.pipe_size >= 64 * 1024
    finally:
        setup.feeder.stop()
    for fd in setup.pass_fds:  # stop() closes the pipes even when no guest ever started
        with pytest.raises(OSError):
            os.fstat(fd)


@pytest.mark.parametrize("kind, channel, words", [
    ("qemu", "hostfs", "User-Mode Linux's; under QEMU use 9p"),
    ("qemu", "usb", "unknown upload channel 'usb'"),
    ("uml", "virtio-serial", "QEMU's; User-Mode Linux has serial and hostfs"),
    ("uml", "9p", "hostfs is its 9p"),
])
def test_unsupported_channels(source, tmp_path, kind, channel, words):
    environment = environments.create(environments.preset_spec(
        "qemu-tcg" if kind == "qemu" else "uml"))
    needs = JobNeeds(scratch=True, upload=Upload(channel, source))
    assert words in environment.refusal(UPLOAD.requires, needs)
    with pytest.raises(channels.ChannelError, match=words.replace("(", r"\(")):
        environment.channel(channel, source, tmp_path)


def test_supported_channels_are_not_refused(source):
    for preset in ("qemu-tcg", "uml"):
        environment = environments.create(environments.preset_spec(preset))
        for channel in environment.upload_channels():
            needs = JobNeeds(scratch=True, upload=Upload(channel, source))
            assert environment.refusal(UPLOAD.requires, needs) is None
    assert environments.create(environments.preset_spec("uml")).upload_channels() == (
        "serial", "hostfs")


def test_process_kinds_have_no_upload_channel(source):
    native = environments.create(environments.preset_spec("native"))
    needs = JobNeeds(scratch=True, upload=Upload("serial", source))
    assert native.refusal(UPLOAD.requires, needs) == (
        "native lacks block_device (a virtual disk)")


def test_paths_that_cannot_travel(tmp_path):
    comma = transfer.source_file(1, tmp_path / "a,b")
    with pytest.raises(channels.ChannelError, match="comma"):
        qemu_channel("9p", comma, "microvm", tmp_path)
    with pytest.raises(channels.ChannelError, match="comma"):
        qemu_channel("serial", comma, "microvm", tmp_path / "x,y")
    deep = tmp_path / ("d" * 120)
    with pytest.raises(channels.ChannelError, match="longer than a Unix socket allows"):
        qemu_channel("virtio-serial", comma, "microvm", deep)
    spaced = transfer.source_file(1, tmp_path / "a b")
    with pytest.raises(channels.ChannelError, match="space"):
        uml_channel("hostfs", spaced)
    with pytest.raises(channels.ChannelError, match="not a file"):
        qemu_channel("9p", tmp_path / "missing.bin", "microvm", tmp_path)


def test_guest_mount_words():
    mount = channels.GuestMount("ext4", "/dev/vda", "/scratch", "")
    assert mount.kernel_word() == "gb.mount=ext4:/dev/vda:/scratch:"
    assert mount.init_command().endswith("mount -t ext4 /dev/vda /scratch")
    for bad in ({"source": "a:b"}, {"mountpoint": "/a b"}, {"fstype": ""}):
        fields = {"fstype": "9p", "source": "tag", "mountpoint": "/m", "options": "ro", **bad}
        with pytest.raises(channels.ChannelError, match="gb.mount"):
            channels.GuestMount(**fields)


def test_agent_options(source, tmp_path):
    setup = qemu_channel("9p", source, "microvm", tmp_path)
    assert channels.agent_options(setup) == ["--source", "/upload/upload.bin",
                                             "--dest", "/scratch/upload.out"]


# ---- feeders: a fake guest on the other end ----

def _read_exactly(read, size: int) -> bytes:
    got = bytearray()
    while len(got) < size:
        chunk = read(min(1 << 16, size - len(got)))
        assert chunk, f"EOF after {len(got)} bytes"
        got += chunk
    return bytes(got)


def test_socket_feeder_sends_the_file_once_asked(source, tmp_path):
    setup = qemu_channel("virtio-serial", source, "microvm", tmp_path)
    feeder = setup.feeder
    with feeder:
        guest = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)  # what QEMU does
        guest.connect(str(tmp_path / "upload.sock"))
        guest.settimeout(10)
        time.sleep(0.3)
        guest.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing before the guest is ready
            guest.recv(1)
        guest.settimeout(10)
        guest.sendall(b"boot noise\n" + channels.READY_TOKEN)
        assert _read_exactly(guest.recv, MIB) == source.read_bytes()
        guest.close()
    assert feeder.asked and feeder.sent == MIB and feeder.error is None
    assert "sent 1048576 of 1048576" in feeder.describe()
    assert not (tmp_path / "upload.sock").exists()
    assert not any(t.name.startswith("gb-upload") for t in threading.enumerate())


def test_socket_feeder_stops_when_nobody_came(source, tmp_path):
    feeder = qemu_channel("serial", source, "pc", tmp_path).feeder
    feeder.start()
    started = time.monotonic()
    feeder.stop()
    feeder.stop()  # idempotent
    assert time.monotonic() - started < 2
    assert "never said it was ready" in feeder.describe()
    assert not any(t.name.startswith("gb-upload") for t in threading.enumerate())


def test_socket_feeder_stops_while_the_guest_does_not_read(source, tmp_path):
    feeder = qemu_channel("serial", source, "microvm", tmp_path).feeder
    feeder.start()
    guest = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    guest.connect(str(tmp_path / "upload.sock"))
    guest.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    guest.sendall(channels.READY_TOKEN)
    time.sleep(0.5)  # the feeder fills the socket and waits
    started = time.monotonic()
    feeder.stop()
    assert time.monotonic() - started < 2
    assert 0 < feeder.sent < MIB
    guest.close()


def test_pipe_feeder_sends_once_asked(source, tmp_path):
    setup = uml_channel("serial", source)
    feeder = setup.feeder
    guest_in, guest_out = setup.pass_fds  # what UML's ssl1=fd:IN,fd:OUT uses
    with feeder:
        time.sleep(0.2)
        os.set_blocking(guest_in, False)
        with pytest.raises(BlockingIOError):  # nothing before the guest is ready
            os.read(guest_in, 1)
        os.set_blocking(guest_in, True)
        os.write(guest_out, channels.READY_TOKEN)
        assert _read_exactly(lambda n: os.read(guest_in, n), MIB) == source.read_bytes()
    assert feeder.sent == MIB and feeder.error is None
    assert not any(t.name.startswith("gb-upload") for t in threading.enumerate())


def test_feeder_start_failures_are_channel_errors(source, tmp_path):
    feeder = qemu_channel("virtio-serial", source, "microvm", tmp_path / "gone").feeder
    with pytest.raises(channels.ChannelError, match="host socket feeder"):
        feeder.start()
    feeder.stop()
    pipes = uml_channel("serial", source).feeder
    pipes.stop()  # the guest never started: the pipes are closed all the same
    with pytest.raises(channels.ChannelError, match="closed by an earlier stop"):
        pipes.start()
