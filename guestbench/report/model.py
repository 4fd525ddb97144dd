"""The one table model every renderer draws: measured values, ratios to baseline, footnotes."""

from __future__ import annotations

import contextlib
import math
import contextvars
import re
from dataclasses import dataclass, field
from typing import Any

from guestbench.analysis.cells import (CONFIDENCE, CONTEXT, RESAMPLES, SPREAD_FACTOR, TOO_FAST,
                                       UNSTABLE_CV, VERDICT, Cell, Interval, Results, is_breakdown,
                                       row_kind)
from guestbench.analysis.clock import CLOCK_DRIFT_LIMIT, CLOCK_MIN_SPAN_S, clock_summaries
from guestbench.analysis.geomean import Geomean
from guestbench.analysis.results import RATIO_RULE, CampaignResults
from guestbench.report import functional, reader


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    footnotes: list[str] = field(default_factory=list)
    note: str = ""
    label_columns: int = 2  # leading columns that name the row; the rest are values
    # per row, per value column: the (environment, label) cell the text comes from,
    # so the HTML report can link it to the logs of that cell's runs
    sources: list[list[tuple[str, str] | None]] = field(default_factory=list)
    name: str = ""  # a short stable id (anchors, tests)
    # per row, per value column: how good or bad the value is ("better", "same", "worse",
    # "much-worse", "far-worse"; None: not a ratio), for renderers that colour
    tones: list[list[str | None]] = field(default_factory=list)
    lead: str = ""  # a line said before the table (the campaign's typical spread)
    # what a title a [[table]] entry gives keeps after it (the setup's host)
    keep_in_title: str = ""
    # per row, per value column: the figure its text shows, as numbers in the cell's own
    # unit (figure()), for the JSON document; None where the text is no figure
    numbers: list[list[dict[str, Any] | None]] = field(default_factory=list)

    def add(self, row: list[str], sources: list[tuple[str, str] | None] | None = None,
            numbers: list[dict[str, Any] | None] | None = None) -> None:
        self.rows.append(row)
        self.sources.append(sources or [None] * (len(row) - self.label_columns))
        self.numbers.append(numbers or [None] * (len(row) - self.label_columns))


def figure(value: float, low: float | None, high: float | None, unit: str,
           statistic: str = "p50") -> dict[str, Any]:
    """A table cell's figure as numbers: what the JSON document gives beside the text
    ("50.03 [43.25-64.34]" is {"statistic": "p50", "value": 50.03, "low": 43.25, ...}); an
    end the values do not bound is None."""
    return {"statistic": statistic, "value": value, "low": low, "high": high, "unit": unit}


def median_figure(cell: Cell | None) -> dict[str, Any] | None:
    """A cell's median and its interval as numbers (median_text's), or None without one."""
    if cell is None or cell.stats is None:
        return None
    stats = cell.stats
    return figure(stats.median, stats.ci_low, stats.ci_high, cell.unit)


# One mark per status (single-width characters, so terminal columns line up).
STATUS_MARKS = {
    "failed": "✗", "timeout": "◷", "crashed": "☠", "infra": "‡",
    "unsupported": "∅", "unavailable": "⊘", "interrupted": "‖",
}

FLAG_MEANINGS = {
    "clock-drift": "the guest's clock and the host's disagreed by more than 5% over the run "
                   "(in every span between the agent's clock marks, for full-system guests; "
                   "see clock_ratio with --all-metrics): its time-based numbers are suspect",
    "console-latency": "the agent's clock marks reached the host unevenly (some spans off by "
                       "more than 5%, others not): the host was slow to timestamp the guest's "
                       "console, so the clock check could not judge the guest's clock (check "
                       "the host checks' load)",
    "placement-drift": "a VMM thread was not on the host CPU it was pinned to when the "
                       "agent ended (the run's placement.json has what moved): the run did "
                       "not keep the placement its environment is named after",
    "vmm-exit": "the VMM exited with an error (a signal, or a status other than 0) after the "
                "agent had ended and the guest's /init had said so: the figures are whole, "
                "and the VMM's failure at its end is in the run's stderr.log",
    "unstable": "its runs vary far more than the campaign's other cells: a coefficient of "
                f"variation above {UNSTABLE_CV:.0%} and above {SPREAD_FACTOR:g} times "
                "the campaign's typical one (standard deviation over mean, of each run's "
                "median where runs give several values): look at the spread before trusting "
                "the median",
    "multimodal": "the runs form separate clusters (peaks of a kernel density estimate): "
                  "the median may sit between two behaviours",
    "too-fast": "too fast to measure, shown as +++++ like bonnie++: the tool timed a span "
                "under its clock's resolution, or every run gave the identical number (a "
                "quantised figure); the median is in brackets, with no interval, and no "
                "ratio, % or geometric mean uses it",
}


