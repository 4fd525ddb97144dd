"""start and footprint on every preset installed here: each start run gives the time to the
agent's first record and the teardown on the host's clock (OCI runtimes their delete as well);
each footprint run the memory of the instance's process tree, beyond the guest's RAM too for
full-system guests."""

from __future__ import annotations

from pathlib import Path

import pytest

from guestbench import environments

from tests.support.real_environments import prepared, tcg_kernel
from tests.support.cli import ok_runs

pytestmark = pytest.mark.integration

PRESETS = ["native", "namespace", "runc", "crun", "runsc", "qemu-user", "qemu-tcg", "uml"]

# The four instance workloads, in one campaign per preset: each campaign's start, probe and
# report cost 2-3 s, once instead of four times (32 campaigns took 189 s of the suite).
WORKLOADS = """
[[workload]]
name = "start"
repeat = 2

# the tree at rest, then STREAM's 240 MiB of arrays run: the peak holds them
[[workload]]
name = "footprint"
load = "stream"
settle_s = 0.2

[[workload]]
name = "density"
instances = 3
settle_s = 0.2

# three instances at once, then three staggered 100 ms apart
[[workload]]
name = "burst"
instances = 3
mode = ["together", "staggered"]
stagger_ms = 100
"""
RUNS = {"start": 2, "footprint": 1, "density": 1, "burst": 2}


@pytest.fixture(scope="module", params=PRESETS)
def runs(request, tmp_path_factory, host_facts) -> dict[str, list[dict]]:
    """The preset's campaign of the four workloads: its runs by workload, every one ok."""
    preset = request.param
    prepared(host_facts, environments.create(environments.preset_spec(preset)))  # or skip: why
    folder = tmp_path_factory.mktemp(f"instance-{preset}")
    plan = folder / "plan.toml"
    kernel = f'kernel = "{tcg_kernel()}"\n' if preset == "qemu-tcg" else ""
    plan.write_text(f'[campaign]\nrepeat = 1\n\n[[environment]]\npreset = "{preset}"\n'
                    f"{kernel}\n{WORKLOADS}")
    by_workload: dict[str, list[dict]] = {}
    for entry in ok_runs(folder, sum(RUNS.values()), str(plan)):
        by_workload.setdefault(entry["workload"], []).append(entry)
    assert {name: len(entries) for name, entries in by_workload.items()} == RUNS
    return {"preset": preset, **by_workload}


def test_start_times_the_instance_to_its_agent_and_its_teardown(runs):
    preset = runs["preset"]
    for entry in runs["start"]:
        ms = {sample["metric"]: sample["value"] for sample in entry["samples"]
              if sample["unit"] == "ms"}
        expected = {"start_ready", "start_teardown"} | (
            {"start_create", "start_start", "start_delete"}
            if preset in ("runc", "crun", "runsc") else set())
        assert set(ms) == expected, ms
        # on the host's clock, within the run's own host time
        assert 0 < ms["start_ready"] < entry["host_seconds"] * 1000
        assert 0 <= ms["start_teardown"] < entry["host_seconds"] * 1000
        if "start_delete" in ms:  # the runtime's steps, one by one, inside the spans
            assert 0 < ms["start_delete"] <= ms["start_teardown"]
            assert 0 < ms["start_create"] + ms["start_start"] < ms["start_ready"]


def test_footprint_reads_the_whole_tree_at_rest_then_at_a_load_s_peak(runs):
    """The tree at rest, then STREAM's 240 MiB of arrays run: the peak holds them."""
    preset = runs["preset"]
    full_system = environments.KINDS[environments.preset_spec(preset).kind].full_system
    for entry in runs["footprint"]:
        got = {sample["metric"]: sample["value"] for sample in entry["samples"]}
        assert 0 < got["footprint_uss"] <= got["footprint_pss"] <= got["footprint_rss"], got
        assert got["footprint_processes"] >= 1
        if preset == "runsc":  # the sandbox and the gofer beside runsc itself
            assert got["footprint_processes"] >= 3
        if full_system:  # the guest's RAM is told apart, and is part of the whole
            assert 0 < got["footprint_overhead"] < got["footprint_pss"], got
        else:
            assert "footprint_overhead" not in got
        assert got["footprint_peak_pss"] > got["footprint_pss"] + 200, got
        assert not any(metric.endswith("bandwidth") for metric in got), got


def test_density_starts_instances_together_and_leaves_none(runs):
    for entry in runs["density"]:
        starts = [s["value"] for s in entry["samples"] if s["metric"] == "density_start"]
        got = {s["metric"]: s["value"] for s in entry["samples"]}
        assert len(starts) == 3 and all(0 < ms < entry["host_seconds"] * 1000 for ms in starts)
        assert got["density_started"] == 3 and got["density_pss"] > 0
        # each instance kept its own logs
        assert {path.name for path in Path(entry["log_path"]).iterdir()} >= {
            "instance1", "instance2", "instance3"}


def test_a_burst_times_each_instance_to_its_hello_and_all_become_ready(runs):
    """Three instances at once, then three staggered 100 ms apart: every one ready, each
    timed on the host's clock, the last no sooner than the first."""
    for entry in runs["burst"]:
        got: dict[str, list[float]] = {}
        for sample in entry["samples"]:
            got.setdefault(sample["metric"], []).append(sample["value"])
        assert got["burst_success"] == [100.0], entry["reason"]
        assert len(got["burst_ready"]) == 3 and entry["reason"] == ""
        assert 0 < got["burst_first"][0] <= got["burst_last"][0] < entry["host_seconds"] * 1000
        assert got["burst_p50"][0] <= got["burst_max"][0] == max(got["burst_ready"])
        if entry["params"]["mode"] == "staggered":  # the third launch came 200 ms in
            assert got["burst_last"][0] >= 200
