"""A campaign's life around the runner (runner/lifecycle.py) and its progress on stderr
(runner/progress_bar.py), apart from the command line that calls them."""

from __future__ import annotations

import io
import signal

from rich.console import Console
from rich.progress import Progress as Bar

from guestbench.process import stopping
from guestbench.runner import lifecycle, progress_bar
from guestbench.runner.outcomes import Outcome
from tests.support.cli import GOOD_FAKE_PLAN, invoke


def test_quiet_progress_still_says_the_host_s_warnings():
    said: list[str] = []
    with progress_bar.shown(True, said.append) as progress:
        progress.host_warning("load average 2.7")
        progress.run_finished("vm", "getpid", Outcome("failed", "no"))
    assert said == ["guestbench: warning: load average 2.7"]


def test_the_bar_says_a_cell_s_refusal_once_and_cuts_a_long_reason():
    shown = io.StringIO()
    with Bar(console=Console(file=shown, width=200, color_system=None)) as bar:
        progress = progress_bar.Drawn(bar)
        progress.start(4)
        for _ in range(3):
            progress.run_finished("vm", "fio", Outcome("unsupported", "no disk"))
        progress.run_finished("vm", "getpid", Outcome("failed", "x" * 1000))
    lines = shown.getvalue().splitlines()
    assert sum("vm fio: unsupported: no disk" in line for line in lines) == 1
    failed = "".join(line for line in lines if "x" * 10 in line or "report --detail" in line)
    assert failed.count("x") == progress_bar.REASON_CHARS
    assert "(the whole reason: report --detail)" in failed


def test_a_stopped_campaign_exits_as_the_shell_expects():
    assert stopping.Stopped("stopped", "SIGTERM").exit_code == 143
    assert stopping.Stopped("stopped", "SIGINT").exit_code == 130


def test_what_the_default_campaign_leaves_out_says_how_to_add_it():
    lines = lifecycle.left_out(True, True)
    assert any("--env native,qemu-tcg" in line for line in lines)
    assert all(len(row) <= 100 for line in lines for row in line.splitlines())
    assert lifecycle.left_out(False, False) == []


def test_the_signal_handlers_are_given_back_after_a_campaign(tmp_path, fake_agent):
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    plan = tmp_path / "good.toml"
    plan.write_text(GOOD_FAKE_PLAN)
    result = invoke(["run", str(plan), "--db", f"sqlite:///{tmp_path / 'x.sqlite'}",
                     "--quiet"], fake_agent)
    assert result.exit_code == 0, result.output
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
