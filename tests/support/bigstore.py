"""Big, realistic guestbench stores, generated quickly: for tests and for timing report/compare.

    generate(url, samples=1_000_000, environments=10, workloads=25, seed=1, campaigns=None)

fills the store at `url` (opened with guestbench.store.open, so guestbench
creates and migrates the schema) with synthetic campaigns shaped like real
ones: environments named and specified like the presets (native, namespace,
runc, crun, runsc, qemu-user, uml, qemu-tcg-vcpus1-same, qemu-kvm, ...; specs
are dumped from guestbench's own spec models), workloads labelled like a plan
(getpid, sched_yield, malloc_1mib, first_write, pipe_switch, stream, ... then
swept labels such as getpid[min_time_s=0.2]), runs in the runner's order
(repetition, then environment, then workload), each ok run with the samples a
real run has, a small fraction of failed/timeout/crashed runs (with a reason
and no samples) and a few ok runs flagged clock-drift.

Two shapes, chosen by the parameters:

* accumulated store: campaigns=None (the default). Campaigns of realistic size
  (`repetitions` repetitions of environments x workloads each, ~26k samples
  at 10 x 25 x 20) are added until `samples` is reached.
* two huge campaigns: campaigns=2: each holds samples/2 (many repetitions
  per cell).

Every campaign of one call has the same environments and labels, so any two
can be compared cell by cell; with slow_factor != 1 the campaigns in
`slow_campaigns` (default: the last) are that much slower on `slow_cells`
(default: default_slow_cells()), so a compare has something to find.

The count of rows in `sample` that one call adds is exactly `samples`. The
rule: campaign budgets are samples // campaigns (the first samples % campaigns
campaigns get one more); a campaign's runs follow the runner's order and stop
at the run that reaches its budget (so its last repetition is usually cut
short), and the few samples that run overshoots by are taken off by leaving
clock_ratio out of the campaign's last ok runs (as the runner does for runs
too short to judge). A campaign's budget must cover one full repetition.

Everything is deterministic given the seed (timestamps included).

    .venv/bin/python -m tests.support.bigstore URL [--samples N] [--campaigns K]
        [--environments E] [--workloads W] [--slow-factor F] [--seed S] [--repetitions R]
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import sqlalchemy as sa

from guestbench import __version__, environments as gb_environments, store as gb_store
from guestbench import workloads as gb_workloads
from guestbench.host import Host
from guestbench.store import packed, schema

HOST_FACTS: dict[str, Any] = {
    "hostname": "bench-07", "arch": "x86_64",
    "cpu_model": "AMD EPYC 7543P 32-Core Processor", "logical_cpus": 64,
    "kernel": "6.8.0-45-generic", "kernel_version": "#45-Ubuntu SMP PREEMPT_DYNAMIC",
    "memory_mib": 257_554, "virtualised": False, "container": None,
    "governor": "performance",
    "mitigations": {"spectre_v2": "Mitigation: Retpolines; IBPB: conditional; STIBP: always-on",
                    "retbleed": "Mitigation: untrained return thunk; SMT enabled with STIBP "
                                "protection", "meltdown": "Not affected"},
    "llc_bytes": 32 * 2**20,
    "tsc": {"constant_tsc": True, "nonstop_tsc": True, "tsc_known_freq": True},
    "cgroup_mode": "unified", "load_avg": [0.08, 0.12, 0.1], "python": "3.11.9",
}
TSC_GHZ = 2.8  # cycles per ns of the host's TSC
FIRST_DAY = dt.datetime(2025, 3, 3, 1, 0, tzinfo=dt.timezone.utc)
LOG_ROOT = "/srv/guestbench/guestbench-logs"
TIMEOUT_S = 120.0
STATUSES = ("ok", "failed", "timeout", "crashed")

# -- environments -----------------------------------------------------------------------------
# cost classes of the micro workloads, in the order of EnvProfile.factors
SYSCALL, VDSO, MEMORY, PROCESS = range(4)


@dataclass(frozen=True)
class EnvProfile:
    name: str
    kind: str
    options: dict[str, Any]
    probe: str
    factors: tuple[float, float, float, float]  # cost over native: syscall, vdso, memory, process
    bandwidth: float  # STREAM bandwidth over native's
    sigma: float  # run-to-run noise, log scale
    problems: tuple[float, float, float]  # probability of failed, timeout, crashed
    drift: float  # probability that an ok run is flagged clock-drift
    startup_s: float  # host seconds to start and stop one guest

    @property
    def spec(self) -> dict[str, Any]:
        """The full spec, as guestbench's own spec model dumps it (what the runner stores)."""
        model = gb_environments.spec_model(self.kind)
        return model(name=self.name, kind=self.kind, **self.options).model_dump(mode="json")

    @property
    def guest(self) -> bool:
        return self.kind in ("qemu", "uml")


