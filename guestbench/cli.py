"""Commands only: parse arguments, call the pipeline (plan -> run -> store -> report), print.

Heavy libraries (pydantic, SQLAlchemy, rich) are imported inside the commands
so that `guestbench --version` and `--help` answer at once.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import textwrap
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


class _Commands(click.Group):
    """Every command: a store that is damaged or a disk that is full ends it with one
    message and exit 2 (guestbench/store/damage.py), wherever it is met."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except Exception as error:  # noqa: BLE001 - only those explain() knows; others go on
            from guestbench.store import damage
            message = damage.explain(error)
            if message is None:
                raise
            raise BadInput(message) from None


@click.group(cls=_Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="guestbench")
def main() -> None:
    """Measure what an execution environment costs compared with native."""


@main.command()
@click.argument("plan_file", required=False, type=click.Path(path_type=Path))
@click.option("--env", "env_names", help="environments to run, comma-separated (presets, or names in PLAN)")
@click.option("--workload", "workload_names", help="workloads to run, comma-separated")
@click.option("--repeat", metavar="N|auto",
              help="fresh runs of each workload in each environment, or auto: until the median "
                   "is known to +/-2% (see [campaign.auto])  [default: auto for micro "
                   "workloads, 5 for the others]")
@click.option("--timeout", "timeout_s", type=float, help="per-run timeout, seconds")
@click.option("--name", help="campaign name")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="SQLAlchemy URL of the store")
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
    from guestbench import host, plan, proc

    proc.die_with_parent()  # started by a pool worker: ends (SIGTERM) when the worker does

    facts = host.collect()
    resumed = None
    if resume_campaign is not None:
        given = [flag for flag, value in (("PLAN", plan_file), ("--env", env_names),
                                          ("--workload", workload_names), ("--repeat", repeat),
                                          ("--timeout", timeout_s), ("--name", name))
                 if value is not None]
        if given:
            raise BadInput(f"--resume takes the campaign's plan from the store, and "
                           f"{', '.join(given)} would change it (fix: drop {', '.join(given)})")
        resumed, the_plan = _resumable(resume_campaign, db, facts, quiet)
    else:
        try:
            overrides = plan.Overrides(_names(env_names, "--env"),
                                       _names(workload_names, "--workload"),
                                       plan.repeat_flag(repeat), timeout_s, name)
            the_plan = (plan.load(plan_file, facts, overrides) if plan_file
                        else plan.from_flags(facts, overrides))
        except plan.PlanError as error:
            raise BadInput(str(error)) from None
    pool = {"group_id": pool_group, "pool_host": pool_host} if pool_group else None
    results, logs_root, campaign_id = _campaign(the_plan, facts, db, logs_dir, quiet, resumed,
                                                pool)
    if not quiet:
        _print_report(results, str(campaign_id), None, "table", False, detail=detail)
    click.echo(f"campaign {campaign_id} stored in {db}; logs in {logs_root}", err=True)
    said = []
    if plan_file is None and not env_names and resumed is None:
        from guestbench.environments import NOT_IN_DEFAULT_CAMPAIGN
        said += [f"not in the default campaign: {preset} ({why}); add it with --env "
                 f"native,{preset}" for preset, why in NOT_IN_DEFAULT_CAMPAIGN.items()]
    if plan_file is None and not workload_names and resumed is None:
        from guestbench.workloads import NOT_IN_DEFAULT_CAMPAIGN as LEFT_OUT
        said += [f"not in the default campaign: {names} ({why}); run them with --workload "
                 f"{names}" for names, why in LEFT_OUT.items()]
    for line in said:  # within the 120 columns of the tables, as a person reads them
        click.echo(textwrap.fill(line, width=100, subsequent_indent="  ",
                                 break_on_hyphens=False), err=True)


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
        click.echo("no image yet: one is built when a campaign first prepares a full-system "
                   "environment (qemu, uml, command), before its first run")


@main.command()
@click.argument("campaign", required=False)
@click.option("--baseline", help="environment to normalise to  [default: the plan's baseline]")
@click.option("--format", "output_format", default="table", show_default=True,
              type=click.Choice(["table", "markdown", "csv", "json", "html", "bmf",
                                 "github-action-benchmark"]))
@click.option("--output", "-o", type=click.Path(path_type=Path),
              help="write to this file instead of standard output (html: log links are "
                   "made relative to it)")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="SQLAlchemy URL of the store")
