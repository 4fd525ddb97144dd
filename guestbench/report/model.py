"""The one table model every renderer draws: measured values, ratios to baseline, footnotes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import statistics

from guestbench.analysis.boot import PHASES, breakdown
from guestbench.analysis.clock import CLOCK_DRIFT_LIMIT, CLOCK_MIN_SPAN_S
from guestbench.analysis.summary import Cell, Results, higher_is_better, summarise
from guestbench.store import Store, StoreError


@dataclass
class Report:
    """Everything a renderer may show, read from the store for one campaign."""

    campaign: dict[str, Any]
    environments: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    samples: list[dict[str, Any]]
    baseline: str | None
    results: Results

    @property
    def host_facts(self) -> dict[str, Any]:
        return self.campaign["host_facts"]


def load(store: Store, selector: str | None = None, baseline: str | None = None,
         all_metrics: bool = False) -> Report:
    campaign = store.campaign(selector)
    environments = store.environments(campaign["id"])
    names = [env["name"] for env in environments]
    baseline = baseline or campaign["baseline"]
    if baseline is not None and baseline not in names:
        raise StoreError(f"--baseline: {baseline!r} is not an environment of campaign "
                         f"{campaign['id']} (fix: use one of {', '.join(names)})")
    env_name = {env["id"]: env["name"] for env in environments}
    runs = store.runs(campaign["id"])
    for run in runs:
        run["environment"] = env_name[run["environment_id"]]
    samples = list(store.samples(campaign["id"]))
    results = summarise(names, runs, samples, include_context=all_metrics)
    return Report(campaign, environments, runs, samples, baseline, results)


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    footnotes: list[str] = field(default_factory=list)
    note: str = ""
    label_columns: int = 2  # leading columns that name the row; the rest are values


FLAG_MEANINGS = {
    "clock-drift": "the guest's clock and the host's disagreed by more than 5% over the run "
                   "(see clock_ratio with --all-metrics): its time-based numbers are suspect",
}


class Footnotes:
    """Numbers each distinct (environment, status or flag, reason) once."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[str, str, str], int] = {}

    def mark(self, cell: Cell) -> str:
        marks = []
        flagged = [(flag, FLAG_MEANINGS.get(flag, flag)) for flag in dict.fromkeys(cell.flags)]
        for status, reason in [*cell.problems, *flagged]:
            key = (cell.environment, status, reason)
            number = self._numbers.setdefault(key, len(self._numbers) + 1)
            if f"[{number}]" not in marks:
                marks.append(f"[{number}]")
        return "".join(marks)

    def lines(self) -> list[str]:
        return [f"[{number}] {env}: {status}: {reason or 'no reason given'}"
                for (env, status, reason), number in self._numbers.items()]


TIME_UNITS = (("ns", 1.0), ("us", 1e3), ("ms", 1e6), ("s", 1e9))


def row_scale(unit: str, cells: list[Cell]) -> tuple[str, float]:
    """One display unit for a whole row: ns become us or ms when every median is large."""
    factors = dict(TIME_UNITS)
    medians = [cell.median for cell in cells if cell.median is not None]
    if unit not in factors or not medians:
        return unit, 1.0
    smallest_ns = min(medians) * factors[unit]
    best = [(name, factor) for name, factor in TIME_UNITS if smallest_ns >= 10 * factor]
    name, factor = best[-1] if best else (unit, factors[unit])
    return name, factor / factors[unit]


