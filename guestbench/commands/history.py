"""guestbench history: each cell's median over the finished campaigns, and where it
changed."""

from __future__ import annotations

from pathlib import Path

import click

from guestbench.commands.arguments import db_option, emit, format_option, names, short_lived
from guestbench.report import formats


@click.command()
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
@click.option("--memory-threshold-mib", "memory_threshold_mib", default=1.0, show_default=True,
              type=click.FloatRange(0), help="a memory series (footprint, density PSS) "
              "changes only by more than this many MiB")
@format_option("history")
@click.option("--output", "-o", type=click.Path(path_type=Path), help="write to this file")
@click.option("--detail", is_flag=True, help="table format: every campaign of every cell")
def history(db: str, host: str | None, group: str | None, name: str | None,
            env_names: str | None, workload_names: str | None, order: str, max_pvalue: float,
            min_change: float, memory_threshold_mib: float, output_format: str, output: Path | None, detail: bool) -> None:
    """Each cell's median over every finished campaign, and its change points (Apache Otava)."""
    short_lived()
    from guestbench.commands import reading  # deferred: analysis/, 25 ms that --help never pays

    found = reading.history(db, host, group,
                            names(env_names, "--env"), names(workload_names, "--workload"),
                            name, order, max_pvalue, min_change, memory_threshold_mib)
    emit(formats.render("history", output_format, found, formats.Request(output, detail)),
          output)
