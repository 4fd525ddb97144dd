"""The host pool for real, on the suite's PostgreSQL server: three workers with their own
names and labels (three processes of this one machine, standing for three hosts), a plan
submitted to them, a worker killed with SIGKILL mid-campaign and started again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.support.postgres import PORT

PLAN = """\
[campaign]
repeat = {repeat}

[[environment]]
preset = "native"

[[workload]]
name = "getpid"
"""


class Pool:
    def __init__(self, url: str, folder: Path) -> None:
        self.url, self.folder, self.workers = url, folder, {}
        self.engine = sa.create_engine(url)

    def guestbench(self, *args: str, url: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "guestbench", *args, "--db",
                               url or self.url],
                              capture_output=True, text=True, cwd=self.folder, timeout=120)

    def start(self, name: str, labels: str = "", url: str | None = None) -> None:
        log = open(self.folder / f"{name}.log", "a")
        self.workers[name] = subprocess.Popen(
            [sys.executable, "-m", "guestbench", "worker", "--db", url or self.url, "--name", name,
             "--labels", labels, "--logs", str(self.folder / "logs")],
            stdout=log, stderr=subprocess.STDOUT, cwd=self.folder, start_new_session=True)

    def query(self, sql: str) -> list[tuple]:
        with self.engine.connect() as connection:
            return [tuple(row) for row in connection.execute(sa.text(sql))]

    def wait_for(self, condition, seconds: float = 120) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                if condition():
                    return
            except sa.exc.SQLAlchemyError:
                pass  # tables not made yet
            time.sleep(0.2)
        raise AssertionError(
            f"not within {seconds} s; campaigns {self.query('select id, status from campaign')}"
            f", jobs {self.query('select id, status from procrastinate_jobs')}; worker logs: "
            + " | ".join((self.folder / f"{name}.log").read_text()[-300:]
                         for name in self.workers))

    def stop(self) -> None:
        for process in self.workers.values():
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in self.workers.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        self.engine.dispose()


@pytest.fixture
def pool(postgres_url, tmp_path):
    started = Pool(postgres_url, tmp_path)
    yield started
    started.stop()


def test_a_plan_submitted_by_label_runs_once_on_each_host_with_the_label(pool) -> None:
    for name, labels in (("alpha", "kvm"), ("beta", "kvm,xen-dom0"), ("gamma", "xen-dom0")):
        pool.start(name, labels)
    pool.wait_for(lambda: len(pool.query("select name from pool_host")) == 3, 60)
    listed = pool.guestbench("hosts")
    assert listed.returncode == 0 and all(name in listed.stdout
                                          for name in ("alpha", "beta", "gamma"))
    (pool.folder / "small.toml").write_text(PLAN.format(repeat=3))
    submitted = pool.guestbench("submit", "small.toml", "--labels", "kvm")
    assert submitted.returncode == 0, submitted.stderr
    assert "queued on alpha, beta" in submitted.stdout
    pool.wait_for(lambda: pool.query("select count(*) from campaign where status = 'finished'")
                  == [(2,)])
    assert sorted(pool.query("select c.pool_host, count(*) from run r join campaign c "
                             "on c.id = r.campaign_id group by c.pool_host")) == [
        ("alpha", 3), ("beta", 3)]
    refused = pool.guestbench("submit", "small.toml", "--hosts", "delta")
    assert refused.returncode == 2 and "delta not in the pool" in refused.stderr


def test_a_worker_killed_mid_campaign_takes_its_job_up_again_when_it_restarts(pool) -> None:
    pool.start("alpha")
    pool.wait_for(lambda: pool.query("select name from pool_host") == [("alpha",)], 60)
    (pool.folder / "long.toml").write_text(PLAN.format(repeat=20))
    assert pool.guestbench("submit", "long.toml", "--hosts", "alpha").returncode == 0
    pool.wait_for(lambda: pool.query("select count(*) from run")[0][0] >= 5)
    pool.workers["alpha"].send_signal(signal.SIGKILL)  # the worker alone, by its pid
    pool.workers["alpha"].wait()
    # its campaign's guestbench ends with it (SIGTERM on its parent's death): interrupted
    pool.wait_for(lambda: pool.query("select status from campaign") == [("interrupted",)], 30)
    assert pool.query("select status from procrastinate_jobs") == [("doing",)]
    pool.start("alpha")
    pool.wait_for(lambda: pool.query("select status from procrastinate_jobs") == [("succeeded",)])
    assert pool.query("select status from campaign") == [("finished",)]
    rows = pool.query("select repetition, count(*), min(status) from run group by repetition "
                      "order by repetition")
    assert rows == [(repetition, 1, "ok") for repetition in range(20)]


EXEC_PLAN = PLAN.format(repeat=1) + """
[[workload]]
name = "exec"
label = "marker"
argv = ["touch", "{marker}"]

