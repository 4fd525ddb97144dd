"""Commands only: parse arguments, call the pipeline (plan -> run -> store -> report), print.

Heavy libraries (pydantic, SQLAlchemy, rich) are imported inside the commands
so that `guestbench --version` and `--help` answer at once.
"""

from __future__ import annotations

import datetime as dt

import time
from pathlib import Path

import click

from guestbench import __version__
from guestbench.commands.arguments import EXIT_BAD_INPUT, BadInput, Commands, names  # noqa: F401 - tests' EXIT_BAD_INPUT
from guestbench.commands.pool import COMMANDS as POOL_COMMANDS
from guestbench.report import formats
from guestbench.store.records import DEFAULT_URL

DEFAULT_DB = DEFAULT_URL
db_option = click.option("--db", default=DEFAULT_DB, show_default=True,
                         help="SQLAlchemy URL of the store")


def format_option(command: str, help_text: str | None = None):
    return click.option("--format", "output_format", default=formats.DEFAULT, show_default=True,
                        type=click.Choice(formats.names(command)), help=help_text)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
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
    from guestbench import host, plan
    from guestbench.process import proc
    from guestbench.runner import lifecycle

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
        resumed, the_plan = lifecycle.resumable(resume_campaign, db, facts, _say, quiet)
    else:
        resumed, overrides = None, plan.Overrides(
            names(env_names, "--env"), names(workload_names, "--workload"),
            plan.repeat_flag(repeat), timeout_s, name)
        the_plan = (plan.load(plan_file, facts, overrides) if plan_file
                    else plan.from_flags(facts, overrides))
    pool = {"group_id": pool_group, "pool_host": pool_host} if pool_group else None
    results, logs_root, campaign_id = lifecycle.run(the_plan, facts, db, logs_dir, _say, quiet,
                                                    resumed, pool)
    if not quiet:
        _show_report(db, str(campaign_id), None, formats.DEFAULT, False, None, detail, results)
    spent = lifecycle.time_spent(results, campaign_id, time.monotonic() - started, started_at)
    if spent:
        _say(spent)
    _say(f"campaign {campaign_id} stored in {db}; logs in {logs_root}")
    if resumed is None:
        for line in lifecycle.left_out(plan_file is None and not env_names,
                                       plan_file is None and not workload_names):
            _say(line)


@main.command()
def envs() -> None:
    """Every environment preset: available on this host, or why not."""
    from guestbench import host
    from guestbench.commands import listings
    click.echo(listings.environments(host.collect()), nl=False)


@main.command("images")
def images_command() -> None:
    """Cached guest images (kernel + initramfs) of full-system guests."""
    from guestbench.commands import listings
    click.echo(listings.images(), nl=False)


@main.command()
@click.argument("campaign", required=False)
@click.option("--baseline", help="environment to normalise to  [default: the plan's baseline]")
@format_option("report")
@click.option("--output", "-o", type=click.Path(path_type=Path),
              help="write to this file what standard output would show (html: log links "
                   "are made relative to it)")
@db_option
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
@click.option("--table", "table_names", metavar="NAME[,NAME]",
              help="only these tables, each with its own footnotes (names: docs/results.md; "
                   "all: every table; plan: the plan's [[table]] entries)")
@click.option("--plain", is_flag=True, help="values only, as published: no intervals, links or "
                                            "flags, one footnote mark per cell")
@click.option("--links", is_flag=True, help="markdown: each value links to its cell's logs")
def report(campaign: str | None, baseline: str | None, output_format: str, output: Path | None,
           db: str, all_metrics: bool, detail: bool, list_campaigns: bool, units_style: str,
           group: str | None, table_names: str | None, plain: bool, links: bool) -> None:
    """Show CAMPAIGN (id or name; default: the latest) as tables or raw exports."""
    _short_lived()
    asked = _tables_asked(table_names, output_format, plain, links)
    if group is not None:
        from guestbench import store
        from guestbench.report import group as grouped, text
        if campaign is not None or output_format != formats.DEFAULT:
            raise BadInput("--group: the group's tables are shown on their own, as a "
                           "table (fix: drop CAMPAIGN and --format)")
        _emit(text.draw(grouped.tables(store.open(db, create=False), group), output), output)
    elif list_campaigns:
        from guestbench import store
        from guestbench.commands import listings
        click.echo(listings.campaigns(store.open(db, create=False)), nl=False)
    else:
        from guestbench.report.model import units
        with units(units_style):
            _show_report(db, campaign, baseline, output_format, all_metrics, output, detail,
                         chosen=(asked, plain, links))


def _tables_asked(names_given: str | None, output_format: str, plain: bool,
                  links: bool) -> tuple[str, ...]:
    """--table's names, checked against the catalogue of tables, and whether the format has
    tables to choose (csv and json export every sample; html is its own overview)."""
    from guestbench.report import catalogue
    from guestbench.plan.errors import did_you_mean
    asked = names(names_given, "--table", "basic,boot-totals")
    used = [flag for flag, given in (("--table", bool(asked)), ("--plain", plain),
                                     ("--links", links)) if given]
    if used and not formats.FORMATS[output_format].tables:
        raise BadInput(f"{used[0]}: the {output_format} format has no tables to choose "
                       "(fix: --format markdown or table, or drop it)")
    if links and not formats.FORMATS[output_format].links:
        linking = [name for name, format_ in formats.FORMATS.items() if format_.links]
        raise BadInput(f"--links: the {output_format} format has no links to logs (fix: "
                       f"--format {' or '.join(linking)})")
    known = [*catalogue.NAMES, "all", "plan"]
    for name in asked:
        if name not in known:
            raise BadInput(f"--table: no table {name!r}{did_you_mean(name, known)} (fix: use "
                           f"one of {', '.join(known)})")
    if len(asked) > 1 and {"all", "plan"} & set(asked):
        raise BadInput("--table: all and plan stand alone (fix: give one of them, or names)")
    return asked


