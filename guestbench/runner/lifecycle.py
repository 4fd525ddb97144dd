"""A campaign's life around the runner: the agent and the store checked, campaigns left
running marked, what a killed guestbench left swept, progress shown, and Ctrl-C or
SIGTERM turned into an interrupted campaign with its finished runs kept."""

from __future__ import annotations

import datetime as dt
import errno
import os
import shlex
import signal
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

from guestbench import agent, environments, store, workloads
from guestbench.analysis import efficiency
from guestbench.errors import InputError
from guestbench.process import proc, reaper, stopping
from guestbench.process.stopping import Stopped
from guestbench.plan import build as plan_build
from guestbench.plan.errors import PlanError
from guestbench.runner import progress_bar, resume
from guestbench.runner.campaign import Interrupted, Runner

Say = Callable[[str], None]  # one line for the person at the terminal (stderr)


class CannotStart(InputError):
    """The campaign cannot begin here: the message names what and the fix (bad input)."""


def run(the_plan, facts, db: str, logs_dir: Path | None, say: Say, quiet: bool = False,
        resumed: dict[str, Any] | None = None, pool: dict[str, Any] | None = None):
    """Runs a validated plan into the store at db, or what a stored campaign (resumed)
    still owes: (the store, the logs folder, the campaign id)."""
    try:
        agent_path = agent.path()
        store.check(db)
        logs_root = logs_folder(logs_dir, db)
        results = store.open(db)
        results.require("run")
        stale = results.mark_abandoned()
    except (agent.AgentMissing, store.StoreError) as error:
        raise CannotStart(str(error)) from None
    for line in reaper.sweep():  # what a guestbench killed with its reaper left
        say(f"guestbench: {line}")
    for left in stale:
        if not resumed or left["id"] != resumed.id:
            say(f"guestbench: campaign {left['id']} ({left['name']!r}) was left running: "
                f"{left['reason']}; now marked interrupted (fix: 'guestbench run "
                f"--resume {left['id']}' completes it)")
    results.on_wait = lambda message: say(f"guestbench: {message}")
    with _signals_interrupt(say, results):
        try:
            stopping.check()  # a signal whose exception was lost while guestbench started
            with progress_bar.shown(quiet, say) as progress:
                runner = Runner(the_plan, results, facts, logs_root, agent_path, progress,
                                pool=pool)
                campaign_id = runner.resume(resumed) if resumed else runner.run()
        except Interrupted as stop:
            if stop.unreachable:
                resume = f"guestbench run --resume {stop.campaign_id} --db {shlex.quote(db)}"
                raise Stopped(f"guestbench: {stop}; the store was unreachable ({stop.unreachable})"
                              f", so the campaign stays 'running' until the next run on it "
                              f"marks it interrupted (fix: once the server is back, '{resume}')",
                              stop.signal_name) from None
            raise Stopped(f"guestbench: {stop}; finished runs are stored in {db} "
                          f"(see 'guestbench report {stop.campaign_id}')",
                          stop.signal_name) from None
        except KeyboardInterrupt as stop:  # before the campaign existed: nothing was stored
            name = str(stop) or "SIGINT"
            raise Stopped(f"guestbench: stopped by {name} before any run", name) from None
    return results, logs_root, campaign_id


def left_out(default_environments: bool, default_workloads: bool) -> list[str]:
    """What a campaign of the default environments or workloads leaves out, and how to add
    it: lines within the 120 columns of the tables."""
    said = [f"not in the default campaign: {preset} ({why}); add it with --env "
            f"native,{preset}" for preset, why in environments.NOT_IN_DEFAULT_CAMPAIGN.items()
            if default_environments]
    said += [f"not in the default campaign: {listed} ({why}); run them with --workload "
             f"{listed}" for listed, why in workloads.NOT_IN_DEFAULT_CAMPAIGN.items()
             if default_workloads]
    return [textwrap.fill(line, width=100, subsequent_indent="  ", break_on_hyphens=False)
            for line in said]


def resumable(selector: str, db: str, facts, say: Say, quiet: bool = False):
    """The stored campaign that `run --resume` names, and its plan, once it may be resumed."""
    try:
        opened = store.open(db, create=False)
        campaign = opened.campaign(selector)
        opened.engine.dispose()
        warning = resume.check(campaign, facts)
        the_plan = plan_build.stored(campaign.plan, f"campaign {campaign.id}")
    except (store.StoreError, resume.NotResumable, PlanError) as error:
        raise CannotStart(str(error)) from None
    if warning:
        say(f"guestbench: warning: {warning}")
    if not quiet:
        say(f"guestbench: resuming campaign {campaign.id} ({campaign.name!r}, "
            f"{campaign.status})")
    return campaign, the_plan


