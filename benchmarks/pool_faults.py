#!/usr/bin/env python3
"""A host pool through its two faults, counted: three workers, one plan submitted to all of
them, one worker killed with SIGKILL mid-campaign and started again, and the PostgreSQL
server stopped for 20 s while the others run.

Starts a private PostgreSQL server (tests/support/postgres.py) and three `guestbench
worker` processes: alpha (labels kvm), beta (kvm,xen-dom0) and gamma (xen-dom0). It
submits a plan (native getpid and sched_yield, --repeat R) with --hosts alpha,beta,gamma,
and then:

  - once beta has stored 5 runs, SIGKILL to beta's worker alone (by its pid), and beta's
    worker started again;
  - once gamma has stored R/2 runs, the server stopped (fast shutdown) for --outage seconds,
    then started again on the same cluster.

When the three jobs have ended it prints, per host: the campaigns, the runs stored, the
distinct (workload, repetition) pairs among them, and the job's status and attempts; then
`guestbench report --group 1`. Every host must hold 2 x R runs, each pair once.

The workers are processes of this one machine standing for hosts: they share its CPUs.

    .venv/bin/python benchmarks/pool_faults.py [--repeat 30] [--outage 20]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sqlalchemy as sa  # noqa: E402
from pool_load import rows, start_worker, stop_workers  # noqa: E402

from tests.support import postgres  # noqa: E402

PLAN = """\
[campaign]
name = "faults"
repeat = {repeat}

[[environment]]
preset = "native"

[[workload]]
name = "getpid"

[[workload]]
name = "sched_yield"
"""
HOSTS = {"alpha": "kvm", "beta": "kvm,xen-dom0", "gamma": "xen-dom0"}


def wait_for(condition, what: str, seconds: float = 600) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            if condition():
                return
        except sa.exc.SQLAlchemyError:
            pass  # the server is away, or the tables are not made yet
        if time.monotonic() > deadline:
            raise SystemExit(f"not within {seconds:g} s: {what}")
        time.sleep(0.2)


def runs_of(engine: sa.Engine, host: str) -> int:
    return rows(engine, "SELECT count(r.id) FROM run r JOIN campaign c ON c.id = r.campaign_id "
                        f"WHERE c.pool_host = '{host}'")[0][0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--outage", type=float, default=20.0)
    args = parser.parse_args()
    server = postgres.start()
    workers: dict[str, subprocess.Popen] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="guestbench-poolfaults-") as name:
            folder = Path(name)
            url = server.create_database("pool")
            engine = sa.create_engine(url, pool_pre_ping=True)
            for host, labels in HOSTS.items():
                workers[host] = start_worker(url, host, labels, folder)
            wait_for(lambda: len(rows(engine, "SELECT name FROM pool_host")) == 3,
                     "three workers registered", 120)
            (folder / "faults.toml").write_text(PLAN.format(repeat=args.repeat))
            submitted = subprocess.run(
                [sys.executable, "-m", "guestbench", "submit", "faults.toml", "--db", url,
                 "--hosts", ",".join(HOSTS)], capture_output=True, text=True, cwd=folder)
            print(submitted.stdout.strip() or submitted.stderr.strip())

            wait_for(lambda: runs_of(engine, "beta") >= 5, "5 runs on beta")
            before = runs_of(engine, "beta")
            workers["beta"].kill()  # the worker alone, by its pid
            workers["beta"].wait()
            print(f"beta's worker killed (SIGKILL) with {before} runs stored; started again")
            workers["beta"] = start_worker(url, "beta", HOSTS["beta"], folder)

            wait_for(lambda: runs_of(engine, "gamma") >= args.repeat, "half of gamma's runs")
            engine.dispose()
            server.stop()
            stopped = time.monotonic()
            print(f"PostgreSQL stopped with gamma at {args.repeat} of {2 * args.repeat} runs")
            time.sleep(args.outage)
            server.start()
            print(f"PostgreSQL started again after {time.monotonic() - stopped:.1f} s")

            wait_for(lambda: rows(engine, "SELECT count(*) FROM procrastinate_jobs WHERE "
                                          "status IN ('succeeded', 'failed')")[0][0] == 3,
                     "the three jobs ended")
            print("\n| host | campaigns (status) | runs | distinct (workload, repetition) | "
                  "job | attempts |")
            print("|---|---|---:|---:|---|---:|")
            for host in HOSTS:
                campaigns = rows(engine, "SELECT id, status FROM campaign WHERE pool_host = "
                                         f"'{host}' ORDER BY id")
                distinct = rows(engine, "SELECT count(DISTINCT (r.workload, r.repetition)) "
                                        "FROM run r JOIN campaign c ON c.id = r.campaign_id "
                                        f"WHERE c.pool_host = '{host}'")[0][0]
                job = rows(engine, "SELECT status, attempts FROM procrastinate_jobs WHERE "
                                   f"queue_name = 'host:{host}'")[0]
                print(f"| {host} | {', '.join(f'{i} ({s})' for i, s in campaigns)} | "
                      f"{runs_of(engine, host)} | {distinct} | {job[0]} | {job[1]} |")
            engine.dispose()
            report = subprocess.run([sys.executable, "-m", "guestbench", "report", "--group",
                                     "1", "--db", url], capture_output=True, text=True,
                                    cwd=folder)
            print()
            print(report.stdout.rstrip() or report.stderr.rstrip())
    finally:
        stop_workers(list(workers.values()))
        server.remove()


if __name__ == "__main__":
    main()
