#!/usr/bin/env python3
"""Where a timing cell's spread comes from, within runs or between them, and what fewer
values per run would have cost: a simulation over stored campaigns.

For every timing cell (a metric reported several values to a run) of each store's latest
campaign: the share of its variance (log scale) that lies between runs rather than within
them, and the median's relative 95% half-width recomputed, with guestbench's own bootstrap,
from each run's first K values (K = 1, 2, ...). If the between-run share dominates, a value
more per run buys almost nothing and a run more buys much: the default campaign's `values`
is chosen from this. Usage:

    .venv/bin/python benchmarks/values_per_run.py STORE.sqlite [STORE.sqlite ...]
"""

from __future__ import annotations

import math
import sqlite3
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from guestbench.analysis.stats import relative_half_width  # noqa: E402

METRIC = "time_per_op"


def cells_of(store: str) -> dict[tuple[str, str], list[list[float]]]:
    """(environment, workload) -> each ok run's values, in the order the agent gave them."""
    db = sqlite3.connect(f"file:{store}?mode=ro", uri=True)
    latest = db.execute("select max(id) from campaign").fetchone()[0]
    rows = db.execute(
        "select e.name, r.label, r.id, s.value from run r "
        "join environment e on e.id = r.environment_id join sample s on s.run_id = r.id "
        "where r.campaign_id = ? and r.status = 'ok' and s.metric = ? order by r.id, s.id",
        (latest, METRIC)).fetchall()
    runs: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for environment, label, run_id, value in rows:
        runs[(environment, label)][run_id].append(value)
    return {key: [values for _, values in sorted(by_run.items())]
            for key, by_run in runs.items() if len(by_run) >= 3}


def between_share(runs: list[list[float]]) -> float | None:
    """The between-run share of the variance of log values (one-way ANOVA's components)."""
    logs = [[math.log(v) for v in values if v > 0] for values in runs]
    logs = [values for values in logs if len(values) >= 2]
    if len(logs) < 3:
        return None
    within = statistics.fmean(statistics.variance(values) for values in logs)
    size = statistics.fmean(len(values) for values in logs)
    means = [statistics.fmean(values) for values in logs]
    between = max(statistics.variance(means) - within / size, 0.0)
    return between / (between + within) if between + within > 0 else None


def half_width(runs: list[list[float]], first: int) -> float | None:
    kept = [values[:first] for values in runs]
    found = relative_half_width([v for values in kept for v in values],
                                sizes=[len(values) for values in kept])
    return found * 100 if found is not None else None


def main(stores: list[str]) -> None:
    for store in stores:
        cells = cells_of(store)
        most = max((len(values) for runs in cells.values() for values in runs), default=0)
        shares = [share for runs in cells.values()
                  if (share := between_share(runs)) is not None]
        print(f"{store}: {len(cells)} timing cells, up to {most} values a run")
        if shares:
            print(f"  between-run share of the variance: median {statistics.median(shares):.0%}"
                  f" (cells from {min(shares):.0%} to {max(shares):.0%})")
        for first in range(1, most + 1):
            widths = [width for runs in cells.values()
                      if (width := half_width(runs, first)) is not None]
            print(f"  first {first} value(s) of each run: half-width median "
                  f"±{statistics.median(widths):.2f}%, mean ±{statistics.fmean(widths):.2f}%")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
