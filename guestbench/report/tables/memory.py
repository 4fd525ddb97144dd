"""The footprint and density tables, as VMM and sandbox teams publish them: an instance's host
memory in MiB, absolute (PSS, USS, RSS, beyond the guest's RAM), the processes it is made of
by command name, and the memory per instance against the number started together."""

from __future__ import annotations

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.process.memory import PROCESS_METRIC
from guestbench.report import functional, titles
from guestbench.report.model import (Footnotes, Table, format_count, format_value, median_figure,
                                     median_text, row_scale)

# the footprint's columns, in the order the write-ups give them (at rest, then at a load's peak)
FOOTPRINT = ("footprint_pss", "footprint_uss", "footprint_rss", "footprint_overhead",
             "footprint_processes", "footprint_peak_pss", "footprint_peak_uss",
             "footprint_peak_rss", "footprint_peak_overhead")
PROCESS_PSS = "footprint" + PROCESS_METRIC
MEDIAN_NOTE = "Each value: the median of the runs with its 95% interval [low-high]."


def _labels(report: CampaignResults, metrics: tuple[str, ...]) -> list[str]:
    return list(dict.fromkeys(label for label, metric, _unit in report.results.rows
                              if metric in metrics))


def footprint_tables(report: CampaignResults, footnotes: Footnotes) -> list[Table]:
    """Per footprint workload: one row per environment, one column per figure; then its
    processes by command name."""
    out = []
    for position, label in enumerate(_labels(report, FOOTPRINT)):
        suffix = "" if position == 0 else f"-{position + 1}"
        out.append(_footprint(report, label, suffix))
        processes = _processes(report, label, suffix)
        if processes is not None:
            out.append(processes)
    return out


def _footprint(report: CampaignResults, label: str, suffix: str) -> Table:
    results = report.results
    metrics = [metric for metric in FOOTPRINT if (label, metric) in results.cells]
    headers = []
    for metric in metrics:
        row = results.cells[(label, metric)]
        unit, _ = row_scale(next(iter(row.values())).unit, list(row.values()))
        headers.append(f"{titles.metric_title(report, label, metric)} ({unit})")
    table = Table(f"{_of(report, label)}: the host memory of an instance's whole process tree", ["environment", "runs", *headers], [],
                  label_columns=1, name=f"footprint{suffix}",
                  note=MEDIAN_NOTE + " PSS counts a shared page in part to each process that "
                       "maps it; USS only the pages no other process maps; beyond guest RAM is "
                       "the PSS outside the guest's memory, what the VMM itself costs.")
    for env in results.environments:
        cells = [results.cells[(label, metric)].get(env) for metric in metrics]
        if not any(cell is not None and cell.values for cell in cells):
            continue
        runs = max((cell.runs or cell.n) for cell in cells if cell is not None and cell.values)
        table.add([functional.named(report, env), str(runs),
                   *(_value(cell) for cell in cells)], [(env, label)] * (len(metrics) + 1),
                  [None, *(None if cell is not None and cell.unit == "count"
                           else median_figure(cell) for cell in cells)])
        counts = _counts(report, env)
        if counts:  # an instance inside a VM: the host reads the machine that holds it
            table.note += f" {env}: footprint counts {counts}."
    return table


def _counts(report: CampaignResults, env: str) -> str:
    """What the environment's footprint counts where it says (its footprint_counts fact)."""
    for environment in report.environments:
        if environment.name == env:
            return str((environment.facts or {}).get("footprint_counts") or "")
    return ""


def _processes(report: CampaignResults, label: str, suffix: str) -> Table | None:
    """Each environment's processes by command name, with their PSS and share of it."""
    results = report.results
    by_name = [(metric[len(PROCESS_PSS):], row) for (row_label, metric), row
               in results.cells.items() if row_label == label and metric.startswith(PROCESS_PSS)]
    if not by_name:
        return None
    table = Table(f"{_of(report, label)} by process: PSS per command name", ["environment", "process", "PSS (MiB)", "share of PSS"], [],
                  label_columns=2, name=f"footprint-processes{suffix}",
                  note=MEDIAN_NOTE + " Processes of one command name are summed; a process "
                       "absent from some runs counts in the runs it was in.")
    for env in results.environments:
        total = results.cells.get((label, "footprint_pss"), {}).get(env)
        found = sorted(((name, row[env]) for name, row in by_name
                        if env in row and row[env].values),
                       key=lambda item: -item[1].median)
        for name, cell in found:
            share = (f"{cell.median / total.median:.0%}" if total is not None and total.values
                     and total.median else "-")
            table.add([functional.named(report, env), name, median_text(cell), share],
                      [(env, label), (env, label)], [median_figure(cell), None])
    return table if table.rows else None


def _of(report: CampaignResults, label: str) -> str:
    """"Footprint", or "Footprint of" a label of a sweep or the plan's own."""
    return "Footprint" if label == "footprint" else \
        f"Footprint of {titles.label_title(report, label)}"


def _value(cell: Cell | None) -> str:
    if cell is None or not cell.values:
        return "-"
    if cell.unit == "count":  # processes: the same in every run, or its range
        low, high = min(cell.values), max(cell.values)
        return format_count(low) if low == high else f"{format_count(low)}-{format_count(high)}"
    return median_text(cell)


DENSITY_METRICS = ("density_pss", "density_start", "density_started")


def density_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """Memory per instance, start time and instances started, against N started together:
    a column per N (the density workload's instances), a row per figure and environment."""
    results = report.results
    labels = _labels(report, DENSITY_METRICS)
    if not labels:
        return None
    count = _instances(report)
    labels.sort(key=lambda label: (count.get(label) is None, count.get(label) or 0, label))
    headers = [f"N={count[label]}" if label in count else titles.label_title(report, label)
               for label in labels]
    table = Table("Density: N instances started together, per instance",
                  ["figure", "environment", *headers], [], label_columns=2, name="density",
                  note="Memory: the host's PSS of all N instances once every one is ready, over "
                       "N (median of the runs [95% interval]). Start: from the start of all N "
                       "to each one's hello, a value per instance, p50 and the slowest of all "
                       "runs. Started: instances ready, of N, in the worst run.")
    figures = (("memory per instance (MiB)", "density_pss", median_text),
               ("start p50 (ms)", "density_start", median_text),
               ("start, slowest (ms)", "density_start", lambda cell: format_value(max(cell.values))),
               ("started", "density_started", lambda cell: format_count(min(cell.values))))
    for title, metric, shown in figures:
        for env in results.environments:
            cells = [results.cells.get((label, metric), {}).get(env) for label in labels]
            if not any(cell is not None and cell.values for cell in cells):
                continue
            table.add([title, functional.named(report, env),
                       *("-" if cell is None or not cell.values else shown(cell)
                         for cell in cells)],
                      [(env, label) for label in labels],
                      [median_figure(cell) if shown is median_text else None for cell in cells])
    return table if table.rows else None


def _instances(report: CampaignResults) -> dict[str, int]:
    """label -> the N its density runs started (their parameter instances)."""
    found = {}
    for run in report.runs:
        instances = (run.params or {}).get("instances")
        if isinstance(instances, int) and run.label not in found:
            found[run.label] = instances
    return found
