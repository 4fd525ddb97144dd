"""The baseline: the agent as a plain process on the host."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from guestbench.environments.base import (
    Availability, Capability, Environment, EnvironmentSpec, Guest, Job, ProcessGuest)
from guestbench.host import Host


class NativeSpec(EnvironmentSpec):
    kind: Literal["native"] = "native"


class Native(Environment):
    kind: ClassVar[str] = "native"
    capabilities = frozenset({Capability.PROCESSES, Capability.TSC, Capability.FILESYSTEM})
    spec_model = NativeSpec

    def probe(self, host: Host) -> Availability:
        return Availability.yes("the host itself")

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        return ProcessGuest([str(job.agent_path), *job.agent_args], logdir, deadline_ns)