_QEMU_PROBE = ("accel {accel}; image 5d41c2e8a9f0; kernel 6.8.0-45-generic; {why}")
BASE_ENVIRONMENTS = (
    EnvProfile("native", "native", {}, "the host itself",
               (1.0, 1.0, 1.0, 1.0), 1.0, 0.02, (0.002, 0.0005, 0.0), 0.0, 0.01),
    EnvProfile("namespace", "namespace", {}, "namespaces: pid,mount,net,ipc,uts",
               (1.0, 1.0, 1.0, 1.03), 1.0, 0.025, (0.003, 0.001, 0.0), 0.0, 0.03),
    EnvProfile("runc", "oci", {"runtime": "runc"}, "runc: runc version 1.1.12",
               (1.01, 1.0, 1.01, 1.06), 0.99, 0.03, (0.005, 0.002, 0.001), 0.0, 0.35),
    EnvProfile("runsc", "oci", {"runtime": "runsc", "platform": "ptrace"},
               "runsc: runsc version release-20240212.0",
               (320.0, 1.2, 3.2, 45.0), 0.97, 0.05, (0.01, 0.006, 0.004), 0.004, 0.8),
    EnvProfile("qemu-user", "qemu-user", {},
               "qemu-x86_64 version 8.2.2 (Debian 1:8.2.2+ds-0ubuntu1.4)",
               (2.2, 6.0, 3.5, 2.6), 0.35, 0.04, (0.008, 0.002, 0.003), 0.005, 0.05),
    EnvProfile("uml", "uml", {}, "linux.uml: 6.8.0 user-mode Linux; image 5d41c2e8a9f0",
               (24.0, 30.0, 6.0, 15.0), 0.85, 0.06, (0.01, 0.005, 0.008), 0.03, 1.4),
    EnvProfile("qemu-tcg-vcpus1-same", "qemu", {"accel": "tcg", "vcpus": 1, "placement": "same"},
               _QEMU_PROBE.format(accel="tcg", why="emulation"),
               (9.0, 12.0, 15.0, 10.0), 0.12, 0.07, (0.01, 0.01, 0.008), 0.04, 5.0),
    EnvProfile("crun", "oci", {"runtime": "crun"}, "crun: crun version 1.14.1",
               (1.01, 1.0, 1.01, 1.05), 0.99, 0.03, (0.005, 0.002, 0.001), 0.0, 0.2),
    EnvProfile("qemu-kvm", "qemu", {"accel": "kvm"},
               _QEMU_PROBE.format(accel="kvm", why="KVM test guest booted in 0.41 s"),
               (1.05, 1.0, 1.6, 1.2), 0.95, 0.03, (0.005, 0.003, 0.004), 0.01, 0.6),
    EnvProfile("qemu-tcg-vcpus2-disjoint", "qemu",
               {"accel": "tcg", "vcpus": 2, "placement": "disjoint"},
               _QEMU_PROBE.format(accel="tcg", why="emulation"),
               (9.3, 12.5, 15.5, 19.0), 0.12, 0.08, (0.01, 0.012, 0.01), 0.05, 5.5),
    EnvProfile("runsc-systrap", "oci", {"runtime": "runsc", "platform": "systrap"},
               "runsc: runsc version release-20240212.0",
               (14.0, 1.1, 2.1, 9.0), 0.97, 0.045, (0.008, 0.004, 0.003), 0.003, 0.7),
    EnvProfile("qemu-kvm-vcpus2", "qemu", {"accel": "kvm", "vcpus": 2},
               _QEMU_PROBE.format(accel="kvm", why="KVM test guest booted in 0.43 s"),
               (1.05, 1.0, 1.7, 1.4), 0.95, 0.035, (0.005, 0.003, 0.004), 0.01, 0.7),
)


