"""Which tables a report shows: the one place every renderer asks for its set. A view
(the terminal's detail, a write-up's published tables) or the tables a user chose to publish
(`report --table`, a plan's `[[table]]` entries), each then built on its own from the
campaign's results narrowed to what it shows, in the style it asks for, with its own
footnotes. The tables' names are plan/catalogue.py's; BUILDERS says which function of
report/tables/ builds each. The terminal's summary is tables/summary.py's own, drawn
without loading these builders.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from guestbench.analysis.results import CampaignResults
from guestbench.plan import catalogue
from guestbench.plan.tables import matches, ordered, table_specs
from guestbench.report import columns, functional, model, restyle, rowed, titles
from guestbench.report.model import Footnotes, Style, Table, spread_line, styled
from guestbench.report.tables import (
    bonnie, boot, burst, efficiency, io, kernbench, memory, network, platform, published, snapshot,
    startup, summary, versions)

# the function that builds each named table: (results, footnotes) -> a table, a list of
# them, or None without data; in the catalogue's order, the order of every-table views
BUILDERS: dict[str, Callable] = {
    "measured": model.measured_table,
    "ratios": model.ratio_table,
    "platform": platform.platform_table,
    "basic": published.basic_table,
    "stream": published.stream_tables,
    "percent": published.percent_table,
    "scaling": published.scaling_tables,
    "versions": versions.version_tables,
    "disk": io.disk_table,
    "dbench": io.dbench_table,
    "upload": io.upload_times_table,
    "upload-rates": io.upload_table,
    "kernbench": kernbench.kernbench_table,
    "build": io.build_table,
    "build-runs": io.build_runs_table,
    "durability": io.durability_table,
    "verdicts": io.verdict_table,
    "bonnie": bonnie.tables,
    "bonnie-output": bonnie.tables,
    "bonnie-input": bonnie.tables,
    "bonnie-seeks": bonnie.tables,
    "bonnie-seq-create": bonnie.tables,
    "bonnie-rand-create": bonnie.tables,
    "bonnie-percent": bonnie.tables,
    "startup": startup.startup_tables,
    "footprint": memory.footprint_tables,
    "density": memory.density_table,
    "burst": burst.burst_table,
    "snapshot": snapshot.snapshot_table,
    "network": network.network_table,
    "boot": boot.boot_table,
    "boot-totals": boot.boot_totals_table,
    "statistics": published.statistics_table,
    "clock": model.clock_table,
    "host": model.host_table,
    "efficiency": efficiency.efficiency_table,}


def build(builder: Callable, report: CampaignResults, footnotes: Footnotes) -> list[Table]:
    """The tables a builder gives for these results."""
    made = builder(report, footnotes)
    if made is None:
        return []
    return made if isinstance(made, list) else [made]


View = Literal["summary", "detail", "published"]


def tables(report: CampaignResults, view: View, width: int | None = None,
           choices: list | None = None) -> list[Table]:
    """The tables `view` shows, in order, with one set of footnotes under the last of them.

    "summary" is the terminal's first answer (report, run): one row per workload. "detail"
    (report --detail, and the table format written to a file) and "published" (markdown,
    HTML) are the same list, every table that has data, so the terminal shows what a
    write-up shows; the terminal wraps tables wider than it into parts (terminal.fit)."""
    if choices:  # tables chosen by name or by the plan
        return chosen_tables(report, choices)
    report = restyle.reordered(report)
    if view == "summary":
        with restyle.time_unit("summary"):
            made = summary.view(report, width)
        columns.shorten(made, restyle.labels())
        return made
    made_by = VIEWS.get(view)
    if made_by is None:
        raise ValueError(f"no table view {view!r} (one of summary, {', '.join(VIEWS)})")
    return columns.present(made_by(report), report, legend_each=view != "detail")


def _every_table(report: CampaignResults, each_own: bool = False) -> list[Table]:
    """Every table that has data, in the catalogue's order (plan/catalogue.py): measured
    values and ratios first (what every reader looks for), then the published tables, then
    the per-cell statistics and the checks of clock and host."""
    footnotes = Footnotes()
    out: list[Table] = []
    built = set()
    for name, builder in BUILDERS.items():
        if builder in built:
            continue  # one builder gives several entries' tables (bonnie++'s sections)
        built.add(builder)
        with restyle.time_unit(name):
            out += build(builder, report, footnotes)
    out[0].lead = spread_line(report)
    if each_own:  # a write-up: each table with its own footnotes, numbered from 1
        own_footnotes(out, footnotes)
        return out
    return _footnoted(out, footnotes)


def _footnoted(out: list[Table], footnotes: Footnotes) -> list[Table]:
    """The set with its footnotes under its last table, so each number is explained once."""
    out[-1].footnotes = footnotes.lines()
    return out


VIEWS: dict[str, Callable[[CampaignResults], list[Table]]] = {
    "detail": _every_table,
    "published": lambda report: _every_table(report, each_own=True)}


EVERY = "all"  # --table all: every table of the published view
PLAN = "plan"  # --table plan: the plan's [[table]] entries


@dataclass(frozen=True)
class Choice:
    """One table to publish and how (a plan's [[table]] entry, or a name given to --table).
    The fields are plan/tables.py's TableSpec's, without pydantic: --table needs no plan model."""

    table: str
    title: str | None = None
    environments: tuple[str, ...] | None = None  # names or patterns, in the order shown
    labels: dict[str, str] = field(default_factory=dict)  # environment -> name shown
    workloads: tuple[str, ...] | None = None  # labels or workload names, or patterns
    metrics: tuple[str, ...] | None = None
    statistic: str | None = None  # None: the table's own (catalogue.Entry.statistic)
    spread: bool | None = None  # None: without it when plain
    plain: bool = True
    links: bool = False
    decimals: int | None = None
    unit: str | None = None  # a time unit for its values (plan/tables.py)
    headers: dict[str, str] = field(default_factory=dict)  # header shown -> words instead
    row_decimals: dict[str, int] = field(default_factory=dict)  # row name -> decimals
    # where the entry was written, for an error ("--style: table[2]"); "" for a stored plan's,
    # which a user cannot correct: a row it names that the table lacks is a note, not an error
    origin: str = ""

    @property
    def style(self) -> Style:
        entry = catalogue.ENTRIES[self.table]
        statistic = self.statistic or entry.statistic
        spread = next(given for given in (self.spread, entry.spread if self.plain else None,
                                          not self.plain) if given is not None)
        return Style(self.plain, statistic, spread, self.decimals)


def from_plan(report: CampaignResults) -> list[Choice]:
    """The style file's [[table]] entries where it has some (report --style: reshaped at
    report time), else the campaign's plan's; none for a plan without (or stored before)."""
    styled_specs = restyle.tables()
    stored = report.campaign.plan or {}
    if not styled_specs and not stored.get("tables"):
        return []  # most plans: nothing to read, and the plan's models need not load
    out = []
    for index, spec in enumerate(styled_specs or table_specs(stored)):
        given = {key: tuple(value) if isinstance(value, list) else value
                 for key, value in spec.model_dump().items()}
        out.append(Choice(**given, origin=f"--style: table[{index}]" if styled_specs else ""))
    return out


def check_style(report: CampaignResults) -> None:
    """A style file's [[table]] entries that name rows or headers, built once: a name its
    table lacks is then exit 2 whatever the format shows (the terminal's report shows its
    summary, not those tables). The other keys are checked as the style loads."""
    for choice in from_plan(report):
        if choice.origin and (choice.row_decimals or choice.headers):
            _built(report, choice)


def from_names(names: tuple[str, ...], plain: bool, links: bool) -> list[Choice]:
    """--table NAME,NAME (checked against the catalogue by the command)."""
    return [Choice(name, plain=plain, links=links) for name in names]


def chosen_tables(report: CampaignResults, choices: list[Choice]) -> list[Table]:
    """Each chosen table built on its own, with its own footnotes."""
    out: list[Table] = []
    for choice in choices:
        out += _built(report, choice)
    return out


def with_data(report: CampaignResults, names: tuple[str, ...]) -> list[Table]:
    """The tables of these names that the campaign has data for, as chosen_tables builds
    them (with intervals), and none for the others."""
    return [table for name in names
            for table in _built(report, Choice(name, plain=False), say_nothing=False)]


def _built(report: CampaignResults, choice: Choice, say_nothing: bool = True) -> list[Table]:
    style_decimals = restyle.decimals()
    choice = dataclasses.replace(  # the entry's under the report's (--style, --label): the
        choice, labels={**choice.labels, **restyle.labels()},  # latest word is the user's
        decimals=style_decimals if style_decimals is not None else choice.decimals)
    shown = narrowed(report, choice)
    shown = restyle.reordered(shown)  # the style's order, the latest word, over the entry's
    made = _made(shown, choice)
    if not made:
        return [_nothing(choice)] if say_nothing else []
    if choice.row_decimals:
        rowed.apply(made, choice.row_decimals, choice.origin, lambda decimals: _made(
            shown, dataclasses.replace(choice, decimals=decimals)))
    if choice.headers:
        rowed.rename_headers(made, choice.headers, choice.origin)
    return made


def _made(shown: CampaignResults, choice: Choice) -> list[Table]:
    """The choice's tables of these results, titled, labelled and marked; [] without data."""
    footnotes = Footnotes()
    with styled(choice.style), restyle.time_unit(choice.table, choice.unit):
        made = build(BUILDERS[choice.table], shown, footnotes)
    made = [table for table in made if catalogue.selects(choice.table, table.name)]
    if not made:
        return []
    own_footnotes(made, footnotes)  # first: the labels below rename them too
    titles.apply(made, shown)
    headers = {**columns.short_names(shown.environments), **choice.labels}
    columns.shorten(made, headers)
    columns.rename_notes(made, choice.labels)
    functional.mark_tables(made, shown, headers, short=choice.plain)
    if choice.title:
        for table in made:
            table.title = choice.title if len(made) == 1 else f"{choice.title}: {table.title}"
            if table.keep_in_title:
                table.title += f": {table.keep_in_title}"
    return made


