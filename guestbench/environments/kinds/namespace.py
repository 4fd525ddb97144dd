"""The agent in fresh pid, mount, net, ipc and uts namespaces (util-linux unshare)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from guestbench.process import proc
from guestbench.environments import program_version, scratch
from guestbench.environments.base import (
    Availability, Capability, Environment, EnvironmentSpec, Guest, Job, ProcessGuest)
from guestbench.environments.kinds.native import PROCESS_CAPABILITIES
from guestbench.host import Host, which

NAMESPACE_FLAGS = {"pid": "--pid", "mount": "--mount", "net": "--net", "ipc": "--ipc",
                   "uts": "--uts", "user": "--user", "cgroup": "--cgroup"}
NamespaceName = Literal["pid", "mount", "net", "ipc", "uts", "user", "cgroup"]


class NamespaceSpec(EnvironmentSpec):
    kind: Literal["namespace"] = "namespace"
    namespaces: tuple[NamespaceName, ...] = Field(
        ("pid", "mount", "net", "ipc", "uts"), min_length=1,
        description="which namespaces unshare creates for the agent")


class Namespace(Environment):
    kind: ClassVar[str] = "namespace"
    typical_start_s: ClassVar[float] = 0.015
    capabilities = PROCESS_CAPABILITIES
    lacking = {Capability.SNAPSHOT: "namespace: guestbench does not checkpoint a process in "
                                    "namespaces (CRIU does it for containers: the runc kind)"}
    spec_model = NamespaceSpec

    def __init__(self, spec: NamespaceSpec) -> None:
        super().__init__(spec)
        self.unshare_version: str | None = None

    def probe(self, host: Host) -> Availability:
        if which("unshare") is None:
            return Availability.no("unshare not found (apt-get install util-linux)")
        try:
            result = proc.run(self._prefix() + ["true"], timeout_s=5)
        except (proc.ProcessError, proc.DeadlineExceeded) as error:
            return Availability.no(f"unshare failed: {error}")
        if result.returncode != 0:
            return Availability.no(f"unshare failed: {result.stderr.strip()[:200]}"
                                   + ("" if os.geteuid() == 0 else " (needs root or user namespaces)"))
        return Availability.yes("namespaces: " + ",".join(self.spec.namespaces))

    def prepare(self, host: Host) -> Availability:
        """Reads unshare's version ("unshare from util-linux 2.38.1") for the facts."""
        self.unshare_version = program_version.first_line(["unshare", "--version"])
        return Availability.yes()

    def facts(self) -> dict[str, Any]:
        return {"unshare_version": self.unshare_version} if self.unshare_version else {}

    def network_path(self) -> str:
        """A veth pair into a namespace made for the run, where the agent gets a network
        namespace of its own; else the host's stack (loopback)."""
        return "veth" if "net" in self.spec.namespaces else "loopback"

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        folder = scratch.make(job.needs)
        args = job.with_agent_options("--cwd", str(folder)) if folder else job.agent_args
        netns = job.network.netns_path if job.network else None
        # the run's namespace, with its veth end, is entered rather than a new one made
        enter = ["nsenter", f"--net={netns}", "--"] if netns else []
        return ProcessGuest(enter + self._prefix(new_net=not netns)
                            + [str(job.agent_path), *args],
                            logdir, deadline_ns, scratch=[folder] if folder else [])

    def _prefix(self, new_net: bool = True) -> list[str]:
        flags = [NAMESPACE_FLAGS[name] for name in self.spec.namespaces
                 if new_net or name != "net"]
        if "pid" in self.spec.namespaces:
            flags += ["--fork", "--kill-child"]
        if "mount" in self.spec.namespaces and "pid" in self.spec.namespaces:
            flags.append("--mount-proc")
        return ["unshare", *flags, "--"]
