"""The network table, as sandbox and VMM teams publish it: per environment, the TCP round trip's
p50 and p99 (netperf's TCP_RR shape) and the TCP stream in each direction, absolute, each
the median of the runs with its interval."""

from __future__ import annotations

from guestbench.analysis.results import CampaignResults
from guestbench.report import functional, titles
from guestbench.report.model import Footnotes, Table, median_figure, median_text, row_scale

# each network workload's figures, in the order the write-ups give them
FIGURES = {"net_rr": ("rr_p50", "rr_p99"), "net_stream": ("to_guest", "to_host")}


def network_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    """A row per environment; a column per network figure of each network workload (a
    sweep's each value: its own columns)."""
    results = report.results
    columns = [(label, metric) for label, workload in report.workload_of.items()
               for metric in FIGURES.get(workload, ()) if (label, metric) in results.cells]
    if not columns:
        return None
    headers, divisors = [], []
    for label, metric in columns:
        row = results.cells[(label, metric)]
        unit, divisor = row_scale(next(iter(row.values())).unit, list(row.values()))
        headers.append(f"{titles.label_title(report, label)} "
                       f"{titles.metric_title(report, label, metric)} ({unit})")
        divisors.append(divisor)
    table = Table("Network: TCP with the host's peer", ["environment", *headers], [],
                  label_columns=1, name="network",
                  note="Each value: the median of the runs [95% interval]. A round trip's p50 "
                       "and p99 are each run's percentiles of its 1-byte round trips (netperf "
                       "TCP_RR); the stream is iperf3's throughput, each direction on its own.")
    for env in results.environments:
        cells = [results.cells[key].get(env) for key in columns]
        if not any(cell is not None and cell.values for cell in cells):
            continue
        table.add([functional.named(report, env),
                   *("-" if cell is None or not cell.values else median_text(cell, divisor)
                     for cell, divisor in zip(cells, divisors))],
                  [(env, label) for label, _metric in columns],
                  [median_figure(cell) for cell in cells])
    return table if table.rows else None
