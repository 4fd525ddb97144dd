"""`guestbench worker`: one host of the pool. It registers the host (name, labels, facts),
says it is alive every HEARTBEAT_S, puts back in the queue any job that a previous worker
of this host left half done, then runs the jobs queued for this host, one at a time."""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

from procrastinate import utils

from guestbench import host as host_facts
from guestbench.process import proc
from guestbench.pool import queue
from guestbench.store import pool as pool_rows

HEARTBEAT_S = 10.0


def serve(store, name: str, labels: list[str], allow: list[str], logs: Path,
          wait: bool = True) -> None:
    """Run the worker until it is stopped (SIGINT, SIGTERM), or, with wait=False, until
    this host's queue is empty."""
    _log_in_one_line()
    app = queue.app_for(str(store.engine.url.render_as_string(hide_password=False)), logs,
                        allow)
    queue.ensure_schema(store.engine, app)
    pool_rows.register_host(store.engine, name, labels, host_facts.collect().facts, allow,
                            proc.identity())
    stop = threading.Event()
    beating = threading.Thread(target=_beat, args=(store, name, stop), daemon=True,
                               name="heartbeat")
    beating.start()
    try:
        with app.open():
            recover(app, name)
        app.run_worker(queues=[queue.queue_of(name)], concurrency=1, name=name, wait=wait,
                       delete_jobs="never")
    finally:
        stop.set()
        beating.join(5)


def recover(app, name: str) -> list[int]:
    """Jobs of this host's queue still marked as being done: only this host's worker takes
    them, so the worker that took them is gone (killed, or its host rebooted). They go back
    in the queue, and run again; their campaigns resume."""
    stalled = app.job_manager.list_jobs(queue=queue.queue_of(name), status="doing")
    for job in stalled:
        app.job_manager.retry_job_by_id(job.id, utils.utcnow())
    return [job.id for job in stalled]


def _beat(store, name: str, stop: threading.Event) -> None:
    while not stop.wait(HEARTBEAT_S):
        try:
            pool_rows.heartbeat(store.engine, name)
        except Exception:  # noqa: BLE001 - the store may be away for a while; the next beat says so
            pass


class _OneLine(logging.Filter):
    """The queue's and the connection pool's messages on stderr, one line each: while the
    store is away (a PostgreSQL restart) procrastinate's listener logs every failed
    reconnection with a traceback; its cause's first line says all there is to say."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            error = record.exc_info[1]
            while error.__cause__ is not None:
                error = error.__cause__
            first = (str(error).strip().splitlines() or [type(error).__name__])[0]
            record.msg, record.args = f"{record.getMessage()}: {first}", ()
            record.exc_info, record.exc_text = None, None
        record.msg, record.args = " ".join(record.getMessage().split()), ()
        return True


def _log_in_one_line() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("guestbench: worker: %(asctime)s %(name)s: "
                                           "%(message)s", "%H:%M:%S"))
    handler.addFilter(_OneLine())
    handler.setLevel(logging.WARNING)
    root = logging.getLogger()
    if not any(isinstance(h, logging.StreamHandler) and any(isinstance(f, _OneLine)
               for f in h.filters) for h in root.handlers):
        root.addHandler(handler)
