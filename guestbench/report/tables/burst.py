"""The burst table, as sandbox vendors publish start-up under load: per environment and burst
size, the success rate beside the percentiles of each instance's launch-to-ready time, and
the time to the first and the last ready instance. Each figure is the median over the
campaign's bursts (its repetitions) with its interval; a percentile is told only where a
burst had enough ready instances for it (analysis/tails.py: p99 needs 100), and the cell
says how many it needed where it did not. The reasons instances failed are footnotes."""

from __future__ import annotations

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.analysis.tails import QUANTILES, least_values
from guestbench.workloads.instance import BURST_MODES as MODES
from guestbench.report import functional
from guestbench.report.model import (Footnotes, Table, format_value, median_figure,
                                     median_text, problem_text, row_scale)

PERCENTILES = tuple(f"burst_p{quantile * 100:g}" for quantile in QUANTILES)
TIMES = ("burst_first", *PERCENTILES, "burst_max", "burst_last")
FIGURES = {"burst_first": "first ready", **{metric: metric.removeprefix("burst_")
                                             for metric in PERCENTILES},
           "burst_max": "slowest", "burst_last": "last ready"}
LEAST = {f"burst_p{quantile * 100:g}": least_values(quantile) for quantile in QUANTILES}


def burst_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """A column per burst (its N and mode, as the density table has a column per N), a row
    per figure and environment: the success rate first, then the times."""
    results = report.results
    labels = [label for label, workload in report.workload_of.items() if workload == "burst"]
    if not labels:
        return None
    shape = {label: _shape(report, label) for label in labels}
    labels.sort(key=lambda label: (mode_rank(shape[label][1]), *shape[label]))
    times = [cell for label in labels for metric in TIMES
             for cell in results.cells.get((label, metric), {}).values() if cell.values]
    unit, divisor = row_scale("ms", times) if times else ("ms", 1.0)
    table = Table("Bursts: N instances launched together, staggered or in turn",
                  ["figure", "environment", *(_shape_text(shape[label]) for label in labels)],
                  [], label_columns=2, name="burst")
    untold, failures, refused = [], [], []
    for metric in ("burst_success", *TIMES):
        if metric in LEAST and not any(cell.values for label in labels
                                       for cell in results.cells.get((label, metric), {}).values()):
            untold.append(f"{FIGURES[metric]} (it needs {LEAST[metric]})")
            continue
        for env in results.environments:
            runs = {label: [run for run in report.runs
                            if run.label == label and run.environment == env] for label in labels}
            if not any(runs.values()):
                continue
            texts = [(_ready(runs[label], shape[label][0], _cell(results, label, metric, env),
                             _cell(results, label, "burst_p50", env), footnotes)
                      if metric == "burst_success"
                      else _time(_cell(results, label, metric, env), metric, divisor,
                                 any(run.status == "ok" for run in runs[label])))
                     if runs[label] else "-" for label in labels]
            title = "ready" if metric == "burst_success" else f"{FIGURES[metric]} ({unit})"
            # a time is the median over the bursts of that figure (a p99 of each burst)
            numbers = [None if metric == "burst_success"
                       else median_figure(_cell(results, label, metric, env)) for label in labels]
            table.add([title, functional.named(report, env), *texts],
                      [(env, label) for label in labels], numbers)
            if metric == "burst_success":
                failures += [said for label in labels
                             if (said := _failures(env, shape[label], runs[label]))]
                refused += [f"{env}, {_shape_text(shape[label])}: {runs[label][0].reason}"
                            for label in labels if _unsupported(runs[label])]
    table.note = (
        "Ready: the instances that became ready, of all launched in the campaign's bursts. "
        "First and last ready: from the burst's first launch to its first and its last ready "
        "instance; p50 to slowest: each instance's launch to its agent's hello, over the "
        "ready instances of one burst. Each is the median over the bursts [95% interval]. "
        "A percentile needs that many ready instances in one burst (p90: 10, p95: 20, p99: "
        "100): 'needs 100' where a burst had fewer." + (
            f" Not told, since no burst had enough: {', '.join(untold)}." if untold else "")
        + "".join(f" Failed: {said}." for said in failures)
        + "".join(f" Unsupported: {said.rstrip('.')}." for said in refused))
    return table if table.rows else None


def mode_rank(mode: str) -> int:
    """Bursts in the order a reader takes them: together, staggered, serial."""
    return MODES.index(mode) if mode in MODES else len(MODES)


def _cell(results, label: str, metric: str, env: str) -> Cell | None:
    return results.cells.get((label, metric), {}).get(env)


def _shape(report: CampaignResults, label: str) -> tuple[int, str, float]:
    """(N, mode, stagger ms) of a burst label, from its runs' parameters."""
    params = next((run.params or {} for run in report.runs if run.label == label), {})
    return (int(params.get("instances", 0)), str(params.get("mode", "together")),
            float(params.get("stagger_ms", 0.0)))


def _shape_text(shape: tuple[int, str, float]) -> str:
    count, mode, gap = shape
    if mode == "staggered":
        return f"N={count} every {format_value(gap)} ms"
    return f"N={count}" if mode == "together" else f"N={count} {mode}"


def _ready(runs: list, count: int, success: Cell | None, p50: Cell | None,
           footnotes: Footnotes) -> str:
    """The share of all instances launched that became ready: a failed run counts none."""
    rates = list(success.values) if success is not None else []
    rates += [0.0] * sum(1 for run in runs if run.status == "failed")
    if not rates and _unsupported(runs):
        return "unsupported"
    if not rates:
        cell = p50 or success
        return problem_text(cell, footnotes) if cell is not None and cell.problems else "-"
    launched = count * len(rates)
    ready = round(sum(rate * count / 100 for rate in rates))
    text = "100%" if ready == launched else f"{100 * ready / launched:.0f}% ({ready}/{launched})"
    problems = next((cell for cell in (p50, success) if cell is not None and cell.problems), None)
    # a burst that failed whole (or did not run) is said by the mark's footnote
    return f"{text} {footnotes.mark(problems)}" if problems is not None else text


def _unsupported(runs: list) -> bool:
    """Every run of the burst was refused before it started (the note says why)."""
    return bool(runs) and all(run.status == "unsupported" for run in runs)


def _time(cell: Cell | None, metric: str, divisor: float, ran: bool) -> str:
    """The figure's median; where a burst ran but had too few ready instances for a
    percentile, what it needs; "-" where none ran."""
    if cell is None or not cell.values:
        return f"needs {LEAST[metric]}" if metric in LEAST and ran else "-"
    return median_text(cell, divisor)


def _failures(env: str, shape: tuple[int, str, float], runs: list) -> str:
    """What the note says of a burst whose instances failed: the first reason, in the run's
    words (burst.json in each run's folder has every one); "" where none failed."""
    said = [run.reason for run in runs if run.reason and run.status == "ok"]
    if not said:
        return ""
    return (f"{env}, {_shape_text(shape)}: {len(said)} of {len(runs)} bursts had failures; "
            f"{said[0].rstrip('.')}")
