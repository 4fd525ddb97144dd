"""The tables people publish: basic costs, STREAM, % of baseline, scaling, per-cell
statistics; report/select.py sets them among the others (measured, ratios, versions, boot)."""

from __future__ import annotations

import dataclasses

import json
import re
from collections import defaultdict
from typing import Any

from guestbench.analysis.cells import Interval, VERDICT, Cell
from guestbench.report import functional, titles
from guestbench.analysis.results import CampaignResults
from guestbench.workloads import CATALOGUE
from guestbench.report.model import (STYLE, Footnotes, Table, central, decorate, empty_text,
                                     format_interval, format_percent, format_value,
                                     best_of_note, geomean_caption, geomean_text, in_clock,
                                     interval_note, published_ratio,
                                     own_unit_text, problem_text, row_scale, spread_text,
                                     unit_label)

STREAM_KERNELS = ("copy", "scale", "add", "triad")


def _family(report: CampaignResults, label: str) -> str:
    workload = next((run.workload for run in report.runs if run.label == label), "")
    found = CATALOGUE.get(workload)
    return found.family if found else ""


def _labels(report: CampaignResults, family: str) -> list[str]:
    labels = dict.fromkeys(label for label, _metric, _unit in report.results.rows)
    return [label for label in labels if _family(report, label) == family]


# -- (a) activity x environment, cycles and ns ----------------------------------------

def basic_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """Micro workloads: median CPU cycles per operation, with ns beside them."""
    results = report.results
    labels = [label for label in _labels(report, "micro")
              if (label, "time_per_op") in results.cells or (label, "tsc_per_op") in results.cells]
    if not labels:
        return None
    plain = STYLE.get().plain
    table = Table(f"Basic costs: CPU cycles per operation ({STYLE.get().statistic})" if plain
                  else "Basic costs: median CPU cycles per operation (time)",
                  ["activity", *results.environments], [], label_columns=1, name="basic",
                  note="Cycles are TSC ticks read by the agent (inside a full-system guest, the "
                       "guest's TSC); ns from the agent's monotonic clock. Each value is the "
                       "median over fresh runs.")
    for label in labels:
        cycles = results.cells.get((label, "tsc_per_op"), {})
        times = results.cells.get((label, "time_per_op"), {})
        table.add([label, *(_cycles_text(cycles.get(env), times.get(env), footnotes)
                            for env in results.environments)],
                  [(env, label) for env in results.environments])
    return table


def _cycles_text(cycles: Cell | None, time: Cell | None, footnotes: Footnotes) -> str:
    main = cycles if cycles is not None and cycles.values else time
    if main is None:
        return "-"
    if not main.values:
        return problem_text(main, footnotes) if main.problems else empty_text(main)
    if STYLE.get().plain:  # one figure per cell, its unit in the title: cycles, else time
        unit, divisor = ("", 1.0) if main is cycles else row_scale("ns", [main])
        shown = format_value(central(main) / divisor) + spread_text(main, divisor)
        return decorate(f"{shown} {unit}".strip(), main, footnotes)
    text = f"{format_value(main.median)} cyc" if main is cycles else ""
    if time is not None and time.values:
        unit, divisor = row_scale("ns", [time])  # each cell's time in its own unit
        shown = f"{format_value(time.median / divisor)} {unit}"
        text = f"{text} ({shown})" if text else shown
    return decorate(text, main, footnotes)


# -- (b) STREAM ---------------------------------------------------------------------

def stream_tables(report: CampaignResults, footnotes: Footnotes) -> list[Table]:
    """Per STREAM workload: each kernel's bandwidth and avg/min/max time per environment."""
    out = []
    for label in _labels(report, "stream"):
        table = Table(f"{titles.label_title(report, label)}: bandwidth and time per kernel",
                      ["kernel", "environment", "bandwidth MB/s", "avg time s", "min time s",
                       "max time s"], [], name=f"stream-{label}",
                      note="Bandwidth is the median over runs of each run's best-rate figure; "
                           "avg time the mean of the runs' averages; min and max the extremes "
                           "over every run's iterations.")
        for kernel in STREAM_KERNELS:
            prefix = _stream_prefix(report, label, kernel)
            if prefix is None:
                continue
            for env in report.results.environments:
                table.add([kernel.capitalize(), env,
                           *_stream_values(report, label, prefix, env, footnotes)],
                          [(env, label)] * 4)
        if table.rows:
            out.append(table)
    return out


def _stream_prefix(report: CampaignResults, label: str, kernel: str) -> str | None:
    """'copy_' for the all-kernels workload, '' for stream_copy, None if absent."""
    cells = report.results.cells
    if (label, f"{kernel}_bandwidth") in cells:
        return f"{kernel}_"
    if (label, "bandwidth") in cells and label.split("[")[0] == f"stream_{kernel}":
        return ""
    return None


