"""Timing micro-workloads of the agent: system calls, memory faults, process switches, and
the instructions that cost a VM exit under hardware virtualisation (docs/workloads-micro.md)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from guestbench.environments.base import Capability
from guestbench.workloads.base import Params, Workload

TIME_PER_OP = "time_per_op"  # ns; what the agent's timing loop reports


class TimingParams(Params):
    min_time_s: float = Field(0.02, ge=1e-6, le=3600,
                              description="each measured batch (value) lasts about this long (sized "
                                          "from a calibrating batch of a quarter of it)")
    values: int = Field(3, ge=1, le=1000,
                        description="measured batches per run, after warm-up and calibration; "
                                    "the statistics resample runs, then values (docs/statistics.md)")


class FirstWriteParams(TimingParams):
    pages_per_chunk: int = Field(4096, gt=0, le=1 << 20,
                                 description="fresh pages mapped at a time")


class PipeSwitchParams(TimingParams):
    placement: Literal["same", "disjoint", "free"] = Field(
        "same", description="both processes on one CPU, on two CPUs, or where the scheduler "
                            "puts them (a cross-CPU wake-up costs ~10x a same-CPU switch)")


class HangParams(Params):
    seconds: float = Field(0, ge=0, le=365 * 86400,
                           description="how long the agent sleeps; 0 = forever")


def _timing_args(params: TimingParams) -> list[str]:
    return ["--min-time", repr(params.min_time_s), "--values", str(params.values)]


def _pipe_switch_args(params: PipeSwitchParams) -> list[str]:
    return [*_timing_args(params), "--placement", params.placement]


def _first_write_args(params: FirstWriteParams) -> list[str]:
    return [*_timing_args(params), "--pages", str(params.pages_per_chunk)]


def _typical_run(params: TimingParams) -> tuple[float, float]:
    """Its values, and the warm-up and calibrating batch before them (a quarter each)."""
    return (params.values + 0.5) * params.min_time_s, 0.0


def _timing(name: str, summary: str, *needs: Capability, quick: bool = True,
            title: str = "") -> Workload:
    return Workload(name, "micro", summary, TimingParams, _timing_args,
                    frozenset({Capability.TSC, *needs}), quick=quick, primary_metric=TIME_PER_OP,
                    title=title, typical_run=_typical_run)


WORKLOADS = [
    _timing("getpid", "raw getpid system call"),
    _timing("getppid", "raw getppid system call (what perf bench syscall basic times)"),
    _timing("sched_yield", "sched_yield system call"),
    _timing("clock_gettime", "clock_gettime(CLOCK_MONOTONIC) through the vDSO"),
    _timing("malloc_1mib", "malloc 1 MiB, touch every page, free", title="malloc 1 MiB"),
    Workload("first_write", "micro", "first write to a fresh anonymous page",
             FirstWriteParams, _first_write_args, frozenset({Capability.TSC}),
             primary_metric=TIME_PER_OP, title="first write access", typical_run=_typical_run),
    Workload("pipe_switch", "micro", "switch between two processes over pipes",
             PipeSwitchParams, _pipe_switch_args,
             frozenset({Capability.TSC, Capability.PROCESSES}), primary_metric=TIME_PER_OP,
             title="pipe switch", typical_run=_typical_run),
    _timing("fork_exit", "fork, _exit, waitpid", Capability.PROCESSES, title="fork + exit"),
    # What a VM exit costs, as kvm-unit-tests' vmexit test and HyperBench time it. Not in
    # the default campaign (VM_EXITS below): only a hardware-virtualised guest exits; in a
    # process, a container or a translator they time an instruction or a helper call
    # (cpuid under qemu-user is 0.002x native), which skews a geometric mean of slowdowns.
    _timing("cpuid", "cpuid leaf 0 (a VM exit under hardware virtualisation)", quick=False),
    _timing("rdtsc", "rdtsc (an exit only where the hypervisor traps TSC reads)", quick=False),
    _timing("rdtscp", "rdtscp (an exit only where the hypervisor traps TSC reads)",
            quick=False),
    # Not quick either: only full-system guests can run it, so in the default campaign it
    # would add unsupported cells everywhere else, and the test that runs the whole quick
    # suite natively with the agent would read a host I/O port as root.
    _timing("port_read", "inb from unused I/O port 0xed (an exit to the device model)",
            Capability.PORT_IO, quick=False, title="port read"),
    Workload("hang", "test", "sleeps (for testing timeouts); never in a default suite",
             HangParams, lambda params: ["--seconds", repr(params.seconds)], quick=False,
             produces_samples=False, primary_metric=None),
]

# Workloads left out of the default campaign that a newcomer should hear of: names -> why.
VM_EXITS = {"cpuid,rdtsc,rdtscp": "what a VM exit costs: only a hardware-virtualised guest "
                                  "exits, elsewhere they time an instruction"}