def _more_environments() -> Iterator[EnvProfile]:
    """Generated sweeps of qemu-tcg (vcpus x placement) once the presets are used up."""
    for vcpus in range(2, 257):
        for placement in ("same", "disjoint", "none"):
            scale = 1 + 0.03 * (vcpus - 1)
            cross = 1.9 if placement == "disjoint" else 1.0
            yield EnvProfile(f"qemu-tcg-vcpus{vcpus}-{placement}", "qemu",
                             {"accel": "tcg", "vcpus": vcpus, "placement": placement},
                             _QEMU_PROBE.format(accel="tcg", why="emulation"),
                             (9.0 * scale, 12.0 * scale, 15.0 * scale, 10.0 * scale * cross),
                             0.12 / scale, 0.08, (0.01, 0.012, 0.01), 0.05, 5.0 + 0.2 * vcpus)


def environment_profiles(count: int) -> list[EnvProfile]:
    profiles = list(BASE_ENVIRONMENTS[:count])
    names = {profile.name for profile in BASE_ENVIRONMENTS}
    more = (profile for profile in _more_environments() if profile.name not in names)
    profiles += itertools.islice(more, max(0, count - len(profiles)))
    if len(profiles) < count:
        raise ValueError(f"environments={count}: at most {len(profiles)} can be generated")
    return profiles


# -- workloads --------------------------------------------------------------------------------
STREAM_KERNELS = ("copy", "scale", "add", "triad")
STREAM_TOUCHED = np.array([2, 2, 3, 3])  # arrays each kernel reads or writes
STREAM_NATIVE_MBS = np.array([11_800.0, 11_600.0, 12_900.0, 13_050.0])
ARRAY_MIB = 128
MICRO_NATIVE_NS = {  # native ns per operation, and the cost class
    "getpid": (140.0, SYSCALL), "getppid": (142.0, SYSCALL), "sched_yield": (265.0, SYSCALL),
    "clock_gettime": (21.0, VDSO), "malloc_1mib": (52_000.0, MEMORY),
    "first_write": (1_150.0, MEMORY), "pipe_switch": (2_600.0, PROCESS),
    "fork_exit": (95_000.0, PROCESS),
}
MICRO_METRICS = (("time_per_op", "ns"), ("tsc_per_op", "cycles"), ("iterations", "count"))
STREAM_ONE_METRICS = (("bandwidth", "MB/s"), ("time_avg", "s"), ("time_min", "s"),
                      ("time_max", "s"))
STREAM_METRICS = tuple((f"{kernel}_{metric}", unit) for kernel in STREAM_KERNELS
                       for metric, unit in STREAM_ONE_METRICS)
CLOCK_METRIC = ("clock_ratio", "ratio")
ARRAY_METRIC = ("array_mib", "MiB")


@dataclass(frozen=True)
class LabelProfile:
    label: str
    workload: str
    given: dict[str, Any] = field(default_factory=dict)  # parameters the plan set

    @property
    def family(self) -> str:  # micro, stream (all four kernels) or stream_one
        if self.workload == "stream":
            return "stream"
        return "stream_one" if self.workload.startswith("stream_") else "micro"

    @property
    def params(self) -> dict[str, Any]:
        """Every parameter resolved, as the runner stores them."""
        given = dict(self.given)
        if self.family != "micro":
            given.setdefault("array_mib", ARRAY_MIB)
        model = gb_workloads.CATALOGUE[self.workload].params_model
        return model(**given).model_dump(mode="json")

    @property
    def metrics(self) -> tuple[tuple[str, str], ...]:
        """An ok run's samples, clock_ratio last (the runner appends it)."""
        if self.family == "micro":
            return (*MICRO_METRICS, CLOCK_METRIC)
        kernels = STREAM_METRICS if self.family == "stream" else STREAM_ONE_METRICS
        return (*kernels, ARRAY_METRIC, CLOCK_METRIC)


BASE_LABELS = ("getpid", "sched_yield", "malloc_1mib", "first_write", "pipe_switch", "stream",
               "getppid", "clock_gettime", "fork_exit", "stream_triad", "stream_copy",
               "stream_scale", "stream_add")


