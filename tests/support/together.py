"""Processes started at once (forked, so that they share the test's imports), for the races
of several writers or starters on one store."""

from __future__ import annotations

import multiprocessing
import queue
from typing import Any, Callable


def run_together(target: Callable[..., Any], argsets: list[tuple],
                 timeout_s: float = 60) -> tuple[list[int | None], list[Any]]:
    """One process per argset, each running target(*argset, barrier, results): the barrier
    lets them start their race together, and each may put its outcome in results. Returns
    the exit codes and the outcomes, once every process has ended (or timeout_s)."""
    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(len(argsets)), context.Queue()
    started = [context.Process(target=target, args=(*argset, barrier, results))
               for argset in argsets]
    for process in started:
        process.start()
    for process in started:
        process.join(timeout_s)
    outcomes = []
    try:  # the children have ended: what they put is in the pipe already
        while True:
            outcomes.append(results.get(timeout=0.05))
    except queue.Empty:
        pass
    return [process.exitcode for process in started], outcomes
