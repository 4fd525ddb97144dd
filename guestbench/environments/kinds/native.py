"""The baseline: the agent as a plain process on the host."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal

from guestbench.environments import scratch
from guestbench.environments.base import (
    Availability, Capability, Environment, EnvironmentSpec, Guest, Job, ProcessGuest)
from guestbench.host import Host

# What a process on the host kernel can be given: a scratch folder, the host's caches dropped,
# and programs started by programs run where they would anyway.
PROCESS_CAPABILITIES = frozenset({
    Capability.AGENT, Capability.PROCESSES, Capability.TSC, Capability.FILESYSTEM,
    Capability.DROP_CACHES, Capability.EXEC_CHILDREN, Capability.NETWORK,
    Capability.HOST_PROCESSES})


class NativeSpec(EnvironmentSpec):
    kind: Literal["native"] = "native"


class Native(Environment):
    kind: ClassVar[str] = "native"
    typical_start_s: ClassVar[float] = 0.01
    capabilities = PROCESS_CAPABILITIES
    lacking = {Capability.PORT_IO: "native: guestbench does not touch the host's own I/O ports",
               Capability.SNAPSHOT: "native: guestbench does not checkpoint a host process "
                                    "(CRIU does it for containers: the runc kind)"}
    spec_model = NativeSpec

    def probe(self, host: Host) -> Availability:
        return Availability.yes("the host itself")

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        folder = scratch.make(job.needs)
        args = job.with_agent_options("--cwd", str(folder)) if folder else job.agent_args
        return ProcessGuest([str(job.agent_path), *args], logdir, deadline_ns,
                            scratch=[folder] if folder else [])
