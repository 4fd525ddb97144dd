"""The plans in examples/vmms/: each loads, holds one command environment, and its header
says honestly whether it was run on the machine guestbench is developed on.

Nothing boots here: the argv shapes of the templates that were run (QEMU, UML) are booted by
tests/integration/test_command_real.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from guestbench.plan import build as plan_build

pytestmark = pytest.mark.integration

TEMPLATES = Path(__file__).resolve().parents[2] / "examples" / "vmms"
PATHS = sorted(TEMPLATES.glob("*.toml"))
# Only these could run where guestbench is developed: no usable KVM there, and no Xen
RUN_HERE = {"qemu-microvm", "qemu-pc", "uml"}
EXPECTED = RUN_HERE | {"firecracker", "cloud-hypervisor", "kvmtool", "crosvm", "xen-pvh",
                       "xen-hvm"}


def header(path: Path) -> str:
    """The comment block the file starts with."""
    lines = []
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    return "\n".join(lines)


def run_here(path: Path) -> str | None:
    found = re.search(r"^Run here:\s*(yes|no)\b", header(path), re.MULTILINE)
    return found.group(1) if found else None


def test_every_vmm_has_a_template():
    assert {path.stem for path in PATHS} == EXPECTED


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.stem)
def test_a_template_is_a_plan_with_one_command_environment(path, host_facts):
    loaded = plan_build.load(path, host_facts)
    commands = [spec for spec in loaded.environments if spec.kind == "command"]
    assert len(commands) == 1
    assert {case.name for case in loaded.workloads} >= {"boot", "getpid", "stream_triad",
                                                         "cpuid"}


@pytest.mark.parametrize("path", PATHS, ids=lambda path: path.stem)
def test_a_template_says_whether_it_was_run_here(path):
    said = run_here(path)
    assert said is not None, f"{path.name}: its header has no 'Run here: yes|no' line"
    assert said == ("yes" if path.stem in RUN_HERE else "no")
    assert "Written for:" in header(path)
