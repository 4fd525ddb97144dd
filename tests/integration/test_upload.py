"""The upload workload for real: the agent against the host's pattern file, then QEMU (TCG)
and User-Mode Linux guests assembled by hand from the channel setups, a scratch disk and
the guest image (the environments' wiring of them is tested with the environments).

Sizes are small (TCG boots take seconds, and an emulated 16550 moves ~50 KB/s).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import threading
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from guestbench import agent, images
from guestbench.images import vmlinux
from guestbench.process import proc
from guestbench.environments.fullsystem import channels, guestdisk
from guestbench.environments.kinds import qemu
from guestbench.environments.kinds.uml import uml_channel
from guestbench.protocol import RecordStream, parse_line
from guestbench.workloads import transfer

from tests.support.real_environments import tcg_kernel, uml_kernel

pytestmark = pytest.mark.integration

MIB = 2**20
TIMEOUT_S = 180.0


@dataclass
class Outcome:
    ok: bool
    reason: str
    samples: dict[str, float]
    logdir: Path


def _assert_ok(outcome: Outcome, size_mib: int) -> dict[str, float]:
    assert outcome.ok, f"{outcome.reason} (logs: {outcome.logdir})"
    samples = outcome.samples
    assert samples["bytes"] == size_mib * MIB
    assert samples["elapsed"] > 0
    assert samples["bandwidth"] == pytest.approx(size_mib * MIB / samples["elapsed"] / 1e6)
    return samples


def _no_feeder_threads() -> None:
    assert not [t for t in threading.enumerate() if t.name.startswith("gb-upload")]


# ---- the agent on this host: the pattern of transfer.py is the pattern agent/upload.c checks

def _agent(agent_path: Path, *args: str) -> dict:
    result = proc.run([str(agent_path), *args, "upload"], timeout_s=60)
    records = [r for r in (parse_line(line.encode()) for line in result.stdout.splitlines()) if r]
    errors = [r.body["message"] for r in records if r.type == "error"]
    samples = {r.body["metric"]: r.body["value"] for r in records if r.type == "sample"}
    return {"errors": errors, "samples": samples, "code": result.returncode}


def test_agent_checks_the_host_pattern(agent_path, tmp_path):
    source = transfer.source_file(4, tmp_path / "inputs")
    dest = tmp_path / "out.bin"
    for mode in ("write", "no_write", "no_upload"):
        got = _agent(agent_path, "--mode", mode, "--size-mib", "4", "--source", str(source),
                     "--dest", str(dest))
        assert got["code"] == 0 and not got["errors"], got
        assert got["samples"]["bytes"] == 4 * MIB
        assert not dest.exists()  # the agent removes what it wrote once measured

    corrupt = tmp_path / "corrupt.bin"
    data = bytearray(source.read_bytes())
    data[MIB + 100] ^= 0xFF  # inside the first block of MiB 1: checked in full
    corrupt.write_bytes(bytes(data))
    got = _agent(agent_path, "--mode", "no_write", "--size-mib", "4", "--source", str(corrupt))
    assert got["code"] == 1 and "data check failed" in got["errors"][0]

    shifted = tmp_path / "shifted.bin"
    original = source.read_bytes()
    shifted.write_bytes(original[:MIB + 5000] + original[MIB + 5001:])  # one byte lost
    got = _agent(agent_path, "--mode", "no_write", "--size-mib", "3", "--source", str(shifted))
    assert "data check failed at byte 1056768" in got["errors"][0]  # the next block's word

    got = _agent(agent_path, "--mode", "no_write", "--size-mib", "5", "--source", str(source))
    assert "ended after 4194304 bytes" in got["errors"][0]

    got = _agent(agent_path, "--mode", "copy", "--source", str(source))
    assert "--mode 'copy' is not one of write, no_write, no_upload" in got["errors"][0]
    got = _agent(agent_path, "--mode", "write", "--source", str(source))
    assert "needs --dest" in got["errors"][0]


# ---- QEMU and UML guests, assembled by hand -----------------------------------------------

def _guest_run(argv: list[str], setup: channels.ChannelSetup, logdir: Path,
               scratch: Path) -> Outcome:
    """The VMM in its own session, inheriting the channel's descriptors, fed between start
    and stop; its records checked as the runner checks them. Everything it made is gone
    afterwards: the process group, the scratch folder, the feeder's thread."""
    logdir.mkdir(parents=True)
    stream = RecordStream()
    try:
        with setup.feeder, open(logdir / "console.log", "wb") as log:
            child = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True,
                                     pass_fds=setup.pass_fds)
            try:
                output, _ = child.communicate(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.communicate()
                return Outcome(False, f"no end within {TIMEOUT_S:g} s", {}, logdir)
            finally:
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            log.write(output)
        records = list(stream.feed((0, line) for line in output.split(b"\n")))
        stream.finish()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    _no_feeder_threads()
    errors = [r.body["message"] for r in records if r.type == "error"]
    samples = {r.body["metric"]: r.body["value"] for r in records if r.type == "sample"}
    ok = records[-1].body["status"] == "ok" and not errors
    reason = "; ".join(errors) or ("" if ok else "the agent failed")
    return Outcome(ok, f"{reason}; {setup.feeder.describe()}" if reason else "", samples, logdir)


def _qemu_run(agent_path, tmp_path, channel, mode, size_mib, machine="microvm"):
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip("qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")
    try:
        kernel = images.default_kernel()
    except images.ImageError as error:
        pytest.skip(f"no guest kernel: {error}")
    params = transfer.UploadParams(channel=channel, mode=mode, size_mib=size_mib)
    needs = transfer.job_needs(params, tmp_path / "inputs")
    scratch = Path(tempfile.mkdtemp(prefix="gb-upload-test-"))
    setup = qemu.qemu_channel(channel, needs.upload.source, machine, scratch)
    bus = qemu.bus(machine, "virtio-blk")
    modules = tuple(dict.fromkeys((*bus.modules, *qemu.FILESYSTEM_MODULES, *setup.modules)))
    try:
        image = images.build(kernel, modules=modules)
    except images.ImageError as error:
        shutil.rmtree(scratch)
        pytest.skip(f"guest image: {error}")
    disk = guestdisk.make_scratch_disk(scratch, needs, 64)
    args = [*channels.agent_options(setup), *transfer.to_agent_args(params), "upload"]
    tsc = agent.host_tsc_khz()
    append = [*([f"tsc_early_khz={tsc}"] if tsc else []), "console=ttyS0", "quiet", "panic=-1",
              "reboot=t", f"gb.mount=ext4:{qemu.guest_device(bus, 0)}:/scratch:",
              *setup.kernel_args, "gb.args=" + ",".join(args)]
    argv = ["qemu-system-x86_64", "-M", machine, "-accel", "tcg", "-m", "512", "-nodefaults",
            "-no-user-config", "-display", "none", "-serial", "stdio", "-no-reboot",
            "-kernel", str(vmlinux.extract(image.kernel)), "-initrd", str(image.initramfs),
            "-append", " ".join(append),
            *qemu.disk_args(bus, 0, disk, "raw", "writeback"), *setup.vmm_args]
    return _guest_run(argv, setup, tmp_path / "logs", scratch), setup


def _uml_run(agent_path, tmp_path, channel, mode, size_mib):
    program = uml_kernel()
    params = transfer.UploadParams(channel=channel, mode=mode, size_mib=size_mib)
    needs = transfer.job_needs(params, tmp_path / "inputs")
    scratch = Path(tempfile.mkdtemp(prefix="gb-upload-test-"))
    setup = uml_channel(channel, needs.upload.source)
    try:
        image = images.build(Path(program))
    except images.ImageError as error:
        setup.feeder.stop()
        shutil.rmtree(scratch)
        pytest.skip(f"guest image: {error}")
    disk = guestdisk.make_scratch_disk(scratch, needs, 64)
    args = [*channels.agent_options(setup), *transfer.to_agent_args(params), "upload"]
    argv = [program, "mem=512M", f"initrd={image.initramfs}", f"umid=gbt-{uuid.uuid4().hex[:8]}",
            f"uml_dir={scratch}", f"ubd0={disk}", "con=null", "con0=fd:0,fd:1", "console=tty0",
            "quiet", "panic=-1", *setup.vmm_args, "gb.mount=ext4:/dev/ubda:/scratch:",
            *setup.kernel_args, "gb.args=" + ",".join(args)]
    return _guest_run(argv, setup, tmp_path / "logs", scratch), setup


PLAN = """
[campaign]
name = "upload"
repeat = 1
timeout_s = 180

[[environment]]
preset = "qemu-tcg"
kernel = "{kernel}"

[[environment]]
name = "qemu-pc"
kind = "qemu"
machine = "pc"
kernel = "{kernel}"

[[environment]]
preset = "uml"

# Every channel in each guest kind (hostfs refused in QEMU, virtio-serial and 9p in UML).
# The mode changes only the agent's arguments, not the environment's wiring (the job needs
# the same channel and scratch disk either way). A TCG run boots for about 5 s and its
# serial line moved 1 MiB in 7 s, so TCG runs each channel in mode write alone (the channel
# and the ext4 scratch disk: the most wiring), while UML, about 1 s a run, runs both modes;
# qemu-pc's run is no_upload; the agent's modes are checked against the host's pattern
# file in test_agent_checks_the_host_pattern, and a TCG guest's no_write, fed short, in
# test_qemu_short_feed_fails_with_a_reason.
[[workload]]
name = "upload"
channel = ["virtio-serial", "9p", "hostfs"]
mode = "write"
size_mib = 8
environments = ["qemu-tcg"]

[[workload]]
name = "upload"
channel = "serial"
mode = "write"
size_mib = 1
environments = ["qemu-tcg"]

[[workload]]
name = "upload"
channel = ["virtio-serial", "9p", "hostfs"]
mode = ["write", "no_write"]
size_mib = 8
environments = ["uml"]

[[workload]]
name = "upload"
channel = "serial"
mode = ["write", "no_write"]
size_mib = 1
environments = ["uml"]

[[workload]]
name = "upload"
channel = "virtio-serial"
mode = "no_upload"
size_mib = 4
environments = ["qemu-pc"]
"""
EXPECTED_UNSUPPORTED = {("qemu-tcg", "hostfs"), ("uml", "virtio-serial"), ("uml", "9p")}


def test_uploads_through_every_channel_via_guestbench(tmp_path):
    """The environments' own wiring (GuestDevices, feeders, gb.mount, pass_fds), end to end."""
    from tests.support.cli import guestbench

    (tmp_path / "plan.toml").write_text(PLAN.replace("{kernel}", tcg_kernel()))
    run = guestbench("run", "plan.toml", cwd=tmp_path, timeout_s=900)
    assert run.returncode == 0, run.stderr
    document = __import__("json").loads(
        guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    available = {env["name"] for env in document["environments"] if env["available"]}
    if not available:
        pytest.skip("neither qemu-tcg nor uml is available here")
    seen = []
    for entry in document["runs"]:
        if entry["environment"] not in available:
            continue
        params = entry["params"]
        if (entry["environment"], params["channel"]) in EXPECTED_UNSUPPORTED:
            assert entry["status"] == "unsupported" and entry["reason"], entry
            continue
        assert entry["status"] == "ok", (entry["label"], entry["environment"], entry["reason"])
        samples = {s["metric"]: s["value"] for s in entry["samples"]}
        assert samples["bytes"] == params["size_mib"] * MIB
        assert samples["bandwidth"] > 0
        seen.append((entry["environment"], params["channel"], params["mode"]))
    print(f"\nok uploads: {len(seen)}: {sorted(seen)}")
    markdown = guestbench("report", "--format", "markdown", cwd=tmp_path).stdout
    assert "Upload into the guest: MB/s" in markdown


def test_qemu_short_feed_fails_with_a_reason(agent_path, tmp_path, monkeypatch):
    """A host that sends 1 MiB where 2 were promised: the agent fails after its 20 s of
    silence and says how much came, instead of hanging until the run's timeout."""
    original = channels.SocketFeeder.__init__

    def short(self, source, path):
        original(self, source, path)
        self.size = MIB

    monkeypatch.setattr(channels.SocketFeeder, "__init__", short)
    outcome, _ = _qemu_run(agent_path, tmp_path, "virtio-serial", "no_write", 2)
    assert not outcome.ok
    assert "went silent for 20 s after 1048576 bytes" in outcome.reason