@click.option("--all-metrics", is_flag=True, help="also show iterations and array sizes")
@click.option("--detail", is_flag=True, help="table format: every metric and table, not only "
                                             "the summary")
@click.option("--list", "list_campaigns", is_flag=True, help="list the stored campaigns")
@click.option("--units", "units_style", default="si", show_default=True,
              type=click.Choice(["si", "plain"]),
              help="si: 10k, 1.17M and each time row in ns, us, ms or s; plain: whole numbers "
                   "(1170000 cycles) and every metric in its stored unit")
@click.option("--group", metavar="GROUP", help="a campaign group of the host pool (id or "
              "name): one column per host and environment, and each host's facts")
def report(campaign: str | None, baseline: str | None, output_format: str, output: Path | None,
           db: str, all_metrics: bool, detail: bool, list_campaigns: bool, units_style: str,
           group: str | None) -> None:
    """Show CAMPAIGN (id or name; default: the latest) as tables or raw exports."""
    _short_lived()
    from guestbench import store

    try:
        results = store.open(db, create=False)
        if group is not None:
            from guestbench.report import group as grouped
            if campaign is not None or output_format != "table":
                raise BadInput("--group: the group's tables are shown on their own, as a "
                               "table (fix: drop CAMPAIGN and --format)")
            _print_tables(grouped.tables(results, group))
            return
        if list_campaigns:
            for row in results.campaigns():
                click.echo(f"{row['id']:>5}  {row['created_at']:%Y-%m-%d %H:%M}  "
                           f"{row['status']:<11}  {row['name']}")
            return
        from guestbench.report.model import units
        with units(units_style):
            _print_report(results, campaign, baseline, output_format, all_metrics, output, detail)
    except store.StoreError as error:
        raise BadInput(str(error)) from None


def _print_report(results, campaign: str | None, baseline: str | None, output_format: str,
                  all_metrics: bool, output: Path | None = None, detail: bool = False) -> None:
    from guestbench.analysis import results as analysed
    from guestbench.report import views

    summary = output_format == "table" and output is None and not detail
    loaded = analysed.load(results, campaign, baseline, all_metrics,
                           context_samples=not summary, primary_only=summary)
    if output_format == "table" and output is None:
        _print_tables(views.tables(loaded, "detail" if detail else "summary",
                                   width=_terminal_width()))
        return
    if output_format == "html":
        from guestbench.report import html
        _write(html.render(loaded, output.resolve().parent if output else None), output)
        return
    from guestbench.report import csv, dashboards, json, markdown
    if output_format == "table":  # to a file: plain text at a width that never wraps
        _write(_plain_tables(loaded), output)
        return
    if output_format == "markdown":
        _write(markdown.render(loaded, output.resolve().parent if output else None), output)
        return
    render = {"csv": csv.render, "json": json.render,
              "bmf": dashboards.render_bmf,
              "github-action-benchmark": dashboards.render_github_action_benchmark}
    _write(render[output_format](loaded), output)


def _plain_tables(loaded) -> str:
    import io

    from rich.console import Console

    from guestbench.report import terminal, views
    buffer = io.StringIO()
    drawn = terminal.fit(views.tables(loaded, "detail"))
    terminal.render_tables(drawn, Console(file=buffer, width=terminal.width_for(drawn),
                                          color_system=None))
    return buffer.getvalue()


def _write(text: str, output: Path | None) -> None:
    """To standard output, or to a file written whole (a temporary file renamed into place)."""
    if output is None:
        click.echo(text, nl=False)
        return
    import os
    import tempfile
    target = output.resolve()
    if not target.parent.is_dir():
        raise BadInput(f"--output {str(output)!r}: folder {target.parent} does not exist "
                       "(fix: create it first)")
    if target.is_dir():
        raise BadInput(f"--output {str(output)!r}: is a folder (fix: name a file in it)")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp makes 0600; a report is for sharing
        os.replace(temporary, target)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise BadInput(f"--output {str(output)!r}: cannot write ({error.strerror}) "
                       "(fix: name a file you can write)") from None
    click.echo(f"wrote {target}", err=True)


@main.command()
@click.argument("campaign_a")
@click.argument("campaign_b")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="SQLAlchemy URL of the store")
@click.option("--db-b", help="store of CAMPAIGN_B, if not --db (e.g. results from another host)")
@click.option("--threshold", type=click.FloatRange(0, 10, min_open=True), default=0.05,
              show_default=True, help="relative change below which a cell is 'same'")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
              show_default=True, help="p-value a change must beat")