def _nothing(choice: Choice) -> Table:
    entry = catalogue.ENTRIES[choice.table]
    said = (f"nothing to show: this campaign has no figures of {entry.filled_by}, which the "
            f"{choice.table} table shows (fix: run {entry.filled_by}: a [[workload]] of the "
            "plan)" if entry.filled_by else
            f"nothing to show: this campaign measured nothing the {choice.table} table shows")
    return Table(choice.title or f"{choice.table}: {entry.what}", ["table"], [[said]],
                 label_columns=1, name=choice.table)


def narrowed(report: CampaignResults, choice: Choice) -> CampaignResults:
    """The results as the table sees them: its environments in its order, its workloads
    and metrics; the baseline's cells stay, so ratios and % still divide by it."""
    names = report.results.environments
    shown = names
    if choice.environments:  # a stored entry may name more than its campaign ran (--env)
        shown = ordered(choice.environments, names)
    rows = report.results.rows
    if choice.workloads:
        rows = [row for row in rows if any(
            matches(pattern, row[0]) or matches(pattern, report.workload_of.get(row[0], ""))
            for pattern in choice.workloads)]
    if choice.metrics:
        rows = [row for row in rows if row[1] in choice.metrics]
    if shown == names and rows == report.results.rows:
        return report
    kept = {(label, metric) for label, metric, _unit in rows}
    results = dataclasses.replace(report.results, environments=shown, rows=rows, cells={
        key: row for key, row in report.results.cells.items() if key in kept})
    labels = {label for label, _metric in kept}
    by_name = {env.name: env for env in report.environments}
    return dataclasses.replace(
        report, results=results, environments=[by_name[name] for name in shown],
        runs=[run for run in report.runs if run.environment in shown
              and run.label in labels],
        primary={label: metric for label, metric in report.primary.items()
                 if (label, metric) in kept})


