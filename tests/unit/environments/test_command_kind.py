"""The command kind without starting anything: plan-time checks of its argv template, what
it provides, and the command line it builds (placeholders, one {cmdline} argument)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from guestbench import environments, images
from guestbench.environments.base import Capability, JobNeeds
from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.plan.build import load
from guestbench.plan.errors import PlanError

QEMU = ('argv = ["qemu-system-x86_64", "-M", "pc", "-m", "{memory_mib}", "-smp", "{vcpus}", '
        '"-kernel", "{kernel}", "-initrd", "{initrd}", "-append", "{cmdline}", '
        '"-serial", "stdio"]\n')


def plan_of(environment_lines: str) -> str:
    return (f'[[environment]]\nname = "vm"\nkind = "command"\n{environment_lines}'
            '[[workload]]\nname = "getpid"\n')


@pytest.mark.parametrize("lines, field, words", [
    ('argv = ["vmm", "{kernal}", "{initrd}", "{cmdline}"]\n', "environment[0].argv",
     "unknown placeholder {kernal}"),
    ('argv = "qemu-system-x86_64 -kernel {kernel}"\n', "environment[0].argv", ""),
    ('argv = ["vmm", 3]\n', "environment[0].argv[1]", ""),
    ('argv = []\n', "environment[0].argv", ""),
    ('argv = ["vmm", "{kernel}", "{cmdline}"]\n', "environment[0]", "must pass {initrd}"),
    ('argv = ["vmm", "{kernel}", "{initrd}"]\n', "environment[0]", "must pass {cmdline}"),
    (QEMU + 'files = { "vm.json" = "{\\"kernel\\": \\"{kernl}\\"}" }\n', "environment[0].files",
     "unknown placeholder {kernl}"),
    (QEMU + 'files = { "../vm.json" = "x" }\n', "environment[0].files", "plain file name"),
    (QEMU + 'console = "file"\n', "environment[0]", "needs {console_path}"),
    (QEMU + 'console = "serial"\n', "environment[0].console", ""),
    ('image = "none"\nargv = ["vmm", "{kernel}"]\n', "environment[0]", "needs kernel ="),
    ('image = "none"\nkernel = "/k"\nargv = ["vmm", "{kernel}", "{initrd}"]\n',
     "environment[0]", "cannot use {initrd}"),
    ('argv = ["vmm", "{initrd}", "{cmdline}", "-drive", "file={disk}"]\n', "environment[0]",
     "{disk} belongs in disk_argv"),
    (QEMU + 'disk_argv = ["-drive", "file=x"]\n', "environment[0]", "does not pass {disk}"),
    (QEMU + 'shutdown = "halt"\n', "environment[0].shutdown", ""),
    (QEMU + 'placement = "same"\n', "environment[0]", "needs vcpu_threads"),
    (QEMU + 'ready = "booted"\n', "environment[0]", "for image = \"none\""),
    ('image = "none"\nkernel = "/k"\nargv = ["vmm", "{kernel}"]\nready = "(unclosed"\n',
     "environment[0].ready", "not a regular expression"),
    (QEMU + 'stop_signal = "SIGSTOP"\n', "environment[0].stop_signal", ""),
    (QEMU + 'stop_argv = ["vmmctl", "{pidd}"]\n', "environment[0].stop_argv",
     "unknown placeholder {pidd}"),
    ('argv = ["vmm", "{pid}", "{initrd}", "{cmdline}"]\n', "environment[0]",
     "{pid} exists only in stop_argv"),
    (QEMU + 'kernel_format = "elf"\n', "environment[0].kernel_format", ""),
    (QEMU + 'argvv = ["x"]\n', "environment[0].argvv", "allowed here"),
])
def test_bad_templates_are_plan_errors_naming_the_field(lines, field, words, write_plan, host):
    with pytest.raises(PlanError) as caught:
        load(write_plan(plan_of(lines)), host)
    message = str(caught.value)
    assert f"{field}:" in message and "(fix:" in message, message
    assert words in message, message


def test_a_good_template_loads(write_plan, host):
    plan = load(write_plan(plan_of(QEMU + 'vcpus = 2\nrequires = ["/dev/null"]\n')), host)
    assert plan.environments[0].kind == "command" and plan.environments[0].vcpus == 2


def command(**options):
    spec = environments.spec_model("command")(name="vm", kind="command", **{
        "argv": ["vmm", "--kernel", "{kernel}", "--initrd={initrd}", "--cmdline", "{cmdline}",
                 "--mem", "{memory_mib}M", '{"json": 1}'], **options})
    return environments.create(spec)


def test_command_line_fills_placeholders_and_keeps_the_cmdline_one_argument(tmp_path):
    environment = command()
    environment.image = images.Image("abc", Path("/k/bzImage"), "6.1", Path("/c/initrd.cpio"),
                                     (), (), None)
    argv = environment.command_line(["gb.args=--min-time,0.1,getpid"], tmp_path, GuestDevices())
    assert argv == ["vmm", "--kernel", "/k/bzImage", "--initrd=/c/initrd.cpio", "--cmdline",
                    "quiet panic=-1 console=ttyS0 gb.args=--min-time,0.1,getpid",
                    "--mem", "512M", '{"json": 1}']


def test_files_are_written_into_the_workdir_with_placeholders(tmp_path):
    environment = command(files={"vm.json": '{"boot-source": {"kernel_image_path": "{kernel}", '
                                            '"boot_args": "{cmdline}"}, "vcpus": {vcpus}}'})
    environment.image = images.Image("abc", Path("/k/vmlinux"), "6.1", Path("/c/i.cpio"),
                                     (), (), None)
    environment.command_line(["gb.args=getpid"], tmp_path, GuestDevices())
    assert (tmp_path / "vm.json").read_text() == (
        '{"boot-source": {"kernel_image_path": "/k/vmlinux", '
        '"boot_args": "quiet panic=-1 console=ttyS0 gb.args=getpid"}, "vcpus": 1}')


def test_disk_argv_decides_the_scratch_disk_and_comes_only_with_one(tmp_path):
    without = command()
    assert Capability.FILESYSTEM not in without.provides()
    assert "disk_argv" in without.refusal(frozenset(), JobNeeds(scratch=True))
    with_disk = command(disk_argv=["--disk", "path={disk}"])
    assert Capability.FILESYSTEM in with_disk.provides()
    assert with_disk.refusal(frozenset(), JobNeeds(scratch=True)) is None
    with_disk.image = images.Image("abc", Path("/k/bz"), "6.1", Path("/c/i.cpio"), (), (), None)
    assert "--disk" not in with_disk.command_line([], tmp_path, GuestDevices())
    devices = GuestDevices(disks=[tmp_path / "scratch.raw"])
    assert with_disk.command_line([], tmp_path, devices)[-2:] == [
        "--disk", f"path={tmp_path / 'scratch.raw'}"]


def test_reboot_shutdown_is_asked_on_the_kernel_command_line(tmp_path):
    environment = command(shutdown="reboot", kernel_args=["console=ttyS0", "reboot=k"])
    environment.image = images.Image("abc", Path("/k/bz"), "6.1", Path("/c/i.cpio"), (), (), None)
    argv = environment.command_line(["gb.args=getpid"], tmp_path, GuestDevices())
    assert argv[5] == "quiet panic=-1 console=ttyS0 reboot=k gb.shutdown=reboot gb.args=getpid"
    assert "gb.shutdown=*) shutdown=" in images.INIT_SCRIPT


def test_image_none_runs_no_agent_only_its_own_program():
    own = command(image="none", kernel="/k/unikernel", argv=["vmm", "{kernel}"])
    assert own.provides() == {Capability.GUEST_KERNEL, Capability.GUEST_PROGRAM}
    assert "agent" in own.refusal(frozenset({Capability.AGENT}))
    assert Capability.GUEST_PROGRAM not in command().provides()


def test_probe_names_a_missing_program_or_file(host):
    missing = command(argv=["no-such-vmm-here", "{initrd}", "{cmdline}"]).probe(host)
    assert not missing.available and "no-such-vmm-here not found" in missing.reason
    needs = command(argv=["true", "{initrd}", "{cmdline}"], requires=["/no/such/device"])
    answer = needs.probe(host)
    assert not answer.available and "/no/such/device not found" in answer.reason


def test_port_io_can_be_declared_absent():
    assert Capability.PORT_IO in command().provides()
    assert Capability.PORT_IO not in command(port_io=False).provides()


def test_a_vmlinux_kernel_is_extracted_from_the_bzimage_once(tmp_path, monkeypatch):
    """A gzip'ed ELF inside a made-up bzImage: found, extracted, cached by content."""
    import gzip

    from guestbench.images import vmlinux
    monkeypatch.setenv("GUESTBENCH_CACHE", str(tmp_path / "cache"))
    elf = b"\x7fELF" + bytes(range(256)) * 64
    bzimage = tmp_path / "bzImage"
    bzimage.write_bytes(b"MZ" + b"\0" * 1000 + b"HdrS" + gzip.compress(elf) + b"\0" * 100)
    first = vmlinux.extract(bzimage)
    assert first.read_bytes() == elf and first.is_relative_to(tmp_path / "cache")
    assert vmlinux.extract(bzimage) == first
    not_a_kernel = tmp_path / "junk"
    not_a_kernel.write_bytes(b"\0" * 4096)
    with pytest.raises(images.ImageError, match="no compressed ELF kernel"):
        vmlinux.extract(not_a_kernel)