def flag_meaning(cell: Cell, flag: str) -> str:
    """What a flag says of this cell: too-fast names its workload's own rule where its tool
    has one (fio's whole milliseconds), the same for every cell of it."""
    plain = STYLE.get().plain  # +++++ alone (too_fast_text): no median shown
    if flag == TOO_FAST and cell.too_fast_rule:
        shown = ("no figure is given" if plain else
                 "the median is in brackets, with no interval")
        return (f"too fast to time, shown as +++++ like bonnie++: {cell.too_fast_rule} (so "
                f"said at least half of the cell's runs); {shown}, and no ratio, % or "
                "geometric mean uses it")
    if flag == TOO_FAST and plain:
        return FLAG_MEANINGS[flag].replace("the median is in brackets, with no interval",
                                           "no figure is given")
    return FLAG_MEANINGS.get(flag, flag)


# A published cell's word for a run that gave no figure (its footnote says which and why).
INCONCLUSIVE = "console-latency"  # the clock check's flag when it could not judge
CLOCK_LINE = "Clock check inconclusive for"
PLAIN_STATUS = {"unavailable": "n/a", "unsupported": "n/a", "interrupted": "n/a"}

_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?")


def table_bytes(table: Table) -> int:
    """The widest line the table's grid takes, in bytes as `awk '{ print length }'` counts."""
    widths = column_bytes(table)
    return sum(widths) + 3 * len(widths) + 1


def column_widths(table: Table) -> list[int]:
    return [max(len(row[i]) for row in [table.header, *table.rows])
            for i in range(len(table.header))]


def column_bytes(table: Table) -> list[int]:
    """The most bytes a column's cell can take on a line: rich pads every cell to the
    column's width in characters, and a cell's multi-byte marks (⊘, ±) add their extra
    bytes on top, even where the widest cell by characters is plain ASCII."""
    cells = [table.header, *table.rows]
    return [max(len(row[i]) for row in cells)
            + max(len(row[i].encode()) - len(row[i]) for row in cells)
            for i in range(len(table.header))]


class Footnotes:
    """Numbers each distinct (environment, status, reason) once, and each flag once for
    every environment it marks (a flag means the same wherever it appears); remembers the
    marks used.

    Reasons that differ only in their numbers (addresses, timestamps on a console) share
    one footnote, which shows the first of them and how many others it stands for.
    """

    def __init__(self) -> None:
        # a cell's marks in the plain style: one number for everything said of the cell
        # (identical footnotes are one: what a reader sees decides, not the reasons' keys)
        self._combined: dict[str, int] = {}
        self._numbers: dict[tuple[str, str, str], int] = {}
        self._shown: dict[tuple[str, str, str], str] = {}  # the first reason of each
        self._alike: dict[tuple[str, str, str], set[str]] = {}
        self._flagged: dict[tuple[str, str, str], list[str]] = {}  # a flag's environments
        # plain: environments whose clock check was inconclusive (said once, not per cell)
        self.inconclusive: list[str] = []

    def mark(self, cell: Cell) -> str:
        """The cell's footnote marks, "[1][2]"; in the plain style one mark, "[1]", whose
        footnote says all of them (a published cell carries at most one)."""
        if not STYLE.get().plain:
            return "".join(f"[{number}]" for number in self._numbered(cell))
        if INCONCLUSIVE in cell.flag_names and cell.environment not in self.inconclusive:
            self.inconclusive.append(cell.environment)
        keys = tuple(self._keys(cell))
        if not keys:
            return ""
        self._numbered(cell)  # each part is numbered too: lines() says them by number
        said = "; ".join(self._said(key, plain=True) for key in keys)
        number = self._combined.setdefault(said, len(self._combined) + 1)
        return f"[{number}]"

    def _keys(self, cell: Cell) -> list[tuple[str, str, str]]:
        # a published cell carries no mark of an inconclusive clock check: clock_line says it
        flagged = [(flag, flag_meaning(cell, flag)) for flag in cell.flag_names
                   if flag != INCONCLUSIVE]
        out = []
        for index, (status, reason) in enumerate([*cell.problems, *flagged]):
            is_flag = index >= len(cell.problems)
            key = ("" if is_flag else cell.environment, status, _NUMBERS.sub("#", reason or ""))
            if key not in out:
                out.append(key)
        return out

    def _numbered(self, cell: Cell) -> list[int]:
        marks: list[int] = []
        flagged = [(flag, flag_meaning(cell, flag)) for flag in cell.flag_names]
        for index, (status, reason) in enumerate([*cell.problems, *flagged]):
            is_flag = index >= len(cell.problems)
            key = ("" if is_flag else cell.environment, status, _NUMBERS.sub("#", reason or ""))
            if is_flag:
                environments = self._flagged.setdefault(key, [])
                if cell.environment not in environments:
                    environments.append(cell.environment)
            number = self._numbers.setdefault(key, len(self._numbers) + 1)
            self._shown.setdefault(key, reason)
            self._alike.setdefault(key, set()).add(reason)
            if number not in marks:
                marks.append(number)
        return marks

    def lines(self) -> list[str]:
        """"[n] what: why" per mark, in the order the marks were given."""
        if self._combined or self.inconclusive:  # plain: a line per combination a cell carried
            return [f"[{number}] {said}" for said, number in self._combined.items()] \
                + self.clock_line()
        lines = [f"[{number}] {self._said(key)}" for key, number in self._numbers.items()]
        used = dict.fromkeys(status for _env, status, _reason in self._numbers
                             if status in STATUS_MARKS)
        if used:
            lines.append("Marks: " + ", ".join(f"{STATUS_MARKS[s]} {s}" for s in used) + ".")
        return lines

    def clock_line(self, environments: list[str] | None = None) -> list[str]:
        """The one line a published table gives an inconclusive clock check (of these
        environments, default all that had one): no value is marked for it."""
        named = [env for env in self.inconclusive if environments is None or env in environments]
        if not named:
            return []
        return [f"{CLOCK_LINE} {', '.join(named)}: the host was slow to timestamp "
                f"{'their consoles' if len(named) > 1 else 'its console'}, so the guest's "
                "clock could not be checked against the host's (the values are not known "
                "to be wrong)."]

    def _said(self, key: tuple[str, str, str], plain: bool = False) -> str:
        env, status, _ = key
        others = len(self._alike[key]) - 1
        also = f" (and {others} more reason{'s' if others > 1 else ''} differing only in " \
               "numbers)" if others else ""
        if plain:  # a published table's footnote: what is true of the value, for a reader
            words = reader.plain_words(self._shown[key] or "")
            return f"{status}: {words}" if not env else \
                f"{env}: {reader.said(status, self._shown[key] or '')}"
        shown = _marked(status)
        where = f"{env}: {shown}" if env else f"{shown} ({', '.join(self._flagged[key])})"
        reason = self._shown[key] or "no reason given"
        if FOR_READERS.get() and env:  # a problem's reason, as a reader is told it
            told = {reader.plain_words(reader.decisive_line(one)) for one in self._alike[key]}
            reason = reader.plain_words(reader.decisive_line(reason))
            also = also if len(told) > 1 else ""  # alike as the reader reads them: one
        return f"{where}: {reason}{also}"


