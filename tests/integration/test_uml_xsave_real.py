"""A UML kernel that sizes its FPU state from the host's XSAVE area (install-uml.sh's build,
or Linux 6.13 and later), for real: the agent's micro workloads run in it, and a guest
program that keeps values in every vector register across system calls and context switches
prints what it prints natively (tests/data/avxcheck.c)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from guestbench.environments.kinds import uml
from guestbench.process import proc

from tests.support.cli import guestbench

pytestmark = pytest.mark.integration

KERNEL_VARIABLE = "GUESTBENCH_UML_KERNEL"
INSTALLED = Path("/usr/local/bin/linux.uml")  # where install-uml.sh puts it by default
AVXCHECK = Path(__file__).parent.parent / "data" / "avxcheck.c"
MICRO = ("getpid", "getppid", "sched_yield", "clock_gettime", "malloc_1mib", "first_write",
         "pipe_switch", "fork_exit")

PLAN = """
[campaign]
name = "uml-xsave-sized"
baseline = "native"
repeat = 1
timeout_s = 120

[[environment]]
preset = "native"

[[environment]]
name = "uml-sized"
kind = "uml"
binary = "{kernel}"

{micro}

[[workload]]
name = "exec"
label = "avxcheck"
argv = ["{avxcheck}"]

[[workload.metrics]]
name = "intact"
regex = 'registers intact (?P<value>[01])$'
unit = "yes/no"
better = "higher"
kind = "verdict"
"""


def _release(kernel: Path) -> str | None:
    result = proc.run([str(kernel), "--version"], timeout_s=uml.VERSION_TIMEOUT_S)
    lines = result.stdout.strip().splitlines()
    return lines[0].strip() if result.returncode == 0 and lines else None


def _sized(kernel: Path) -> bool:
    """Whether guestbench's probe takes this kernel as sizing its buffer from the host."""
    release = _release(kernel)
    return release is not None and uml.xsave_bytes_supported(release) is None


def sized_kernel() -> Path:
    """The kernel named by GUESTBENCH_UML_KERNEL, else /usr/local/bin/linux.uml if it is an
    xsave-sized build; skips where there is none (install.sh builds one only where Debian's
    cannot run, so a host like this one has none by default)."""
    given = os.environ.get(KERNEL_VARIABLE)
    if given:
        kernel = Path(given)
        if not (kernel.is_file() and os.access(kernel, os.X_OK)):
            pytest.fail(f"{KERNEL_VARIABLE}={given}: no such program")
        if not _sized(kernel):
            pytest.fail(f"{KERNEL_VARIABLE}={given} (Linux {_release(kernel)}) does not size "
                        "its FPU state from the host: neither Linux 6.13 or later nor a "
                        f"'{uml.XSAVE_SIZED_MARK}' build of install-uml.sh")
        return kernel
    if INSTALLED.is_file() and _sized(INSTALLED):
        return INSTALLED
    pytest.skip(f"no xsave-sized UML kernel here: {INSTALLED} is "
                f"{'not one' if INSTALLED.exists() else 'missing'} and {KERNEL_VARIABLE} is "
                "unset (bash install-uml.sh [--prefix DIR] builds one, in 10 to 20 minutes)")


@pytest.fixture
def program_folder():
    """A folder for the guest's program outside /tmp: the image's /init mounts a tmpfs on
    /tmp, over the program the image holds at its host path (tmp_path is under /tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="gb-avxcheck-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def compiled_avxcheck(folder: Path) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc not installed (apt-get install build-essential)")
    binary = folder / "avxcheck"
    subprocess.run(["gcc", "-O2", "-Wall", "-Wextra", "-Werror", "-static", "-o", str(binary),
                    str(AVXCHECK)], check=True, timeout=120)
    return binary


def test_micro_workloads_and_vector_registers_in_a_sized_kernel(tmp_path, program_folder):
    kernel = sized_kernel()
    avxcheck = compiled_avxcheck(program_folder)
    native = subprocess.run([str(avxcheck)], capture_output=True, text=True, timeout=60)
    if native.returncode == 2:
        pytest.skip(f"this CPU has no AVX: {native.stdout.strip()}")
    assert native.returncode == 0, native.stdout + native.stderr

    micro = "\n".join(f'[[workload]]\nname = "{name}"\n' for name in MICRO)
    (tmp_path / "plan.toml").write_text(PLAN.format(kernel=kernel, micro=micro,
                                                    avxcheck=avxcheck))
    run = guestbench("run", "plan.toml", "--quiet", cwd=tmp_path, timeout_s=900)
    assert run.returncode == 0, run.stderr
    document = json.loads(guestbench("report", "--format", "json", cwd=tmp_path).stdout)
    guest = next(env for env in document["environments"] if env["name"] == "uml-sized")
    assert guest["available"], guest["probe"]

    outputs = {}
    for entry in document["runs"]:
        assert entry["status"] == "ok", (entry["environment"], entry["label"], entry["reason"])
        if entry["label"] == "avxcheck":
            log = Path(entry["log_path"])
            outputs[entry["environment"]] = (log / "program-stdout.txt").read_text()
    assert {entry["label"] for entry in document["runs"]} == {*MICRO, "avxcheck"}
    print(f"\n{kernel} ({guest['facts'].get('guest_kernel')}):\n{outputs['uml-sized']}")
    assert outputs["native"] == native.stdout
    assert outputs["uml-sized"] == native.stdout
