"""guestbench ab: A against B in one campaign, run interleaved, then compared."""

from __future__ import annotations

from pathlib import Path

import click

from guestbench.commands.arguments import (BadInput, db_option, emit, format_option,
                                          gate_option, max_failure_rate_option, names, say)
from guestbench.report import formats
from guestbench.store import DEFAULT_URL


@click.command()
@click.argument("plan_file", type=click.Path(path_type=Path))
@click.option("--a", "a_options", multiple=True, metavar="[ENV.]KEY=VALUE",
              help="option of every environment on side A, or of ENV alone (repeatable)")
@click.option("--b", "b_options", multiple=True, metavar="[ENV.]KEY=VALUE",
              help="option of every environment on side B, or of ENV alone (repeatable; "
                   "e.g. --b runsc.platform=systrap)")
@click.option("--env", "env_names", help="the plan's environments to run, comma-separated")
@click.option("--workload", "workload_names", help="the plan's workloads to run, comma-separated")
@click.option("--repeat", help="runs of every cell, or auto  [default: the plan's]")
@click.option("--timeout", "timeout_s", type=float, help="per-run timeout, seconds")
@db_option
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(0, 10),
              help="changes smaller than this share are noise")
@click.option("--alpha", default=0.01, show_default=True, type=click.FloatRange(0, 1),
              help="family-wise error rate of the verdicts (Holm over every cell)")
@click.option("--memory-threshold-mib", "memory_threshold_mib", default=1.0, show_default=True,
              type=click.FloatRange(0, min_open=True),
              help="a memory figure (footprint, density PSS) changes only beyond this many MiB")
@click.option("--fail-on-regression", is_flag=True,
              help="exit 1 if any cell is slower in B, or a workload ok in A is not in B "
                   "or flaky there")
@click.option("--allow-missing", is_flag=True,
              help="with --fail-on-regression: a workload ok in A and failed or unavailable "
                   "in B is listed, not a regression")
@max_failure_rate_option
@gate_option
@click.option("--across-hosts", is_flag=True,
              help="with --fail-on-regression: gate even where A and B ran on hosts of "
                   "different classes (never so here: both run on this host), as compare's")
@click.option("--all", "every", is_flag=True, help="list every cell, not only those slower "
                                                    "or faster")
@format_option("compare", "the verdicts' format (json: the document on stdout, the A/B "
                          "line on stderr)")
def ab(plan_file: Path, a_options: tuple[str, ...], b_options: tuple[str, ...],
       env_names: str | None, workload_names: str | None, repeat: str | None,
       timeout_s: float | None, db: str, threshold: float, alpha: float,
       memory_threshold_mib: float, fail_on_regression: bool, allow_missing: bool,
       max_failure_rate: float, gate: tuple[str, ...], across_hosts: bool, every: bool,
       output_format: str) -> None:
    """A against B in one campaign: every environment of PLAN_FILE twice (NAME.a, NAME.b),
    run interleaved (A B, B A, ...), then compared cell by cell. 'compare --ab CAMPAIGN'
    gives the verdict again later."""
    # deferred, each, for --help and the other commands: what a campaign needs
    from guestbench import host  # deferred: 13 ms
    from guestbench.plan import ab as ab_plans, build as plan_build, schema  # deferred: 160 ms
    from guestbench.commands import reading  # deferred: analysis/, 25 ms
    from guestbench.analysis import compare as comparing  # deferred: scipy, 55 ms
    from guestbench.runner import lifecycle  # deferred: the runner, kinds, workloads, 350 ms

    facts = host.collect()
    loaded = plan_build.load(plan_file, facts, schema.Overrides(
        names(env_names, "--env"), names(workload_names, "--workload"),
        schema.repeat_flag(repeat), timeout_s))
    a_set, b_set = ab_plans.assignments(a_options, "--a"), ab_plans.assignments(b_options, "--b")
    plan = ab_plans.ab_plan(loaded, a_set, b_set)
    refused = _side_that_cannot_run(plan, facts)
    if refused:
        raise BadInput(refused)
    results, _logs, campaign_id = lifecycle.run(plan, facts, db, None, say)
    sides = reading.ab_sides(results, campaign_id)
    apart = comparing.hosts_apart(*sides)
    if apart and fail_on_regression and not across_hosts:
        raise BadInput(comparing.across_hosts_refusal("ab", apart))
    result = comparing.compare(*sides, threshold=threshold,
                               alpha=alpha, ignore_spec=ab_plans.option_keys({**a_set, **b_set}),
                               correction="holm", memory_threshold_mib=memory_threshold_mib,
                               max_failure_rate=max_failure_rate, gate=gate)
    emit(formats.render("compare", output_format, result, formats.Request(every=every)), None)
    click.echo(f"A/B: {result.count(comparing.SLOWER)} slower, {result.count(comparing.FASTER)} "
               f"faster, {result.count(comparing.SAME)} same of {len(result.cells)} cells "
               f"(Holm-adjusted p < {alpha:g} and beyond ±{threshold:.0%}); campaign "
               f"{campaign_id} in {db} (again: guestbench compare --ab {campaign_id}"
               f"{'' if db == DEFAULT_URL else ' --db ' + db})",
               err=output_format != formats.DEFAULT)
    unjudged = comparing.unjudged(result)
    if unjudged and fail_on_regression:  # a gate that judged nothing would pass anything
        raise BadInput(f"ab: {unjudged}")
    if unjudged:
        say(f"guestbench: {unjudged}")
    failed = comparing.failed_gate(result, allow_missing)
    if fail_on_regression and failed:
        say(f"guestbench: {failed} (--fail-on-regression)")
        raise SystemExit(1)


def _side_that_cannot_run(plan, facts) -> str:
    """Why side A or B has no environment that can run here (each probed, as the campaign
    would), or "": a comparison with one side empty would judge nothing."""
    from guestbench import environments  # deferred: with the runner, above
    for tag, name in (("a", "A"), ("b", "B")):
        specs = [spec for spec in plan.environments if spec.name.endswith(f".{tag}")]
        answers = [(spec.name, environments.create(spec).probe(facts)) for spec in specs]
        if answers and not any(answer.available for _, answer in answers):
            reasons = "; ".join(f"{env}: {answer.reason}" for env, answer in answers)
            return (f"ab: side {name} cannot run here, so nothing could be compared "
                    f"({reasons}) (fix: side {name}'s options, --{tag} KEY=VALUE)")
    return ""
