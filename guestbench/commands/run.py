"""guestbench run: a plan (or the quick suite) run and stored, then its summary."""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from pathlib import Path

import click

from guestbench.commands.arguments import BadInput, db_option, names, say
from guestbench.commands.report import show_report
from guestbench.report import formats

EXIT_RUNS_NOT_OK = 1  # the campaign ended, stored whole, and some run did not end ok
PLAN_TABLES = "plan"  # report --table plan: the plan's [[table]] entries (report/select.py)


@click.command()
@click.argument("plan_file", required=False, type=click.Path(path_type=Path))
@click.option("--env", "env_names", help="environments to run, comma-separated (presets, or names in PLAN)")
@click.option("--workload", "workload_names", help="workloads to run, comma-separated")
@click.option("--repeat", metavar="N|auto",
              help="fresh runs of each workload in each environment, or auto: until the median "
                   "is known to +/-2% (see [campaign.auto])  [default: auto for micro "
                   "workloads, 5 for the others]")
@click.option("--timeout", "timeout_s", type=float, help="per-run timeout, seconds")
@click.option("--name", help="campaign name")
@db_option
@click.option("--logs", "logs_dir", type=click.Path(path_type=Path),
              help="where run logs go  [default: guestbench-logs beside the SQLite file, else ./]")
@click.option("--quiet", is_flag=True, help="no progress bar and no table")
@click.option("--detail", is_flag=True, help="every metric and table at the end, not only the "
                                             "summary")
@click.option("--resume", "resume_campaign", metavar="CAMPAIGN",
              help="complete an interrupted or killed campaign (id or name) with its stored "
                   "plan: only the runs it still owes")
@click.option("--pool-group", type=int, hidden=True)  # set by a pool worker (pool/queue.py)
@click.option("--pool-host", hidden=True)
def run(plan_file: Path | None, env_names: str | None, workload_names: str | None,
        repeat: str | None, timeout_s: float | None, name: str | None, db: str,
        logs_dir: Path | None, quiet: bool, detail: bool, resume_campaign: str | None,
        pool_group: int | None, pool_host: str | None) -> None:
    """Run PLAN_FILE (TOML), or the quick suite on every preset, and store every sample."""
    # deferred, each, for --help and the other commands: what a campaign needs
    from guestbench import host  # deferred: 13 ms
    from guestbench.plan import build as plan_build, schema  # deferred: pydantic, 160 ms
    from guestbench.process import proc  # deferred: 8 ms
    from guestbench.runner import lifecycle  # deferred: the runner, kinds, workloads, 350 ms

    started = time.monotonic()  # the wall time a user waits: probes and report included
    started_at = dt.datetime.now(dt.timezone.utc)
    proc.die_with_parent()  # started by a pool worker: ends (SIGTERM) when the worker does
    facts = host.collect()
    if resume_campaign is not None:
        given = [flag for flag, value in (
            ("PLAN", plan_file), ("--env", env_names), ("--workload", workload_names),
            ("--repeat", repeat), ("--timeout", timeout_s), ("--name", name)) if value is not None]
        if given:
            raise BadInput(f"--resume takes the campaign's plan from the store, and "
                           f"{', '.join(given)} would change it (fix: drop {', '.join(given)})")
        resumed, the_plan = lifecycle.resumable(resume_campaign, db, facts, say, quiet)
    else:
        resumed, overrides = None, schema.Overrides(
            names(env_names, "--env"), names(workload_names, "--workload"),
            schema.repeat_flag(repeat), timeout_s, name)
        the_plan = (plan_build.load(plan_file, facts, overrides) if plan_file
                    else plan_build.from_flags(facts, overrides))
    pool = {"group_id": pool_group, "pool_host": pool_host} if pool_group else None
    results, logs_root, campaign_id = lifecycle.run(the_plan, facts, db, logs_dir, say, quiet,
                                                    resumed, pool)
    if not quiet:
        show_summary(db, campaign_id, results, detail, bool(the_plan.tables))
    spent = lifecycle.time_spent(results, campaign_id, time.monotonic() - started, started_at)
    if spent:
        say(spent)
    say(f"campaign {campaign_id} stored in {db}; logs in {logs_root}")
    if resumed is None:
        for line in lifecycle.left_out(plan_file is None and not env_names,
                                       plan_file is None and not workload_names):
            say(line)
    verdict = not_ok_line(results.runs(campaign_id, only=("status",)))
    if verdict:
        say(verdict)
        raise click.exceptions.Exit(EXIT_RUNS_NOT_OK)


def show_summary(db: str, campaign_id: int, results, detail: bool, planned: bool) -> None:
    """The campaign's summary (with --detail, every table), then the plan's [[table]]
    entries: the tables its author asked for, which the summary alone leaves out (a startup
    table's percentiles, a plan's labels and units); as `report --table plan` draws them."""
    show_report(db, str(campaign_id), None, formats.DEFAULT, False, None, detail, results)
    if planned and not detail:  # --detail has drawn every table already
        show_report(db, str(campaign_id), None, formats.DEFAULT, False, None, False, results,
                    chosen=((PLAN_TABLES,), False, False))


def not_ok_line(runs) -> str | None:
    """The last line of a campaign some of whose runs did not end ok (failed, timed out,
    crashed...): how many of its runs, by status; None when every run ended ok. A resumed
    campaign is judged whole, its earlier runs included."""
    from guestbench.runner.outcomes import ENDED_OK  # deferred: with the runner, above

    not_ok = Counter(run.status for run in runs if run.status not in ENDED_OK)
    if not not_ok:
        return None
    said = ", ".join(f"{count} {status}" for status, count in not_ok.most_common())
    return (f"guestbench: {sum(not_ok.values())} of {len(runs)} runs did not end ok "
            f"({said}): exit {EXIT_RUNS_NOT_OK}")