def _lz4_legacy(data: bytes) -> bytes:
    """data as `lz4 -l` writes it (the kernel's build): the magic, then blocks of 8 MiB at
    most, each after its compressed size."""
    import struct

    import lz4.block
    out = [b"\x02\x21\x4c\x18"]
    for at in range(0, len(data), 8 << 20):
        block = lz4.block.compress(data[at:at + (8 << 20)], store_size=False)
        out += [struct.pack("<I", len(block)), block]
    return b"".join(out)


def _zstd(data: bytes) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor(level=19).compress(data)


def _by_the_tool(tool: list[str]):
    def compress(data: bytes) -> bytes:
        if shutil.which(tool[0]) is None:
            pytest.skip(f"{tool[0]} is not installed here (apt-get install {tool[0]})")
        return subprocess.run(tool, input=data, capture_output=True, check=True).stdout
    return compress


@pytest.mark.parametrize("compress", [_zstd, _lz4_legacy, _by_the_tool(["zstd", "-19", "-c"]),
                                      _by_the_tool(["lz4", "-l", "-9", "-c"])],
                         ids=["zstd", "lz4-legacy", "zstd-tool", "lz4-tool"])
def test_a_zstd_or_lz4_kernel_is_extracted_too(compress, tmp_path, monkeypatch):
    """Ubuntu's and Arch's kernels are zstd; the kernel's build writes lz4 in its legacy
    format. An ELF of more than one lz4 block (8 MiB), then the 4 bytes of size the build
    appends, then the rest of a bzImage."""
    import random

    from guestbench.images import vmlinux
    monkeypatch.setenv("GUESTBENCH_CACHE", str(tmp_path / "cache"))
    noise = random.Random(7)
    elf = b"\x7fELF" + bytes(noise.getrandbits(8) for _ in range(1 << 16)) * 160  # 10 MiB
    bzimage = tmp_path / "bzImage"
    bzimage.write_bytes(b"MZ" + b"\0" * 1000 + b"HdrS" + compress(elf)
                        + len(elf).to_bytes(4, "little") + b"\0" * 100)
    assert vmlinux.extract(bzimage).read_bytes() == elf


