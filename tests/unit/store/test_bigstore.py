"""The big-store generator of tests/support: exact counts, valid rows, one shape, slow cells, seeds."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path

import pytest
import sqlalchemy as sa

from guestbench import store as gb_store
from guestbench.store import schema
from tests.support import bigstore

SAMPLES = 20_000
SLOW = 1.5


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[str, list[int]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('bigstore') / 'big.sqlite'}"
    return url, bigstore.generate(url, SAMPLES, campaigns=2, slow_factor=SLOW)


@pytest.fixture(scope="module")
def opened(generated):
    url, _ids = generated
    store = gb_store.open(url, create=False)
    yield store
    store.engine.dispose()


def cells(store: gb_store.Store, campaign_id: int) -> dict[tuple[str, str, str], list[float]]:
    """{(environment, label, metric): values of the ok runs}."""
    env_name = {env.id: env.name for env in store.environments(campaign_id)}
    runs = {run.id: run for run in store.runs(campaign_id)}
    out: dict[tuple[str, str, str], list[float]] = defaultdict(list)
    for sample in store.samples(campaign_id):
        run = runs[sample.run_id]
        out[(env_name[run.environment_id], run.label, sample.metric)].append(sample.value)
    return out


def test_sample_count_is_exact(generated, opened) -> None:
    url, ids = generated
    assert len(ids) == 2
    assert bigstore.count_samples(url) == SAMPLES
    assert [len(opened.samples(campaign_id)) for campaign_id in ids] == [SAMPLES // 2] * 2


def test_uneven_split_and_accumulated_shape_are_exact(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'acc.sqlite'}"
    per_repetition = bigstore.samples_per_repetition(3, 6)
    ids = bigstore.generate(url, 5_003, environments=3, workloads=6, repetitions=4)
    assert len(ids) == round(5_003 / (per_repetition * 4 * 0.99))
    assert bigstore.count_samples(url) == 5_003
    counts = [bigstore.count_samples(url, [campaign_id]) for campaign_id in ids]
    assert max(counts) - min(counts) <= 1


def test_too_small_a_budget_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="under one repetition"):
        bigstore.generate(f"sqlite:///{tmp_path / 'x.sqlite'}", 100, campaigns=2)


def test_every_sample_belongs_to_a_run_of_its_campaign(generated, opened) -> None:
    _url, ids = generated
    with opened.engine.connect() as connection:
        orphans = connection.execute(
            sa.select(sa.func.count()).select_from(schema.sample.outerjoin(
                schema.run, schema.run.c.id == schema.sample.c.run_id))
            .where(schema.run.c.id.is_(None))).scalar()
    assert orphans == 0
    for campaign_id in ids:
        runs = {run.id: run for run in opened.runs(campaign_id)}
        environments = {env.id for env in opened.environments(campaign_id)}
        assert {run.environment_id for run in runs.values()} == environments
        with_samples = defaultdict(list)
        for sample in opened.samples(campaign_id):
            with_samples[sample.run_id].append(sample.metric)
        assert set(with_samples) <= set(runs)
        for run_id, run in runs.items():
            metrics = with_samples.get(run_id, [])
            if run.status != "ok":
                assert not metrics and run.reason and not run.flags
            elif run.workload == "stream":
                assert metrics[:5] == ["copy_bandwidth", "copy_time_avg", "copy_time_min",
                                       "copy_time_max", "scale_bandwidth"]
                assert metrics[16] == "array_mib" and len(metrics) in (17, 18)
            elif run.workload.startswith("stream_"):
                assert metrics[:5] == ["bandwidth", "time_avg", "time_min", "time_max", "array_mib"]
            else:
                assert metrics[:3] == ["time_per_op", "tsc_per_op", "iterations"]
                assert metrics[3:] in ([], ["clock_ratio"])
            assert run.log_path.endswith(f"/{run.label}/rep{run.repetition}")


def test_statuses_flags_and_campaign_rows(generated, opened) -> None:
    _url, ids = generated
    runs = [run for campaign_id in ids for run in opened.runs(campaign_id)]
    statuses = {run.status for run in runs}
    assert statuses == {"ok", "failed", "timeout", "crashed"}
    assert sum(run.status != "ok" for run in runs) < 0.05 * len(runs)
    assert any(run.flags == ["clock-drift"] for run in runs)
    assert max(run.repetition for run in runs) >= 5
    for campaign_id in ids:
        campaign = opened.campaign(str(campaign_id))
        assert campaign.status == "finished" and campaign.baseline == "native"
        assert campaign.finished_at > campaign.created_at
    started = [run.started_at for run in opened.runs(ids[0])]
    assert started == sorted(started)


def test_the_campaigns_have_one_shape(generated, opened) -> None:
    _url, (first, second) = generated
    names, labels = bigstore.shape()
    for campaign_id in (first, second):
        environments = opened.environments(campaign_id)
        assert [env.name for env in environments] == names
        assert environments[3].spec == {"name": "runsc", "kind": "oci", "runtime": "runsc",
                                           "binary": None, "platform": "ptrace", "network": None,
                                           "runtime_args": [], "cpu_quota": None, "cpus": None}
        assert list(dict.fromkeys(run.label for run in opened.runs(campaign_id))) == labels
    assert "getpid[min_time_s=0.2]" in labels
    assert set(cells(opened, first)) == set(cells(opened, second))


def test_the_slow_factor_shows_in_the_medians(generated, opened) -> None:
    _url, (first, second) = generated
    before, after = cells(opened, first), cells(opened, second)
    slowed = set(bigstore.default_slow_cells(*bigstore.shape()))
    ratios: dict[bool, list[float]] = {True: [], False: []}
    for (env, label, metric), values in before.items():
        if metric in ("time_per_op", "time_min", "copy_time_min"):
            ratio = statistics.median(after[(env, label, metric)]) / statistics.median(values)
            ratios[(env, label) in slowed].append(ratio)
    assert len(ratios[True]) == len(slowed)
    assert all(1.35 < ratio < 1.65 for ratio in ratios[True]), ratios[True]
    assert all(0.85 < ratio < 1.18 for ratio in ratios[False]), ratios[False]
    native = [statistics.median(after[("native", "getpid", "time_per_op")]),
              statistics.median(after[("runsc", "getpid", "time_per_op")]),
              statistics.median(after[("qemu-user", "getpid", "time_per_op")])]
    assert 130 < native[0] < 150 and 35_000 < native[1] < 55_000 and 2 < native[2] / native[0] < 2.5


def test_the_same_seed_gives_the_same_store(tmp_path: Path) -> None:
    def dump(url: str) -> tuple[list, list]:
        store = gb_store.open(url, create=False)
        try:
            with store.engine.connect() as connection:
                runs = connection.execute(sa.select(
                    schema.run.c.label, schema.run.c.status, schema.run.c.reason,
                    schema.run.c.flags, schema.run.c.started_at, schema.run.c.host_seconds)
                    .order_by(schema.run.c.id)).all()
                samples = connection.execute(sa.select(
                    schema.sample.c.metric, schema.sample.c.value).order_by(schema.sample.c.id)).all()
        finally:
            store.engine.dispose()
        return runs, samples

    urls = [f"sqlite:///{tmp_path / name}" for name in ("a.sqlite", "b.sqlite", "c.sqlite")]
    for url, seed in zip(urls, (7, 7, 8)):
        bigstore.generate(url, 6_000, environments=4, workloads=8, campaigns=2, seed=seed)
    first, again, other = (dump(url) for url in urls)
    assert first == again
    assert first[1] != other[1]