def _more_labels() -> Iterator[LabelProfile]:
    """Swept labels like a plan's: placements and page chunks, then longer min_time_s."""
    yield LabelProfile("pipe_switch[placement=disjoint]", "pipe_switch", {"placement": "disjoint"})
    yield LabelProfile("first_write[pages_per_chunk=256]", "first_write", {"pages_per_chunk": 256})
    yield LabelProfile("stream[array_mib=512]", "stream", {"array_mib": 512})
    yield LabelProfile("pipe_switch[placement=free]", "pipe_switch", {"placement": "free"})
    for min_time_s in (0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 60.0, 120.0, 600.0, 3600.0):
        for name in MICRO_NATIVE_NS:
            yield LabelProfile(f"{name}[min_time_s={min_time_s}]", name, {"min_time_s": min_time_s})
    for array_mib in (64, 256, 1024, 2048, 4096):
        for name in ("stream_copy", "stream_scale", "stream_add", "stream_triad"):
            yield LabelProfile(f"{name}[array_mib={array_mib}]", name, {"array_mib": array_mib})


def label_profiles(count: int) -> list[LabelProfile]:
    profiles = [LabelProfile(name, name) for name in BASE_LABELS[:count]]
    profiles += itertools.islice(_more_labels(), max(0, count - len(profiles)))
    if len(profiles) < count:
        raise ValueError(f"workloads={count}: at most {len(profiles)} labels can be generated")
    return profiles


def shape(environments: int = 10, workloads: int = 25) -> tuple[list[str], list[str]]:
    """The environment names and the workload labels a generation with these sizes uses."""
    return ([env.name for env in environment_profiles(environments)],
            [label.label for label in label_profiles(workloads)])


def default_slow_cells(environment_names: Sequence[str], labels: Sequence[str]
                       ) -> list[tuple[str, str]]:
    """One slowed label per environment but the first (the baseline), spread over the labels."""
    return [(env, labels[(3 * index) % len(labels)])
            for index, env in enumerate(environment_names) if index > 0]


def samples_per_repetition(environments: int = 10, workloads: int = 25) -> int:
    """Samples of one repetition of every cell when every run is ok."""
    return environments * sum(len(label.metrics) for label in label_profiles(workloads))


# -- levels -----------------------------------------------------------------------------------
@dataclass
class _Levels:
    """Per-(environment, label) levels shared by every campaign of a seed."""

    micro_ns: np.ndarray  # (E, L) ns per op (NaN for stream labels)
    stream_mbs: np.ndarray  # (E, L, 4) MB/s per kernel (NaN where not measured)


def _levels(seed: int, envs: list[EnvProfile], labels: list[LabelProfile]) -> _Levels:
    rng = np.random.default_rng([seed, 0])
    jitter = np.exp(rng.normal(0.0, 0.025, size=(len(envs), len(labels))))
    kernel_jitter = np.exp(rng.normal(0.0, 0.015, size=(len(envs), len(labels), 4)))
    micro = np.full((len(envs), len(labels)), np.nan)
    stream = np.full((len(envs), len(labels), 4), np.nan)
    for j, label in enumerate(labels):
        if label.family == "micro":
            native_ns, cost = MICRO_NATIVE_NS[label.workload]
            if label.given.get("pages_per_chunk") == 256:
                native_ns *= 1.15
            micro[:, j] = [native_ns * env.factors[cost] for env in envs]
        else:
            kernels = (np.ones(4) if label.family == "stream"
                       else np.array([k == label.workload[len("stream_"):] for k in STREAM_KERNELS],
                                     dtype=float))
            kernels[kernels == 0] = np.nan
            stream[:, j, :] = np.outer([env.bandwidth for env in envs], STREAM_NATIVE_MBS * kernels)
    # the baseline's own level is the nominal one; every other cell wanders a little
    jitter[0, :] = 1.0
    kernel_jitter[0, :, :] = 1.0
    return _Levels(micro * jitter, stream * jitter[:, :, None] * kernel_jitter)


# -- one campaign -----------------------------------------------------------------------------
@dataclass
class _Runs:
    env: np.ndarray
    label: np.ndarray
    repetition: np.ndarray
    status: np.ndarray  # index into STATUSES
    clock: np.ndarray  # an ok run that has a clock_ratio sample
    drift: np.ndarray  # an ok run flagged clock-drift


