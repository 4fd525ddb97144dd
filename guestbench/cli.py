"""Commands only: parse arguments, call the pipeline (plan -> run -> store -> report), print.

Heavy libraries (pydantic, SQLAlchemy, rich) are imported inside the commands
so that `guestbench --version` and `--help` answer at once.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import click

from guestbench import __version__

EXIT_BAD_INPUT = 2
DEFAULT_DB = "sqlite:///guestbench.sqlite"


class BadInput(click.ClickException):
    """Bad input anywhere: one message naming what, where and the fix; exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def format_message(self) -> str:
        return self.message


def _names(value: str | None, flag: str) -> tuple[str, ...]:
    if value is None:
        return ()
    names = tuple(name.strip() for name in value.split(",") if name.strip())
    if not names:
        raise BadInput(f"{flag}: {value!r} names nothing (fix: e.g. {flag} native,runc)")
    return names


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="guestbench")
def main() -> None:
    """Measure what an execution environment costs compared with native."""


@main.command()
@click.argument("plan_file", required=False, type=click.Path(path_type=Path))
@click.option("--env", "env_names", help="environments to run, comma-separated (presets, or names in PLAN)")
@click.option("--workload", "workload_names", help="workloads to run, comma-separated")
@click.option("--repeat", type=int, help="fresh runs of each workload in each environment")
@click.option("--timeout", "timeout_s", type=float, help="per-run timeout, seconds")
@click.option("--name", help="campaign name")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="SQLAlchemy URL of the store")
@click.option("--logs", "logs_dir", type=click.Path(path_type=Path),
              help="where run logs go  [default: guestbench-logs beside the SQLite file, else ./]")
@click.option("--quiet", is_flag=True, help="no progress bar and no table")
def run(plan_file: Path | None, env_names: str | None, workload_names: str | None,
        repeat: int | None, timeout_s: float | None, name: str | None, db: str,
        logs_dir: Path | None, quiet: bool) -> None:
    """Run PLAN_FILE (TOML), or the quick suite on every preset, and store every sample."""
    from guestbench import agent, host, plan, store
    from guestbench.runner import Interrupted, Runner

    facts = host.collect()
    overrides = plan.Overrides(_names(env_names, "--env"), _names(workload_names, "--workload"),
                               repeat, timeout_s, name)
    try:
        the_plan = (plan.load(plan_file, facts, overrides) if plan_file
                    else plan.from_flags(facts, overrides))
        agent_path = agent.path()
        store.check(db)
        logs_root = _logs_folder(logs_dir, db)
        results = store.open(db)
    except (plan.PlanError, agent.AgentMissing, store.StoreError) as error:
        raise BadInput(str(error)) from None
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        with _progress(quiet) as progress:
            campaign_id = Runner(the_plan, results, facts, logs_root, agent_path, progress).run()
    except Interrupted as stop:
        click.echo(f"guestbench: {stop}; finished runs are stored in {db} "
                   f"(see 'guestbench report {stop.campaign_id}')", err=True)
        sys.exit(143 if stop.signal_name == "SIGTERM" else 130)
    except KeyboardInterrupt as stop:  # before the campaign existed: nothing was stored
        click.echo(f"guestbench: stopped by {str(stop) or 'SIGINT'} before any run", err=True)
        sys.exit(143 if str(stop) == "SIGTERM" else 130)
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not quiet:
        _print_report(results, str(campaign_id), None, "table", False)
    click.echo(f"campaign {campaign_id} stored in {db}; logs in {logs_root}", err=True)
    if plan_file is None and not env_names:
        from guestbench.environments import NOT_IN_DEFAULT_CAMPAIGN
        for preset, why in NOT_IN_DEFAULT_CAMPAIGN.items():
            click.echo(f"not in the default campaign: {preset} ({why}); add it with "
                       f"--env native,{preset}", err=True)


@main.command()
def envs() -> None:
    """Every environment preset: available on this host, or why not."""
    import time

    from rich.console import Console
    from rich.table import Table

    from guestbench import environments, host

    facts = host.collect()
    table = Table(title=f"Environments on {facts.facts['hostname']} "
                        f"({facts.facts['cpu_model']}, kernel {facts.facts['kernel']})",
                  title_justify="left")
    for column in ("preset", "kind", "options", "available", "probe answer", "probe s"):
        table.add_column(column, overflow="fold")
    for name in environments.PRESETS:
        spec = environments.preset_spec(name)
        began = time.monotonic()
        answer = environments.create(spec).probe(facts)
        options = ", ".join(f"{k}={','.join(v) if isinstance(v, tuple) else v}"
                            for k, v in spec.options().items() if v not in (None, ()))
        table.add_row(name, spec.kind, options, "yes" if answer.available else "no",
                      answer.reason, f"{time.monotonic() - began:.2f}",
                      style=None if answer.available else "yellow")
    Console(width=max(Console().width, 120)).print(table)