def _show_report(db: str, campaign: str | None, baseline: str | None, output_format: str,
                 all_metrics: bool, output: Path | None, detail: bool, opened=None,
                 chosen: tuple[tuple[str, ...], bool, bool] = ((), False, False)) -> None:
    """The report of a campaign: a summary from the campaign's digest where one was kept,
    else derived from its samples (opened: the store, if the caller has it open).
    chosen: --table's names, --plain and --links."""
    from guestbench.commands import reading
    asked, plain, links = chosen
    summary = formats.FORMATS[output_format].summary_first and not (detail or asked or plain)
    loaded = None if opened else reading.digested(db, campaign, baseline, all_metrics, summary)
    if loaded is None:
        from guestbench import store
        loaded = reading.report(opened or store.open(db, create=False), campaign, baseline,
                                all_metrics, summary)
    _emit(formats.render("report", output_format, loaded,
                         formats.Request(output, detail, asked=asked, plain=plain,
                                         links=links)), output)


def _emit(text: str, output: Path | None) -> None:
    """To standard output, or to the file output (written whole)."""
    if output is None:
        click.echo(text, nl=False)
        return
    from guestbench.report.output import write
    click.echo(f"wrote {write(text, output)}", err=True)


def _say(line: str) -> None:
    click.echo(line, err=True)


@main.command()
@click.argument("campaign_a")
@click.argument("campaign_b")
@db_option
@click.option("--db-b", help="store of CAMPAIGN_B, if not --db (e.g. results from another host)")
@click.option("--threshold", type=click.FloatRange(0, 10, min_open=True), default=0.05,
              show_default=True, help="relative change below which a cell is 'same'")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
              show_default=True, help="p-value a change must beat")
@click.option("--ignore-spec", "ignore_spec", multiple=True, metavar="KEY",
              help="pair environments even if their specs differ in KEY (repeatable)")
@format_option("compare")
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
    from guestbench.commands import reading
    from guestbench.analysis import compare as comparing

    urls = (db, db_b or db)
    sides = reading.compared(urls, (campaign_a, campaign_b), group)
    itself = reading.with_itself(urls, sides)
    if itself:
        _say(itself)
    result = comparing.compare(*sides, threshold=threshold, alpha=alpha, ignore_spec=ignore_spec)
    if not result.cells:
        raise BadInput(f"compare: no cell of campaign {campaign_a} pairs with one of "
                       f"{campaign_b} ({len(result.unpaired)} not paired: "
                       + "; ".join(f"{what}: {why}" for what, why in result.unpaired[:3])
                       + ") (fix: compare campaigns of the same plan, or --ignore-spec KEY)")
    _emit(formats.render("compare", output_format, result, formats.Request(every=every)), None)
    if fail_on_regression and result.regressions:
        _say(f"guestbench: {len(result.regressions)} cell(s) slower in B (--fail-on-regression)")
        raise SystemExit(1)


@main.command()
@db_option
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
@format_option("history")
@click.option("--output", "-o", type=click.Path(path_type=Path), help="write to this file")
@click.option("--detail", is_flag=True, help="table format: every campaign of every cell")
def history(db: str, host: str | None, group: str | None, name: str | None,
            env_names: str | None, workload_names: str | None, order: str, max_pvalue: float,
            min_change: float, output_format: str, output: Path | None, detail: bool) -> None:
    """Each cell's median over every finished campaign, and its change points (Apache Otava)."""
    _short_lived()
    from guestbench.commands import reading

    found = reading.history(db, host, group,
                            names(env_names, "--env"), names(workload_names, "--workload"),
                            name, order, max_pvalue, min_change)
    _emit(formats.render("history", output_format, found, formats.Request(output, detail)),
          output)


@main.command()
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option("--a", "a_options", multiple=True, metavar="KEY=VALUE",
              help="option of every environment on side A (repeatable)")
@click.option("--b", "b_options", multiple=True, metavar="KEY=VALUE",
              help="option of every environment on side B (repeatable)")
@click.option("--repeat", help="runs of every cell, or auto  [default: the plan's]")
@db_option
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
    from guestbench.commands import reading
    from guestbench.analysis import compare as comparing
    from guestbench.runner import lifecycle

    facts = host.collect()
    loaded = plan.load(plan_file, facts, plan.Overrides(repeat=plan.repeat_flag(repeat)))
    a_set, b_set = plan.assignments(a_options, "--a"), plan.assignments(b_options, "--b")
    results, _logs, campaign_id = lifecycle.run(plan.ab_plan(loaded, a_set, b_set), facts, db,
                                                None, _say)
    result = comparing.compare(*reading.ab_sides(results, campaign_id), threshold=threshold,
                               alpha=alpha, ignore_spec=tuple(dict.fromkeys([*a_set, *b_set])),
                               correction="holm")
    _emit(formats.render("compare", formats.DEFAULT, result, formats.Request(every=every)), None)
    click.echo(f"A/B: {result.count(comparing.SLOWER)} slower, {result.count(comparing.FASTER)} "
               f"faster, {result.count(comparing.SAME)} same of {len(result.cells)} cells "
               f"(Holm-adjusted p < {alpha:g} and beyond ±{threshold:.0%}); campaign "
               f"{campaign_id} in {db}")
    if fail_on_regression and result.regressions:
        raise SystemExit(1)


def _short_lived() -> None:
    from guestbench.commands import shortlived
    shortlived.settle(click.get_current_context().call_on_close)


for pool_command in POOL_COMMANDS:
    main.add_command(pool_command)