@pytest.mark.parametrize("body", ["#!/bin/sh\nexec yes\n", "#!/bin/sh\nexec sleep 60\n"])
def test_a_version_command_that_never_ends_makes_the_environment_unavailable(
        body, tmp_path, write_plan, host, monkeypatch) -> None:
    """A version_argv that printed forever left the environment available, with no version
    and no word (2026-11-27): now it is unavailable after the version's timeout, saying
    why and what to give instead."""
    from guestbench.environments.fullsystem import base
    monkeypatch.setattr(base, "VERSION_TIMEOUT_S", 0.5)
    endless = tmp_path / "vmm-version"
    endless.write_text(body)
    endless.chmod(0o755)
    kernel = tmp_path / "kernel"
    kernel.write_bytes(b"\0")
    plan = load(write_plan(plan_of(
        f'image = "none"\nkernel = "{kernel}"\nargv = ["vmm", "{{kernel}}"]\n'
        f'version_argv = ["{endless}"]\n')), host)
    environment = environments.create(plan.environments[0])
    answer = environment.prepare(host)
    assert not answer.available
    assert answer.reason == (f"the version command '{endless}' did not end within 0.5 s (fix: "
                             "give a version_argv that prints one line and exits, e.g. "
                             '["firecracker", "--version"], or none)')
