"""What `inside` accepts and refuses, before any L1 machine boots: the plan's errors, the
probe's answers on a host that cannot nest, and the runs a VMM inside a VM cannot have.
The L1 machine itself runs in tests/integration/test_nested_real.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from guestbench.plan.errors import numbered_lines

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
    message = numbered_lines(str(caught.value))[0]  # an oci table also lacks its runtime
    assert message.startswith(f"{path}: environment[0].inside: unknown key (fix"), message
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
    assert environment.refusal(frozenset(), upload) is None  # its feeder runs inside
    assert "traced disk" in environment.refusal(frozenset(), JobNeeds(traced_disk=True))
    # footprint reads the L1 machine's QEMU, which holds the instance (its facts say so);
    # density's instances at once are refused as a burst's are: one inner guest at a time
    assert environment.refusal(workloads.CATALOGUE["footprint"].requires) is None
    density = workloads.CATALOGUE["density"]
    from guestbench.runner import host_parts  # here: the runner's, only this test needs it
    many = host_parts.PARTS["density"](environment, density.params_model(instances=3))
    assert "one inner guest at a time" in many.refusal()
    assert many.refusal().endswith("(fix: instances = 1)")  # density has no serial mode
    burst = workloads.CATALOGUE["burst"]
    several = host_parts.PARTS["burst"](environment, burst.params_model(instances=3))
    assert several.refusal().endswith('(fix: mode = "serial")')
    # what does follow it: the agent, a scratch disk, the VM-exit instructions, boot phases
    assert environment.refusal(workloads.CATALOGUE["cpuid"].requires, JobNeeds(scratch=True)) is None
    assert environment.refusal(frozenset({Capability.GUEST_KERNEL, Capability.PORT_IO})) is None


def test_the_network_reaches_the_host_through_the_l1_machines_user_network() -> None:
    from guestbench.network import paths
    environment = nested_qemu()
    assert environment.refusal(workloads.CATALOGUE["net_rr"].requires) is None
    assert environment.network_refusal() is None
    user = paths.NetPath("user", "127.0.0.1", paths.USER_HOST, guest_cidr=paths.USER_GUEST)
    # the agent dials the host as the L1 machine sees it, through its own slirp's gateway
    assert environment.peer_route(user) == (nested.L1_HOST, paths.USER_HOST)
    tap = nested_qemu(net="tap")
    assert "cannot be handed into the L1 machine" in tap.network_refusal()
    uml = environments.create(environments.spec_model("uml")(name="u", kind="uml", inside="tcg"))
    assert "tap path's host device" in uml.network_refusal()
    host = environments.create(environments.preset_spec("qemu-tcg"))
    assert host.peer_route(user) == (paths.USER_HOST, None)


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
    monkeypatch.setattr(nested, "_machines", {})  # not the session's real ones (integration)
    monkeypatch.setattr(nested, "_users", {})
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


def test_a_stream_channels_feeder_moves_into_the_l1_machine(tmp_path) -> None:
    from guestbench.environments.fullsystem import channels
    from guestbench.environments.kinds.qemu import qemu_channel
    from guestbench.environments.kinds.uml import uml_channel
    source = tmp_path / "data"
    source.write_bytes(b"x" * 100)
    workdir = tmp_path / "run-abc"
    workdir.mkdir()
    moved = nested.relocated(qemu_channel("virtio-serial", source, "microvm", workdir), workdir)
    assert isinstance(moved.feeder, nested.InsideFeeder) and not moved.pass_fds
    assert any("path=/dev/shm/gbup-run-abc.sock" in arg for arg in moved.vmm_args)
    assert "feed-socket /dev/shm/gbup-run-abc.sock" in (workdir / nested.FEED_SCRIPT).read_text()
    serial = uml_channel("serial", source)
    host_ends = serial.pass_fds
    moved = nested.relocated(serial, workdir)
    assert moved.vmm_args == ("ssl1=fd:7,fd:8",)
    script = (workdir / nested.FEED_SCRIPT).read_text()
    assert "exec 7<>/dev/shm/gbup-run-abc.in 8<>/dev/shm/gbup-run-abc.out" in script
    for fd in host_ends:  # the host's pipes, never used, are closed
        with pytest.raises(OSError):
            os.fstat(fd)
    shared = qemu_channel("9p", source, "microvm", workdir)  # the file is read where it is
    assert nested.relocated(shared, workdir) is shared
    assert isinstance(channels.Feeder(), channels.Feeder)


def test_the_feeder_program_sends_the_file_once_the_guest_is_ready(tmp_path) -> None:
    from guestbench.environments.fullsystem import channels
    source = tmp_path / "data"
    source.write_bytes(bytes(range(256)) * 64)
    into, out = tmp_path / "in", tmp_path / "out"
    os.mkfifo(into)
    os.mkfifo(out)
    guest_in = os.open(into, os.O_RDWR | os.O_NONBLOCK)
    guest_out = os.open(out, os.O_RDWR)
    feeder = subprocess.Popen([sys.executable, "-I", channels.__file__, "feed-fifo", str(into),
                               str(out), str(source)], stderr=subprocess.PIPE)
    try:
        time.sleep(0.3)
        with pytest.raises(BlockingIOError):  # nothing before the guest asks
            os.read(guest_in, 1)
        os.write(guest_out, channels.READY_TOKEN)
        got = b""
        deadline = time.monotonic() + 20
        while len(got) < source.stat().st_size and time.monotonic() < deadline:
            try:
                got += os.read(guest_in, 65536)
            except BlockingIOError:
                time.sleep(0.01)
        assert got == source.read_bytes()
    finally:
        feeder.terminate()
        _, said = feeder.communicate(timeout=20)
        os.close(guest_in)
        os.close(guest_out)
    assert b"sent 16384 of 16384 bytes" in said


def test_an_l1_machine_without_kvm_makes_kvm_inside_unavailable_and_auto_choose_tcg() -> None:
    class NoKvm:
        kvm = False

        def said(self) -> str:
            return "L1 said: gbl1: insmod kvm-amd failed"

    environment = nested_qemu()
    environment.machine = NoKvm()
    answer = environment.ready(None)
    assert not answer.available and "has no /dev/kvm" in answer.reason
    assert "insmod kvm-amd failed" in answer.reason
    auto = environments.create(environments.spec_model("qemu")(
        name="q", kind="qemu", accel="auto", inside="tcg"))
    auto.machine = NoKvm()
    assert auto.ready(None).available and auto.accel == "tcg"


def test_a_microvm_inside_a_vm_has_its_rtc_and_on_the_host_as_the_plan_says() -> None:
    from guestbench.environments.kinds.qemu import machine_option
    # without one, the guest kernel's probe of the absent CMOS clock took 10 s of a nested boot
    assert machine_option("microvm", inside=True) == "microvm,rtc=on"
    assert machine_option("microvm", inside=False) == "microvm"
    assert machine_option("q35", inside=True) == "q35"


ODD_ARGV = ["/usr/bin/vmm", "--cmdline", "console=ttyS0 reboot=t", "", "it's", 'a "b"',
            "$HOME", "back\\slash", "*", "a;b", "tab\there"]


def test_a_run_s_argv_goes_to_the_l1_machine_s_init_as_one_line(tmp_path) -> None:
    """No feeder, no newline: the init starts the argv itself (no shell of the host's to
    start first under emulation), reading it back with the shell's own quoting."""
    path = nested._run_file(ODD_ARGV, tmp_path)
    assert path.name == "l2.argv" and not (tmp_path / "l2.sh").exists()
    (line,) = path.read_text().splitlines()
    shell = next((s for s in ("busybox", "sh") if shutil.which(s)), None)
    if shell is None:
        pytest.skip("no shell here to read the line back: busybox or sh")
    argv = ["busybox", "sh"] if shell == "busybox" else ["sh"]
    read_back = subprocess.run(
        [*argv, "-c", 'read -r line <"$1"; eval "set -- $line"; printf "%s\\0" "$@"', "sh",
         str(path)], capture_output=True, check=True).stdout
    assert read_back.split(b"\0")[:-1] == [a.encode() for a in ODD_ARGV]


@pytest.mark.parametrize("why", ["feeder", "newline"])
def test_a_run_with_a_feeder_or_a_newline_is_a_script_for_the_host_s_shell(tmp_path,
                                                                           why) -> None:
    argv = ["/usr/bin/vmm", "-x"]
    if why == "feeder":
        (tmp_path / nested.FEED_SCRIPT).write_text("true\n")
    else:
        argv.append("two\nlines")
    path = nested._run_file(argv, tmp_path)
    assert path.name == "l2.sh" and not (tmp_path / "l2.argv").exists()
    text = path.read_text()
    assert f". {tmp_path}/{nested.FEED_SCRIPT}" in text
    assert f"echo $$ >{tmp_path}/{nested.SESSION_FILE}" in text
    assert text.rstrip().endswith(f"2>{tmp_path}/{nested.VMM_STDERR}")
