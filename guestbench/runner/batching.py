"""One fresh guest or container per round serves several workloads: which cells can share
it, the agent arguments of the shared job, and each cell's outcome from its records.

Starting an environment costs a UML guest about 0.5 s, a TCG guest about 4 s, a gVisor
sandbox about 0.2 s, against about 0.1 s for a micro workload itself; starting once per
round for every plain agent workload of an environment keeps every repetition fresh and
divides the starts by the number of workloads. The workloads run in a shuffled order,
different in every round, so that none always comes first (docs/environments.md). A
process costs milliseconds to start, so process kinds keep one per run.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from guestbench.environments.base import JobNeeds
from guestbench.plan.schema import WorkloadCase


@dataclass(frozen=True)
class Part:
    """One workload of a shared job: its agent workload name and its options."""

    name: str
    options: tuple[str, ...]


def part_of(case: WorkloadCase, needs: JobNeeds) -> Part | None:
    """The case as a part of a shared job, or None if it must run alone: it needs more
    than the agent (a disk, a tool, its own boot's phases, what the host measures of its instance:
    start, footprint, density, network), its output is derived, it
    touches memory by the hundred MiB (STREAM: the workloads after it would run in a process
    and a kernel it reshaped), or its agent measures nothing (hang, which tests timeouts)."""
    workload = case.workload
    if (not workload.uses_agent or workload.agent_name is not None or workload.boot_phases
            or workload.host_part is not None or workload.derive is not None
            or needs.capabilities() or needs.memory_mib or not workload.produces_samples):  # STREAM's arrays, hang (for timeouts): alone
        return None
    args = workload.agent_args(case.params)
    return Part(args[-1], tuple(args[:-1]))


def merged_options(parts: Sequence[Part]) -> list[str] | None:
    """The agent options of every part, once each; None if two parts give one option
    different values (the agent's options hold for every workload of its command line)."""
    chosen: dict[str, str] = {}
    for part in parts:
        options = list(part.options)
        if len(options) % 2:
            return None  # a flag without a value: not the timing or STREAM options
        for key, value in zip(options[::2], options[1::2]):
            if chosen.setdefault(key, value) != value:
                return None
    return [item for pair in chosen.items() for item in pair]


def job_arguments(parts: Sequence[Part], round_number: int) -> list[str] | None:
    """The shared job's agent arguments: the options, then the workloads in an order
    shuffled per round; None if the parts cannot share one command line."""
    options = merged_options(parts)
    if options is None or len({part.name for part in parts}) != len(parts):
        return None
    names = [part.name for part in parts]
    random.Random(round_number).shuffle(names)
    return [*options, *names]