def _stream_values(report: CampaignResults, label: str, prefix: str, env: str,
                   footnotes: Footnotes) -> list[str]:
    cells = report.results.cells
    bandwidth = cells[(label, f"{prefix}bandwidth")][env]
    if not bandwidth.values:
        text = problem_text(bandwidth, footnotes) if bandwidth.problems else empty_text(bandwidth)
        return [text, "-", "-", "-"]
    times = {kind: cells.get((label, f"{prefix}time_{kind}"), {}).get(env) for kind in
             ("avg", "min", "max")}
    avg = times["avg"].stats.mean if times["avg"] and times["avg"].stats else None
    low = times["min"].minimum if times["min"] else None
    high = times["max"].maximum if times["max"] else None
    return [decorate(f"{central(bandwidth):.1f}", bandwidth, footnotes),
            *(f"{value:.6f}" if value is not None else "-" for value in (avg, low, high))]


# -- (c) % of baseline ----------------------------------------------------------------

def percent_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """Each environment's performance as a % of the baseline's, per workload, and overall."""
    baseline, results = report.baseline, report.results
    labels = [label for label, metric in report.performance_primary().items()
              if baseline and results.cells[(label, metric)][baseline].values]
    if not labels:
        return None
    rows = report.geomean_rows()
    suffix = "" if STYLE.get().plain else " [95% CI]"
    table = Table(f"% of {baseline}: performance relative to {baseline} (higher is better)",
                  ["environment", *labels, *((name if len(rows) == 1 else group) + suffix
                                             for (name, _means), group
                                             in zip(rows, report.geomeans))], [],
                  label_columns=1,
                  name="percent",
                  note=f"{baseline} = 100. For times and cycles: {baseline}'s median over the "
                       f"environment's; for throughput: the environment's over {baseline}'s. "
                       "Each workload's primary metric ("
                       + ", ".join(f"{label}: {report.primary[label]}" for label in labels)
                       + ").")
    if rows:
        table.note += " " + geomean_caption(report)
    if best_of_note(report):
        table.note += " " + best_of_note(report)
    for env in results.environments:
        cells = [results.cells[(label, report.primary[label])] for label in labels]
        mark = "" if env == baseline else functional.ratio_mark(report, env)
        table.add([env, *(_percent_text(row[baseline], row[env], footnotes, report.ratios.get(
            (row[env].label, row[env].metric, env)), mark) for row in cells),
                   *(geomean_text(report, env, means, as_percent=True) for _name, means in rows)],
                  [(env, label) for label in labels] + [None] * len(rows))
    return table


def _percent_text(base: Cell, cell: Cell, footnotes: Footnotes, ratio: Interval | None,
                  mark: str = "") -> str:
    """The published "% of native": 100 over the cell's ratio (above 1 is worse); mark: a
    ratio that is no finding's (functional.ratio_mark)."""
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    if cell.too_fast or base.too_fast:
        return "+++++"
    ratio = published_ratio(base, cell, ratio)
    if ratio is None or not ratio.value:
        return "-"
    return decorate(f"{100 / ratio.value:.3g}{mark}", cell, footnotes)


# -- (d) scaling: vCPUs x placement ---------------------------------------------------

SCALED_KEYS = ("vcpus", "placement")
PLACEMENT_ORDER = {"same": 0, "disjoint": 1, "none": 2}


def scaling_groups(report: CampaignResults) -> dict[str, dict[tuple[int, str], str]]:
    """{row name: {(vcpus, placement): environment}} for environments that differ only there."""
    groups: dict[str, dict[tuple[int, str], str]] = defaultdict(dict)
    names: dict[str, str] = {}
    for env in report.environments:
        spec = env.spec or {}
        if "vcpus" not in spec:
            continue
        rest = {key: value for key, value in spec.items() if key not in ("name", *SCALED_KEYS)}
        key = json.dumps(rest, sort_keys=True, default=str)
        names.setdefault(key, re.sub(r"-(vcpus\d+|placement[A-Za-z_]+)", "", env.name))
        groups[names[key]][(int(spec["vcpus"]), str(spec.get("placement", "none")))] = env.name
    combos = {combo for members in groups.values() for combo in members}
    return dict(groups) if len(combos) > 1 else {}