@click.option("--ignore-spec", "ignore_spec", multiple=True, metavar="KEY",
              help="pair environments even if their specs differ in KEY (repeatable)")
@click.option("--format", "output_format", default="table", show_default=True,
              type=click.Choice(["table", "markdown", "json"]))
@click.option("--fail-on-regression", is_flag=True, help="exit 1 if any cell is slower in B")
@click.option("--all", "every", is_flag=True, help="table format: list every cell, not only "
                                                    "those slower or faster")
@click.option("--group", metavar="GROUP", help="CAMPAIGN_A and CAMPAIGN_B are pool hosts: "
              "their campaigns of this group")
def compare(campaign_a: str, campaign_b: str, db: str, db_b: str | None, threshold: float,
            alpha: float, ignore_spec: tuple[str, ...], output_format: str,
            fail_on_regression: bool, every: bool, group: str | None) -> None:
    """Compare CAMPAIGN_B with CAMPAIGN_A (ids or names; with --group, two pool hosts):
    per cell B/A, p-value and a verdict."""
    _short_lived()
    from guestbench import store
    from guestbench.analysis import compare as comparing
    from guestbench.report import comparison as rendering

    try:
        stores = (store.open(db, create=False),)
        stores += (store.open(db_b, create=False),) if db_b else stores
        if group is not None:
            from guestbench.report.group import campaign_of_host
            campaign_a, campaign_b = (campaign_of_host(opened, group, host) for opened, host
                                      in zip(stores, (campaign_a, campaign_b)))
        sides = _sides(stores, (campaign_a, campaign_b))
    except store.StoreError as error:
        raise BadInput(str(error)) from None
    result = comparing.compare(*sides, threshold=threshold, alpha=alpha, ignore_spec=ignore_spec)
    if not result.cells:
        raise BadInput(f"compare: no cell of campaign {campaign_a} pairs with one of "
                       f"{campaign_b} ({len(result.unpaired)} not paired: "
                       + "; ".join(f"{what}: {why}" for what, why in result.unpaired[:3])
                       + ") (fix: compare campaigns of the same plan, or --ignore-spec KEY)")
    if output_format == "json":
        click.echo(rendering.render_json(result), nl=False)
    elif output_format == "markdown":
        from guestbench.report import markdown
        click.echo(markdown.render_tables(rendering.tables(result)), nl=False)
    else:
        _print_tables(rendering.tables(result, every))
    if fail_on_regression and result.regressions:
        click.echo(f"guestbench: {len(result.regressions)} cell(s) slower in B "
                   "(--fail-on-regression)", err=True)
        sys.exit(1)


@main.command()
@click.option("--db", default=DEFAULT_DB, show_default=True, help="SQLAlchemy URL of the store")
@click.option("--host", help="only campaigns of this host (pool host name, else hostname)")
@click.option("--group", metavar="GROUP", help="only campaigns of this pool group's plan "
              "(every group submitted the same plan)")
@click.option("--name", help="only campaigns of this name (the plan's campaign name)")
@click.option("--env", "env_names", help="only these environments (comma-separated)")
@click.option("--workload", "workload_names", help="only these workloads or labels")
@click.option("--order", type=click.Choice(["time", "version"]), default="time",
              show_default=True, help="campaigns in time order, or by the versions they ran "
                                      "(VMM, guest kernel, host kernel, guestbench)")
@click.option("--max-pvalue", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.001, show_default=True, help="p-value a change point must beat")
@click.option("--min-change", type=click.FloatRange(0, 10), default=0.0, show_default=True,
              help="smallest relative change that counts (0.05 = 5%)")
@click.option("--format", "output_format", default="table", show_default=True,
              type=click.Choice(["table", "json", "html"]))
