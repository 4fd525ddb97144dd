"""What every command shares: bad input ends it with one message and exit 2; a comma-separated
list of names; --db and --format; where the text goes; the settings of a short command."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import click

from guestbench.commands import shortlived
from guestbench.errors import InputError
from guestbench.process import stopping
from guestbench.report import formats
from guestbench.store import DEFAULT_URL, damage

EXIT_BAD_INPUT = 2


class BadInput(click.ClickException):
    """Bad input anywhere: one message naming what, where and the fix; exit code 2."""

    exit_code = EXIT_BAD_INPUT

    def format_message(self) -> str:
        return self.message


def names(value: str | None, flag: str, example: str = "native,runc") -> tuple[str, ...]:
    """The names of a comma-separated flag (--env native,runc), none if it is not given."""
    if value is None:
        return ()
    found = tuple(name.strip() for name in value.split(",") if name.strip())
    if not found:
        raise BadInput(f"{flag}: {value!r} names nothing (fix: e.g. {flag} {example})")
    return found


db_option = click.option("--db", default=DEFAULT_URL, show_default=True,
                         help="SQLAlchemy URL of the store")
# compare's and ab's: what share of lost runs B may have beyond A's (analysis/compare.py)
max_failure_rate_option = click.option(
    "--max-failure-rate", "max_failure_rate", default=0.0, show_default=True,
    type=click.FloatRange(0, 1),
    help="the share of runs B may lose (not ok) beyond A's before its cell is flaky, a "
         "regression: 0.1 lets 1 run in 10 fail")


def _gate(_context, _parameter, value: str) -> tuple[str, ...]:
    from guestbench.analysis.tail_compare import GateError, parse_gate  # deferred: numpy
    try:
        return parse_gate(value)
    except GateError as error:
        raise BadInput(str(error)) from None


# compare's and ab's: the statistics judged (analysis/tail_compare.py)
gate_option = click.option(
    "--gate", "gate", default="p50", show_default=True, metavar="p50,p95,p99",
    callback=_gate,
    help="the percentiles judged, comma-separated (p50, p90, p95, p99): p50 is the median; "
         "a higher one is judged where both sides have the values it needs (p95: 20, p99: "
         "100)")


def format_option(command: str, help_text: str | None = None):
    """--format: the formats that command offers (report/formats/), the table by default."""
    return click.option("--format", "output_format", default=formats.DEFAULT, show_default=True,
                        type=click.Choice(formats.names(command)), help=help_text)


def emit(text: str, output: Path | None) -> None:
    """To standard output, or to the file output (written whole)."""
    if output is None:
        click.echo(text, nl=False)
        return
    from guestbench.report.output import write  # deferred: 3 ms that a printed answer never pays
    click.echo(f"wrote {write(text, output)}", err=True)


def say(line: str) -> None:
    """A line of the command's own on stderr. On a terminal it is wrapped to fit it (at most
    the tables' width), its continuation indented, no word or path cut; elsewhere (a log, a
    pipe, a test) each line stays whole, for grep."""
    click.echo(fitted(line, shutil.get_terminal_size().columns) if _on_a_terminal() else line,
               err=True)


def _on_a_terminal() -> bool:
    return sys.stderr.isatty()


def fitted(text: str, columns: int) -> str:
    """text wrapped to columns (at most the tables' text width)."""
    from guestbench.report.formats.terminal import TEXT_WIDTH  # deferred: rich loads with it
    width = max(min(columns, TEXT_WIDTH), 40)
    return "\n".join(
        textwrap.fill(line, width, subsequent_indent="  ", break_long_words=False,
                      break_on_hyphens=False) if len(line) > width else line
        for line in text.split("\n"))


def short_lived() -> None:
    shortlived.settle(click.get_current_context().call_on_close)


class Commands(click.Group):
    """Every command ends on the typed errors from below as the shell expects: bad input
    with one message and exit 2 (a store that is damaged or a disk that is full too,
    wherever it is met: guestbench/store/damage.py); a campaign stopped by Ctrl-C or
    SIGTERM with 130 or 143, and so an error the signal came out as (stopping.py). Errors
    below that mean the input cannot be used (a plan, a name, a store, a file) are
    InputErrors (guestbench/errors.py)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit):  # Exit: --help, --version
            raise
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM outside a campaign's own handling
            name = str(stop) or "SIGINT"
            click.echo(stopping.stopped_line(name), err=True)
            raise click.exceptions.Exit(stopping.exit_code(name)) from None
        except stopping.Stopped as stopped:  # a campaign's own handling: what it kept
            click.echo(str(stopped), err=True)
            raise SystemExit(stopped.exit_code) from None
        except Exception as error:  # noqa: BLE001 - only the errors named here; others go on
            if stopping.received is not None:  # the signal came out as this (stopping.py)
                click.echo(stopping.stopped_line(stopping.received, error), err=True)
                raise click.exceptions.Exit(stopping.exit_code(stopping.received)) from None
            message = str(error) if isinstance(error, InputError) else damage.explain(error)
            if message is None:
                raise
            raise BadInput(message) from None
