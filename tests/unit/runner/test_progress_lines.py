"""Progress where stderr is no terminal: an 18-minute campaign printed nothing until it ended
with its output redirected (2026-11-27); now a line a minute, with the ETA."""

from __future__ import annotations

from pathlib import Path

from guestbench.runner.outcomes import Outcome, Status
from guestbench.runner.progress_bar import Lines
from tests.support.cli import invoke


def test_a_line_a_minute_and_one_at_the_end_with_the_eta() -> None:
    said, now = [], [0.0]
    lines = Lines(said.append, now=lambda: now[0])
    lines.start(4)
    now[0] = 10.0
    lines.run_finished("runc", "getpid", Outcome(Status.OK))
    lines.estimate(125)  # the first estimate: how long the campaign will take
    for at in (50.0, 70.0):  # a minute passes between the second run and the third
        now[0] = at
        lines.run_finished("runc", "getpid", Outcome(Status.OK))
    assert said == ["guestbench: progress: 1/4 runs, last runc getpid, 0:00:10 elapsed, "
                    "ETA ~0:02:05",
                    "guestbench: progress: 3/4 runs, last runc getpid, 0:01:10 elapsed, "
                    "ETA ~0:02:05"]
    now[0] = 80.0
    lines.run_finished("runsc", "getpid", Outcome(Status.TIMEOUT, "no record\n in 5 s"))
    assert said[2:] == ["runsc getpid: timeout: no record in 5 s",
                        "guestbench: progress: 4/4 runs, last runsc getpid, 0:01:20 elapsed, "
                        "ETA ~0:02:05"]


def test_a_run_redirected_says_its_progress(tmp_path: Path, fake_agent: Path) -> None:
    plan = tmp_path / "plan.toml"
    plan.write_text('[campaign]\nrepeat = 2\n[[environment]]\nname = "f"\nkind = "fake"\n'
                    '[[workload]]\nname = "getpid"\n')
    result = invoke(["run", str(plan), "--db", f"sqlite:///{tmp_path / 'r.sqlite'}"], fake_agent)
    assert result.exit_code == 0, result.output
    assert "guestbench: progress: 2/2 runs, last f getpid, 0:00:0" in result.stderr