def scaling_tables(report: CampaignResults, footnotes: Footnotes) -> list[Table]:
    """Per workload: groups x (vCPUs, placement), each with its % change against one cell."""
    groups = scaling_groups(report)
    if not groups:
        return []
    combos = sorted({combo for members in groups.values() for combo in members},
                    key=lambda combo: (combo[0], PLACEMENT_ORDER.get(combo[1], 9), combo[1]))
    reference = _scaling_reference(report, groups, combos)
    out = []
    for label, metric in report.performance_primary().items():
        row_cells = {env: report.results.cells[(label, metric)][env]
                     for members in groups.values() for env in members.values()}
        base = row_cells[reference]
        if not any(cell.values for cell in row_cells.values()):
            continue
        table = Table(f"Scaling {label}: {metric} ({unit_label(base.unit)}), vCPUs (placement), % change against "
                      f"{reference}", ["environment", *(f"{vcpus} ({placement})"
                                                        for vcpus, placement in combos)],
                      [], label_columns=1, name=f"scaling-{label}",
                      note="'same': the VMM and the first vCPU share a host CPU; 'disjoint': "
                           "each on its own. + means a larger number than the reference: "
                           + ("faster for this throughput metric." if base.higher_is_better
                              else "slower for this time metric."))
        for group, members in groups.items():
            table.add([group, *(_scaling_text(_as_column(row_cells[members[combo]], group, combo,
                                                         len(groups)), base, footnotes)
                                if combo in members else "-" for combo in combos)],
                      [(members[combo], label) if combo in members else None for combo in combos])
        out.append(table)
    return out


def _as_column(cell: Cell, group: str, combo: tuple[int, str], groups: int) -> Cell:
    """The cell named in its footnote as the table names it: its column ("2 (disjoint)"),
    after its row where there are several ("tcg, 2 (disjoint)"), not by the environment's
    setup name, which the table never shows."""
    column = f"{combo[0]} ({combo[1]})"
    return dataclasses.replace(cell, environment=column if groups == 1 else f"{group}, {column}")


def _scaling_reference(report: CampaignResults, groups: dict[str, dict[tuple[int, str], str]],
                       combos: list[tuple[int, str]]) -> str:
    """The report's baseline if it is one of the scaled environments, else the first group's
    cell with the fewest vCPUs, disjoint placement first (each on its own CPU: the cell the
    published scaling tables compare against)."""
    members = [env for group in groups.values() for env in group.values()]
    if report.baseline in members:
        return report.baseline
    first = next(iter(groups.values()))
    ordered = sorted((combo for combo in combos if combo in first),
                     key=lambda combo: (combo[0], combo[1] != "disjoint"))
    return first[ordered[0]]


def _scaling_text(cell: Cell, base: Cell, footnotes: Footnotes) -> str:
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    value, reference = central(cell), central(base)
    text = own_unit_text(cell, value) + ("" if STYLE.get().plain or in_clock(cell)
                                         else f" {cell.unit}")
    if reference:
        text += f" ({(value / reference - 1) * 100:+.0f}%)"
    return decorate(text, cell, footnotes)


# -- statistics per cell --------------------------------------------------------------

def statistics_table(report: CampaignResults, footnotes: Footnotes) -> Table:
    """Every measured cell in full: n, median, mean, min, max, stdev, CV, interval, flags, stop."""
    stops = {(stop.environment, stop.label): stop for stop in report.cell_stops}
    table = Table("Statistics per cell", [
        "workload", "metric", "environment", "n", "median", "mean", "min", "max", "stdev", "CV",
        "95% CI of median", "outliers", "flags", "repetitions stopped"], [], label_columns=3,
        name="statistics", note=interval_note(report))
    for label, metric, unit in report.results.rows:
        for env in report.results.environments:
            cell = report.results.cells[(label, metric)][env]
            if not cell.values or cell.stats is None or cell.kind == VERDICT:
                continue  # a verdict's runs are counted in its own table
            stop = stops.get((env, label))
            table.add([label, f"{metric} ({unit})", env, *_statistics_values(cell, footnotes),
                       _stop_text(stop)], [(env, label)] * 11)
    return table


def _statistics_values(cell: Cell, footnotes: Footnotes) -> list[str]:
    described = cell.stats
    assert described is not None
    interval = "-" if described.ci_low is None else \
        f"{format_value(described.ci_low)}-{format_value(described.ci_high)}"
    flags = decorate("", cell, footnotes).strip() or "-"
    return [described.count_text, format_value(described.median), format_value(described.mean),
            format_value(described.minimum), format_value(described.maximum),
            "-" if described.stdev is None else format_value(described.stdev),
            "-" if described.cv is None else format_percent(described.cv), interval,
            str(described.outliers) if described.outliers else "-", flags]


def _stop_text(stop: dict[str, Any] | None) -> str:
    if not stop:
        return "-"
    text = f"{stop.reason} after {stop.runs}"
    half_width = stop.half_width
    if half_width is not None:
        text += f" (±{format_percent(half_width)})"
    return text


__all__ = ["basic_table", "stream_tables", "percent_table", "scaling_tables",
           "statistics_table", "format_interval"]
