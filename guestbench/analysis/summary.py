"""Cells of results: the samples of one workload metric in one environment, and their summary."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from guestbench.analysis import stats as cell_stats
from guestbench.analysis.cells import (CONTEXT_METRICS, VERDICT, Cell, Results,
                                       campaign_spread, declared_directions, declared_kinds,
                                       flags_of_metric)
from guestbench.store.columns import Samples

def summarise(environments: list[str], runs: Iterable[dict[str, Any]],
              samples: Samples | Iterable[dict[str, Any]], include_context: bool = False,
              too_fast_rules: Mapping[str, str] | None = None) -> Results:
    """Group raw runs and samples into cells.

    runs: dicts with id, environment, label, status, reason; params (optional) may declare
    the metrics' directions (declared_directions).
    too_fast_rules: workload -> its tool's own too-fast rule (Workload.too_fast_rule): its
    figures are too fast by that rule alone, never for being quantised.
    samples: Samples, or dicts with run_id, metric, unit, value. They can number 500,000:
    they are grouped with numpy, never one by one in Python.
    """
    runs = list(runs)
    samples = Samples.coerce(samples)
    labels = list(dict.fromkeys(run.label for run in runs))
    label_code = {label: index for index, label in enumerate(labels)}
    env_code = {env: index for index, env in enumerate(environments)}
    run_ids = np.fromiter((run.id for run in runs), dtype=np.int64, count=len(runs))
    run_label = np.fromiter((label_code[run.label] for run in runs), dtype=np.int64, count=len(runs))
    run_env = np.fromiter((env_code[run.environment] for run in runs), dtype=np.int64, count=len(runs))
    run_ok = np.fromiter((run.status == "ok" for run in runs), dtype=bool, count=len(runs))
    # each sample's run, as an index into runs (samples of runs not listed are left out)
    order = np.argsort(run_ids, kind="stable")
    found = np.searchsorted(run_ids[order], samples.run_id)
    found = np.minimum(found, max(len(runs) - 1, 0))
    known = (run_ids[order][found] == samples.run_id) if len(runs) else np.zeros(len(samples), bool)
    run_of = order[found]
    metric, names = samples.metric_codes()
    kept = known & ~np.isin(metric, [code for code, name in enumerate(names)
                                     if not include_context and name in CONTEXT_METRICS])
    rows = _rows(labels, names, samples, run_label[run_of], metric, kept)
    cells = _cells(environments, runs, rows, too_fast_rules or {})
    _fill_values(cells, labels, environments, names, samples.value, run_of, metric,
                 run_label, run_env, kept & run_ok[run_of])  # a failed run's samples never count
    return Results(environments, rows, cells)


def _rows(labels: list[str], names: list[str], samples: Samples, label: np.ndarray,
          metric: np.ndarray, kept: np.ndarray) -> list[tuple[str, str, str]]:
    """(label, metric, unit) in the order labels ran, then metrics first appeared; a label
    with no sample gets one row with metric "". A metric's unit is the first one seen."""
    positions = np.flatnonzero(kept)
    combined = label[positions] * (len(names) + 1) + metric[positions]
    _, first = np.unique(combined, return_index=True)
    first = np.sort(positions[first])
    seen: dict[str, dict[str, str]] = {name: {} for name in labels}
    for position in first.tolist():
        name, unit = samples.kinds[samples.kind[position]]
        seen[labels[label[position]]].setdefault(name, unit)
    rows = [(name, metric_name, unit) for name in labels for metric_name, unit in seen[name].items()]
    rows += [(name, "", "") for name in labels if not seen[name]]
    order = {name: index for index, name in enumerate(labels)}
    rows.sort(key=lambda row: order[row[0]])
    return rows


