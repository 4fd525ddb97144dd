"""What a workload is: a name, typed parameters, needed capabilities, the agent arguments."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from guestbench.environments.base import Capability, JobNeeds
from guestbench.host import Host

Sample = tuple[str, str, float]  # metric, unit, value


# How tables name the metrics that many workloads share (a workload names its own in
# Workload.metric_titles); a metric not named anywhere is shown as it is stored.
METRIC_TITLES = {
    "time_per_op": "time per op", "tsc_per_op": "TSC per op", "elapsed": "elapsed",
    "cpu_percent": "CPU", "context_switches": "context switches", "sleeps": "sleeps",
    "max_rss": "max RSS", "bandwidth": "bandwidth", "lat_p50": "latency p50",
    "lat_p99": "latency p99", "cpu_usr": "CPU user %", "cpu_sys": "CPU system %",
    "max_latency": "max latency", "boot_powered_off": "VMM start to power-off",
    "boot_clock_zero": "VMM start to guest clock zero",
    "boot_userspace": "VMM start to userspace", "boot_agent_ready": "VMM start to agent ready",
    "boot_first_byte": "VMM start to first console byte", "guest_uptime": "guest uptime",
    "throughput": "throughput", "fsync_honoured": "fsync honoured",
    # the VMM's threads over the workload, in % of one host CPU (process/threads.py)
    "threads_cpu_vcpus": "VMM's vCPU threads", "threads_cpu_vmm": "VMM's own threads",
    "threads_cpu_io": "VMM's I/O threads",
}

# A run flag scoped to one metric is written "flag:metric" (too-fast:create).
TOO_FAST = "too-fast"


def too_fast(metric: str) -> str:
    """The run flag saying that a tool timed `metric` over a span under its resolution."""
    return f"{TOO_FAST}:{metric}"


@dataclass(frozen=True)
class Derived:
    """What a workload's derive may return instead of its samples alone: the samples, and
    flags about them (too_fast(metric) where the tool's own runtime was under its clock's
    resolution, so that the figure is not given a tight interval)."""

    samples: list["Sample"]
    flags: list[str] = field(default_factory=list)


class InputError(Exception):
    """A workload could not generate its inputs on the host (the run's status is infra)."""


class InputMissing(InputError):
    """The host lacks what a workload's inputs are made from (a source tarball, a package):
    the run is unsupported, and the message says what to install."""


class OutputError(Exception):
    """A tool's output could not be turned into samples (the run fails with this reason)."""


@dataclass(frozen=True)
class RunOutput:
    """What a finished run gave, for workloads that derive their samples on the host."""

    samples: list[Sample]               # what the agent reported itself (exec: rusage)
    stdout: str                         # the program's output (exec), joined from output records
    stderr: str
    records: list[Any]                  # every protocol record, with host arrival times
    artifacts: dict[str, Any]           # what the environment recorded (Guest.artifacts)


class Params(BaseModel):
    """Base of every workload's parameter model: unknown keys are errors."""

    # strict: `true` or "3" where a number belongs is an error, not a 1 or a 3
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


@dataclass(frozen=True)
class Workload:
    name: str
    family: str
    summary: str
    params_model: type[Params]
    to_agent_args: Callable[[Params], list[str]]
    capabilities: frozenset[Capability] = frozenset()
    quick: bool = True  # part of the default quick suite
    produces_samples: bool = True  # a run without samples is a failed run
    boot_phases: bool = False  # the guest's boot phases (host clock) become samples
    # what the host measures of the run's instance itself (its start, its memory, N of them):
    # a name in runner/host_parts.py's PARTS; such a run has an instance of its own
    host_part: str | None = None
    # fills parameters whose default depends on the host, so every environment gets the same
    host_defaults: Callable[[Host], dict[str, Any]] = field(default=lambda host: {})
    # the one metric that adaptive repetitions and summaries judge; None: nothing to judge
    primary_metric: str | None = field(kw_only=True)
    # the agent workload that runs it (exec for tools like fio); to_agent_args then gives the
    # whole argument list, since exec's command must come last
    agent_name: str | None = field(default=None, kw_only=True)
    # what the run needs from its environment; the folder is the campaign's inputs folder,
    # where a workload may generate files once (a source tree) and name them in the needs
    job_needs: Callable[[Params, Path], JobNeeds] = field(
        default=lambda params, inputs: JobNeeds(), kw_only=True)
    # the samples of an ok run, from what it gave (a tool's output), with flags about them
    # (Derived) or alone; None: the agent's samples
    derive: Callable[[Params, RunOutput], "list[Sample] | Derived"] | None = field(
        default=None, kw_only=True)

    # The one rule by which its tool says a figure is too fast to time, for every cell of
    # it on every host (bonnie++'s +++++, fio's whole milliseconds); such a run carries
    # too_fast(metric) flags. "": none, and a figure every run gave identically is the one
    # too fast to time (analysis/summary.py).
    too_fast_rule: str = field(default="", kw_only=True)

    # False for a workload that reads a guest's own output (no agent runs: image = "none")
    uses_agent: bool = field(default=True, kw_only=True)

    # What one run takes natively, for the first estimate of a campaign's length (before any
    # run: runner/estimate.py): (seconds a timed loop lasts whatever it runs in, seconds of
    # work that an environment may slow down). Unknown: (0, 1 s).
    typical_run: Callable[[Params], tuple[float, float]] = field(
        default=lambda params: (0.0, 1.0), kw_only=True)
    # the memory a run touches, from its parameters alone (job_needs may make inputs): an
    # environment that cannot give it is known to refuse the cell before it runs; None: none
    memory_mib: Callable[[Params], int] | None = field(default=None, kw_only=True)

    # the metrics of its spans that the host times on its own clock, one after another in
    # a run (a start's time to the agent and its teardown): the run's timed share, where
    # the agent times no region (analysis/efficiency.py)
    host_timed: tuple[str, ...] = field(default=(), kw_only=True)

    # the name tables show for it ("malloc 1 MiB"); "" shows the name
    title: str = field(default="", kw_only=True)
    # tables' names for its own metrics ({"out_char": "output per chr"}); METRIC_TITLES
    # has those that many workloads share
    metric_titles: dict[str, str] = field(default_factory=dict, kw_only=True)

    # programs the environment must provide (full-system images include them)
    tools: tuple[str, ...] = field(default=(), kw_only=True)
    # the programs of a workload whose parameters name them (exec's argv); None: `tools`
    tools_of: Callable[[Params], tuple[str, ...]] | None = field(default=None, kw_only=True)

    @property
    def display(self) -> str:
        return self.title or self.name

    def metric_title(self, metric: str) -> str:
        return self.metric_titles.get(metric) or METRIC_TITLES.get(metric) or metric

    @property
    def agent_workload(self) -> str:
        return self.agent_name or self.name

    def resolve(self, given: dict[str, Any], host: Host) -> Params:
        """Validated parameters with every default filled in."""
        return self.params_model(**{**self.host_defaults(host), **given})

    @property
    def requires(self) -> frozenset[Capability]:
        """Everything it needs from an environment, the agent included."""
        return self.capabilities | ({Capability.AGENT} if self.uses_agent else set())

    def needed_tools(self, params: Params) -> tuple[str, ...]:
        """The host programs a run with these parameters needs (copied into guest images)."""
        return self.tools_of(params) if self.tools_of is not None else self.tools

    def agent_args(self, params: Params) -> list[str]:
        if self.agent_name is not None:
            return self.to_agent_args(params)
        return [*self.to_agent_args(params), self.name]
