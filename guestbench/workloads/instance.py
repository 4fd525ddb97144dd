"""What an environment itself costs, whatever runs in it: start (its start-up and teardown on
the host's clock), footprint (the host memory of its whole process tree at rest) and density
(N instances started together: each one's start, the memory per instance).

All are measured by the runner, on the host; the agent only marks the moments (start: its
hello and end; footprint, density: ready, then idle while the host reads /proc).
docs/workloads-startup.md."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from guestbench.environments.base import JobNeeds
from guestbench.workloads.base import Params, Workload


class StartParams(Params):
    """Each repetition is one fresh instance of the environment."""

    steps: Literal["separate", "one"] = Field("separate", description=(
        "OCI runtimes: create, start and delete as separate commands, each timed (separate: "
        "the path containerd's shims take), or one `run` that creates, starts and deletes "
        "(one); other kinds have one step either way"))


class FootprintParams(Params):
    settle_s: float = Field(0.5, ge=0, le=60, description=(
        "how long the instance idles after its agent's first workload record before the host "
        "reads its memory"))


# the agent sleeps this long beyond settle_s: the host's reading of /proc happens inside it
FOOTPRINT_MARGIN_S = 1.0
# density's agents idle until the host stops them, once it has read their memory
DENSITY_IDLE_S = 3600.0


class DensityParams(Params):
    instances: int = Field(4, ge=1, le=64, description=(
        "instances started together (sweep it: instances = [1, 2, 4, 8])"))
    settle_s: float = Field(0.5, ge=0, le=60, description=(
        "how long every instance idles, once all are ready, before the host reads their memory"))

WORKLOADS = [
    Workload("start", "instance", "an instance started to the agent's first record, then stopped",
             StartParams, lambda params: [], quick=False, produces_samples=False,
             job_needs=lambda params, inputs: JobNeeds(start_steps=params.steps == "separate"),
             host_part="start", primary_metric="start_ready", title="start-up",
             metric_titles={"start_ready": "to the agent", "start_teardown": "teardown",
                            "start_create": "runtime create", "start_start": "runtime start",
                            "start_delete": "runtime delete"}),
    Workload("footprint", "instance", "the host memory of an instance's whole process tree, "
             "ready and idle (PSS, USS; beyond the guest's RAM for full-system guests)",
             FootprintParams,
             lambda params: ["--seconds", repr(params.settle_s + FOOTPRINT_MARGIN_S), "idle"],
             quick=False, produces_samples=False, agent_name="idle", host_part="footprint",
             primary_metric="footprint_pss",
             metric_titles={"footprint_pss": "PSS", "footprint_uss": "USS",
                            "footprint_rss": "RSS", "footprint_processes": "processes",
                            "footprint_overhead": "beyond guest RAM (PSS)"}),
    Workload("density", "instance", "N instances started together: each one's start to its "
             "agent, and the host memory per instance once all are ready", DensityParams,
             lambda params: ["--seconds", repr(DENSITY_IDLE_S), "idle"],
             quick=False, produces_samples=False, agent_name="idle", host_part="density",
             primary_metric="density_start",
             metric_titles={"density_start": "start, each instance",
                            "density_pss": "PSS per instance", "density_started": "started"}),
]