_MARK = re.compile(r"\[(\d+)\]")


def own_footnotes(made: list[Table], footnotes: Footnotes) -> None:
    """Gives each table the footnotes of the marks in its own cells, renumbered from 1 in the
    order they appear, so that a table pasted alone keeps every explanation."""
    said = {}
    marks_line = None
    for line in footnotes.lines():
        found = re.match(r"\[(\d+)\] ", line)
        if found:
            said[int(found.group(1))] = line[found.end():]
        elif not line.startswith(model.CLOCK_LINE):
            marks_line = line  # "Marks: ⊘ unavailable, ..."
    for table in made:
        shown = " ".join([*table.header, *(row[0] for row in table.rows if row)])
        clock = footnotes.clock_line([env for env in footnotes.inconclusive
                                      if re.search(rf"(?<![\w-]){re.escape(env)}(?![\w-])",
                                                   shown)])
        order: dict[int, int] = {}
        numbered: dict[str, int] = {}  # a footnote's text -> its number: alike ones are one
        for row in table.rows:
            for text in row:
                for number in map(int, _MARK.findall(text)):
                    if number in said and number not in order:
                        line = _of_table(said[number], shown)
                        order[number] = numbered.setdefault(line, len(numbered) + 1)
        if not order:
            table.footnotes = clock
            continue

        def renumbered(found: re.Match, order=order) -> str:
            number = int(found.group(1))
            return f"[{order[number]}]" if number in order else found.group(0)

        table.rows = [[_dedupe_marks(_MARK.sub(renumbered, text)) for text in row]
                      for row in table.rows]
        table.footnotes = [f"[{new}] {line}" for line, new in numbered.items()] + clock
        if marks_line and any(mark in line for line in table.footnotes
                              for mark in marks_line.split()[1::2]):
            table.footnotes.append(marks_line)


