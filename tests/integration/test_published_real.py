"""Tables to publish from a campaign recorded for real: a plan with [[table]] entries run
natively, under UML and under QEMU's TCG (KVM probed: here it cannot boot a guest, and the
tables must say so), then its Markdown read as a write-up would paste it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from guestbench import environments

from tests.support.real_environments import prepared, tcg_kernel

pytestmark = pytest.mark.integration
GUESTBENCH = [sys.executable, "-m", "guestbench"]
ENVIRONMENTS = ("native", "uml", "qemu", "kvm")
PLAN = """
[campaign]
name = "published"
baseline = "native"
repeat = 2
timeout_s = 180

[[environment]]
preset = "native"

[[environment]]
name = "uml"
kind = "uml"

[[environment]]
name = "qemu"
kind = "qemu"
accel = "tcg"
kernel = "{kernel}"

[[environment]]
name = "kvm"
kind = "qemu"
accel = "kvm"

[[workload]]
name = "getpid"

[[workload]]
name = "boot"

[[table]]
table = "basic"
environments = ["kvm", "qemu", "uml", "native"]
labels = { kvm = "KVM", qemu = "QEMU" }
decimals = 0

[[table]]
table = "boot-totals"

[[table]]
table = "boot"
"""
INTERVAL = re.compile(r"±|\[\d[\d.]*-|\]\(")  # "±2%", "[1.0-1.2x]", a link "](...)"


def guestbench(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*GUESTBENCH, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=900)


def tables_of(markdown: str) -> dict[str, list[str]]:
    """Each table's lines, from its ### title up to the next, by title."""
    out: dict[str, list[str]] = {}
    title = None
    for line in markdown.splitlines():
        if line.startswith("### "):
            title = line[4:]
            out[title] = []
        elif title is not None:
            out[title].append(line)
    return out


def check_published(lines: list[str]) -> None:
    """Values only, and the table's own footnotes numbered from 1, each mark explained."""
    rows = [line for line in lines if line.startswith("| ")][1:]
    cells = [cell.strip() for row in rows for cell in row.strip("|").split(" | ")[1:]]
    assert not [cell for cell in cells if INTERVAL.search(cell)], cells
    marks = sorted({int(number) for cell in cells for number in re.findall(r"\[(\d+)\]", cell)})
    said = [int(found.group(1)) for line in lines if (found := re.match(r"\[(\d+)\] ", line))]
    assert marks == said == list(range(1, len(said) + 1)), (marks, said, lines)


def test_a_plan_s_tables_as_published(tmp_path, available, host_facts) -> None:
    available("native")
    for name in ("uml", "qemu-tcg"):  # probed, their guest image built; else skipped, saying why
        prepared(host_facts, environments.create(environments.preset_spec(name)))
    (tmp_path / "plan.toml").write_text(PLAN.replace("{kernel}", tcg_kernel()))
    run = guestbench("run", "plan.toml", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    markdown = guestbench("report", "--format", "markdown", cwd=tmp_path)
    assert markdown.returncode == 0, markdown.stderr
    assert max(map(len, markdown.stdout.splitlines())) <= 160
    found = tables_of(markdown.stdout)
    # the setup the tables ran on, then the plan's tables in its order, and nothing else
    assert [title.split(":")[0] for title in found] == ["Setup", "Basic costs", "Boot time",
                                                         "Boot phases"], list(found)
    title, lines = next((title, lines) for title, lines in found.items()
                        if title.startswith("Setup"))
    assert "GiB RAM" in title and "logical CPUs" in title
    assert "TCG (QEMU's emulation)" in "\n".join(lines)
    for lines in found.values():
        check_published(lines)
    basic = next(lines for title, lines in found.items() if title.startswith("Basic"))
    assert basic[1] == "| activity | KVM | QEMU | uml | native |"
    getpid = next(line for line in basic if line.startswith("| getpid |"))
    assert re.fullmatch(r"\| getpid \| (n/a \[\d\]|\d+( \[\d\])?) \| \d+( \[\d\])? \| "
                        r"\d+( \[\d\])? \| \d+( \[\d\])? \|", getpid), getpid
    # every environment of the plan is in both boot tables, native and KVM with why not
    for title, lines in found.items():
        if title.startswith("Boot"):
            text = "\n".join(lines)
            assert all(re.search(rf"\b{env}\b", text) for env in ENVIRONMENTS), (title, text)
    # every table of the campaign, plain, each with its own footnotes
    every = guestbench("report", "--format", "markdown", "--table", "all", "--plain",
                       cwd=tmp_path)
    assert every.returncode == 0, every.stderr
    for title, lines in tables_of(every.stdout).items():
        if not title.startswith(("Statistics", "Clock", "Host checks", "Setup")):
            check_published(lines)
