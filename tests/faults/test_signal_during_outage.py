"""SIGTERM while the PostgreSQL store is down, replayed as the fault run of 2026-11-25 found
it: the server stopped after some runs, SIGTERM 3 s later. guestbench kept retrying for
606 s, then exited 1 with a chained traceback, and the campaign stayed 'running'. Now the
signal wins: exit 143 within seconds, one message that says the campaign stays 'running'
until the next run marks it interrupted, and --resume completes it with nothing stored
twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import sqlalchemy as sa

GUESTBENCH = [sys.executable, "-m", "guestbench"]
PLAN = ('[campaign]\nname = "outage"\nrepeat = 12\n\n[[environment]]\npreset = "native"\n\n'
        '[[workload]]\nname = "getpid"\n')


def _runs(url: str) -> list[tuple]:
    """(label, repetition, count) of the stored runs; none before guestbench made its tables."""
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text(
                "select label, repetition, count(*) from run group by label, repetition")).all()
    except sa.exc.ProgrammingError:
        return []
    finally:
        engine.dispose()


def _status(url: str) -> str:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as connection:
            return connection.execute(sa.text("select status from campaign")).scalar_one()
    finally:
        engine.dispose()


def test_sigterm_during_a_store_outage_ends_the_campaign_within_seconds(postgres_server,
                                                                        postgres_url, tmp_path):
    (tmp_path / "plan.toml").write_text(PLAN)
    run = subprocess.Popen([*GUESTBENCH, "run", "plan.toml", "--quiet", "--db", postgres_url,
                            "--logs", str(tmp_path / "logs")], cwd=tmp_path,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(_runs(postgres_url)) < 3:
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "no 3 runs stored within 120 s"
            time.sleep(0.2)
        postgres_server.stop()
        try:
            time.sleep(3)
            os.kill(run.pid, signal.SIGTERM)
            began = time.monotonic()
            out, err = run.communicate(timeout=60)
            took = time.monotonic() - began
        finally:
            postgres_server.start()
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert run.returncode == 143, err
    assert took < 10, f"SIGTERM took {took:.1f} s to end it"
    assert "Traceback" not in err, err
    stopped = [line for line in err.splitlines() if "interrupted by SIGTERM" in line]
    assert len(stopped) == 1 and "the store was unreachable" in stopped[0], err
    assert "--resume" in stopped[0]
    for line in err.splitlines():  # retry messages name the error whole
        if "the store is unreachable (" in line:
            assert line.count("(") == line.count(")"), line
    assert _status(postgres_url) == "running"  # the store was away: nobody could close it
    # --resume marks it interrupted (its process has ended), then completes it
    resumed = subprocess.run([*GUESTBENCH, "run", "--resume", "1", "--quiet", "--db",
                              postgres_url, "--logs", str(tmp_path / "logs")], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert _status(postgres_url) == "finished"
    rows = _runs(postgres_url)
    assert len(rows) == 12 and all(count == 1 for _, _, count in rows), rows