@click.option("--output", "-o", type=click.Path(path_type=Path), help="write to this file")
@click.option("--detail", is_flag=True, help="table format: every campaign of every cell")
def history(db: str, host: str | None, group: str | None, name: str | None,
            env_names: str | None, workload_names: str | None, order: str, max_pvalue: float,
            min_change: float, output_format: str, output: Path | None, detail: bool) -> None:
    """Each cell's median over every finished campaign, and its change points (Apache Otava)."""
    _short_lived()
    from guestbench import store
    from guestbench.report import history as trend

    try:
        found = trend.load(store.open(db, create=False), host, group,
                           _names(env_names, "--env"), _names(workload_names, "--workload"),
                           name, order, max_pvalue, min_change)
    except store.StoreError as error:
        raise BadInput(str(error)) from None
    if output_format == "json":
        _write(trend.render_json(found), output)
    elif output_format == "html":
        from guestbench.report import history_html
        _write(history_html.render(found), output)
    elif output is not None:
        raise BadInput("--output: the table goes to the terminal (fix: --format json or html)")
    else:
        _print_tables([trend.summary_table(found),
                       *(trend.series_tables(found) if detail else [])])


@main.command()
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option("--a", "a_options", multiple=True, metavar="KEY=VALUE",
              help="option of every environment on side A (repeatable)")
@click.option("--b", "b_options", multiple=True, metavar="KEY=VALUE",
              help="option of every environment on side B (repeatable)")
@click.option("--repeat", help="runs of every cell, or auto  [default: the plan's]")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="SQLAlchemy URL of the store")
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(0, 10),
              help="changes smaller than this share are noise")
@click.option("--alpha", default=0.01, show_default=True, type=click.FloatRange(0, 1),
              help="family-wise error rate of the verdicts (Holm over every cell)")
@click.option("--fail-on-regression", is_flag=True, help="exit 1 if any cell is slower in B")
@click.option("--all", "every", is_flag=True, help="list every cell, not only those slower "
                                                    "or faster")
def ab(plan_file: Path, a_options: tuple[str, ...], b_options: tuple[str, ...],
       repeat: str | None, db: str, threshold: float, alpha: float,
       fail_on_regression: bool, every: bool) -> None:
    """A against B in one campaign: every environment of PLAN_FILE twice (NAME.a, NAME.b),
    run interleaved (A B, B A, ...), then compared cell by cell."""
    from guestbench import host, plan
    from guestbench.analysis import compare as comparing
    from guestbench.report import comparison as rendering

    facts = host.collect()
    try:
        loaded = plan.load(plan_file, facts, plan.Overrides(repeat=plan.repeat_flag(repeat)))
        the_plan = plan.ab_plan(loaded, plan.assignments(a_options, "--a"),
                                plan.assignments(b_options, "--b"))
    except plan.PlanError as error:
        raise BadInput(str(error)) from None
    results, _logs, campaign_id = _campaign(the_plan, facts, db, None, False)
    keys = tuple(dict.fromkeys([*plan.assignments(a_options, "--a"),
                                *plan.assignments(b_options, "--b")]))
    sides = _ab_sides(results, campaign_id)
    result = comparing.compare(*sides, threshold=threshold, alpha=alpha, ignore_spec=keys,
                               correction="holm")
    _print_tables(rendering.tables(result, every))
    click.echo(f"A/B: {result.count(comparing.SLOWER)} slower, {result.count(comparing.FASTER)} "
               f"faster, {result.count(comparing.SAME)} same of {len(result.cells)} cells "
               f"(Holm-adjusted p < {alpha:g} and beyond ±{threshold:.0%}); campaign "
               f"{campaign_id} in {db}")
    if fail_on_regression and result.regressions:
        sys.exit(1)


def _ab_sides(opened, campaign_id: int):
    """The A and B halves of an ab campaign, each with its environments' plain names."""
    from guestbench.analysis import compare as comparing
    campaign = opened.campaign(str(campaign_id))
    environments = opened.environments(campaign_id)
    from guestbench.analysis.cells import CONTEXT_METRICS
    runs, samples = opened.runs(campaign_id), opened.samples(campaign_id, CONTEXT_METRICS)
    sides = []
    for tag in ("a", "b"):
        mine = [{**env, "name": env["name"].rsplit(".", 1)[0]} for env in environments
                if env["name"].endswith(f".{tag}")]
        ids = {env["id"] for env in mine}
        side_runs = [dict(run) for run in runs if run["environment_id"] in ids]
        run_ids = {run["id"] for run in side_runs}
        sides.append(comparing.side(campaign, mine, side_runs, samples.of_runs(run_ids)))
    return sides