def _plan_runs(rng: np.random.Generator, envs: list[EnvProfile], labels: list[LabelProfile],
               budget: int) -> _Runs:
    """Runs in the runner's order until the samples reach the budget, then exactly the budget."""
    n_envs, n_labels = len(envs), len(labels)
    env_of = np.repeat(np.arange(n_envs), n_labels)
    label_of = np.tile(np.arange(n_labels), n_envs)
    per_ok_run = np.array([len(label.metrics) for label in labels])[label_of]
    if budget < per_ok_run.sum():
        raise ValueError(f"a campaign's budget of {budget} samples is under one repetition of "
                         f"{n_envs} environments x {n_labels} workloads ({per_ok_run.sum()} "
                         "samples): ask for more samples, fewer campaigns or a smaller shape")
    thresholds = np.cumsum([envs[e].problems for e in env_of], axis=1)  # (cells, 3)
    statuses, total = [], 0
    for _repetition in itertools.count():
        below = rng.random(len(env_of))[:, None] < thresholds
        status = np.where(below.any(axis=1), below.argmax(axis=1) + 1, 0)
        running = total + np.cumsum(np.where(status == 0, per_ok_run, 0))
        if running[-1] >= budget:
            cut = int(np.searchsorted(running, budget))  # the first run that reaches the budget
            statuses.append(status[:cut + 1])
            total = int(running[cut])
            break
        statuses.append(status)
        total = int(running[-1])
    status = np.concatenate(statuses)
    count = len(status)
    cells = len(env_of)
    runs = _Runs(env=np.resize(env_of, count), label=np.resize(label_of, count),
                 repetition=np.arange(count) // cells, status=status,
                 clock=status == 0, drift=np.zeros(count, dtype=bool))
    ok = np.flatnonzero(runs.clock)
    excess = total - budget
    if excess > len(ok):
        raise ValueError(f"a campaign's budget of {budget} samples is too small for this shape")
    if excess:
        runs.clock[ok[-excess:]] = False  # runs too short to judge have no clock_ratio
    drift_p = np.array([env.drift for env in envs])[runs.env]
    runs.drift = runs.clock & (rng.random(count) < drift_p)
    return runs


_FAILED = ("{workload}: calibration did not settle: batch times varied by more than 50% "
           "over 8 rounds",
           "agent exited with status 139",
           "record 14: bad checksum (expected 5f3a, got 9c01): console noise inside a record")
_STREAM_FAILED = "{workload}: cannot allocate three arrays of {array_mib} MiB (try a smaller --array-mib)"


def _reason(rng_pick: float, status: str, env: EnvProfile, label: LabelProfile) -> str:
    if status == "failed":
        if label.family != "micro" and rng_pick < 0.3:
            return _STREAM_FAILED.format(workload=label.workload,
                                         array_mib=label.params.get("array_mib"))
        return _FAILED[int(rng_pick * len(_FAILED))].format(workload=label.workload)
    if status == "timeout":
        if env.guest and rng_pick < 0.5:
            return "killed: no agent hello within the 60 s boot timeout"
        return f"killed after the {TIMEOUT_S:g} s run timeout"
    if env.guest:
        return ("guest kernel panic; console: Kernel panic - not syncing: Attempted to kill "
                "init! exitcode=0x0000000b")
    if env.kind == "qemu-user":
        return "qemu-x86_64: uncaught target signal 11 (Segmentation fault) - core dumped"
    if env.name.startswith("runsc"):
        return "the sandbox died: runsc-sandbox killed by SIGKILL"
    return "agent killed by SIGSEGV"


