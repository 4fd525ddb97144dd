"""run --resume after a real guestbench is killed with SIGKILL mid-campaign (native
environment): the campaign completes with every repetition stored once, on SQLite and
on PostgreSQL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
import sqlalchemy as sa

REPEAT = 12


def stored_runs(url: str) -> list[tuple[str, str, int, str]]:
    engine = sa.create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text(
                "select e.name, r.label, r.repetition, r.status from run r "
                "join environment e on e.id = r.environment_id order by r.id"))]
    finally:
        engine.dispose()


def guestbench(*args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "guestbench", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, **kwargs)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_campaign_killed_by_sigkill_is_resumed_with_no_run_twice(backend, request,
                                                                   tmp_path) -> None:
    url = (f"sqlite:///{tmp_path / 'store.sqlite'}" if backend == "sqlite"
           else request.getfixturevalue("postgres_url"))
    first = guestbench("run", "--env", "native", "--workload", "getpid,sched_yield",
                       "--repeat", str(REPEAT), "--quiet", "--db", url, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and first.poll() is None:
            try:
                if len(stored_runs(url)) >= 6:
                    break
            except sa.exc.SQLAlchemyError:
                pass  # the store's tables are not there yet
            time.sleep(0.1)
        assert first.poll() is None, f"the campaign ended before it could be killed: " \
                                     f"{first.communicate()[1][-500:]}"
        os.killpg(first.pid, signal.SIGKILL)  # guestbench and whatever it started
        first.wait()
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    killed_at = stored_runs(url)
    assert 6 <= len(killed_at) < 2 * REPEAT

    second = guestbench("run", "--resume", "1", "--quiet", "--db", url, cwd=tmp_path)
    _, stderr = second.communicate(timeout=120)
    assert second.returncode == 0, stderr
    runs = stored_runs(url)
    rows = Counter((env, label, repetition) for env, label, repetition, _status in runs)
    assert rows == Counter({("native", label, repetition): 1
                            for label in ("getpid", "sched_yield") for repetition in range(REPEAT)})
    assert {status for *_, status in runs} == {"ok"}
    assert runs[:len(killed_at)] == killed_at  # what the killed process stored is kept as it was