def format_value(value: float) -> str:
    """Four significant digits; k/M/G beyond 10,000 so cells stay narrow."""
    rounded = float(f"{value:.4g}")  # 9999.96 shows as 10k, not 1e+04
    for limit, magnitude, suffix in ((1e9, 1e9, "G"), (1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if abs(rounded) >= limit:
            return f"{rounded / magnitude:.4g}{suffix}"
    return f"{rounded:.4g}"


def format_ratio(ratio: float) -> str:
    if ratio >= 100:
        return f"{ratio:.0f}x"
    if ratio >= 10:
        return f"{ratio:.1f}x"
    return f"{ratio:.2f}x"


def _problem_text(cell: Cell, footnotes: Footnotes) -> str:
    counts: dict[str, int] = {}
    for status, _ in cell.problems:
        counts[status] = counts.get(status, 0) + 1
    failed = ", ".join(f"{status} x{count}" if count > 1 else status
                       for status, count in counts.items())
    return f"{failed} {footnotes.mark(cell)}".strip()


def _measured_text(cell: Cell, footnotes: Footnotes, divisor: float, show_n: bool) -> str:
    if not cell.values:
        return _problem_text(cell, footnotes) if cell.problems else "no samples"
    text = format_value(cell.median / divisor)
    if cell.n > 1:
        text += f" ({format_value(cell.minimum / divisor)}-{format_value(cell.maximum / divisor)})"
    if show_n:
        text += f" n={cell.n}"
    if cell.flags:
        text += f" !{','.join(dict.fromkeys(cell.flags))}"
    if cell.problems:
        return f"{text} +{_problem_text(cell, footnotes)}"
    return f"{text} {footnotes.mark(cell)}" if cell.flags else text


def _ratio_text(cell: Cell, baseline: Cell, footnotes: Footnotes) -> str:
    if not cell.values:
        return _problem_text(cell, footnotes) if cell.problems else "no samples"
    ratio = cell.ratio_to(baseline)
    text = format_ratio(ratio) if ratio is not None else "no baseline"
    return f"{text} {footnotes.mark(cell)}".strip() if cell.problems or cell.flags else text


def _column_n(results: Results, environment: str) -> int | None:
    """The n shared by every measured cell of a column, or None if they differ."""
    counts = {row[environment].n for row in results.cells.values() if row[environment].n}
    return counts.pop() if len(counts) == 1 else None


def _title(report: Report, what: str) -> str:
    campaign, facts = report.campaign, report.host_facts
    created = campaign["created_at"].strftime("%Y-%m-%d %H:%M")
    return (f"{what} - campaign {campaign['id']} '{campaign['name']}' ({campaign['status']}), "
            f"{created} UTC, host {facts.get('cpu_model')} x{facts.get('logical_cpus')}, "
            f"kernel {facts.get('kernel')}")


def tables(report: Report) -> list[Table]:
    """The measured table and, with a baseline, the normalised one (sharing footnotes)."""
    footnotes = Footnotes()
    results = report.results
    column_n = {env: _column_n(results, env) for env in results.environments}
    measured = Table(_title(report, "Measured: median (min-max)"), [
        "workload", "metric",
        *(f"{env} n={column_n[env]}" if column_n[env] else env for env in results.environments)], [])
    for label, metric, unit in results.rows:
        row = results.cells[(label, metric)]
        shown_unit, divisor = row_scale(unit, list(row.values()))
        measured.rows.append([label, f"{metric} ({shown_unit})" if metric else "-", *(
            _measured_text(row[env], footnotes, divisor, column_n[env] is None)
            for env in results.environments)])
    out = [measured]
    baseline_measured = report.baseline and any(
        row[report.baseline].values for row in results.cells.values())
    if report.baseline and not baseline_measured:
        measured.note = (f"No ratios: the baseline {report.baseline} has no successful run "
                         "(see its cells); choose another with --baseline.")
    if baseline_measured:
        ratio_table = Table(f"Relative to {report.baseline}: ratio of medians",
                            ["workload", "metric", *results.environments], [],
                            note="For ns, cycles and s a ratio above 1 is slower than "
                                 f"{report.baseline}; for MB/s a ratio below 1 is slower. Rows "
                                 f"where {report.baseline} has no value are left out.")
        for label, metric, unit in results.rows:
            row = results.cells.get((label, metric), {})
            base = row.get(report.baseline)
            if not metric or not base or not base.values:
                continue  # nothing to divide by: e.g. boot rows against native
            ratio_table.rows.append([
                label, metric + (" (higher is better)" if higher_is_better(unit) else ""),
                *(_ratio_text(row[env], base, footnotes) for env in results.environments)])
        out.append(ratio_table)
    for extra in (boot_table(report), clock_table(report)):
        if extra is not None:
            out.append(extra)
    out[-1].footnotes = footnotes.lines()
    return out


def clock_table(report: Report) -> Table | None:
    """The clock check per environment: agent time over host time between hello and end."""
    ratios: dict[str, list[float]] = {}
    run_env = {run["id"]: run["environment"] for run in report.runs}
    for sample in report.samples:
        if sample["metric"] == "clock_ratio":
            ratios.setdefault(run_env[sample["run_id"]], []).append(sample["value"])
    if not ratios:
        return None
    flagged = {env: sum("clock-drift" in (run.get("flags") or []) for run in report.runs
                        if run["environment"] == env) for env in ratios}
    table = Table("Clock check: guest's time / host's time over each run (hello to end record)",
                  ["environment", "runs judged", "median ratio", "min-max", "flagged clock-drift"],
                  [], note=f"A run is flagged when its ratio is off 1 by more than "
                           f"{CLOCK_DRIFT_LIMIT:.0%}; runs shorter than {CLOCK_MIN_SPAN_S:g} s "
                           "are not judged.", label_columns=1)
    for env in (env for env in report.results.environments if env in ratios):
        values = ratios[env]
        table.rows.append([env, str(len(values)), f"{statistics.median(values):.4f}",
                           f"{min(values):.4f}-{max(values):.4f}", str(flagged[env])])
    return table


def boot_table(report: Report) -> Table | None:
    """Boot phases per environment: median of each run's phase duration, ms."""
    cells = breakdown(report.runs, report.samples)
    if not cells:
        return None
    envs = [env for env in report.results.environments if env in cells]
    table = Table("Boot phases: median duration per phase, ms (host clock; guest uptime on "
                  "the guest's)", ["phase", *(f"{env} n={max(c.n for c in cells[env].values())}"
                                             for env in envs)], [],
                  note="Phases are cut on the host's clock where the console shows them "
                       "('guestbench-init: userspace' from /init, the agent's hello record, the "
                       "VMM's exit) and where the guest's clock started (agent ready minus the "
                       "guest's uptime).", label_columns=1)
    for name, _end, _start in PHASES:
        table.rows.append([name, *(format_value(cells[env][name].median_ms)
                                   if name in cells[env] else "-" for env in envs)])
    return table
