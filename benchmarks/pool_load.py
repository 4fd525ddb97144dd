#!/usr/bin/env python3
"""The host pool under load: N workers on one PostgreSQL, a plan submitted to all of them.

Starts a private PostgreSQL server (tests/support/postgres.py), N `guestbench worker`
processes named w01..wNN with the label `sim`, submits one plan (native getpid, --repeat
R) with `--labels sim`, and waits for every job. It reports:

  - runs stored per second, from the submit to the last job's end, over all workers;
  - each job's queue latency, from its `deferred` event to its `started` event
    (procrastinate_events), as median and maximum;
  - lost rows: every campaign must hold R runs, each repetition once.

The workers are processes of this one machine, standing for hosts: on 2 CPUs they take
turns, so the figures measure the pool's machinery (queue, store writes), not hosts.

    .venv/bin/python benchmarks/pool_load.py [--workers 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402

from tests.support import postgres  # noqa: E402

PLAN = """\
[campaign]
name = "load"
repeat = {repeat}

[[environment]]
preset = "native"

[[workload]]
name = "getpid"
min_time_s = 0.005
values = 1
"""


def run(workers: int, repeat: int, folder: Path, timeout_s: float = 1800) -> dict:
    """The load test; returns its figures (raises AssertionError on a lost or doubled row)."""
    server = postgres.start()  # in the system temporary folder: the postgres user reaches it
    started: list[subprocess.Popen] = []
    try:
        url = server.create_database("pool")
        guestbench = [sys.executable, "-m", "guestbench"]
        from guestbench import store
        store.open(url).engine.dispose()  # the schema, before N workers race to make it
        engine = sa.create_engine(url)
        for index in range(1, workers + 1):
            started.append(start_worker(url, f"w{index:02d}", "sim", folder))

        def query(sql: str) -> list[tuple]:
            return rows(engine, sql)

        deadline = time.monotonic() + timeout_s
        while len(query("SELECT name FROM pool_host")) < workers:
            assert time.monotonic() < deadline, "the workers did not all register"
            time.sleep(0.5)
        (folder / "load.toml").write_text(PLAN.format(repeat=repeat))
        began = time.monotonic()
        submitted = subprocess.run([*guestbench, "submit", "load.toml", "--db", url,
                                    "--labels", "sim"], capture_output=True, text=True,
                                   cwd=folder)
        assert submitted.returncode == 0, submitted.stderr
        while True:
            states = dict(query("SELECT status, count(*) FROM procrastinate_jobs GROUP BY 1"))
            if sum(states.get(state, 0) for state in ("succeeded", "failed")) == workers:
                break
            assert time.monotonic() < deadline, f"jobs not done in time: {states}"
            time.sleep(0.5)
        seconds = time.monotonic() - began
        latencies = [float(row[0]) for row in query(
            "SELECT extract(epoch FROM s.at - d.at) FROM procrastinate_events d "
            "JOIN procrastinate_events s ON s.job_id = d.job_id AND s.type = 'started' "
            "WHERE d.type = 'deferred'")]
        per_campaign = query("SELECT c.pool_host, count(r.id), count(DISTINCT r.repetition) "
                             "FROM campaign c LEFT JOIN run r ON r.campaign_id = c.id "
                             "GROUP BY c.pool_host")
        engine.dispose()
        lost = [row for row in per_campaign if row[1] != repeat or row[2] != repeat]
        figures = {"workers": workers, "jobs": dict(states), "campaigns": len(per_campaign),
                   "runs": sum(row[1] for row in per_campaign), "seconds": seconds,
                   "runs_per_s": sum(row[1] for row in per_campaign) / seconds,
                   "latency_median_s": statistics.median(latencies),
                   "latency_max_s": max(latencies), "lost_or_doubled": lost}
        assert len(per_campaign) == workers and not lost, figures
        return figures
    finally:
        stop_workers(started)
        server.remove()


def start_worker(url: str, name: str, labels: str, folder: Path) -> subprocess.Popen:
    """`guestbench worker` in its own session (so that its group can be ended), its output
    in folder/NAME.log."""
    log = open(folder / f"{name}.log", "a")
    return subprocess.Popen([sys.executable, "-m", "guestbench", "worker", "--db", url,
                             "--name", name, "--labels", labels, "--logs", str(folder / "logs")],
                            stdout=log, stderr=subprocess.STDOUT, cwd=folder,
                            start_new_session=True)


def stop_workers(started: list[subprocess.Popen]) -> None:
    """SIGTERM to each worker's process group, SIGKILL after 60 s."""
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in started:
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def rows(engine: sa.Engine, sql: str) -> list[tuple]:
    with engine.connect() as connection:
        return [tuple(row) for row in connection.execute(sa.text(sql))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workers", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="guestbench-load-") as folder:
        figures = run(args.workers, args.repeat, Path(folder))
    for key, value in figures.items():
        print(f"{key:18} {value:.2f}" if isinstance(value, float) else f"{key:18} {value}")


if __name__ == "__main__":
    main()
