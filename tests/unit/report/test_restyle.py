"""Names, order, units and decimals at report time: a stored campaign whose plan has no
[[table]] entries is relabelled, re-united and re-ordered by `report --label` and `--style`
alone, without running it again. The only way before (2026-11-27) was [[table]] labels in
the plan and the whole campaign run again."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from guestbench.cli import main
from tests.support.default_campaign import unpacked

STYLE = """\
[report]
labels = { runsc = "gVisor (ptrace)" }
order = ["uml", "runsc", "native"]
units = { "*" = "us" }
decimals = 1
"""


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    return unpacked(tmp_path_factory.mktemp("restyle"))


def report(stored: Path, *args: str):
    return CliRunner().invoke(main, ["report", "2", "--db", f"sqlite:///{stored}", *args],
                              env={"COLUMNS": "200"})


def test_a_stored_campaign_is_relabelled_reordered_and_reunited(stored, tmp_path) -> None:
    style = tmp_path / "style.toml"
    style.write_text(STYLE)
    shown = report(stored, "--style", str(style), "--label", "uml=UML 6.1", "--plain",
                   "--format", "markdown")
    assert shown.exit_code == 0, shown.output
    measured = shown.stdout.split("### Measured")[1].split("\n\n")[1]
    header = measured.splitlines()[0]
    assert header.startswith("| workload | metric | UML 6.1 | gVisor (ptrace) | native |")
    assert "runsc" not in header and "| uml |" not in header
    getpid = next(line for line in measured.splitlines()
                  if line.startswith("| getpid | time per op"))
    assert "(us)" in getpid  # every time row in us, as the style says
    values = getpid.split("|")[3:-1]
    assert all(re.fullmatch(r" \d+\.\d ", value) or "[" in value for value in values), getpid
    native_us = float(values[2].split()[0])
    assert 0.1 < native_us < 0.3  # 179 ns as 0.2 us
    # the terminal's summary takes the labels and the order
    summary = report(stored, "--style", str(style))
    assert summary.exit_code == 0, summary.output
    head = next(line for line in summary.stdout.splitlines() if line.startswith("| workload"))
    assert re.search(r"\|\s+uml\s+\|\s+gVisor \(ptrace\)\s+\|\s+native\s+\|", head), head


@pytest.mark.parametrize("content, args, said", [
    ("[report]\nlabels = { runsx = 'x' }\n", (), "'runsx' is not an environment of this "
                                                 "campaign; did you mean 'runsc'?"),
    ("[report]\nunits = { '*' = 'minutes' }\n", (), "--style"),
    ("[reprot]\n", (), "unknown table 'reprot'"),
    ("[report\n", (), "not TOML"),
    (None, ("--label", "native"), "not ENV=NAME"),
    ("[report]\norder = ['kvm-*']\n", (), "'kvm-*' matches no environment"),
])
def test_bad_style_is_exit_2_naming_what(stored, tmp_path, content, args, said) -> None:
    style = tmp_path / "bad.toml"
    if content is not None:
        style.write_text(content)
        args = ("--style", str(style), *args)
    result = report(stored, *args)
    assert result.exit_code == 2, result.output
    assert said in result.output and "fix:" in result.output
    assert "Traceback" not in result.output
