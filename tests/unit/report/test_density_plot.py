"""The density plots: each environment's start time and memory per instance against N, a row
per environment and N, in the HTML report's plots."""

from __future__ import annotations

import datetime as dt

from guestbench.report.formats.html import density_plot, page as html
from guestbench.store.records import RunRecord
from guestbench.commands import reading

STARTED = dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=dt.timezone.utc)


def _campaign(store, with_density: bool = True) -> None:
    campaign_id = store.create_campaign("density", {"source": "x"}, {"hostname": "h"}, "fp",
                                        None, "/logs", "0.1.0")
    envs = {name: store.add_environment(campaign_id, name, "fake", {}, True, "fake", position)
            for position, name in enumerate(["runc", "runsc"])}
    counts = (1, 2) if with_density else ()
    for env, scale in (("runc", 1.0), ("runsc", 3.0)):
        for count in counts:
            for repetition in range(3):
                starts = [(30.0 + count + repetition) * scale] * count
                store.add_run(campaign_id, RunRecord(
                    environment_id=envs[env], workload="density",
                    label=f"density[instances={count}]", params={"instances": count,
                                                                "settle_s": 0.5},
                    repetition=repetition, status="ok", reason="", started_at=STARTED,
                    host_seconds=0.5, log_path=None,
                    samples=(*(("density_start", "ms", ms) for ms in starts),
                             ("density_pss", "MiB", 10.0 * scale / count),
                             ("density_started", "count", float(count)))))
        store.add_run(campaign_id, RunRecord(
            environment_id=envs[env], workload="getpid", label="getpid", params={},
            repetition=0, status="ok", reason="", started_at=STARTED, host_seconds=0.1,
            log_path=None, samples=(("time_per_op", "ns", 100.0 * scale),)))


def test_a_row_per_environment_and_n_for_start_and_memory(store):
    _campaign(store)
    drawn = density_plot.figures(reading.load(store))
    assert [metric for metric, _, _ in drawn] == ["density_start", "density_pss"]
    start = drawn[0][2]
    rows = ["runc, N=1", "runc, N=2", "runsc, N=1", "runsc, N=2"]
    assert [start.index(row) for row in rows] == sorted(start.index(row) for row in rows)
    assert "ms" in start and "MiB" in drawn[1][2]
    page = html.render(reading.load(store), None)
    assert "density: each instance&#x27;s start to its agent against N" in page
    assert "density: host memory per instance (PSS) against N" in page


def test_no_density_runs_no_density_plot(store):
    _campaign(store, with_density=False)
    assert density_plot.figures(reading.load(store)) == []
    assert "against N" not in html.render(reading.load(store), None)
