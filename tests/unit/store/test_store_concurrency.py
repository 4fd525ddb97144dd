"""Several campaigns writing to one store at once, as on a host pool: no row lost, none
mixed into another campaign, on SQLite and on PostgreSQL."""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa

from guestbench import store as gb_store
from guestbench.store.records import RunRecord
from tests.support.together import run_together

WRITERS, RUNS = 4, 25
PLAN = {"source": "x.toml", "campaign": {"name": "c"}, "environments": [], "workloads": []}
STARTED = dt.datetime(2026, 11, 24, tzinfo=dt.timezone.utc)


def write_campaign(url: str, writer: int, barrier, _results) -> None:
    store = gb_store.open(url)
    barrier.wait(30)  # all at once, on one machine: the first insert of its host row races
    campaign = store.create_campaign(f"writer-{writer}", PLAN, {"hostname": "one"},
                                     "one-machine", None, "/logs", "0.1.0")
    env = store.add_environment(campaign, "native", "native", {}, True, "", 0)
    barrier.wait(30)  # every writer has its campaign: now all add runs at once
    for repetition in range(RUNS):
        store.add_run(campaign, RunRecord(
            environment_id=env, workload="getpid", label="getpid", params={},
            repetition=repetition, status="ok", reason="", started_at=STARTED,
            host_seconds=0.1, log_path=None,
            samples=tuple((metric, "ns", writer * 1000 + repetition + offset)
                          for offset, metric in ((0.25, "time_per_op"), (0.5, "tsc_per_op")))))
    store.finish_campaign(campaign, "finished")
    store.engine.dispose()


def test_campaigns_written_at_once_keep_every_row_in_its_own_campaign(store_url: str) -> None:
    gb_store.open(store_url).engine.dispose()  # the schema first, as `guestbench run` would
    codes, _ = run_together(write_campaign, [(store_url, writer) for writer in range(WRITERS)],
                            timeout_s=120)
    assert codes == [0] * WRITERS

    store = gb_store.open(store_url, create=False)
    with store.engine.connect() as connection:  # one host row, however many raced for it
        assert connection.execute(sa.text("select count(*) from host")).scalar() == 1
    campaigns = {campaign.name: campaign.id for campaign in store.campaigns()}
    assert sorted(campaigns) == [f"writer-{writer}" for writer in range(WRITERS)]
    for writer in range(WRITERS):
        campaign = campaigns[f"writer-{writer}"]
        runs = store.runs(campaign)
        assert sorted(run.repetition for run in runs) == list(range(RUNS))
        by_run = {run.id: run.repetition for run in runs}
        samples = list(store.samples(campaign))
        assert len(samples) == 2 * RUNS
        for sample in samples:  # each value names its writer and repetition
            repetition = by_run[sample.run_id]
            offset = 0.25 if sample.metric == "time_per_op" else 0.5
            assert sample.value == writer * 1000 + repetition + offset
    store.engine.dispose()
