"""The real agent in every environment installed here; skipped with the probe's reason elsewhere."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import pytest

from guestbench import environments

from tests.support.guests import agent_processes
from tests.support.real_environments import PRESETS
from tests.support.guests import run_job

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("preset", PRESETS)
def test_probe_answers_quickly_with_a_reason(preset, host_facts, agent_path):
    began = time.monotonic()
    answer = environments.create(environments.preset_spec(preset)).probe(host_facts)
    elapsed = time.monotonic() - began
    assert elapsed < 15, f"probe of {preset} took {elapsed:.1f} s"
    assert answer.reason, "a probe always says why (or what it found)"


@pytest.mark.parametrize("preset", PRESETS)
def test_timing_workloads_give_positive_samples(preset, available, agent_path, tmp_path):
    environment = available(preset)
    outcome = run_job(environment, agent_path, tmp_path / "logs", ["--min-time", "0.01", "getpid"])
    assert outcome.status == "ok", outcome.reason
    metrics = {metric: (unit, value) for metric, unit, value in outcome.samples}
    assert metrics["time_per_op"][0] == "ns" and metrics["time_per_op"][1] > 0
    assert metrics["tsc_per_op"][0] == "cycles" and metrics["tsc_per_op"][1] > 0
    assert metrics["iterations"][1] >= 1
    assert (tmp_path / "logs" / "stdout.log").read_bytes().count(b"@GB1 ") == len(outcome.samples) + 3


@pytest.mark.parametrize("preset", PRESETS)
def test_processes_and_stream_work(preset, available, agent_path, tmp_path):
    environment = available(preset)
    metrics = set()
    for workload in ("pipe_switch", "fork_exit", "stream_triad"):
        outcome = run_job(environment, agent_path, tmp_path / workload,
                          ["--min-time", "0.01", "--array-mib", "4", "--ntimes", "2", workload])
        assert outcome.status == "ok", f"{workload}: {outcome.reason}"
        metrics |= {m for m, _, _ in outcome.samples}
    assert {"time_per_op", "bandwidth", "time_min"} <= metrics


@pytest.mark.parametrize("preset", PRESETS)
def test_hung_agent_is_killed_at_timeout_and_nothing_is_left(preset, available, agent_path,
                                                             tmp_path):
    environment = available(preset)
    before = set(agent_processes(agent_path))
    bundles_before = set(Path(tempfile.gettempdir()).glob("guestbench-oci-*"))
    outcome = run_job(environment, agent_path, tmp_path / "logs", ["hang"], timeout_s=1.5)
    assert outcome.status == "timeout"
    assert "1.5 s" in outcome.reason
    deadline = time.monotonic() + 10
    while set(agent_processes(agent_path)) - before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not set(agent_processes(agent_path)) - before, "an agent process outlived its run"
    assert not set(Path(tempfile.gettempdir()).glob("guestbench-oci-*")) - bundles_before


def test_a_cpu_quota_reaches_the_container_and_it_runs(available, agent_path, tmp_path):
    available("runc")
    spec = environments.spec_model("oci")(name="quota", kind="oci", runtime="runc",
                                          cpu_quota=0.5)
    environment = environments.create(spec)
    outcome = run_job(environment, agent_path, tmp_path / "logs", ["--min-time", "0.01", "getpid"])
    assert outcome.status == "ok", outcome.reason
    config = (tmp_path / "logs" / "config.json").read_text()
    assert '"quota": 50000' in config and '"period": 100000' in config


def test_a_cpuset_pins_the_container_and_a_cpu_the_host_lacks_is_unavailable(
        available, agent_path, tmp_path, host_facts):
    available("runc")
    model = environments.spec_model("oci")
    last = str(os.cpu_count() - 1)
    environment = environments.create(model(name="pinned", kind="oci", runtime="runc", cpus=last))
    assert environment.probe(host_facts).available
    outcome = run_job(environment, agent_path, tmp_path / "logs", ["--min-time", "0.01", "getpid"])
    assert outcome.status == "ok", outcome.reason
    assert f'"cpus": "{last}"' in (tmp_path / "logs" / "config.json").read_text()
    missing = environments.create(model(name="nowhere", kind="oci", runtime="runc", cpus="4096"))
    availability = missing.probe(host_facts)
    assert not availability.available and "runc cannot run a container here" in availability.reason
