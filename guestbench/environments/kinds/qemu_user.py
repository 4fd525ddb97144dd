"""The agent under QEMU's user-mode binary translation (qemu-x86_64 and friends)."""

from __future__ import annotations

import platform
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from guestbench.process import proc
from guestbench.environments import scratch
from guestbench.environments.base import (
    Availability, Capability, Environment, EnvironmentSpec, Guest, Job, ProcessGuest)
from guestbench.environments.kinds.native import PROCESS_CAPABILITIES
from guestbench.host import Host, which

EXEC_REASON = ("qemu-user translates one program: the programs it starts (make's gcc) would "
               "run natively, since qemu-user does not follow execve without binfmt_misc")


def _default_binary() -> str:
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(platform.machine(), platform.machine())
    return f"qemu-{arch}"


class QemuUserSpec(EnvironmentSpec):
    kind: Literal["qemu-user"] = "qemu-user"
    binary: str = Field(default_factory=_default_binary,
                        description="the qemu-user program, e.g. qemu-x86_64 or qemu-x86_64-static")
    cpu: str | None = Field(None, description="guest CPU model (qemu -cpu); None = QEMU's default")


class QemuUser(Environment):
    kind: ClassVar[str] = "qemu-user"
    typical_start_s: ClassVar[float] = 0.05
    typical_work_factor: ClassVar[float] = 2.7  # STREAM's triad 9x slower, its set-up less
    capabilities = PROCESS_CAPABILITIES - {Capability.EXEC_CHILDREN}
    lacking = {Capability.EXEC_CHILDREN: EXEC_REASON,
               Capability.SNAPSHOT: "qemu-user: a translated process has no snapshot and "
                                    "restore"}
    spec_model = QemuUserSpec

    def __init__(self, spec: QemuUserSpec) -> None:
        super().__init__(spec)
        self.vmm_version: str | None = None

    def probe(self, host: Host) -> Availability:
        """Available when the translator answers --version; that answer is its version."""
        if which(self.spec.binary) is None:
            return Availability.no(f"{self.spec.binary} not found (apt-get install qemu-user)")
        try:
            result = proc.run([self.spec.binary, "--version"], timeout_s=5)
        except (proc.ProcessError, proc.DeadlineExceeded) as error:
            return Availability.no(f"{self.spec.binary} --version failed: {error}")
        first_line = (result.stdout.splitlines() or ["?"])[0]
        self.vmm_version = first_line if result.returncode == 0 and first_line != "?" else None
        return Availability.yes(first_line)

    def facts(self) -> dict[str, Any]:
        """The translator's version ("qemu-x86_64 version 7.2.22 (...)"): under vmm_version,
        the key the version table reads when a plan sweeps `binary`."""
        return {"vmm_version": self.vmm_version} if self.vmm_version else {}

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        folder = scratch.make(job.needs)
        options = ["--cwd", str(folder)] if folder else []
        prefix = []
        if "exec" in job.agent_args:
            # the agent's exec would start the tool natively: run it under the same translator
            # (QEMU_CPU, unlike -cpu, reaches the tool's translator through the environment)
            options += ["--wrapper", str(which(self.spec.binary) or self.spec.binary)]
            prefix = ["env", f"QEMU_CPU={self.spec.cpu}"] if self.spec.cpu else []
        cpu = ["-cpu", self.spec.cpu] if self.spec.cpu else []
        args = job.with_agent_options(*options) if options else job.agent_args
        return ProcessGuest([*prefix, self.spec.binary, *cpu, str(job.agent_path), *args],
                            logdir, deadline_ns, scratch=[folder] if folder else [])