def _values(rng: np.random.Generator, runs: _Runs, envs: list[EnvProfile],
            labels: list[LabelProfile], levels: _Levels, campaign_drift: np.ndarray,
            slow: np.ndarray) -> tuple[list[list[float] | None], np.ndarray]:
    """Each run's sample values (None when it has none) and its host seconds."""
    count = len(runs.status)
    ok = runs.status == 0
    family = np.array([label.family for label in labels])[runs.label]
    sigma = np.array([env.sigma for env in envs])[runs.env]
    startup = np.array([env.startup_s for env in envs])[runs.env]
    min_time = np.array([label.params.get("min_time_s", 0.0) for label in labels])[runs.label]
    array_mib = np.array([label.params.get("array_mib", 0) for label in labels],
                         dtype=float)[runs.label]
    factor = slow[runs.env, runs.label] * campaign_drift[runs.env, runs.label]
    ratio = np.where(runs.drift, 1 + rng.choice([-1, 1], count) * rng.uniform(0.06, 0.25, count),
                     1 + rng.normal(0, 0.002, count))
    seconds = startup * np.exp(rng.normal(0, 0.1, count))
    values: list[list[float] | None] = [None] * count

    micro = np.flatnonzero(ok & (family == "micro"))
    if len(micro):
        ns = (levels.micro_ns[runs.env[micro], runs.label[micro]] * factor[micro]
              * np.exp(sigma[micro] * rng.standard_normal(len(micro))))
        tsc = ns * TSC_GHZ * np.exp(rng.normal(0, 0.001, len(micro)))
        iterations = np.maximum(1, np.round(min_time[micro] * 1e9 / ns
                                            * rng.uniform(1.0, 1.9, len(micro))))
        seconds[micro] += 2.3 * min_time[micro] + 0.02
        block = np.column_stack([ns, tsc, iterations, ratio[micro]]).tolist()
        for index, row in zip(micro.tolist(), block):
            values[index] = row

    for name, kernels in (("stream", 4), ("stream_one", 1)):
        chosen = np.flatnonzero(ok & (family == name))
        if not len(chosen):
            continue
        level = levels.stream_mbs[runs.env[chosen], runs.label[chosen]]  # (n, 4), NaN unused
        if kernels == 4:
            touched = STREAM_TOUCHED[None, :]
        else:  # stream_copy ... stream_triad: the one kernel each label measures
            kernel = np.argmax(~np.isnan(level), axis=1)
            level = level[np.arange(len(chosen)), kernel][:, None]
            touched = STREAM_TOUCHED[kernel][:, None]
        mbs = level / factor[chosen, None] * np.exp(
            sigma[chosen, None] * rng.standard_normal((len(chosen), kernels)))
        t_min = touched * array_mib[chosen, None] * 2**20 / 1e6 / mbs
        t_avg = t_min * (1.004 + np.abs(rng.normal(0, 0.015, t_min.shape)))
        t_max = t_avg * (1.005 + np.abs(rng.normal(0, 0.04, t_min.shape)))
        per_kernel = np.stack([mbs, t_avg, t_min, t_max], axis=2).reshape(len(chosen), -1)
        seconds[chosen] += 10 * t_avg.sum(axis=1) + 0.3 * array_mib[chosen] / ARRAY_MIB
        block = np.column_stack([per_kernel, array_mib[chosen], ratio[chosen]]).tolist()
        for index, row in zip(chosen.tolist(), block):
            values[index] = row

    for index in np.flatnonzero(ok & ~runs.clock).tolist():
        values[index].pop()  # no clock_ratio: the last value
    seconds = np.where(runs.status == 1, startup * rng.uniform(0.3, 1.2, count), seconds)
    seconds = np.where(runs.status == 2, TIMEOUT_S + rng.uniform(0.01, 0.5, count), seconds)
    seconds = np.where(runs.status == 3, startup * rng.uniform(0.5, 3.0, count), seconds)
    return values, seconds


def _plan_dict(name: str, envs: list[EnvProfile], labels: list[LabelProfile],
               repeat: int) -> dict[str, Any]:
    """The resolved plan, shaped like Plan.as_dict()."""
    return {"source": "/srv/guestbench/plans/nightly.toml",
            "campaign": {"name": name, "baseline": envs[0].name, "repeat": repeat,
                         "timeout_s": TIMEOUT_S, "description": "nightly regression campaign"},
            "environments": [env.spec for env in envs],
            "workloads": [{"name": label.workload, "label": label.label, "params": label.params}
                          for label in labels]}


