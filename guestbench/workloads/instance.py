"""What an environment itself costs, whatever runs in it: start (its start-up and teardown on
the host's clock), footprint (the host memory of its whole process tree at rest), density
(N instances started together: each one's start, the memory per instance) and burst (N
instances started together, staggered or in turn: the start's percentiles and success rate).

All are measured by the runner, on the host; the agent only marks the moments (start: its
hello and end; footprint, density: ready, then idle while the host reads /proc).
docs/workloads-startup.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from guestbench.environments.base import Capability, JobNeeds
from guestbench.workloads.base import Params, Workload


class StartParams(Params):
    """Each repetition is one fresh instance of the environment."""

    steps: Literal["separate", "one"] = Field("separate", description=(
        "OCI runtimes: create, start and delete as separate commands, each timed (separate: "
        "the path containerd's shims take), or one `run` that creates, starts and deletes "
        "(one); other kinds have one step either way"))


# the agent sleeps this long beyond settle_s: the host's reading of /proc happens inside it
FOOTPRINT_MARGIN_S = 1.0
# how often the host reads an instance's memory while footprint's load runs
PEAK_INTERVAL_MS = 50
# STREAM's arrays under footprint's load: 240 MiB in all, which a 512 MiB guest and UML
# under the default vm.max_map_count hold, whatever cache size the environment shows
LOAD_ARRAY_MIB = 80


class FootprintParams(Params):
    settle_s: float = Field(0.5, ge=0, le=60, description=(
        "how long the instance idles after its agent's first workload record before the host "
        "reads its memory"))
    load: Literal["none", "stream"] = Field("none", description=(
        "a workload run after the idle reading, while the host reads the memory every "
        f"{PEAK_INTERVAL_MS} ms and keeps the peak: stream (STREAM's four kernels over "
        f"three arrays of {LOAD_ARRAY_MIB} MiB, the same in every kind) or none"))


def _footprint_args(params: FootprintParams) -> list[str]:
    idle = ["--seconds", repr(params.settle_s + FOOTPRINT_MARGIN_S), "idle"]
    # the load after the idle reading; --enough 1: STREAM's passes stop after a second
    return idle if params.load == "none" else [
        "--array-mib", str(LOAD_ARRAY_MIB), "--enough", "1", *idle, params.load]


# density's agents idle until the host stops them, once it has read their memory
DENSITY_IDLE_S = 3600.0


class DensityParams(Params):
    instances: int = Field(4, ge=1, le=64, description=(
        "instances started together (sweep it: instances = [1, 2, 4, 8])"))
    settle_s: float = Field(0.5, ge=0, le=60, description=(
        "how long every instance idles, once all are ready, before the host reads their memory"))


BURST_MODES = ("together", "staggered", "serial")


class BurstParams(Params):
    """One run is one burst; its repetitions give each figure an interval."""

    instances: int = Field(10, ge=1, le=500, description=(
        "instances in the burst (sweep it: instances = [1, 10, 50])"))
    mode: Literal["together", "staggered", "serial"] = Field("together", description=(
        "together: all launched at once; staggered: one every stagger_ms, whether or not "
        "the previous one is ready; serial: each launched once the previous one is ready, "
        "and stopped before the next"))
    stagger_ms: float = Field(200.0, ge=0, le=60_000, description=(
        "the gap between two launches in staggered mode (ignored by the others)"))
    ready_timeout_s: float = Field(120.0, gt=0, le=3600, description=(
        "an instance not ready this long after its launch has failed (the run timeout "
        "bounds the whole burst)"))

WORKLOADS = [
    Workload("start", "instance", "an instance started to the agent's first record, then stopped",
             StartParams, lambda params: [], quick=False, produces_samples=False,
             job_needs=lambda params, inputs: JobNeeds(start_steps=params.steps == "separate"),
             host_part="start", primary_metric="start_ready", title="start-up",
             host_timed=("start_ready", "start_teardown"),
             metric_titles={"start_ready": "to the agent", "start_teardown": "teardown",
                            "start_create": "runtime create", "start_start": "runtime start",
                            "start_delete": "runtime delete",
                            "start_api_ready": "VMM's API up",
                            "start_configure": "configured via API"}),
    Workload("footprint", "instance", "the host memory of an instance's whole process tree, "
             "ready and idle (PSS, USS; beyond the guest's RAM for full-system guests)",
             FootprintParams,
             _footprint_args, frozenset({Capability.HOST_PROCESSES}),
             quick=False, produces_samples=False, agent_name="idle", host_part="footprint",
             primary_metric="footprint_pss",
             metric_titles={"footprint_pss": "PSS", "footprint_uss": "USS",
                            "footprint_rss": "RSS", "footprint_processes": "processes",
                            "footprint_overhead": "beyond guest RAM (PSS)",
                            "footprint_peak_pss": "PSS at the load's peak",
                            "footprint_peak_uss": "USS at the load's peak",
                            "footprint_peak_rss": "RSS at the load's peak",
                            "footprint_peak_processes": "processes at the load's peak",
                            "footprint_peak_overhead": "beyond guest RAM at the load's peak"}),
    Workload("density", "instance", "N instances started together: each one's start to its "
             "agent, and the host memory per instance once all are ready", DensityParams,
             lambda params: ["--seconds", repr(DENSITY_IDLE_S), "idle"],
             frozenset({Capability.HOST_PROCESSES}), quick=False, produces_samples=False, agent_name="idle", host_part="density",
             primary_metric="density_start",
             metric_titles={"density_start": "start, each instance",
                            "density_pss": "PSS per instance", "density_started": "started"}),
    Workload("burst", "instance", "N instances started together, staggered or one after "
             "another: each one's launch to its agent, the burst's percentiles and how many "
             "became ready", BurstParams,
             lambda params: ["--seconds", repr(DENSITY_IDLE_S), "idle"],
             quick=False, produces_samples=False, agent_name="idle", host_part="burst",
             primary_metric="burst_p50",
             metric_titles={"burst_ready": "each instance's start", "burst_p50": "p50",
                            "burst_p90": "p90", "burst_p95": "p95", "burst_p99": "p99",
                            "burst_max": "slowest", "burst_success": "success rate",
                            "burst_first": "first ready", "burst_last": "last ready"}),
]
