"""Guest images really boot: the default image under QEMU (TCG, microvm) and under user-mode Linux.

Each boot runs the agent through the image's /init with arguments from the kernel
command line, and the console must show the /init contract of docs/images.md.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from guestbench import images
from guestbench.process import proc
from guestbench.protocol import RecordStream
from tests.support.real_environments import uml_kernel

pytestmark = pytest.mark.integration

BOOT_TIMEOUT_S = 60


def qemu_argv(image: images.Image, append: str) -> list[str]:
    """The image booted the way the qemu-tcg environment boots it, without QMP."""
    from guestbench.environments import create, preset_spec
    qemu = create(preset_spec("qemu-tcg"))
    qemu.image = image
    return qemu.command_line(append.split(), None, accel="tcg", paused=False)


def uml_argv(image: images.Image, append: str) -> list[str]:
    return [str(image.kernel), "mem=256M", f"initrd={image.initramfs}", "con0=fd:0,fd:1",
            "con=null", "console=tty0", "quiet", "panic=-1", *append.split()]


@pytest.fixture(scope="module")
def module_cache_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("images")


@pytest.fixture(scope="module")
def qemu_image(module_cache_dir) -> images.Image:
    if not shutil.which("qemu-system-x86_64"):
        pytest.skip("qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")
    try:
        return images.build(cache_dir=module_cache_dir)
    except images.ImageError as error:
        pytest.skip(f"no image for QEMU: {error}")


@pytest.fixture(scope="module")
def uml_image(module_cache_dir) -> images.Image:
    return images.build(kernel=Path(uml_kernel()), cache_dir=module_cache_dir)


def boot(argv: list[str]) -> str:
    return proc.run(argv, timeout_s=BOOT_TIMEOUT_S).stdout


def assert_agent_ran(console: str, args: list[str]) -> None:
    lines = [line.rstrip("\r") for line in console.splitlines()]
    assert "guestbench-init: userspace" in lines, console
    stream = RecordStream()
    records = list(stream.feed((0, line.encode()) for line in lines))
    stream.finish()
    hello = records[0]
    assert hello.type == "hello" and hello.body["argv"] == args
    assert records[-1].type == "end" and records[-1].body["status"] == "ok"
    assert "guestbench-init: agent exited with status 0" in lines, console
    assert lines.index("guestbench-init: userspace") < lines.index(
        "guestbench-init: agent exited with status 0")


def test_the_default_image_boots_under_qemu_tcg(qemu_image):
    console = boot(qemu_argv(qemu_image, "gb.args=--min-time,0.01,getpid"))
    assert_agent_ran(console, ["--min-time", "0.01", "getpid"])


def test_the_uml_image_boots_under_user_mode_linux(uml_image):
    console = boot(uml_argv(uml_image, "gb.args=--min-time,0.01,getpid"))
    assert_agent_ran(console, ["--min-time", "0.01", "getpid"])


def test_the_boot_workload_reports_the_guest_uptime(uml_image):
    console = boot(uml_argv(uml_image, "gb.args=boot"))
    assert_agent_ran(console, ["boot"])
    stream = RecordStream()
    samples = [r for r in stream.feed((0, line.rstrip("\r").encode())
                                      for line in console.splitlines()) if r.type == "sample"]
    [uptime] = samples
    assert (uptime.body["metric"], uptime.body["unit"]) == ("guest_uptime", "ms")
    assert uptime.body["value"] > 0


def test_no_args_runs_the_agent_with_none(uml_image):
    console = boot(uml_argv(uml_image, ""))
    # With no workload named the agent exits 2 and prints no records.
    assert "guestbench-init: agent exited with status 2" in console, console


@pytest.mark.parametrize("argv_of", [qemu_argv, uml_argv], ids=["qemu", "uml"])
def test_the_exit_init_fault_panics_the_kernel(argv_of, request):
    image = request.getfixturevalue("qemu_image" if argv_of is qemu_argv else "uml_image")
    console = boot(argv_of(image, "gb.fault=exit-init"))
    assert "guestbench-init: fault exit-init" in console
    assert "Attempted to kill init" in console
    assert "guestbench-init: agent exited" not in console


def test_the_hang_fault_hangs_until_killed(uml_image):
    with pytest.raises(proc.DeadlineExceeded):
        proc.run(uml_argv(uml_image, "gb.fault=hang"), timeout_s=5)