def _campaign(store: gb_store.Store, index: int, budget: int, seed: int, envs: list[EnvProfile],
              labels: list[LabelProfile], levels: _Levels, slow: np.ndarray, batch: int) -> int:
    rng = np.random.default_rng([seed, 1, index])
    campaign_drift = np.exp(rng.normal(0, 0.005, size=(len(envs), len(labels))))
    campaign_drift[0, :] = 1.0
    runs = _plan_runs(rng, envs, labels, budget)
    values, seconds = _values(rng, runs, envs, labels, levels, campaign_drift, slow)
    picks = rng.random(len(runs.status)).tolist()

    start = FIRST_DAY + dt.timedelta(days=index, seconds=int(rng.integers(0, 600)))
    name = f"nightly-{start:%Y%m%d}"
    log_dir = f"{LOG_ROOT}/{start:%Y%m%dT%H%M%S}-{seed % 256:02x}{index % 65536:04x}"
    facts = {**HOST_FACTS, "load_avg": [round(float(x), 2) for x in rng.uniform(0, 0.3, 3)]}
    repeat = int(runs.repetition[-1]) + 1
    campaign_id = store.create_campaign(name, _plan_dict(name, envs, labels, repeat), facts,
                                        Host(facts).fingerprint, envs[0].name, log_dir, __version__)
    env_ids = [store.add_environment(campaign_id, env.name, env.kind, env.spec, True, env.probe,
                                     position) for position, env in enumerate(envs)]
    params = [label.params for label in labels]
    offsets = np.concatenate([[0.0], np.cumsum(seconds + 0.04)])
    started = [start + dt.timedelta(seconds=offset) for offset in offsets[:-1].tolist()]
    run_rows = []
    for i, (e, j, repetition, status) in enumerate(zip(runs.env.tolist(), runs.label.tolist(),
                                                       runs.repetition.tolist(),
                                                       runs.status.tolist())):
        env, label = envs[e], labels[j]
        status_name = STATUSES[status]
        run_rows.append({
            "campaign_id": campaign_id, "environment_id": env_ids[e], "workload": label.workload,
            "label": label.label, "params": params[j], "repetition": repetition,
            "status": status_name,
            "reason": _reason(picks[i], status_name, env, label) if status else "",
            "flags": ["clock-drift"] if runs.drift[i] else [], "started_at": started[i],
            "host_seconds": round(float(seconds[i]), 6),
            "log_path": f"{log_dir}/{env.name}/{label.label}/rep{repetition}"})
    with store.engine.begin() as connection:
        for first in range(0, len(run_rows), batch):
            connection.execute(sa.insert(schema.run), run_rows[first:first + batch])
        run_ids = connection.execute(
            sa.select(schema.run.c.id).where(schema.run.c.campaign_id == campaign_id)
            .order_by(schema.run.c.id)).scalars().all()
        assert len(run_ids) == len(run_rows), "another writer added runs to this campaign"
        metrics = [label.metrics for label in labels]
        rows: list[dict[str, Any]] = []
        for run_id, j, run_values in zip(run_ids, runs.label.tolist(), values):
            if run_values is None:
                continue
            rows += [{"run_id": run_id, "metric": metric, "unit": unit, "value": value}
                     for (metric, unit), value in zip(metrics[j], run_values)]
            if len(rows) >= batch:
                connection.execute(sa.insert(schema.sample), rows)
                rows = []
        if rows:
            connection.execute(sa.insert(schema.sample), rows)
        connection.execute(sa.update(schema.campaign).where(schema.campaign.c.id == campaign_id)
                           .values(created_at=start, status="finished",
                                   finished_at=start + dt.timedelta(seconds=float(offsets[-1]))))
        packed.pack(connection, campaign_id)  # as Store.finish_campaign does
    return campaign_id