@main.command("images")
def images_command() -> None:
    """Cached guest images (kernel + initramfs) of full-system guests."""
    from rich.console import Console
    from rich.table import Table

    from guestbench import images

    rows = images.cached()
    table = Table(title=f"Guest images in {images.cache_root()}", title_justify="left")
    for column in ("id", "kernel", "version", "modules", "tools", "MiB", "created"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["id"], str(row["kernel"]), row["kernel_version"],
                      ",".join(row["modules"]) or "-", ",".join(row["tools"]) or "-",
                      f"{row['size_bytes'] / 2**20:.1f}", str(row["created_at"])[:19])
    Console(width=max(Console().width, 120)).print(table)
    if not rows:
        click.echo("no image yet: one is built when a qemu or uml environment is first probed "
                   "('guestbench envs')")


@main.command()
@click.argument("campaign", required=False)
@click.option("--baseline", help="environment to normalise to  [default: the plan's baseline]")
@click.option("--format", "output_format", default="table", show_default=True,
              type=click.Choice(["table", "markdown", "csv", "json"]))
@click.option("--db", default=DEFAULT_DB, show_default=True, help="SQLAlchemy URL of the store")
@click.option("--all-metrics", is_flag=True, help="also show iterations and array sizes")
@click.option("--list", "list_campaigns", is_flag=True, help="list the stored campaigns")
def report(campaign: str | None, baseline: str | None, output_format: str, db: str,
           all_metrics: bool, list_campaigns: bool) -> None:
    """Show CAMPAIGN (id or name; default: the latest) as tables or raw exports."""
    from guestbench import store

    try:
        results = store.open(db, create=False)
        if list_campaigns:
            for row in results.campaigns():
                click.echo(f"{row['id']:>5}  {row['created_at']:%Y-%m-%d %H:%M}  "
                           f"{row['status']:<11}  {row['name']}")
            return
        _print_report(results, campaign, baseline, output_format, all_metrics)
    except store.StoreError as error:
        raise BadInput(str(error)) from None


def _print_report(results, campaign: str | None, baseline: str | None, output_format: str,
                  all_metrics: bool) -> None:
    from guestbench.report import model

    loaded = model.load(results, campaign, baseline, all_metrics)
    if output_format == "table":
        from rich.console import Console

        from guestbench.report import terminal
        console = Console()
        if not console.is_terminal:  # a file or a pipe: never wrap a cell
            console = Console(width=max(console.width, terminal.width_needed(loaded)))
        terminal.render(loaded, console)
        return
    from guestbench.report import csv, json, markdown
    renderer = {"markdown": markdown, "csv": csv, "json": json}[output_format]
    click.echo(renderer.render(loaded), nl=False)


def _logs_folder(logs_dir: Path | None, db: str) -> Path:
    """--logs, else guestbench-logs beside a SQLite file, else ./guestbench-logs; created now."""
    from guestbench.store import StoreError
    if logs_dir is None:
        database = db.removeprefix("sqlite:///") if db.startswith("sqlite:///") else ""
        base = Path(database).resolve().parent if database not in ("", ":memory:") else Path(".")
        logs_dir = base / "guestbench-logs"
    try:
        logs_dir.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise StoreError(f"--logs {str(logs_dir)!r}: cannot create the log folder "
                         f"({error.strerror}) (fix: name a folder you can write)") from None
    return logs_dir


def _raise_interrupt(signum, frame) -> None:
    raise KeyboardInterrupt("SIGTERM")


class _progress:
    """A rich progress bar with ETA on stderr, or nothing when quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    def __enter__(self):
        from guestbench.runner import Progress
        if self.quiet:
            return Progress()
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                   TimeElapsedColumn, TimeRemainingColumn)
        self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                       console=Console(stderr=True), transient=True)
        self.bar.__enter__()
        bar = self.bar

        class Drawn(Progress):
            def unavailable(self, environment: str, reason: str) -> None:
                bar.console.print(f"{environment}: unavailable: {reason}", markup=False,
                                  highlight=False)

            def start(self, total_runs: int) -> None:
                self.task = bar.add_task("starting", total=total_runs)
                self.said: set[tuple[str, str, str]] = set()

            def run_started(self, environment: str, label: str, repetition: int) -> None:
                bar.update(self.task, description=f"{environment:>10} {label:<14} #{repetition + 1}")

            def run_finished(self, environment: str, label: str, outcome) -> None:
                bar.advance(self.task)
                said = (environment, label, outcome.status)
                if outcome.status in ("unsupported", "unavailable") and said in self.said:
                    return  # the same every repetition: once is enough
                self.said.add(said)
                if outcome.status not in ("ok", "unavailable"):
                    bar.console.print(f"{environment} {label}: {outcome.status}: "
                                      f"{outcome.reason[:160]}", markup=False, highlight=False)
        return Drawn()

    def __exit__(self, *exc_info) -> None:
        if not self.quiet:
            self.bar.__exit__(*exc_info)