def _short_lived() -> None:
    """report and compare build hundreds of thousands of rows and cells, none of them in a
    reference cycle, and end within seconds: Python's cycle collector, which would walk
    them again and again as they grow (a tenth of a 2 s report), stays off until the
    command ends (in a process that goes on, such as a test run, it is on again after).

    OpenBLAS gets one thread, unless the user chose otherwise, before numpy or scipy load
    it: their matrices here are small, and OpenBLAS's idle threads spin. With compare's
    two processes each running such threads on two CPUs, compare of a 4,000-sample
    campaign took 2.0 s instead of 1.0 s. (Called before the first import of numpy.)"""
    if "OPENBLAS_NUM_THREADS" not in os.environ:
        os.environ["OPENBLAS_NUM_THREADS"] = "1"
        click.get_current_context().call_on_close(
            lambda: os.environ.pop("OPENBLAS_NUM_THREADS", None))
    if gc.isenabled():
        gc.disable()
        click.get_current_context().call_on_close(gc.enable)


def _sides(stores, selectors: tuple[str, str]):
    """Both campaigns as compare reads them: A in a child process while this one reads B
    (guestbench/forked.py), when the host has two CPUs."""
    from guestbench import forked

    def read_a():
        stores[0].engine.dispose(close=False)  # the child's own connections, not the parent's
        return _side(stores[0], selectors[0])
    with forked.beside(read_a) as side_a:
        side_b = _side(stores[1], selectors[1])
        return [side_a(), side_b]


def _side(opened, selector: str):
    """One campaign as compare reads it: context metrics (iterations, clock ratios) are
    never compared, and are left unread."""
    from guestbench.analysis import compare as comparing
    from guestbench.analysis.cells import CONTEXT_METRICS
    campaign = opened.campaign(selector)
    return comparing.side(campaign, opened.environments(campaign["id"]),
                          opened.runs(campaign["id"], comparing.RUN_COLUMNS),
                          opened.samples(campaign["id"], CONTEXT_METRICS))


def _terminal_width() -> int:
    """The columns tables may take: the terminal's, or 120 for a file or a pipe."""
    from rich.console import Console

    from guestbench.report import terminal
    console = Console()
    return console.width if console.is_terminal else terminal.MAX_WIDTH


def _print_tables(drawn) -> None:
    from rich.console import Console

    from guestbench.report import terminal
    drawn = terminal.fit(drawn)
    console = Console()
    if not console.is_terminal:  # a file or a pipe: as wide as the tables, at most 120
        console = Console(width=min(terminal.TEXT_WIDTH,
                                    max(console.width, terminal.width_for(drawn))))
    terminal.render_tables(drawn, console)


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


def _resumable(selector: str, db: str, facts, quiet: bool):
    """The stored campaign that `run --resume` names, and its plan, once it may be resumed."""
    from guestbench import plan, resume, store
    try:
        opened = store.open(db, create=False)
        campaign = opened.campaign(selector)
        opened.engine.dispose()
        warning = resume.check(campaign, facts)
        the_plan = plan.stored(campaign["plan"], f"campaign {campaign['id']}")
    except (store.StoreError, resume.NotResumable, plan.PlanError) as error:
        raise BadInput(str(error)) from None
    if warning:
        click.echo(f"guestbench: warning: {warning}", err=True)
    if not quiet:
        click.echo(f"guestbench: resuming campaign {campaign['id']} ({campaign['name']!r}, "
                   f"{campaign['status']})", err=True)
    return campaign, the_plan


def _campaign(the_plan, facts, db: str, logs_dir: Path | None, quiet: bool, resumed=None,
              pool=None):
    """Runs a validated plan into the store at db: (store, logs folder, campaign id); or,
    given a stored campaign (resumed), what it still owes. Ctrl-C or SIGTERM ends the
    process with 130 or 143, finished runs kept."""
    from guestbench import agent, store
    from guestbench.runner import Interrupted, Runner

    try:
        agent_path = agent.path()
        store.check(db)
        logs_root = _logs_folder(logs_dir, db)
        results = store.open(db)
        results.require("run")
        stale = results.mark_abandoned()
    except (agent.AgentMissing, store.StoreError) as error:
        raise BadInput(str(error)) from None
    from guestbench import reaper
    for line in reaper.sweep():  # what a guestbench killed with its reaper left
        click.echo(f"guestbench: {line}", err=True)
    for left in stale:
        if not resumed or left["id"] != resumed["id"]:
            click.echo(f"guestbench: campaign {left['id']} ({left['name']!r}) was left running: "
                       f"{left['reason']}; now marked interrupted (fix: 'guestbench run "
                       f"--resume {left['id']}' completes it)", err=True)
    results.on_wait = lambda message: click.echo(f"guestbench: {message}", err=True)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    previous_int = signal.signal(signal.SIGINT, _raise_interrupt)
    try:
        with _progress(quiet) as progress:
            runner = Runner(the_plan, results, facts, logs_root, agent_path, progress, pool=pool)
            campaign_id = runner.resume(resumed) if resumed else runner.run()
    except Interrupted as stop:
        click.echo(f"guestbench: {stop}; finished runs are stored in {db} "
                   f"(see 'guestbench report {stop.campaign_id}')", err=True)
        sys.exit(143 if stop.signal_name == "SIGTERM" else 130)
    except KeyboardInterrupt as stop:  # before the campaign existed: nothing was stored
        click.echo(f"guestbench: stopped by {str(stop) or 'SIGINT'} before any run", err=True)
        sys.exit(143 if str(stop) == "SIGTERM" else 130)
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
    return results, logs_root, campaign_id