_FLAGGED = re.compile(  # a flag's footnote, not a problem's of a cell named "2 (disjoint)"
    rf"^(?P<what>(?:{'|'.join(map(re.escape, model.FLAG_MEANINGS))})[^(:]*) "
    r"\((?P<envs>[^()]+)\): ")


def _of_table(line: str, shown: str) -> str:
    """A flag's footnote, "unstable (native, uml): ...", naming only the environments that
    are in this table (shown: its header and first column); as it is where it names none."""
    found = _FLAGGED.match(line)
    if not found:
        return line
    names = [name.strip() for name in found.group("envs").split(",")]
    kept = [name for name in names
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", shown)]
    if not kept or kept == names:
        return line
    return f"{found.group('what')} ({', '.join(kept)}): {line[found.end():]}"


def _dedupe_marks(text: str) -> str:
    """"12 [1][1]" -> "12 [1]": two footnotes of a cell that read alike are one."""
    seen: set[str] = set()

    def once(found: re.Match) -> str:
        if found.group(0) in seen:
            return ""
        seen.add(found.group(0))
        return found.group(0)
    return _MARK.sub(once, text)


def choices(report: CampaignResults, asked: tuple[str, ...], plain: bool, links: bool,
            plan_default: bool) -> list[Choice] | None:
    """What `report --table` asked for, as choices; None for every table (--table all, or
    nothing asked where the plan's tables are not the default: the terminal).
    plan_default: with nothing asked, the plan's [[table]] entries if it has some (Markdown:
    the write-up's tables); --plain and --links apply to them too."""
    if asked == (EVERY,) or (not asked and not plan_default):
        return None
    if not asked or asked == (PLAN,):
        planned = from_plan(report)
        return [dataclasses.replace(choice, plain=choice.plain or plain,
                                    links=choice.links or links) for choice in planned] or None
    return from_names(asked, plain, links)