def _marked(status: str) -> str:
    return f"{STATUS_MARKS[status]} {status}" if status in STATUS_MARKS else status


TIME_UNITS = (("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9))
# Minutes and seconds, "1m53" as `time` prints a build: a unit a style or a [[table]] gives
# (never chosen by itself); its values are seconds, written by format_clock.
CLOCK = "m:ss"


# How numbers are written: "si" (10k, 1.17M: narrow cells) or "plain" (--units plain:
# 1170000 cycles, and each metric in the unit it was stored in, ns for the micro workloads and
# s for builds, never rescaled row by row). Set for one rendering by units().
UNITS: contextvars.ContextVar[str] = contextvars.ContextVar("units", default="si")
# A time unit the report's style gives the table being built (report/restyle.py), or None.
TIME_UNIT: contextvars.ContextVar[str | None] = contextvars.ContextVar("time_unit", default=None)


@contextlib.contextmanager
def units(style: str):
    token = UNITS.set(style)
    try:
        yield
    finally:
        UNITS.reset(token)


STATISTICS = ("median", "mean", "best")


@dataclass(frozen=True)
class Style:
    """How a table writes its values. The default is the report's: the median with its
    interval and every flag. A table to publish (--plain, or a plan's [[table]]) is plain:
    the value alone in the unit its header names, one footnote mark per cell."""

    plain: bool = False
    statistic: str = "median"  # median, mean (kernbench's), or best (dbench's best of N)
    spread: bool = True  # with the value: ±half the interval (median) or (stdev) (mean)
    decimals: int | None = None  # plain: this many decimals; None: whole numbers from 1000


STYLE: contextvars.ContextVar[Style] = contextvars.ContextVar("style", default=Style())


# Tables a reader is given (Markdown, a write-up's format): their footnotes say a reason in
# the reader's words (reader.said: one line, no instruction, no host path) in every style,
# where the terminal keeps the operator's whole reason ("to test again: rm ...").
FOR_READERS: contextvars.ContextVar[bool] = contextvars.ContextVar("for_readers", default=False)


@contextlib.contextmanager
def for_readers():
    token = FOR_READERS.set(True)
    try:
        yield
    finally:
        FOR_READERS.reset(token)


@contextlib.contextmanager
def styled(style: Style):
    """Tables built inside are written in this style (units follow: plain is plain)."""
    token = STYLE.set(style)
    units_token = UNITS.set("plain") if style.plain else None
    try:
        yield
    finally:
        STYLE.reset(token)
        if units_token is not None:
            UNITS.reset(units_token)


def spread_text(cell: Cell, divisor: float = 1.0) -> str:
    """In the plain style with spread: " ±2.1%" beside a median (half its interval), " (0.17)"
    beside a mean (the runs' standard deviation, as kernbench prints it); else ""."""
    style = STYLE.get()
    if not style.spread or cell.stats is None or cell.n < 2:
        return ""
    if style.statistic == "mean":
        _runs, _mean, stdev = cell.run_means()
        return f" ({value_formatter(cell)(stdev / divisor)})" if stdev is not None else ""
    if style.statistic == "median" and cell.stats.half_width is not None:
        return f" ±{format_percent(cell.stats.half_width)}"
    return ""


def central(cell: Cell) -> float:
    """The figure a cell is shown by, in the style's statistic: its median (the default), the
    mean of its values, or the best of them (the highest of a rate, the lowest of a time);
    the best where the plan asked for the best of N runs (best_of)."""
    statistic = "best" if cell.best_of else STYLE.get().statistic
    if statistic == "mean" and cell.stats is not None and cell.stats.mean is not None:
        return cell.stats.mean
    if statistic == "best" and cell.values:
        return max(cell.values) if cell.higher_is_better else min(cell.values)
    return cell.median


def row_scale(unit: str, cells: list[Cell]) -> tuple[str, float]:
    """One display unit for a whole row, from its cells' medians (value_scale). Give it every
    cell of the row, not the ones a table shows, so that the row reads in one unit in every
    table and format of the campaign."""
    return value_scale(unit, [cell.median for cell in cells if cell.median is not None])


def value_scale(unit: str, medians: list[float]) -> tuple[str, float]:
    """(the unit to show, what to divide by) for a row or series of time values: ns become
    us, ms or s when every value is large, and a larger unit is taken where the largest
    would read 100k or more ("1.781M us" reads 1781 ms). Other units, and plain units
    (--units plain), stay as they are. A unit the report's style gives the table (TIME_UNIT:
    report/restyle.py) is taken as given."""
    factors = dict(TIME_UNITS)
    forced = TIME_UNIT.get()
    if forced is not None and unit in factors:
        return forced, factors.get(forced, factors["s"]) / factors[unit]
    if UNITS.get() == "plain":
        return unit, 1.0
    if unit not in factors or not medians:
        return unit, 1.0
    smallest_ns = min(medians) * factors[unit]
    largest_ns = max(medians) * factors[unit]
    best = [(name, factor) for name, factor in TIME_UNITS if smallest_ns >= 10 * factor]
    name, factor = best[-1] if best else (unit, factors[unit])
    # a row from 227 ms to 35 s reads better as 0.2272 s to 35.42 s than with 35.42k ms, and
    # one from 2.9 ms to 5 s as 2.937 ms to 4978 ms than with 4.978M us (to ms only from
    # 1 ms: 462 us reads better than 0.462 ms; never from ns: 0.14 us for 140 ns would read
    # worse than 42.1k ns)
    for larger, larger_factor, least in (("ms", 1e6, 1.0), ("s", 1e9, 0.1)):
        if (name != "ns" and larger_factor > factor and largest_ns >= 1e4 * factor
                and smallest_ns >= least * larger_factor):
            name, factor = larger, larger_factor
    for larger, larger_factor in TIME_UNITS:  # never 100k or more of a unit: M is unreadable
        if larger_factor > factor and largest_ns >= 1e5 * factor:
            name, factor = larger, larger_factor
    return name, factor / factors[unit]


def format_value(value: float) -> str:
    """Four significant digits; k/M/G beyond 10,000 so cells stay narrow. Plain units: whole
    numbers from 1,000 up (1170000), four significant digits below."""
    decimals = STYLE.get().decimals
    if decimals is not None:
        return with_decimals(value, decimals)
    if UNITS.get() == "plain":
        return f"{value:.0f}" if abs(value) >= 1000 else f"{float(f'{value:.4g}'):g}"
    rounded = float(f"{value:.4g}")  # 9999.96 shows as 10k, not 1e+04
    for limit, magnitude, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(rounded) >= limit:
            return f"{rounded / magnitude:.4g}{suffix}"
    return small(rounded) if rounded and abs(rounded) < 1e-4 else f"{rounded:.4g}"


def small(value: float, digits: int = 4) -> str:
    """A value under 1e-4 in fixed point, never scientific: 2.13e-05 is "0.0000213"."""
    decimals = digits - 1 - math.floor(math.log10(abs(value)))
    return f"{value:.{decimals}f}".rstrip("0").rstrip(".")


def with_decimals(value: float, decimals: int) -> str:
    """The value with that many digits after the point, or more where fewer would leave it
    under two significant digits: with 1, 3.94 is "3.9" but 0.2666 is "0.27", not "0.3"."""
    if value and math.isfinite(value) and abs(value) < 10:
        decimals = max(decimals, 1 - math.floor(math.log10(abs(value))))
    return f"{value:.{decimals}f}"


def format_count(value: float) -> str:
    """A count (processes, instances, clients): a whole number gets no decimals, whatever
    a table's decimals say ("20", not "20.0")."""
    if STYLE.get().decimals is not None and float(value).is_integer():
        return f"{value:.0f}"
    return format_value(value)


def format_clock(seconds: float) -> str:
    """Minutes and seconds as `time` prints them: "1m53", "0m43", "12m05"; with a style's
    decimals, of the seconds ("1m53.2"). Under a second, in seconds ("0.42 s"): "0m00" would
    say nothing of a build that took 0.4 s."""
    if abs(seconds) < 1 and STYLE.get().decimals is None:
        return f"{float(f'{seconds:.2g}'):g} s"
    decimals = STYLE.get().decimals or 0
    scale = 10 ** decimals
    total = round(abs(seconds) * scale) / scale
    minutes, rest = divmod(total, 60)
    width = 2 + (decimals + 1 if decimals else 0)
    sign = "-" if seconds < 0 and total else ""
    return f"{sign}{int(minutes)}m{rest:0{width}.{decimals}f}"


def in_clock(cell: Cell) -> bool:
    """Whether this cell's values are written in minutes and seconds here: its unit is a
    time and the table's style gives m:ss (TIME_UNIT)."""
    return TIME_UNIT.get() == CLOCK and cell.unit in dict(TIME_UNITS)


def value_formatter(cell: Cell):
    """How a value of this cell, over value_scale's divisor, is written: format_clock where
    the table is in m:ss (the divisor made it seconds), else format_value."""
    if cell.unit == "count":
        return format_count
    return format_clock if in_clock(cell) else format_value


def own_unit_text(cell: Cell, value: float) -> str:
    """A value of the cell in its own stored unit (a table that does not rescale rows, e.g.
    a build's seconds), or in minutes and seconds where the table is in m:ss."""
    if in_clock(cell):
        return format_clock(value / own_divisor(cell))
    return format_value(value)


def own_divisor(cell: Cell) -> float:
    """What a value of the cell in its own unit is divided by to be written: to seconds where
    the table is in m:ss, else 1."""
    return 1e9 / dict(TIME_UNITS)[cell.unit] if in_clock(cell) else 1.0


def unit_label(unit: str) -> str:
    """A header's unit for values stored in `unit`: "m:ss" where the table is in minutes and
    seconds and the unit is a time, else the unit."""
    return CLOCK if TIME_UNIT.get() == CLOCK and unit in dict(TIME_UNITS) else unit


def format_ratio(ratio: float) -> str:
    if ratio < 0.1:
        return f"{ratio:.2g}x"  # 0.0014x, not 0.00x: TCG's cpuid against a nested host's
    if ratio >= 100:
        return f"{ratio:.0f}x"
    if ratio >= 10:
        return f"{ratio:.1f}x"
    return f"{ratio:.2f}x"


def format_percent(fraction: float) -> str:
    """0.0031 -> '0.31%', 0.12 -> '12%': two significant digits, never scientific."""
    percent = fraction * 100
    if percent >= 10:
        return f"{percent:.0f}%"
    return f"{float(f'{percent:.2g}'):g}%"


def format_share(percent: float) -> str:
    """A "% of native" figure: three significant digits, never scientific (1090, not
    1.09e+03), whole numbers from 100 up."""
    rounded = float(f"{percent:.3g}")
    return f"{rounded:.0f}" if abs(rounded) >= 100 else f"{rounded:g}"


def format_interval(interval: Interval, formatter=format_ratio) -> str:
    """A value with its interval, "1.23x [1.1-1.4x]"; the value alone in the plain style."""
    text = formatter(interval.value)
    if STYLE.get().plain and not STYLE.get().spread:
        return text
    if interval.low is not None and interval.high is not None:
        text += f" [{formatter(interval.low).rstrip('x')}-{formatter(interval.high)}]"
    return text


def median_text(cell: Cell, divisor: float = 1.0) -> str:
    """A cell's median with its 95% interval, "12.3 [11.9-12.8]", in the cell's unit over
    divisor; the median alone in a plain table (values only)."""
    stats = cell.stats
    write = value_formatter(cell)
    if stats is None:
        return write(sorted(cell.values)[len(cell.values) // 2] / divisor)
    if STYLE.get().plain and not STYLE.get().spread:
        return write(stats.median / divisor)
    low = None if stats.ci_low is None else stats.ci_low / divisor
    high = None if stats.ci_high is None else stats.ci_high / divisor
    return format_interval(Interval(stats.median / divisor, low, high), write)


def problem_text(cell: Cell, footnotes: Footnotes) -> str:
    if STYLE.get().plain:  # one short word and one mark, "n/a [1]": the footnote says why
        statuses = ", ".join(dict.fromkeys(PLAIN_STATUS.get(status, status)
                                           for status, _ in cell.problems))
        return f"{statuses} {footnotes.mark(cell)}".strip()
    counts: dict[str, int] = {}
    for status, _ in cell.problems:
        counts[status] = counts.get(status, 0) + 1
    failed = ", ".join(f"{_marked(status)} x{count}" if count > 1 else _marked(status)
                       for status, count in counts.items())
    return f"{failed} {footnotes.mark(cell)}".strip()


def flag_text(cell: Cell) -> str:
    """'!unstable,clock-drift' or ''."""
    if STYLE.get().plain:
        return ""  # a published cell carries one footnote mark instead
    names = [name for name in cell.flag_names if name != TOO_FAST]  # too-fast shows as +++++
    return f"!{','.join(names)}" if names else ""


def spread_line(report: CampaignResults) -> str:
    """The campaign's typical spread, said once above the tables when the whole host varied
    (a mark on every cell would say nothing about any one of them); else ''."""
    spread = report.results.spread
    if spread is None or not spread.noisy:
        return ""
    return (f"The host was noisy: the typical cell's runs varied by {format_percent(spread.typical_cv)} "
            f"(median coefficient of variation of {spread.cells} cells; a quiet host gives a "
            "few %), so every figure here is that uncertain; a cell is marked unstable only "
            f"where its runs varied more than {format_percent(spread.limit)}.")


def decorate(text: str, cell: Cell, footnotes: Footnotes) -> str:
    """A measured cell's text with its flags and its runs' problems, and their footnotes
    (in the plain style, one mark for all of them)."""
    if STYLE.get().plain:
        mark = footnotes.mark(cell)
        return f"{text} {mark}" if mark else text
    flags = flag_text(cell)
    if flags:
        text += f" {flags}"
    if cell.problems:
        return f"{text} +{problem_text(cell, footnotes)}"
    return f"{text} {footnotes.mark(cell)}" if flags or cell.too_fast else text


def empty_text(cell: Cell) -> str:
    """A cell without values: "not run" when it has no runs (a workload's own `environments`
    leave it out, or the campaign stopped first), "no samples" when its runs gave none."""
    if cell.too_fast:
        return "+++++"  # every run said the figure was too fast to time (bonnie++'s mark)
    if cell.runs == 0:
        return "-" if STYLE.get().plain else "not run"
    return "no samples"


def verdict_text(cell: Cell, footnotes: Footnotes) -> str:
    """A verdict's runs: "yes", "no", or "mixed: yes in 3 of 5", with the runs' count."""
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    yes = sum(1 for value in cell.values if value >= 1)
    text = "yes" if yes == len(cell.values) else "no" if yes == 0 else \
        f"mixed: yes in {yes} of {len(cell.values)}"
    if len(cell.values) > 1 and yes in (0, len(cell.values)):
        text += f" ({len(cell.values)} runs)"
    return decorate(text, cell, footnotes)


def too_fast_text(cell: Cell, divisor: float = 1.0) -> str:
    """bonnie++'s mark for a figure too fast to measure, with the median it gave."""
    if STYLE.get().plain or not cell.values:
        return "+++++"
    return f"+++++ ({format_value(cell.median / divisor)})"



def _measured_text(cell: Cell, footnotes: Footnotes, divisor: float, show_n: bool) -> str:
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    if cell.kind == VERDICT:
        return verdict_text(cell, footnotes)
    if cell.too_fast:
        return decorate(too_fast_text(cell, divisor), cell, footnotes)
    write = value_formatter(cell)
    if STYLE.get().plain:
        return decorate(write(central(cell) / divisor) + spread_text(cell, divisor),
                        cell, footnotes)
    text = write(cell.median / divisor)
    if cell.kind == CONTEXT and cell.minimum == cell.maximum:  # a count that never changed
        return decorate(text + (f" n={cell.count_text}" if show_n else ""), cell, footnotes)
    half_width = cell.stats.half_width if cell.stats else None
    if half_width is not None:
        text += f" ±{format_percent(half_width)}"
    elif cell.n > 1 and cell.minimum == cell.maximum:
        text += " (every run)"  # a coarse clock's figure: no interval would be true
    elif cell.n > 1:
        text += f" ({write(cell.minimum / divisor)}-{write(cell.maximum / divisor)})"
    if show_n:
        text += f" n={cell.count_text}"
    return decorate(text, cell, footnotes)


def published_ratio(base: Cell, cell: Cell, interval: Interval | None) -> Interval | None:
    """The ratio a table shows (above 1 is worse): of medians with their interval; in a
    plain table, of the best runs where the plan asked for the best of N (best_of), as a
    write-up's "% of native" of its best runs, with no interval."""
    if not (STYLE.get().plain and (cell.best_of or base.best_of)):
        return interval
    mine, theirs = central(cell), central(base)
    top, bottom = (theirs, mine) if cell.higher_is_better else (mine, theirs)
    return Interval(top / bottom) if bottom else None


def best_of_note(report: CampaignResults) -> str:
    """What a plain table says of the workloads shown by their best run (best_of); "" for
    none."""
    best = {cell.label: cell.best_of for row in report.results.cells.values()
            for cell in row.values() if cell.best_of}
    if not best or not STYLE.get().plain:
        return ""
    return ("The best of N runs, as the plan's best_of asks, and ratios of the best (the "
            "geometric means stay of medians): "
            + ", ".join(f"{label} ({count})" for label, count in best.items()) + ".")


def _ratio_text(cell: Cell, baseline: Cell, footnotes: Footnotes,
                interval: Interval | None = None, mark: str = "") -> str:
    """mark: after the ratio, before its footnotes (functional.ratio_mark)."""
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    if cell.too_fast or baseline.too_fast:
        return f"+++++ {footnotes.mark(cell if cell.too_fast else baseline)}"
    interval = published_ratio(baseline, cell, interval)
    ratio = interval.value if interval is not None else cell.slowdown_to(baseline)
    if interval is not None:
        text = format_interval(interval)
    else:
        text = format_ratio(ratio) if ratio is not None else "no baseline"
    text += mark
    return f"{text} {footnotes.mark(cell)}".strip() if cell.problems or cell.flag_names else text


def _column_n(results: Results, environment: str) -> str | None:
    """The n shared by every measured cell of a column, or None if they differ."""
    counts = {row[environment].count_text for row in results.cells.values()
              if row[environment].n}
    return counts.pop() if len(counts) == 1 else None


def title(report: CampaignResults, what: str) -> str:
    campaign, facts = report.campaign, report.host_facts
    created = campaign.created_at.strftime("%Y-%m-%d %H:%M")
    return (f"{what} - campaign {campaign.id} '{campaign.name}' ({campaign.status}), "
            f"{created} UTC, host {facts.get('cpu_model')} x{facts.get('logical_cpus')}, "
            f"kernel {facts.get('kernel')}")


def interval_note(report: CampaignResults) -> str:
    return (f"± is half the median's {CONFIDENCE:.0%} bootstrap confidence interval "
            f"(percentile method, {report.resamples} resamples"
            + (", fewer than usual to bound the report's time" if report.resamples
               < RESAMPLES else "") + "; runs are resampled, then the values within "
            "each run), as a share of the median; cells of fewer than 3 runs show (min-max) "
            "instead. n: runs, or runs x values per run.")


def parameter_notes(report: CampaignResults) -> str:
    """For rows whose parameters belong to the environment (one label, a [[workload]] table
    per group of environments), what differs: "upload: channel serial in uml; virtio-serial
    in qemu-tcg." Empty when every row ran with one set of parameters."""
    params: dict[str, dict[str, dict[str, Any]]] = {}
    for run in report.runs:
        params.setdefault(run.label, {}).setdefault(run.environment, run.params or {})
    notes: dict[str, list[str]] = {}  # what differed -> the labels it differed for
    for label, by_env in params.items():
        keys = sorted({key for one in by_env.values() for key in one
                       if len({repr(other.get(key)) for other in by_env.values()}) > 1})
        for key in keys:
            groups: dict[str, list[str]] = {}
            for env in report.results.environments:
                if env in by_env:
                    groups.setdefault(_param_text(by_env[env].get(key)), []).append(env)
            said = f"{key} " + "; ".join(f"{value} in {', '.join(envs)}"
                                          for value, envs in groups.items())
            notes.setdefault(said, []).append(label)
    if not notes:
        return ""
    return ("Parameters that differ by environment (one row, measured the way each environment "
            "allows): " + ". ".join(f"{_rows_named(labels)}: {said}"
                                    for said, labels in notes.items()) + ".")


def _rows_named(labels: list[str]) -> str:
    """upload[mode=write] alone, or "upload (3 rows)" for the swept labels of one workload."""
    if len(labels) == 1:
        return labels[0]
    stems = {label.split("[")[0] for label in labels}
    return f"{stems.pop()} ({len(labels)} rows)" if len(stems) == 1 else ", ".join(labels)


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "-" if value is None else str(value)


def measured_table(report: CampaignResults, footnotes: Footnotes) -> Table:
    results = report.results
    column_n = {env: _column_n(results, env) for env in results.environments}
    measured = Table(title(report, "Measured: median ±95% CI"), [
        "workload", "metric", *results.environments], [], note=interval_note(report),
        name="measured")
    if STYLE.get().plain:
        measured.title = title(report, f"Measured: {STYLE.get().statistic}")
        measured.note = f"The {STYLE.get().statistic} of each cell's runs." + (
            f" {best_of_note(report)}" if best_of_note(report) else "")
        column_n = {env: "" for env in column_n}
    elif any(column_n.values()):  # a column's one n, in a row: headers stay short
        measured.add(["runs", "n", *(column_n[env] or "per cell" for env in results.environments)])
    for label, metric, unit in results.rows:
        row = results.cells[(label, metric)]
        if metric and row_kind(row) == VERDICT:
            continue  # in the verdicts table
        if is_breakdown(metric):
            continue  # in its own table (footprint-processes)
        shown_unit, divisor = row_scale(unit, list(row.values()))
        measured.add([label, f"{metric} ({shown_unit})" if metric else "-", *(
            _measured_text(row[env], footnotes, divisor, column_n[env] is None)
            for env in results.environments)], [(env, label) for env in results.environments])
    differing = parameter_notes(report)
    if differing:
        measured.note += " " + differing
    if report.baseline and not report.baseline_measured:
        measured.note += (f" No ratios: the baseline {report.baseline} has no successful run "
                          "(see its cells); choose another with --baseline.")
    return measured



def ratio_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    if not report.baseline_measured:
        return None
    results, baseline = report.results, report.baseline
    interval = "" if STYLE.get().plain and not STYLE.get().spread else " [95% CI]"
    table = Table(f"Relative to {baseline}: ratio of medians{interval}, {ratio_rule(baseline)}",
                  ["workload", "metric", *results.environments], [], name="ratios",
                  note=f"Every ratio reads x {baseline}, above 1 is worse: an environment's "
                       f"median over {baseline}'s for times and cycles, {baseline}'s over the "
                       f"environment's for rates (MB/s, IOPS: marked 'rate, inverted'). Rows "
                       f"where {baseline} has no value are left out. Intervals of ratios and "
                       "geometric means combine the cells' own intervals (MOVER on the log "
                       "scale, docs/statistics.md).")
    for label, metric, unit in results.rows:
        row = results.cells.get((label, metric), {})
        base = row.get(baseline)
        if not metric or not base or not base.values:
            continue  # nothing to divide by: e.g. boot rows against native
        if not base.is_performance:
            continue  # context and verdicts: shown as measured, never as ratios
        table.add([label, metric + (" (rate, inverted)" if base.higher_is_better else ""), *(
            _ratio_text(row[env], base, footnotes, report.ratios.get((label, metric, env)),
                        "" if env == baseline else functional.ratio_mark(report, env))
            for env in results.environments)], [(env, label) for env in results.environments])
    for name, means in report.geomean_rows():
        table.add([name, "primary metrics", *(
            geomean_text(report, env, means) for env in results.environments)])
    if report.geomeans:
        table.note += " " + geomean_caption(report)
    differing = parameter_notes(report)
    if differing:
        table.note += " " + differing
    if best_of_note(report):
        table.note += " " + best_of_note(report)
    return table


def ratio_rule(baseline: str | None) -> str:
    """The one ratio rule, as every caption states it."""
    return RATIO_RULE.replace("baseline", baseline or "baseline")


def geomean_caption(report: CampaignResults) -> str:
    """Which rows each of the campaign's geometric means covers (analysis/geomean.py): the
    same for every environment of its group; one mean per kind of measure, never across."""
    groups = report.geomeans
    if not groups:
        return ""
    parts = []
    for group, means in groups.items():
        one = next(iter(means.values()))
        rows = f"the {one.of} workloads" if one.workloads == one.of else (
            f"the {one.workloads} of {one.of} workloads that every environment with a mean "
            f"measured (left out: {', '.join(one.left_out)})")
        parts.append(f"{group}: {rows}" if len(groups) > 1 else rows)
    if len(groups) == 1:
        return (f"The geometric mean takes each workload's primary metric, over {parts[0]}, "
                "the same rows in every environment.")
    return ("A geometric mean per kind of measure, never one across them, each over the same "
            "rows in every environment: " + "; ".join(parts) + ".")


def geomean_text(report: CampaignResults, env: str, geomeans: dict[str, Geomean],
                 as_percent: bool = False) -> str:
    """An environment's geometric-mean slowdown [CI] among `geomeans` (a group's, or a
    table's own rows'), or as a % of the baseline's performance."""
    if env == report.baseline:
        return "100" if as_percent else "1.00x"
    if not functional.judged(report, env):
        return functional.LEFT_OUT
    geomean = geomeans.get(env)
    if geomean is None:
        return "-"
    interval = geomean.interval
    if as_percent:
        text = format_share(100 / interval.value)
        if interval.low and interval.high and not STYLE.get().plain:
            text += f" [{format_share(100 / interval.high)}-{format_share(100 / interval.low)}]"
    else:
        text = format_interval(interval)
    return text


def clock_table(report: CampaignResults, footnotes: Footnotes | None = None) -> Table | None:
    """The clock check per environment: agent time over host time between hello and end."""
    summaries = clock_summaries(report.runs, report.samples, report.results.environments)
    if not summaries:
        return None
    table = Table("Clock check: guest's time / host's time over each run (hello to end record)",
                  ["environment", "runs judged", "median ratio", "min-max", "flagged clock-drift"],
                  [], note=f"A run is flagged when its ratio is off 1 by more than "
                           f"{CLOCK_DRIFT_LIMIT:.0%}; runs shorter than {CLOCK_MIN_SPAN_S:g} s "
                           "are not judged.", label_columns=1, name="clock")
    for env, summary in summaries.items():
        table.add([env, str(summary.runs_judged), f"{summary.median_ratio:.4f}",
                   f"{summary.lowest:.4f}-{summary.highest:.4f}", str(summary.flagged)])
    return table


def host_table(report: CampaignResults, footnotes: Footnotes | None = None) -> Table | None:
    """The campaign's host checks: what was read before and after, and the warnings."""
    checks = report.host_checks
    if not checks:
        return None
    before, after = checks.get("before") or {}, checks.get("after") or {}
    table = Table("Host checks", ["check", "before", "after"], [], label_columns=1, name="host")
    load_before, load_after = before.get("load_avg"), after.get("load_avg")
    table.add(["load average (1, 5, 15 min)", _loads(load_before), _loads(load_after)])
    table.add(["frequency governor", _governors(before), _governors(after)])
    steal = checks.get("steal_pct")
    table.add(["steal time during the campaign", "-",
               "unknown" if steal is None else f"{steal:.2f}%"])
    table.add(["host itself virtualised", _plain(before.get("virtualised")), "-"])
    warnings = checks.get("warnings") or []
    table.note = ("Warnings: " + "; ".join(w.rstrip(".") for w in warnings) + ".") if warnings \
        else "No warning: the host " \
        "looked quiet."
    return table


def _governors(snapshot: dict[str, Any]) -> str:
    if not snapshot:
        return "-"
    governors = snapshot.get("governors")
    return "none (no cpufreq)" if governors is None else _plain(governors)


def _loads(values: Any) -> str:
    if not values:
        return "-"
    return ", ".join(f"{value:.2f}" for value in values)


def _plain(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return ", ".join(f"{key}: {item}" for key, item in value.items()) or "-"
    if isinstance(value, (list, tuple)):
        distinct = list(dict.fromkeys(map(str, value)))
        return ", ".join(distinct) or "-"
    return str(value)
