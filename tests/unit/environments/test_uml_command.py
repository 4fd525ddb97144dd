"""The UML command line: the RAID6 benchmark the kernel runs at every boot is skipped unless
the plan asks for it (it costs Debian's linux.uml 0.85 s of a 1.4 s boot)."""

from pathlib import Path
from types import SimpleNamespace

from guestbench.environments.fullsystem.devices import GuestDevices
from guestbench.environments.kinds.uml import SKIP_RAID6_BENCHMARK, Uml, UmlSpec


def _argv(**options) -> list[str]:
    environment = Uml(UmlSpec(name="uml", **options))
    environment.image = SimpleNamespace(kernel=Path("/usr/bin/linux.uml"),
                                        initramfs=Path("/images/initramfs.cpio"))
    return environment.command_line(["gb.args=getpid"], Path("/scratch"), GuestDevices())


def test_the_raid6_benchmark_is_skipped_by_default():
    argv = _argv()
    assert SKIP_RAID6_BENCHMARK in argv
    assert argv.index(SKIP_RAID6_BENCHMARK) < argv.index("gb.args=getpid")


def test_a_plan_can_keep_the_raid6_benchmark():
    argv = _argv(raid6_benchmark=True, kernel_args=["loglevel=4"])
    assert not any(word.startswith("initcall_blacklist=") for word in argv)
    assert "loglevel=4" in argv
