"""guestbench report: a stored campaign as tables or raw exports, in any format."""

from __future__ import annotations

from pathlib import Path

import click

from guestbench import store
from guestbench.commands import listings
from guestbench.commands.arguments import (
    BadInput, db_option, emit, format_option, names, short_lived)
from guestbench.plan import catalogue
from guestbench.plan.errors import did_you_mean
from guestbench.report import formats


@click.command()
@click.argument("campaigns", nargs=-1, metavar="[CAMPAIGN[=TAG]]...")
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
@click.option("--by", "by", type=click.Choice(["host"]), help="with --group: one report per "
              "host, its name and facts above it (the same tables for each machine)")
@click.option("--table", "table_names", metavar="NAME[,NAME]",
              help="only these tables, each with its own footnotes (names: docs/results.md; "
                   "all: every table; plan: the plan's [[table]] entries)")
@click.option("--plain", is_flag=True, help="values only, as published: no intervals, links or "
                                            "flags, one footnote mark per cell")
@click.option("--links", is_flag=True, help="markdown: each value links to its cell's logs")
@click.option("--label", "labels", multiple=True, metavar="ENV=NAME",
              help="show environment ENV as NAME in every table (repeatable)")
@click.option("--style", "style_file", type=click.Path(path_type=Path), metavar="FILE",
              help="a TOML file whose [report] table gives labels, the columns' order, a time "
                   "unit per table and decimals (docs/results.md)")
def report(campaigns: tuple[str, ...], baseline: str | None, output_format: str,
           output: Path | None,
           db: str, all_metrics: bool, detail: bool, list_campaigns: bool, units_style: str,
           group: str | None, by: str | None, table_names: str | None, plain: bool,
           links: bool,
           labels: tuple[str, ...], style_file: Path | None) -> None:
    """Show CAMPAIGN (id or name; default: the latest) as tables or raw exports. Several
    campaigns (`report 4=19.02 7=current`) are shown as one, each environment once per
    campaign, named "NAME (TAG)": the same plan under two versions side by side."""
    short_lived()
    campaign = campaigns[0] if len(campaigns) == 1 else None
    asked = _tables_asked(table_names, output_format, plain, links)
    if by is not None and group is None:
        raise BadInput("--by host: one report per host of a pool group (fix: add --group G, "
                       "or drop --by)")
    if by == "host":
        if campaigns or output_format not in ("table", "markdown"):
            raise BadInput("--by host: each host's report is a table or Markdown (fix: drop "
                           "CAMPAIGN, and --format other than table or markdown)")
        from guestbench.report.model import units  # deferred: as below
        from guestbench.report import restyle  # deferred: with the model, as below
        with units(units_style), restyle.active(restyle.load(style_file, labels)):
            show_by_host(db, group, baseline, output_format, all_metrics, output, detail,
                         chosen=(asked, plain, links))
    elif group is not None:
        from guestbench.commands import reading  # deferred: analysis/, 25 ms
        from guestbench.report.formats import text  # deferred: rich, 40 ms
        from guestbench.report.tables import group as grouped  # deferred: 17 ms
        if campaigns or output_format != formats.DEFAULT:
            raise BadInput("--group: the group's tables are shown on their own, as a "
                           "table (fix: drop CAMPAIGN and --format)")
        found = reading.group_reports(store.open(db, create=False), group)
        emit(text.draw(grouped.tables(*found), output), output)
    elif list_campaigns:
        if output_format not in (formats.DEFAULT, "json"):
            raise BadInput(f"--list: the campaigns are listed as lines or as JSON, not as "
                           f"{output_format} (fix: --format json, or no --format)")
        click.echo(listings.campaigns(store.open(db, create=False),
                                      as_json=output_format == "json"), nl=False)
    else:
        from guestbench.report.model import units  # deferred: 17 ms that --help never pays
        from guestbench.report import restyle  # deferred: with the model, above
        style = restyle.load(style_file, labels)
        with units(units_style), restyle.active(style):
            if len(campaigns) > 1 or (campaigns and "=" in campaigns[0]):
                show_joined(db, campaigns, baseline, output_format, all_metrics, output,
                            detail, chosen=(asked, plain, links))
            else:
                show_report(db, campaign, baseline, output_format, all_metrics, output,
                            detail, chosen=(asked, plain, links))