# -- the whole store --------------------------------------------------------------------------
def generate(url: str, samples: int = 1_000_000, *, environments: int = 10, workloads: int = 25,
             seed: int = 1, campaigns: int | None = None, repetitions: int = 20,
             slow_factor: float = 1.0, slow_cells: Sequence[tuple[str, str]] | None = None,
             slow_campaigns: Sequence[int] = (-1,), batch: int = 100_000,
             progress: Callable[[int, int, int], None] | None = None) -> list[int]:
    """Add campaigns holding exactly `samples` samples to the store at `url`; their ids.

    campaigns=None: as many campaigns as make `samples` with about `repetitions`
    repetitions each (the accumulated store); campaigns=K: K campaigns of
    samples/K each. slow_factor multiplies the time metrics (and divides the
    bandwidths) of `slow_cells` ((environment, label) pairs; default
    default_slow_cells()) in the campaigns at the indexes `slow_campaigns`
    (default: the last). progress(index, campaigns, campaign_id) after each.
    """
    if samples < 1:
        raise ValueError(f"samples={samples}: must be at least 1")
    envs, labels = environment_profiles(environments), label_profiles(workloads)
    if campaigns is None:
        nominal = samples_per_repetition(environments, workloads) * repetitions * 0.99
        campaigns = max(1, round(samples / nominal))
    if campaigns < 1:
        raise ValueError(f"campaigns={campaigns}: must be at least 1")
    env_names, label_names = [env.name for env in envs], [label.label for label in labels]
    slow = np.ones((len(envs), len(labels)))
    cells = default_slow_cells(env_names, label_names) if slow_cells is None else slow_cells
    for env_name, label in cells:
        if env_name not in env_names or label not in label_names:
            raise ValueError(f"slow cell {(env_name, label)!r} is not in this shape")
        slow[env_names.index(env_name), label_names.index(label)] = slow_factor
    slowed = {index % campaigns for index in slow_campaigns}
    levels = _levels(seed, envs, labels)
    store = gb_store.open(url)
    try:
        ids = []
        for index in range(campaigns):
            budget = samples // campaigns + (1 if index < samples % campaigns else 0)
            ids.append(_campaign(store, index, budget, seed, envs, labels, levels,
                                 slow if index in slowed else np.ones_like(slow), batch))
            if progress:
                progress(index, campaigns, ids[-1])
    finally:
        store.engine.dispose()
    return ids


def count_samples(url: str, campaign_ids: Sequence[int] | None = None) -> int:
    """Rows in `sample` (of the given campaigns only, if any)."""
    store = gb_store.open(url, create=False)
    try:
        query = sa.select(sa.func.count()).select_from(schema.sample)
        if campaign_ids is not None:
            query = query.join(schema.run, schema.run.c.id == schema.sample.c.run_id).where(
                schema.run.c.campaign_id.in_(list(campaign_ids)))
        with store.engine.connect() as connection:
            return int(connection.execute(query).scalar())
    finally:
        store.engine.dispose()


def as_url(target: str) -> str:
    """A SQLAlchemy URL as given, or a plain file path as a SQLite URL."""
    if "://" in target:
        return target
    from pathlib import Path
    return f"sqlite:///{Path(target).resolve()}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.support.bigstore",
                                     description="Fill a guestbench store with synthetic "
                                                 "campaigns (appends to an existing store).")
    parser.add_argument("url", help="SQLAlchemy URL of the store, or a path to a SQLite file")
    parser.add_argument("--samples", type=int, default=1_000_000)
    parser.add_argument("--campaigns", type=int, default=None,
                        help="default: as many as make --repetitions repetitions each")
    parser.add_argument("--environments", type=int, default=10)
    parser.add_argument("--workloads", type=int, default=25)
    parser.add_argument("--repetitions", type=int, default=20)
    parser.add_argument("--slow-factor", type=float, default=1.0,
                        help="the last campaign is this much slower on a few cells")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quiet", action="store_true", help="no progress on stderr")
    args = parser.parse_args(argv)
    url = as_url(args.url)

    def said(index: int, total: int, campaign_id: int) -> None:
        print(f"\rcampaign {index + 1}/{total} (id {campaign_id}) after "
              f"{time.perf_counter() - began:.1f} s", end="", file=sys.stderr, flush=True)

    began = time.perf_counter()
    try:
        ids = generate(url, args.samples, environments=args.environments,
                       workloads=args.workloads, seed=args.seed, campaigns=args.campaigns,
                       repetitions=args.repetitions, slow_factor=args.slow_factor,
                       progress=None if args.quiet else said)
    except (ValueError, gb_store.StoreError) as error:
        print(f"bigstore: {error}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - began
    if not args.quiet:
        print(file=sys.stderr)
    print("campaigns: " + " ".join(map(str, ids)))
    print(f"samples: {count_samples(url, ids)}")
    print(f"seconds: {seconds:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