def _raise_interrupt(signum, frame) -> None:
    """The first Ctrl-C or SIGTERM stops the campaign; a second one, while the runner ends
    its guests and marks the campaign interrupted, is noted and does not cut that short
    (a campaign left 'running' with its guests alive would be the result)."""
    from guestbench import proc
    signal.signal(signal.SIGTERM, _noted)
    signal.signal(signal.SIGINT, _noted)
    proc.interrupt(KeyboardInterrupt(signal.Signals(signum).name))


def _noted(signum, frame) -> None:
    click.echo(f"guestbench: {signal.Signals(signum).name} again: finishing the teardown first",
               err=True)


class _progress:
    """A rich progress bar with ETA on stderr, or nothing when quiet."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet

    def __enter__(self):
        from guestbench.runner import Progress
        if self.quiet:
            class Warned(Progress):
                def host_warning(self, message: str) -> None:
                    click.echo(f"guestbench: warning: {message}", err=True)
            return Warned()
        from rich.console import Console
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn,
                                   TimeElapsedColumn)
        # the ETA is the runner's estimate in host seconds (estimate.py), not a rate of runs:
        # runs differ 20-fold in cost, and adaptive cells stop at different counts
        self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                       TimeElapsedColumn(), TextColumn("ETA {task.fields[eta]}"),
                       console=Console(stderr=True), transient=True)
        self.bar.__enter__()
        bar = self.bar

        class Drawn(Progress):
            def unavailable(self, environment: str, reason: str) -> None:
                bar.console.print(f"{environment}: unavailable: {reason}", markup=False,
                                  highlight=False)

            def preparing(self, environment: str) -> None:
                bar.console.print(f"{environment}: preparing (guest image, checks)",
                                  markup=False, highlight=False)

            def start(self, total_runs: int) -> None:
                self.task = bar.add_task("starting", total=total_runs, eta="-:--:--")
                self.said: set[tuple[str, str, str]] = set()

            def total_changed(self, total_runs: int) -> None:
                bar.update(self.task, total=total_runs)  # an early stop shortens the ETA

            def estimate(self, seconds_left: float) -> None:
                whole = int(round(seconds_left))
                bar.update(self.task, eta=f"~{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}")

            def host_warning(self, message: str) -> None:
                bar.console.print(f"guestbench: warning: {message}", markup=False,
                                  highlight=False)

            def run_started(self, environment: str, label: str, repetition: int) -> None:
                bar.update(self.task, description=f"{environment:>10} {label:<14} #{repetition + 1}")

            def run_finished(self, environment: str, label: str, outcome) -> None:
                bar.advance(self.task)
                said = (environment, label, outcome.status)
                if outcome.status in ("unsupported", "unavailable") and said in self.said:
                    return  # the same every repetition: once is enough
                self.said.add(said)
                if outcome.status not in ("ok", "unavailable"):
                    reason = " ".join(outcome.reason.split())  # whole: it ends with the fix
                    if len(reason) > 400:
                        reason = reason[:400] + " ... (the whole reason: report --detail)"
                    bar.console.print(f"{environment} {label}: {outcome.status}: {reason}",
                                      markup=False, highlight=False)
        return Drawn()

    def __exit__(self, *exc_info) -> None:
        if not self.quiet:
            self.bar.__exit__(*exc_info)


def _pool_commands() -> None:
    from guestbench.pool import commands
    for command in (commands.worker, commands.submit, commands.hosts, commands.grants):
        main.add_command(command)


_pool_commands()
