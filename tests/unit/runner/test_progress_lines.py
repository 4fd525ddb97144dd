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


def test_a_run_longer_than_a_minute_still_gets_a_line_a_minute() -> None:
    """Seed 004 into a log (2026-11-27): lines 86 to 90 s apart, each waiting for a run to
    end. beat(), from the ticking thread, says the run under way once a minute has passed."""
    said, now = [], [0.0]
    lines = Lines(said.append, now=lambda: now[0])
    lines.beat()  # before the campaign starts: nothing
    lines.start(3)
    lines.run_started("tcg", "build", 0)
    for at in (30.0, 58.5):
        now[0] = at
        lines.beat()
    assert said == []
    now[0] = 59.0  # the ticks come a second apart: a tick early, never a minute late
    lines.beat()
    assert said == ["guestbench: progress: 0/3 runs, running tcg build (0:00:59 so far), "
                    "0:00:59 elapsed, ETA -:--:--"]
    now[0] = 70.0
    lines.run_finished("tcg", "build", Outcome(Status.OK))  # 11 s after the last line: none
    lines.run_started("tcg", "boot", 0)
    now[0] = 100.0
    lines.beat()
    assert len(said) == 1
    now[0] = 118.0
    lines.beat()
    assert said[1] == ("guestbench: progress: 1/3 runs, running tcg boot (0:00:48 so far), "
                       "0:01:58 elapsed, ETA -:--:--")
    for run in ("boot", "getpid"):
        lines.run_finished("tcg", run, Outcome(Status.OK))
    now[0] = 400.0
    lines.beat()  # every run ended: the last line was said, no more
    assert said[-1].startswith("guestbench: progress: 3/3 runs, last tcg getpid")
    assert len(said) == 3


def test_the_ticking_thread_beats_and_ends_with_its_block() -> None:
    import threading
    from guestbench.runner.progress_bar import ticking
    beats = threading.Semaphore(0)

    class Counted(Lines):
        def beat(self) -> None:
            beats.release()
    with ticking(Counted(lambda line: None), every_s=0.001):
        assert beats.acquire(timeout=30), "the thread never called beat()"
    assert not any(thread.name == "guestbench-progress" for thread in threading.enumerate())