[[workload.metrics]]
name = "none"
regex = '(?P<value>[0-9]+)'
unit = "s"
better = "lower"
"""


def test_a_worker_without_allow_refuses_an_exec_plan_and_runs_nothing(pool) -> None:
    marker = pool.folder / "ran"
    pool.start("alpha")
    pool.wait_for(lambda: pool.query("select name from pool_host") == [("alpha",)], 60)
    (pool.folder / "exec.toml").write_text(EXEC_PLAN.format(marker=marker))
    assert pool.guestbench("submit", "exec.toml", "--hosts", "alpha").returncode == 0
    pool.wait_for(lambda: pool.query("select status from procrastinate_jobs") == [("failed",)])
    (refusals,) = pool.query("select refusals from campaign_group")[0]
    assert refusals["alpha"].startswith("unsupported: this worker is not allowed to run exec")
    assert "--allow exec" in refusals["alpha"]
    assert pool.query("select count(*) from campaign") == [(0,)]
    assert not marker.exists()


def test_the_load_test_in_small_loses_no_row(tmp_path) -> None:
    """benchmarks/pool_load.py with 5 workers (the suite's small version of the 50-worker
    load test): every job ends, every campaign holds each of its runs once."""
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "pool_load.py"
    done = subprocess.run([sys.executable, str(script), "--workers", "5", "--repeat", "2"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    figures = dict(line.split(None, 1) for line in done.stdout.splitlines() if line.strip())
    assert figures["jobs"] == "{'succeeded': 5}"
    assert (figures["campaigns"], figures["runs"], figures["lost_or_doubled"]) == ("5", "10", "[]")


def test_roles_of_a_worker_and_a_submitter_do_their_job_and_no_more(pool, postgres_server):
    import psycopg

    suffix = Path(pool.folder).name[-12:].replace("-", "_").lower()
    roles = {kind: f"gb_{kind}_{suffix}" for kind in ("worker", "submitter")}
    for role in roles.values():
        postgres_server.execute(f'CREATE ROLE "{role}" LOGIN')
    as_role = {kind: pool.url.replace("postgres@", f"{role}@", 1)
               for kind, role in roles.items()}
    try:
        for kind, role in roles.items():
            granted = pool.guestbench("grants", role, "--as", kind, "--apply")
            assert granted.returncode == 0, granted.stderr
        pool.start("alpha", url=as_role["worker"])
        pool.wait_for(lambda: pool.query("select name from pool_host") == [("alpha",)], 60)
        (pool.folder / "small.toml").write_text(PLAN.format(repeat=2))
        submitted = pool.guestbench("submit", "small.toml", "--hosts", "alpha",
                                    url=as_role["submitter"])
        assert submitted.returncode == 0, submitted.stderr
        pool.wait_for(lambda: pool.query("select status from campaign") == [("finished",)])
        assert pool.query("select count(*) from run where status = 'ok'") == [(2,)]
        assert pool.query("select submitted_by from campaign_group") == [(roles["submitter"],)]
        refused = {"submitter": ("run", "--env", "native", "--workload", "getpid", "--quiet"),
                   "worker": ("submit", "small.toml", "--hosts", "alpha")}
        for kind, args in refused.items():
            done = pool.guestbench(*args, url=as_role[kind])
            assert done.returncode == 2 and f"the database role {roles[kind]!r} may not" \
                in done.stderr and "guestbench grants" in done.stderr, done.stderr
        assert pool.query("select count(*) from campaign") == [(1,)]
        search_path = pool.url.rsplit("search_path%3D", 1)[1]
        denied = {"worker": ["DROP TABLE run", "DELETE FROM campaign", "TRUNCATE sample",
                             "CREATE TABLE mine (i int)", "UPDATE campaign SET plan = '{}'",
                             "DELETE FROM campaign_group", "DELETE FROM procrastinate_jobs"],
                  "submitter": ["INSERT INTO run (campaign_id) VALUES (1)",
                                "DELETE FROM campaign", "UPDATE procrastinate_jobs SET "
                                "status = 'failed'", "DROP TABLE campaign_group"]}
        for kind, statements in denied.items():
            for statement in statements:
                with psycopg.connect(host=str(postgres_server.folder), port=PORT,
                                     user=roles[kind], dbname="guestbench_tests",
                                     options=f"-csearch_path={search_path}") as connection:
                    with pytest.raises(psycopg.errors.InsufficientPrivilege):
                        connection.execute(statement)
    finally:
        pool.stop()
        for role in roles.values():
            postgres_server.execute(f'DROP OWNED BY "{role}"', database="guestbench_tests")
            postgres_server.execute(f'DROP ROLE "{role}"')


def test_a_postgresql_restart_mid_campaign_loses_nothing_and_the_worker_goes_on(
        pool, postgres_server) -> None:
    pool.start("alpha")
    pool.wait_for(lambda: pool.query("select name from pool_host") == [("alpha",)], 60)
    (pool.folder / "two.toml").write_text(PLAN.format(repeat=15) + '\n[[workload]]\n'
                                          'name = "sched_yield"\n')
    assert pool.guestbench("submit", "two.toml", "--hosts", "alpha").returncode == 0
    pool.wait_for(lambda: pool.query("select count(*) from run")[0][0] >= 6)
    pool.engine.dispose()
    postgres_server.stop()
    try:
        # 5 s: past the store's first retries (0.5, 1, 2 s: the worker says so in its log),
        # back before the fourth (4 s more), so the campaign goes on ~8 s after the stop
        time.sleep(5)
    finally:
        postgres_server.start()
    pool.wait_for(lambda: pool.query("select status from procrastinate_jobs") == [("succeeded",)])
    assert pool.workers["alpha"].poll() is None, "the worker ended with the server"
    assert pool.query("select status from campaign") == [("finished",)]
    rows = pool.query("select workload, repetition, count(*) from run where status = 'ok' "
                      "group by workload, repetition")
    assert len(rows) == 30 and all(count == 1 for _, _, count in rows)
    log = (pool.folder / "alpha.log").read_text()
    assert "Traceback" not in log and "guestbench: worker:" in log  # one line per message