def _cells(environments: list[str], runs: list[dict[str, Any]], rows: list[tuple[str, str, str]],
           too_fast_rules: Mapping[str, str]) -> dict[tuple[str, str], dict[str, Cell]]:
    """Empty cells for every row and environment, with their runs: counts, ids, problems and
    flags, gathered once per (label, environment) and shared out to the label's metrics."""
    declared: dict[str, dict[str, bool]] = {}
    kinds: dict[str, dict[str, str]] = {}
    best_of: dict[str, int | None] = {}
    ruled = {run.label: too_fast_rules[run.workload] for run in runs
             if run.workload in too_fast_rules}
    gathered: dict[tuple[str, str], tuple[list[int], list[tuple[str, str]], list[str]]] = {}
    for run in runs:
        if run.label not in declared:
            declared[run.label] = declared_directions(run.params)
            kinds[run.label] = declared_kinds(run.params)
            best_of[run.label] = (run.params or {}).get("best_of")
        ids, problems, flags = gathered.setdefault((run.label, run.environment), ([], [], []))
        ids.append(run.id)
        if run.status != "ok":
            problems.append((run.status, run.reason))
        else:
            flags += run.flags or []
    cells = {}
    for label, metric, unit in rows:
        row = {}
        for env in environments:
            ids, problems, flags = gathered.get((label, env), ([], [], []))
            row[env] = Cell(env, label, metric, unit, problems=list(problems),
                            flags=flags_of_metric(flags, metric),
                            runs=len(ids), run_ids=list(ids),
                            declared_higher=declared.get(label, {}).get(metric),
                            declared_kind=kinds.get(label, {}).get(metric),
                            too_fast_rule=ruled.get(label, ""), best_of=best_of.get(label))
        cells[(label, metric)] = row
    return cells


def _fill_values(cells: dict[tuple[str, str], dict[str, Cell]], labels: list[str],
                 environments: list[str], names: list[str], values: np.ndarray,
                 run_of: np.ndarray, metric: np.ndarray, run_label: np.ndarray,
                 run_env: np.ndarray, counted: np.ndarray) -> None:
    """Each cell's values, grouped by run in the runs' order, and the values per run."""
    positions = np.flatnonzero(counted)
    runs = run_of[positions]
    keys = (run_label[runs], metric[positions], run_env[runs])
    order = np.lexsort((runs, keys[2], keys[1], keys[0]))  # stable: stored order within a run
    positions, runs = positions[order], runs[order]
    keys = tuple(key[order] for key in keys)
    if positions.size == 0:
        return
    new_cell = np.ones(positions.size, dtype=bool)
    new_cell[1:] = (np.diff(keys[0]) != 0) | (np.diff(keys[1]) != 0) | (np.diff(keys[2]) != 0)
    new_run = new_cell.copy()
    new_run[1:] |= np.diff(runs) != 0
    cell_starts = np.flatnonzero(new_cell)
    run_starts = np.flatnonzero(new_run)
    sorted_values = values[positions]
    bounds = np.append(cell_starts, positions.size)
    for start, end in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        cell = cells[(labels[keys[0][start]], names[keys[1][start]])][environments[keys[2][start]]]
        cell.values = sorted_values[start:end].tolist()
        firsts = run_starts[np.searchsorted(run_starts, start):np.searchsorted(run_starts, end)]
        cell.sizes = np.diff(np.append(firsts, end)).tolist()


def analyse(results: Results, resamples: int | None = None,
            rows: Iterable[tuple[str, str]] | None = None,
            judged: Iterable[tuple[str, str]] = ()) -> int:
    """Fill the measured cells' statistics in one vectorised pass; returns the resamples used.

    rows: only the cells of these (label, metric) rows (a view that shows no others). The
    resamples are chosen from every measured cell all the same, and a cell's interval
    depends on its own values alone, so a cell gets the same numbers in every view."""
    # a verdict's 1s and 0s have no median to estimate: its runs are counted, not described
    every = [cell for row in results.cells.values() for cell in row.values()
             if cell.values and cell.kind != VERDICT]
    resamples = resamples or cell_stats.resamples_for(sum(cell.n for cell in every))
    wanted = None if rows is None else set(rows)
    measured = [cell for cell in every if wanted is None or (cell.label, cell.metric) in wanted]
    for cell, described in zip(measured, cell_stats.describe(
            [cell.values for cell in measured], resamples, sizes=[cell.sizes for cell in measured])):
        cell.stats = described
        identical = quantised(cell)
        cell.quantised = identical and not cell.too_fast_rule
        if (cell.too_fast or identical) and described.ci_low is not None:  # none would be true
            cell.stats = dataclasses.replace(described, ci_low=None, ci_high=None)
    # the typical spread comes from the rows every view describes (the primary metrics), so
    # a cell carries the same marks in the summary as in the detail
    results.spread = campaign_spread(cell for label, metric in judged
                                     for cell in results.cells[(label, metric)].values())
    if results.spread is not None:
        for cell in every:
            cell.spread_limit = results.spread.limit
    return resamples


def quantised(cell: Cell) -> bool:
    """A performance figure that every run (two or more) gave identically: a time or a rate
    computed from a count of a coarse clock's ticks (fio's milliseconds), not a measurement
    with a spread. Its interval would be falsely tight."""
    return cell.is_performance and len(cell.values) >= 2 and min(cell.values) == max(cell.values)
