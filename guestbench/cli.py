"""The guestbench command: the group and its commands, one module each under commands/.

A command only parses its arguments, calls the pipeline (plan -> run -> store -> analysis ->
report) and prints. Heavy libraries (pydantic, SQLAlchemy, rich, numpy) are imported inside
the commands, so that `guestbench --version` and `--help` answer at once.
"""

from __future__ import annotations

import click

from guestbench import __version__
from guestbench.commands import ab, compare, envs, history, pool, report, run
from guestbench.commands.arguments import EXIT_BAD_INPUT, Commands
from guestbench.commands.run import EXIT_RUNS_NOT_OK

# the codes tests expect: of bad input, and of a campaign some of whose runs did not end ok
__all__ = ["EXIT_BAD_INPUT", "EXIT_RUNS_NOT_OK", "main"]


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="guestbench")
def main() -> None:
    """Measure what an execution environment costs compared with native."""


for command in (run.run, envs.envs, envs.doctor, envs.images, report.report, compare.compare,
                history.history, ab.ab, *pool.COMMANDS):
    main.add_command(command)