def _tables_asked(names_given: str | None, output_format: str, plain: bool,
                  links: bool) -> tuple[str, ...]:
    """--table's names, checked against the catalogue of tables, and whether the format has
    tables to choose (csv and json export every sample; html is its own overview)."""
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


def show_joined(db: str, campaigns: tuple[str, ...], baseline: str | None,
                output_format: str, all_metrics: bool, output: Path | None, detail: bool,
                chosen: tuple[tuple[str, ...], bool, bool]) -> None:
    """Several campaigns as one (commands/joined.py), in any format."""
    from guestbench.commands import joined  # deferred: analysis/, as show_report's
    asked, plain, links = chosen
    loaded = joined.load(store.open(db, create=False), joined.parse(campaigns), baseline,
                         all_metrics)
    _render(loaded, output_format, output, formats.Request(
        output, detail, asked=asked, plain=plain, links=links))


def show_by_host(db: str, group: str, baseline: str | None, output_format: str,
                 all_metrics: bool, output: Path | None, detail: bool,
                 chosen: tuple[tuple[str, ...], bool, bool]) -> None:
    """The report of each host's latest campaign of a pool group, one after another, each
    under a heading with the host's name and facts: the "four machines" layout."""
    from guestbench.commands import reading  # deferred: analysis/, as show_report's
    from guestbench.report import restyle, select  # deferred: with the model (report's own import)
    from guestbench.report.tables.platform import host_line  # deferred: with the model
    asked, plain, links = chosen
    opened = store.open(db, create=False)
    found, hosts = reading.group_reports(opened, group, whole=True, baseline=baseline,
                                         all_metrics=all_metrics)
    parts = []
    for host, loaded in hosts:
        if restyle.STYLE.get() is not None:
            restyle.check_names(restyle.STYLE.get(), loaded.results.environments,
                                list(loaded.workload_of.items()))
            select.check_style(loaded)
        heading = f"{host}: {host_line(loaded.host_facts)} (campaign {loaded.campaign.id})"
        parts.append((f"## {heading}\n\n" if output_format == "markdown" else
                      f"{heading}\n{'=' * min(len(heading), 80)}\n")
                     + formats.render("report", output_format, loaded, formats.Request(
                         output, detail, asked=asked, plain=plain, links=links)))
    title = f"Group {found.id} ({found.name!r}): {len(hosts)} hosts, one report each"
    emit((f"# {title}\n\n" if output_format == "markdown" else f"{title}\n\n")
         + "\n".join(parts), output)


def _render(loaded, output_format: str, output: Path | None, request) -> None:
    from guestbench.report import restyle  # deferred: with the model (report's own import)
    if restyle.STYLE.get() is not None:
        from guestbench.report import select  # deferred: the tables' builders and numpy
        restyle.check_names(restyle.STYLE.get(), loaded.results.environments,
                            list(loaded.workload_of.items()))
        select.check_style(loaded)
    emit(formats.render("report", output_format, loaded, request), output)


def show_report(db: str, campaign: str | None, baseline: str | None, output_format: str,
                 all_metrics: bool, output: Path | None, detail: bool, opened=None,
                 chosen: tuple[tuple[str, ...], bool, bool] = ((), False, False)) -> None:
    """The report of a campaign: a summary from the campaign's digest where one was kept,
    else derived from its samples (opened: the store, if the caller has it open).
    chosen: --table's names, --plain and --links."""
    from guestbench.commands import reading  # deferred: analysis/, 25 ms that --help never pays
    asked, plain, links = chosen
    summary = formats.FORMATS[output_format].summary_first and not (detail or asked or plain)
    loaded = None if opened else reading.digested(db, campaign, baseline, all_metrics, summary)
    if loaded is None:
        loaded = reading.report(opened or store.open(db, create=False), campaign, baseline,
                                all_metrics, summary)
    _render(loaded, output_format, output, formats.Request(output, detail, asked=asked,
                                                           plain=plain, links=links))