def logs_folder(logs_dir: Path | None, db: str) -> Path:
    """--logs, else guestbench-logs beside a SQLite file, else ./guestbench-logs; created
    now, and shown writable by a file made and removed in it: before the store is opened,
    so that a folder no run could write its logs into stores no campaign (it once stored
    one 'failed', after a traceback per run)."""
    if logs_dir is None:
        database = db.removeprefix("sqlite:///") if db.startswith("sqlite:///") else ""
        base = Path(database).resolve().parent if database not in ("", ":memory:") else Path(".")
        logs_dir = base / "guestbench-logs"
    try:
        logs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CannotStart(_unwritable_logs(logs_dir, "cannot create the log folder",
                                           error)) from None
    try:
        handle, probe = tempfile.mkstemp(prefix=".guestbench-probe-", dir=logs_dir)
        os.close(handle)
        os.unlink(probe)
    except OSError as error:
        raise CannotStart(_unwritable_logs(logs_dir, "cannot write in the log folder",
                                           error)) from None
    return logs_dir


def _unwritable_logs(logs_dir: Path, what: str, error: OSError) -> str:
    """What is wrong with the logs folder, and the fix; nothing was run or stored."""
    if error.errno == errno.EROFS:
        why, fix = "it is on a read-only filesystem", "--logs DIR on a writable filesystem"
    elif error.errno in (errno.EACCES, errno.EPERM):
        why, fix = "not writable by this user", "make it writable, or --logs DIR you can write"
    elif error.errno == errno.ENOSPC:
        why, fix = "no space left on its disk", "free some space, or --logs DIR on another disk"
    else:
        why, fix = error.strerror or str(error), "--logs DIR you can write"
    return (f"--logs {str(logs_dir)!r}: {what} ({why}); nothing was run or stored "
            f"(fix: {fix})")


class _signals_interrupt:
    """While a campaign runs, the first Ctrl-C or SIGTERM stops it; a second one, while the
    runner ends its guests and marks the campaign interrupted, is noted and does not cut
    that short (a campaign left 'running' with its guests alive would be the result)."""

    def __init__(self, say: Say, results) -> None:
        self.say = say
        self.results = results  # its writes stop waiting for a lost server

    def __enter__(self) -> None:
        self.previous = {number: signal.signal(number, self._first)
                         for number in (signal.SIGTERM, signal.SIGINT)}

    def __exit__(self, *exc_info) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)

    def _first(self, signum, frame) -> None:
        for number in self.previous:
            signal.signal(number, self._again)
        self.results.stopping = True
        proc.interrupt(stopping.of(signum))

    def _again(self, signum, frame) -> None:
        self.say(f"guestbench: {signal.Signals(signum).name} again: finishing the teardown "
                 "first")


def time_spent(opened, campaign_id: int, wall_s: float,
               started_at: "dt.datetime | None" = None) -> str:
    """Where the command's wall_s seconds went, in one line wrapped for a terminal
    (analysis/efficiency.py); started_at: the command's start, which splits off the time
    spent preparing before its first run, and leaves out the runs of a resumed campaign
    that an earlier command made (their time is not in wall_s)."""
    runs = opened.runs(campaign_id)
    preparing_s = 0.0
    if started_at is not None:
        # this command's runs only: a resumed campaign's earlier runs were another's time
        runs = [run for run in runs if run.started_at is None or run.started_at >= started_at]
        first = min((run.started_at for run in runs if run.started_at is not None),
                    default=None)
        if first is not None:
            preparing_s = min(max((first - started_at).total_seconds(), 0.0), wall_s)
    spent = efficiency.of(wall_s, runs,
                          opened.samples(campaign_id).of_metrics(
                              *efficiency.metrics(workloads.HOST_TIMED)),
                          preparing_s, workloads.HOST_TIMED)
    campaign_s = efficiency.campaign_wall(opened.campaign(str(campaign_id)))
    return textwrap.fill(spent.line(campaign_s), width=80, break_on_hyphens=False)
