"""guestbench compare: campaign B against campaign A, cell by cell, with a verdict."""

from __future__ import annotations

import click

from guestbench.commands.arguments import (BadInput, db_option, emit, format_option,
                                          gate_option, max_failure_rate_option, say,
                                          short_lived)
from guestbench.report import formats


@click.command()
@click.argument("campaign_a", required=False)
@click.argument("campaign_b", required=False)
@click.option("--ab", "ab_campaign", metavar="CAMPAIGN",
              help="the A and B halves of one campaign 'guestbench ab' ran (its verdict "
                   "again, Holm-adjusted as ab gives it), instead of CAMPAIGN_A CAMPAIGN_B")
@db_option
@click.option("--db-b", help="store of CAMPAIGN_B, if not --db (e.g. results from another host)")
@click.option("--threshold", type=click.FloatRange(0, 10, min_open=True), default=0.05,
              show_default=True, help="relative change below which a cell is 'same'")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.01,
              show_default=True, help="p-value a change must beat")
@click.option("--memory-threshold-mib", "memory_threshold_mib", default=1.0, show_default=True,
              type=click.FloatRange(0, min_open=True),
              help="a memory figure (footprint, density PSS) changes only beyond this many MiB")
@click.option("--ignore-spec", "ignore_spec", multiple=True, metavar="KEY",
              help="pair environments whose specs, or workloads whose parameters, differ "
                   "in KEY (repeatable); else such a difference is broken in B")
@format_option("compare")
@click.option("--fail-on-regression", is_flag=True,
              help="exit 1 if any cell is slower in B, or a workload ok in A is not in B "
                   "or flaky there")
@click.option("--allow-missing", is_flag=True,
              help="with --fail-on-regression: a workload ok in A and failed, unavailable or "
                   "missing in B is listed, not a regression")
@max_failure_rate_option
@gate_option
@click.option("--forgive-host-noise", "forgive_host_noise", is_flag=True,
              help="with --fail-on-regression: do not count a cell slower in B where the "
                   "hosts' noise explains it (marked '(host)'); else it counts")
@click.option("--strict", is_flag=True, hidden=True,
              help="counting host-explained cells, now the default (kept for old scripts)")
@click.option("--across-hosts", is_flag=True,
              help="with --fail-on-regression: gate even where A and B ran on hosts of "
                   "different classes (CPU model or kernel); else that exits 2")
@click.option("--all", "every", is_flag=True, help="table format: list every cell, not only "
                                                    "those slower or faster")
@click.option("--group", metavar="GROUP", help="CAMPAIGN_A and CAMPAIGN_B are pool hosts: "
              "their campaigns of this group")
def compare(campaign_a: str | None, campaign_b: str | None, ab_campaign: str | None, db: str,
            db_b: str | None, threshold: float, alpha: float, memory_threshold_mib: float,
            ignore_spec: tuple[str, ...], output_format: str, fail_on_regression: bool,
            allow_missing: bool, max_failure_rate: float, gate: tuple[str, ...],
            forgive_host_noise: bool, strict: bool, across_hosts: bool, every: bool,
            group: str | None) -> None:
    """Compare CAMPAIGN_B with CAMPAIGN_A (ids or names; with --group, two pool hosts):
    per cell B/A, p-value and a verdict. With --ab CAMPAIGN: the two halves of one campaign
    that 'guestbench ab' ran."""
    short_lived()
    _arguments(campaign_a, campaign_b, ab_campaign, db_b, group)
    from guestbench.commands import reading  # deferred: analysis/, 25 ms that --help never pays
    from guestbench.analysis import compare as comparing  # deferred: scipy, 55 ms

    urls = (db, db_b or db)
    correction = "none"
    if ab_campaign is not None:  # as ab judged it: Holm over the cells, A/B options paired
        sides = reading.stored_ab(db, ab_campaign)
        ignore_spec += comparing.ab_option_keys(*sides)
        correction = "holm"
    else:
        sides = reading.compared(urls, (campaign_a, campaign_b), group)
        itself = reading.with_itself(urls, sides)
        if itself:
            say(itself)
    apart = comparing.hosts_apart(*sides)
    if apart and fail_on_regression and not across_hosts:
        raise BadInput(comparing.across_hosts_refusal("compare", apart))
    if apart and output_format == "json":  # the tables say it first; a document is not read
        say(f"guestbench: {comparing.hosts_warning(apart, below=False)}")
    result = comparing.compare(*sides, threshold=threshold, alpha=alpha, ignore_spec=ignore_spec,
                               correction=correction, memory_threshold_mib=memory_threshold_mib,
                               max_failure_rate=max_failure_rate, gate=gate)
    if not result.paired and all(broken.outcome == "missing" for broken in result.broken):
        raise BadInput(f"compare: no cell of campaign {campaign_a} pairs with one of "
                       f"{campaign_b} ({len(result.unpaired)} not paired: "
                       + "; ".join(f"{what}: {why}" for what, why in result.unpaired[:3])
                       + ") (fix: compare campaigns of the same plan, or --ignore-spec KEY)")
    emit(formats.render("compare", output_format, result, formats.Request(every=every)), None)
    if strict and forgive_host_noise:
        raise BadInput("compare: --strict and --forgive-host-noise contradict each other "
                       "(fix: drop --strict, which is the default now)")
    unjudged = comparing.unjudged(result)
    if unjudged and fail_on_regression:  # a gate that judged nothing would pass anything
        raise BadInput(f"compare: {unjudged}")
    if unjudged:
        say(f"guestbench: {unjudged}")
    failed = comparing.failed_gate(result, allow_missing, forgive_host_noise)
    explained = [cell for cell in result.regressions if cell.host_explained]
    if fail_on_regression and failed:
        said = (f"; {len(explained)} of those cells the hosts' noise may explain (rerun both "
                "on a quiet host; --forgive-host-noise leaves them out)" if explained else "")
        say(f"guestbench: {failed} (--fail-on-regression){said}")
        raise SystemExit(1)
    if fail_on_regression and explained:
        say(f"guestbench: {len(explained)} cell(s) slower in B where the hosts' noise explains "
            "it, not counted (--forgive-host-noise)")


def _arguments(campaign_a: str | None, campaign_b: str | None, ab_campaign: str | None,
               db_b: str | None, group: str | None) -> None:
    """Two campaigns, or --ab and none: anything else is refused before any reading."""
    if ab_campaign is not None:
        if campaign_a is not None or db_b is not None or group is not None:
            raise BadInput("compare: --ab CAMPAIGN compares the halves of one campaign; it "
                           "takes no CAMPAIGN_A CAMPAIGN_B, --db-b or --group (fix: compare "
                           "--ab CAMPAIGN, or compare A B)")
        return
    if campaign_a is None or campaign_b is None:
        raise BadInput("compare: two campaigns are needed, CAMPAIGN_A and CAMPAIGN_B (ids or "
                       "names), or --ab CAMPAIGN for one that 'guestbench ab' ran (fix: "
                       "'guestbench report --list' shows them)")
