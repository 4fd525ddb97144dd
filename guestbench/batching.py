"""One fresh full-system guest per round serves several workloads: which cells can share
a boot, the agent arguments of the shared job, and each cell's outcome from its records.

A guest's boot costs UML about 1.3 s and a TCG guest about 4 s, against 0.1-0.5 s for the
workload itself; booting once per round for every plain agent workload of an environment
keeps every repetition a fresh guest and divides the boots by the number of workloads.
The workloads run in a shuffled order, different in every round, so that none always
comes first after the boot.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from guestbench.environments.base import JobNeeds
from guestbench.plan import WorkloadCase


@dataclass(frozen=True)
class Part:
    """One workload of a shared job: its agent workload name and its options."""

    name: str
    options: tuple[str, ...]


def part_of(case: WorkloadCase, needs: JobNeeds) -> Part | None:
    """The case as a part of a shared job, or None if it must run alone: it needs more
    than the agent (a disk, a tool, its own boot's phases) or its output is derived."""
    workload = case.workload
    if (not workload.uses_agent or workload.agent_name is not None or workload.boot_phases
            or workload.derive is not None or needs.capabilities()):
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
