"""kernbench's table: each environment's build as mean (standard deviation) of its runs, and
its elapsed time over the baseline's, as a KVM-against-Xen comparison prints kernbench."""

from __future__ import annotations

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import (STYLE, Footnotes, Table, decorate, empty_text, in_clock,
                                     own_unit_text, problem_text, unit_label)
from guestbench.report.tables.io import BUILD_WORKLOADS, label_cell

# (metric, header, decimals): kernbench's columns in its order, times to the millisecond
# as it prints them, CPU % and counts whole or to one decimal (means of a few runs)
KERNBENCH_COLUMNS = (("elapsed", "Elapsed Time (s)", 3), ("sys", "System Time (s)", 3),
                     ("user", "User Time (s)", 3), ("cpu_percent", "Percent CPU", 1),
                     ("context_switches", "Context Switches", 1), ("sleeps", "Sleeps", 1))

NOTE = ("Mean (standard deviation) of the runs, as kernbench prints them. Elapsed: wall time "
        "of make; user and system: CPU time of make and every compiler it ran (wait4); "
        "Percent CPU = (user + system) / elapsed; context switches: involuntary; sleeps: "
        "voluntary.")
CACHE_NOTE = (" Cold: the host's and the guest's caches dropped first; warm: after one "
              "untimed build; copied (a Linux tree): as just copied, without a warm-up build.")


def kernbench_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    labels = list(dict.fromkeys(run.label for run in report.runs
                                if run.workload in BUILD_WORKLOADS))
    if not labels:
        return None
    several = len(labels) > 1
    baseline = report.baseline
    header = ["environment", *(["build"] if several else []),
              *(title.replace("(s)", f"({unit_label('s')})")
                for _, title, _ in KERNBENCH_COLUMNS),
              f"Elapsed / {baseline or 'baseline'}"]
    ratio_note = (f" Elapsed / {baseline}: the mean elapsed time over {baseline}'s, for the "
                  "same build." if baseline else " Elapsed / baseline: - (the campaign has "
                  "no baseline; choose one with --baseline).")
    table = Table(_title(report), header, [], label_columns=2 if several else 1,
                  name="kernbench", note=NOTE + (CACHE_NOTE if several else "") + ratio_note)
    for env in report.results.environments:
        for label in labels:
            cells = [label_cell(report, label, metric, env) for metric, _, _ in KERNBENCH_COLUMNS]
            if not any(cell is not None and cell.runs > 0 for cell in cells):
                continue  # a workload's environments left this one out
            values = _values(cells, footnotes)
            table.add([env, *([label] if several else []), *values,
                       _elapsed_ratio(report, label, env)],
                      [(env, label)] * (len(values) + 1))
    return table if table.rows else None


def _title(report: CampaignResults) -> str:
    jobs = {(run.params or {}).get("jobs") for run in report.runs
            if run.workload in BUILD_WORKLOADS}
    load = f", make -j{jobs.pop()}" if len(jobs) == 1 and None not in jobs else ""
    return f"kernbench: mean (standard deviation) of the runs{load}"


def _values(cells: list[Cell | None], footnotes: Footnotes) -> list[str]:
    """Each column's mean (stdev); a build without values says why in its first column."""
    elapsed = cells[0]
    if elapsed is None or not elapsed.values:
        why = "not run" if elapsed is None else problem_text(elapsed, footnotes) \
            if elapsed.problems else empty_text(elapsed)
        return [why, *["-"] * (len(cells) - 1)]
    out = []
    for (metric, _, decimals), cell in zip(KERNBENCH_COLUMNS, cells):
        text = mean_text(cell, decimals)
        out.append(decorate(text, cell, footnotes) if metric == "elapsed" else text)
    return out


def mean_text(cell: Cell | None, decimals: int) -> str:
    """'54.214 (0.174)': the mean of the runs' means with their standard deviation (none
    for one run, or when the style leaves spreads out)."""
    if cell is None or not cell.values:
        return "-"
    _, mean, stdev = cell.run_means()
    write = (lambda value: own_unit_text(cell, value)) if in_clock(cell) else \
        (lambda value: _number(value, decimals))
    text = write(mean)
    if stdev is not None and STYLE.get().spread:
        text += f" ({write(stdev)})"
    return text


def _number(value: float, decimals: int) -> str:
    text = f"{value:.{decimals}f}"
    # a count's mean: 191 and 17898.4, not 191.0
    return text[:-2] if decimals == 1 and text.endswith(".0") else text


def _elapsed_ratio(report: CampaignResults, label: str, env: str) -> str:
    """The environment's mean elapsed over the baseline's, to 2 decimals (kernbench's
    'Elapsed time / native'); '-' without a baseline that measured this build."""
    if not report.baseline:
        return "-"
    cell = label_cell(report, label, "elapsed", env)
    base = label_cell(report, label, "elapsed", report.baseline)
    if cell is None or base is None or not cell.values or not base.values:
        return "-"
    base_mean = base.run_means()[1]
    return f"{cell.run_means()[1] / base_mean:.2f}" if base_mean else "-"
