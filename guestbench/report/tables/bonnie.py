"""bonnie++'s tables as the KVM-against-Xen comparisons published them.

Sequential output (per chr, block, rewrite), sequential input (per chr, block), random
seeks, sequential create and random create (create, read, delete): each figure with its
%CPU, one row per environment; then each I/O figure as a % of the baseline's. A figure
bonnie++ could not time shows as +++++ (and its %CPU as +++), as bonnie++ prints it.
"""

from __future__ import annotations

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import (STYLE, Footnotes, Table, decorate, empty_text, format_share,
                                     format_value, problem_text, too_fast_text)
from guestbench.report.tables.io import value_text
from guestbench.workloads.bonnie import FIGURES

TITLE = {metric: title for metric, _unit, title in FIGURES}
UNIT = {metric: unit for metric, unit, _title in FIGURES}
SHORT_UNIT = {"KiB/s": "KB/s", "seeks/s": "/s", "files/s": "/s"}  # as bonnie++ heads them
# (table name, title, metrics)
SECTIONS = (
    ("output", "Sequential Output", ("out_char", "out_block", "rewrite")),
    ("input", "Sequential Input", ("in_char", "in_block")),
    ("seeks", "Random Seeks", ("seeks",)),
    ("seq-create", "Sequential Create", ("seq_create", "seq_read", "seq_delete")),
    ("rand-create", "Random Create", ("rand_create", "rand_read", "rand_delete")),
)
PER_CHAR = ("out_char", "in_char")
PERCENT_METRICS = ("out_char", "out_block", "rewrite", "in_char", "in_block", "seeks")
PERCENT_TITLES = ("out per chr", "out block", "rewrite", "in per chr", "in block", "seeks")


def tables(report: CampaignResults, footnotes: Footnotes) -> list[Table]:
    labels = list(dict.fromkeys(run.label for run in report.runs
                                if run.workload == "bonnie"))
    out = []
    for label in labels:
        sizes = _sizes(report, label)
        for name, title, metrics in SECTIONS:
            table = _section(report, footnotes, label, f"bonnie++ {title} ({sizes}): {label}",
                             metrics, f"bonnie-{name}" + ("" if len(labels) == 1 else f"-{label}"))
            if table is not None:
                out.append(table)
        percent = _percent(report, footnotes, label, len(labels) == 1)
        if percent is not None:
            out.append(percent)
    return out


def _sizes(report: CampaignResults, label: str) -> str:
    params = next((run.params or {} for run in report.runs if run.label == label), {})
    files = params.get("files")
    return f"file {params.get('size_mib', '?')} MiB, {files}k small files" if files \
        else f"file {params.get('size_mib', '?')} MiB"


def _section(report: CampaignResults, footnotes: Footnotes, label: str, title: str,
             metrics: tuple[str, ...], name: str) -> Table | None:
    header = ["environment"]
    for metric in metrics:
        header += [f"{TITLE[metric]} {SHORT_UNIT[UNIT[metric]]}", "%CPU"]
    table = Table(title, header, [], label_columns=1, name=name,
                  note=_values_said() + "; KB = "
                       "1024 bytes, as bonnie++ counts. +++++: bonnie++ finished the phase "
                       "too fast to time it (its %CPU: +++); give a larger size_mib or files. "
                       "-: not measured (per chr with per_char = false).")
    shown = False
    for env in report.results.environments:
        cells = []
        for metric in metrics:
            figure = _cell(report, label, metric, env)
            cpu = _cell(report, label, f"{metric}_cpu", env)
            fast = _too_fast_runs(report, label, env, metric)
            shown |= bool(figure is not None and figure.values) or fast > 0
            if metric in PER_CHAR and not _params(report, label, env).get("per_char", True):
                cells += ["-", "-"]  # skipped (-f); the note says so
                continue
            cells += [_figure_text(figure, fast, footnotes),
                      "+++" if fast and (cpu is None or not cpu.values)
                      else format_value(cpu.median) if cpu is not None and cpu.values else "-"]
        if any(run.label == label and run.environment == env for run in report.runs):
            table.add([env, *cells], [(env, label)] * len(cells))
    return table if shown else None


def _values_said() -> str:
    """What a figure is, as this table writes it."""
    style = STYLE.get()
    if not style.plain:
        return "Medians of the runs (± half the 95% interval of the median)"
    return f"The {style.statistic} of the runs" + (" with its spread" if style.spread else "")


def _params(report: CampaignResults, label: str, env: str) -> dict:
    return next((run.params or {} for run in report.runs
                 if run.label == label and run.environment == env), {})


def _figure_text(cell: Cell | None, too_fast_runs: int, footnotes: Footnotes) -> str:
    if cell is not None and cell.values:
        if cell.too_fast:
            return decorate(too_fast_text(cell), cell, footnotes)
        return value_text(cell, footnotes)
    if too_fast_runs:
        return "+++++"
    if cell is not None and cell.problems:
        return problem_text(cell, footnotes)
    return empty_text(cell) if cell is not None else "-"


def _cell(report: CampaignResults, label: str, metric: str, env: str) -> Cell | None:
    return report.results.cells.get((label, metric), {}).get(env)


def _too_fast_runs(report: CampaignResults, label: str, env: str, metric: str) -> int:
    """Runs that said this figure was too fast to time (a cell need not exist for it)."""
    flag = f"too-fast:{metric}"
    return sum(1 for run in report.runs if run.label == label and run.environment == env
               and run.status == "ok" and flag in (run.flags or []))


def _percent(report: CampaignResults, footnotes: Footnotes, label: str, only: bool) -> Table | None:
    baseline = report.baseline
    if not baseline:
        return None
    bases = {metric: _cell(report, label, metric, baseline) for metric in PERCENT_METRICS}
    if not any(cell is not None and cell.values for cell in bases.values()):
        return None
    table = Table(f"bonnie++ comparison to {baseline} (normalised against {baseline}'s "
                  f"performance): {label}", ["environment", *PERCENT_TITLES], [],
                  label_columns=1, name="bonnie-percent" + ("" if only else f"-{label}"),
                  note=f"{baseline} = 100; higher is better (each environment's median over "
                       f"{baseline}'s). n/a: bonnie++ printed +++++ for that figure on one "
                       "side (too fast to time: the operations took less than its clock "
                       "can tell), so no share of it can be taken.")
    for env in report.results.environments:
        if not any(run.label == label and run.environment == env for run in report.runs):
            continue
        row = []
        for metric in PERCENT_METRICS:
            cell, base = _cell(report, label, metric, env), bases[metric]
            fast = _too_fast_runs(report, label, env, metric) or \
                _too_fast_runs(report, label, baseline, metric)
            if env == baseline and (fast or (cell is not None and cell.values)):
                row.append("100")  # itself, even where bonnie++ could not time it
            elif fast or (cell is not None and cell.too_fast) or (base is not None and base.too_fast):
                row.append("n/a")  # +++++ is no number: no share of it
            elif cell is None or base is None or not cell.values or not base.values \
                    or not base.median:
                row.append(problem_text(cell, footnotes) if cell is not None and cell.problems
                           else "-")
            else:
                row.append(format_share(cell.median / base.median * 100))
        table.add([env, *row], [(env, label)] * len(row))
    return table
