"""A campaign's digest: the results its summary shows, as JSON kept in the store.

Deriving a campaign's results reads every sample and bootstraps every cell: seconds, and
most of them spent importing numpy, scipy and the store's engine. What the summary shows
of a campaign cannot change while its runs do not, so the first summary of a campaign
(at the end of `run`, or the first `report`) keeps it here, and later ones read it back:
the primary metrics' cells with their statistics, the ratios, the geometric means, the
campaign's typical spread and the names tables use. The digest names the runs it was made
from (their count and the newest id, and the campaign's status); a campaign whose runs
changed since, or a digest of another format, is derived again.

The body starts with a CRC-32 of the JSON after it ("crc32:01abcdef {...}"). A digest whose
checksum does not match, that does not parse or lacks a field (a damaged row) is no digest:
the campaign is derived from its runs and its digest made again, as for a stale one. The
digest is a cache of what the runs say, never a result of its own.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import zlib
from typing import Any

from guestbench.analysis.cells import Cell, CellStats, Interval, Results, Spread
from guestbench.analysis.geomean import Geomean
from guestbench.analysis.results import CampaignResults
from guestbench.store.records import Campaign, Environment, Run

# 3: the checksum before the JSON; 4: geometric means per group; 5: one too-fast rule per
# workload (a cell's too_fast_rule and quantised), best_of
FORMAT = 5
# Up to this many values, a digest keeps every cell (compare reads it); beyond, the summary's
# cells alone, and compare derives the campaign from its samples
EVERY_CELL_VALUES = 200_000
RUN_FIELDS = ("id", "environment_id", "environment", "workload", "label", "params", "status",
              "reason", "flags")
CELL_FIELDS = ("environment", "label", "metric", "unit", "values", "sizes", "problems", "flags",
               "runs", "run_ids", "declared_higher", "declared_kind", "spread_limit",
               "too_fast_rule", "quantised", "best_of")


def encode(results: CampaignResults) -> str:
    """The summary's share of a campaign's results, as JSON."""
    primary = set(results.primary.items())
    every_cell = results.every_cell and sum(
        cell.n for row in results.results.cells.values() for cell in row.values()
    ) <= EVERY_CELL_VALUES
    # the primary metrics' cells, and those of workloads that gave no value (metric ""),
    # whose problems say why; every cell where they are few enough
    cells = [_cell(cell) for (label, metric), row in results.results.cells.items()
             if every_cell or (label, metric) in primary or not metric for cell in row.values()]
    document = {
        "format": FORMAT,
        "campaign": _plain(results.campaign),
        "environments": [_plain(env) for env in results.environments],
        "runs": [{key: getattr(run, key) for key in RUN_FIELDS} for run in results.runs],
        "baseline": results.baseline, "resamples": results.resamples,
        "primary": results.primary,
        "environment_names": results.results.environments,
        "rows": [list(row) for row in results.results.rows],
        "spread": None if results.results.spread is None
        else dataclasses.asdict(results.results.spread),
        "cells": cells,
        "ratios": [[*key, *_interval(interval)] for key, interval in results.ratios.items()],
        "geomeans": {group: {env: {"interval": _interval(mean.interval),
                                   "workloads": mean.workloads, "of": mean.of,
                                   "labels": list(mean.labels),
                                   "left_out": list(mean.left_out)}
                             for env, mean in means.items()}
                     for group, means in results.geomeans.items()},
        "workload_of": results.workload_of, "label_titles": results.label_titles,
        "metric_titles": results.metric_titles, "every_cell": every_cell,
    }
    body = json.dumps(document, separators=(",", ":"))
    return f"crc32:{zlib.crc32(body.encode()):08x} {body}"


def decode(text: Any) -> CampaignResults | None:
    """The results a digest holds; None for a digest of another format, or one that is
    damaged (its checksum does not match, its JSON does not parse or lacks a field)."""
    if not isinstance(text, str):  # SQLite keeps any value in any column
        return None
    head, _, body = text.partition(" ")
    if head != f"crc32:{zlib.crc32(body.encode()):08x}":
        return None
    try:
        return _results(json.loads(body))
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def _results(document: dict[str, Any]) -> CampaignResults | None:
    if document.get("format") != FORMAT:
        return None
    environments = document["environment_names"]
    rows = [tuple(row) for row in document["rows"]]
    cells: dict[tuple[str, str], dict[str, Cell]] = {}
    for fields in document["cells"]:
        cell = _cell_from(fields)
        cells.setdefault((cell.label, cell.metric), {})[cell.environment] = cell
    # rows of metrics the summary does not show keep empty cells, as a primary-only load has
    for label, metric, unit in rows:
        row = cells.setdefault((label, metric), {})
        for env in environments:
            row.setdefault(env, Cell(env, label, metric, unit))
    spread = document["spread"]
    results = Results(environments, rows, cells, Spread(**spread) if spread else None)
    return CampaignResults(
        Campaign(**_dated(document["campaign"])),
        [Environment(**_dated(env)) for env in document["environments"]],
        [Run(**run) for run in document["runs"]], None, document["baseline"], results, document["resamples"],
        document["primary"],
        {(label, metric, env): Interval(*bounds) for label, metric, env, *bounds
         in document["ratios"]},
        {group: {env: Geomean(Interval(*mean["interval"]), mean["workloads"], mean["of"],
                              tuple(mean["labels"]), tuple(mean["left_out"]))
                 for env, mean in means.items()}
         for group, means in document["geomeans"].items()},
        [], document["workload_of"], document["label_titles"], document["metric_titles"],
        document["every_cell"])


def _cell(cell: Cell) -> dict[str, Any]:
    fields = {name: getattr(cell, name) for name in CELL_FIELDS}
    fields["stats"] = None if cell.stats is None else dataclasses.asdict(cell.stats)
    return fields


def _cell_from(fields: dict[str, Any]) -> Cell:
    stats = fields.pop("stats")
    fields["problems"] = [tuple(problem) for problem in fields["problems"]]
    return Cell(**fields, stats=None if stats is None else CellStats(**stats))


def _interval(interval: Interval) -> list[float | None]:
    return [interval.value, interval.low, interval.high]


# Stored rows hold datetimes (created_at, finished_at): written as ISO text with a mark
DATED = "__datetime__"


def _plain(row: Campaign | Environment) -> dict[str, Any]:
    return {field.name: {DATED: value.isoformat()} if isinstance(value, dt.datetime) else value
            for field in dataclasses.fields(row) for value in [getattr(row, field.name)]}


def _dated(row: dict[str, Any]) -> dict[str, Any]:
    return {key: dt.datetime.fromisoformat(value[DATED])
            if isinstance(value, dict) and set(value) == {DATED} else value
            for key, value in row.items()}
