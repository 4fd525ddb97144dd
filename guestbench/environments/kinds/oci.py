"""The agent as the only program of a minimal OCI bundle, under runc, crun or gVisor's runsc."""

from __future__ import annotations

import json
import re
import shutil
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from guestbench import agent
from guestbench.process import proc
from guestbench.environments import oci_leftovers, program_version, scratch
from guestbench.environments.scratch import socket_folder
from guestbench.environments.base import (
    Availability, Capability, Environment, EnvironmentSpec, Guest, Job, ProcessGuest)
from guestbench.environments.kinds.native import PROCESS_CAPABILITIES
from guestbench.environments.oci_snapshots import OciSnapshots
from guestbench.host import Host, which
from guestbench.network import paths
from guestbench.protocol import ProtocolError

PROBE_TIMEOUT_S = 10
# what an old runsc says when it takes a run's namespace for the host's (network_refusal)
ROOT_NETNS_CHECK = "cannot run with network enabled in root network namespace"
DEFAULT_PLATFORM = "ptrace"  # what runsc is given when the spec names none


class OciSpec(EnvironmentSpec):
    """runc, crun or runsc; platform and network are gVisor's own options."""

    kind: Literal["oci"] = "oci"
    runtime: Literal["runc", "crun", "runsc"] = Field(description="the OCI runtime binary")
    binary: str | None = Field(
        None, description="the runtime's program, a path to a build of it (an A/B of two "
                          "builds: --a runc.binary=base/runc --b runc.binary=head/runc); "
                          "default: runtime, found on PATH")
    platform: Literal["ptrace", "systrap", "kvm"] | None = Field(
        None, description=f"runsc only: gVisor's platform (--platform, default {DEFAULT_PLATFORM})")
    network: Literal["none", "sandbox", "host"] | None = Field(
        None, description="runsc only: gVisor's network (--network): none, sandbox (gVisor's "
                          "own stack, netstack, on a veth pair) or host (the host's stack); "
                          "default: sandbox for network workloads, none for the others. "
                          "runc and crun always get a network namespace of their own")
    runtime_args: tuple[str, ...] = Field(
        (), description="extra global arguments for the runtime, placed before 'run'")
    cpu_quota: float | None = Field(
        None, gt=0, le=1024, description="CPUs the container may use (CFS quota over a "
                                        "100 ms period, e.g. 0.5); None: no limit")
    cpus: str | None = Field(
        None, description="host CPUs the container may run on, as a cpuset list (\"1\", \"0-1\", "
                    "\"0,2\"); None: any")

    @field_validator("cpus", mode="before")
    @classmethod
    def _one_cpu_may_be_a_number(cls, value: object) -> object:
        """cpus = 1 (a TOML or --a/--b number) means the cpuset "1"; text must be a list."""
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        if isinstance(value, str) and not CPUSET.fullmatch(value):
            raise PydanticCustomError(
                "cpuset", "'{value}' is not a list of CPUs",
                {"value": value, "fix": 'give CPU numbers and ranges such as "1", "0-1" or "0,2"'})
        return value

    def cpu_count(self, host_cpus: int) -> int:
        """The cpuset's CPUs (a quota limits time, not the CPUs a program sees)."""
        if self.cpus is None:
            return host_cpus
        count = 0
        for part in self.cpus.split(","):
            first, _, last = part.partition("-")
            count += int(last or first) - int(first) + 1
        return count

    @model_validator(mode="after")
    def _gvisor_options_need_runsc(self) -> "OciSpec":
        for option in ("platform", "network"):
            if getattr(self, option) is not None and self.runtime != "runsc":
                raise ValueError(f"{option} is a runsc option; {self.runtime} has none "
                                 f"(fix: remove {option}, or use runtime = \"runsc\")")
        return self


class Oci(Environment):
    kind: ClassVar[str] = "oci"
    shares_rounds: ClassVar[bool] = True  # a container's creation: 0.05 s (runc), 0.2 s (runsc)
    run_in_ms: ClassVar[int] = 100  # runsc's sentry beside the agent; once a round

    def typical_cost(self) -> tuple[float, float]:
        # a container a round, shared by its runs; gVisor's page faults cost more
        return (0.05, 1.25) if self.spec.runtime == "runsc" else (0.03, 1.0)
    capabilities = PROCESS_CAPABILITIES | {Capability.SNAPSHOT}
    spec_model = OciSpec

    def __init__(self, spec: OciSpec) -> None:
        super().__init__(spec)
        self.runtime_version: str | None = None
        self._sandbox_network: str | None = None  # network_refusal()'s answer, once

    @classmethod
    def example_options(cls) -> dict:
        return {"runtime": "runc"}

    @property
    def program(self) -> str:
        """The runtime's program: binary where the spec names a build, else runtime."""
        return self.spec.binary or self.spec.runtime

    def probe(self, host: Host) -> Availability:
        runtime = self.spec.runtime
        if self.spec.binary and which(self.spec.binary) is None:
            return Availability.no(f"{self.spec.binary} not found or not executable (fix: "
                                   f"binary = the path of a {runtime} build)")
        if which(self.program) is None:
            return Availability.no(f"{runtime} not found (apt-get install {runtime})")
        try:
            agent_path = agent.path()
        except agent.AgentMissing as error:
            return Availability.no(str(error))
        # Only a real container says whether this host's cgroups, seccomp and
        # kernel suit the runtime (and its CPU limits: a CPU the host lacks); it takes
        # well under a second when they do.
        bundle = _Bundle(agent_path, ["--version"], cpu_quota=self.spec.cpu_quota,
                         cpus=self.spec.cpus, host_network=self.spec.network == "host")
        bundle.network = self.spec.network or "none"
        result = None
        try:
            result = proc.run(self._run_argv(bundle), timeout_s=PROBE_TIMEOUT_S)
        except proc.DeadlineExceeded:
            return Availability.no(f"{runtime} did not start a container within {PROBE_TIMEOUT_S} s")
        except proc.ProcessError as error:
            return Availability.no(str(error))
        finally:
            # A `run` that ended well has deleted its container itself (its state folder is
            # empty; runsc's delete would cost a start of runsc, ~20 ms); any other may
            # have left a container, or runsc's sandbox, behind.
            if result is None or result.returncode != 0:
                for argv in self._cleanup_argv(bundle):
                    _quiet_run(argv)
                if runtime != "runsc":
                    oci_leftovers.end(bundle.container_id, bundle.directory)
            bundle.remove()
        if result.returncode != 0 and ROOT_NETNS_CHECK in result.stderr:
            return Availability.no(self._old_runsc())
        if result.returncode != 0:
            return Availability.no(f"{runtime} cannot run a container here: {result.said()}")
        return Availability.yes(f"{runtime}: {result.stdout.strip()}")

    def prepare(self, host: Host) -> Availability:
        """Reads the runtime's version, so that results say which runc or runsc gave them."""
        self.runtime_version = program_version.first_line([self.program, "--version"])
        return Availability.yes()

    def facts(self) -> dict[str, Any]:
        """The runtime's version ("runsc version 0.0~20221219.0") and runsc's platform."""
        facts: dict[str, Any] = {}
        if self.runtime_version:
            facts["runtime_version"] = self.runtime_version
        if self.spec.runtime == "runsc":
            facts["platform"] = self.spec.platform or DEFAULT_PLATFORM
        return facts

    def network_path(self) -> str:
        """A veth pair into the container's network namespace (gVisor's netstack owns its
        end under runsc); runsc with network = "host" uses the host's stack."""
        return "loopback" if self.spec.network == "host" else "veth"

    def network_refusal(self) -> str | None:
        if self.spec.network == "none":
            return ("runsc with network = \"none\" has no network beyond its own loopback "
                    "(fix: network = \"sandbox\" or \"host\", or leave it unset)")
        if self.spec.runtime == "runsc" and self.spec.network != "host":
            if self._sandbox_network is None:
                self._sandbox_network = self._try_sandbox_network()
            return self._sandbox_network or None
        return None

    def _try_sandbox_network(self) -> str:
        """Whether runsc's own network stack starts here: a container in a namespace with a
        veth end, once per campaign (~0.3 s). '' if it does, else why not."""
        with ExitStack() as stack:
            try:
                path = paths.make("veth", stack)
                bundle = _Bundle(agent.path(), ["--version"])
            except (paths.PathError, agent.AgentMissing):
                return ""  # the run itself says what is missing
            stack.callback(bundle.remove)
            bundle.network = "sandbox"
            try:
                result = proc.run(["nsenter", f"--net={path.netns_path}", "--",
                                   *self._run_argv(bundle)], timeout_s=PROBE_TIMEOUT_S)
            except (proc.ProcessError, proc.DeadlineExceeded):
                return ""
            finally:
                for argv in self._cleanup_argv(bundle):
                    _quiet_run(argv)
        if result.returncode == 0 or ROOT_NETNS_CHECK not in result.stderr:
            return ""
        return self._old_runsc()

    def _old_runsc(self) -> str:
        version = self.runtime_version or program_version.first_line([self.program, "--version"])
        return (f"this runsc ({version or 'its version unknown'}) refuses its own "
                f"network stack on this kernel: \"{ROOT_NETNS_CHECK}\". Releases before "
                "mid-2024 take /proc/sys/net/core/rmem_default as the sign of the host's "
                "namespace, and newer kernels have it in every namespace (fix: a newer runsc, "
                "or network = \"host\": the host's stack)")

    def start(self, job: Job, logdir: Path, deadline_ns: int) -> Guest:
        folder = scratch.make(job.needs)
        args = job.with_agent_options("--cwd", CONTAINER_SCRATCH) if folder else job.agent_args
        try:
            bundle = _Bundle(job.agent_path, list(args), scratch=folder,
                             host_programs="exec" in job.agent_args,
                             cpu_quota=self.spec.cpu_quota, cpus=self.spec.cpus,
                             netns=job.network.netns_path if job.network else None,
                             host_network=self.spec.network == "host")
        except BaseException:
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
            raise
        logdir.mkdir(parents=True, exist_ok=True)
        shutil.copy(bundle.directory / "config.json", logdir / "config.json")
        bundle.network = self._network(job)
        # create, then start, each timed (start's figures); else one run
        argv = self._run_argv(bundle, "create" if job.needs.start_steps else "run")
        if self.spec.runtime == "runsc" and job.network and job.network.netns:
            # runsc takes its sandbox's network from the namespace it runs in (this one
            # skips the spec's path and refuses the host's own namespace)
            argv = ["nsenter", f"--net={job.network.netns_path}", "--", *argv]
        teardown = dict(cleanup=self._cleanup_argv(bundle), cleanup_phase="delete",
                        scratch=[bundle.directory, *([folder] if folder else [])],
                        **self._cgroup_sweep(bundle))
        if job.needs.start_steps:
            return OciGuest(argv, logdir, deadline_ns, **teardown,
                            start_argv=[self.program, *self._global_args(bundle),
                                        "start", bundle.container_id])
        return ProcessGuest(argv, logdir, deadline_ns, **teardown)

    def _cgroup_sweep(self, bundle: "_Bundle") -> dict[str, Any]:
        """What a container whose create the run timeout cut short leaves, which `delete`
        does not know (its cgroups, its `runc init`): ended after the timed delete (a
        finalizer), or by the reaper if guestbench is killed first (oci_leftovers.py).
        runsc is run with --ignore-cgroups."""
        if self.spec.runtime == "runsc":
            return {}
        container_id, folder = bundle.container_id, bundle.directory
        return {"finalizers": [lambda: oci_leftovers.end(container_id, folder)],
                "reaped": [oci_leftovers.command(container_id, folder)]}

    def snapshots(self, job: Job, folder: Path) -> OciSnapshots:
        """The runtime's checkpoint and restore (environments/oci_snapshots.py)."""
        return OciSnapshots(self, job, _Bundle(job.agent_path, list(job.agent_args)))

    def _network(self, job: Job) -> str:
        """runsc's --network for the job: the spec's, else sandbox where the job has a path."""
        return self.spec.network or ("sandbox" if job.network else "none")

    def _global_args(self, bundle: "_Bundle") -> list[str]:
        args = ["--root", str(bundle.state)]
        if self.spec.runtime == "runsc":
            args += [f"--platform={self.spec.platform or DEFAULT_PLATFORM}",
                     f"--network={bundle.network}", "--ignore-cgroups"]
        return args + list(self.spec.runtime_args)

    def _run_argv(self, bundle: "_Bundle", verb: str = "run") -> list[str]:
        """`run`, or `create` (which takes the same arguments) when the steps are timed apart."""
        return [self.program, *self._global_args(bundle),
                verb, "--bundle", str(bundle.directory), bundle.container_id]

    def _cleanup_argv(self, bundle: "_Bundle") -> list[list[str]]:
        return [[self.program, *self._global_args(bundle), "delete", "--force",
                 bundle.container_id]]


class StartFailed(ProtocolError):
    """The runtime created the container but could not start it (status infra)."""

    infra = True


@dataclass
class OciGuest(ProcessGuest):
    """A container taken through the runtime's own steps, each timed on the host's clock:
    `create` (the guest's process: the container's stdio is its own, passed through, so
    the agent's records come on its stdout after it has exited), then `start`. Their ms are
    start_phases() "create" and "start", beside the teardown's "delete"."""

    start_argv: list[str] = field(default_factory=list)

    def _lines(self) -> Iterator[tuple[int, bytes]]:
        remaining_s = (self.deadline_ns - proc.now_ns()) / 1e9
        created = self._process.wait(remaining_s)
        if created is None:
            raise proc.DeadlineExceeded(f"{self.argv[0]} create did not return in time")
        self._phases["create"] = (proc.now_ns() - self._process.started_ns) / 1e6
        if created == 0:  # else nothing holds the output: it ends, and the run says why
            began_ns = proc.now_ns()
            try:
                result = proc.run(self.start_argv, timeout_s=max(remaining_s, 1.0))
            except (proc.ProcessError, proc.DeadlineExceeded) as error:
                raise StartFailed(f"{self.argv[0]} start: {error}") from None
            if result.returncode != 0:
                raise StartFailed(f"{self.argv[0]} start exited with status "
                                  f"{result.returncode}: {result.said()}")
            self._phases["start"] = (proc.now_ns() - began_ns) / 1e6
        yield from super()._lines()


def _quiet_run(argv: list[str]) -> None:
    try:
        proc.run(argv, timeout_s=PROBE_TIMEOUT_S)
    except (proc.ProcessError, proc.DeadlineExceeded):
        pass


CONTAINER_SCRATCH = "/scratch"
CPU_PERIOD_US = 100_000
CPUSET = re.compile(r"[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*")  # as cpuset.cpus reads it
# Debian's merged /usr: these top-level names are links into /usr on the host too
USR_LINKS = {"bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}


class _Bundle:
    """A temporary bundle: rootfs holding only the agent, config.json, runtime state.

    With host_programs, the host's /usr is bound read-only so that tools (fio, dbench,
    make and gcc) run with the host's own files; with scratch, that folder is /scratch.
    """

    def __init__(self, agent_path: Path, agent_args: list[str], scratch: Path | None = None,
                 host_programs: bool = False, cpu_quota: float | None = None,
                 cpus: str | None = None, netns: str | None = None,
                 host_network: bool = False) -> None:
        self.network = "none"  # runsc's --network (Oci._network)
        self.directory = socket_folder("guestbench-oci-")  # the parameter shadows the module
        self.state = self.directory / "state"
        self.container_id = f"guestbench-{uuid.uuid4().hex[:12]}"
        rootfs = self.directory / "rootfs"
        for sub in ("proc", "dev", "tmp", "sys"):
            (rootfs / sub).mkdir(parents=True)
        self.state.mkdir()
        shutil.copy(agent_path, rootfs / "gbagent")
        config = _config(["/gbagent", *agent_args])
        cpu: dict[str, Any] = {}
        if cpu_quota is not None:
            cpu.update(period=CPU_PERIOD_US, quota=round(cpu_quota * CPU_PERIOD_US))
        if cpus is not None:
            cpu["cpus"] = cpus
        if cpu:
            config["linux"]["resources"] = {"cpu": cpu}
        if netns is not None:  # the run's namespace, its veth end in it (network/paths.py)
            config["linux"]["namespaces"] = [
                {"type": "network", "path": netns} if space["type"] == "network" else space
                for space in config["linux"]["namespaces"]]
        if host_network:  # runsc --network=host: the host's stack, so the host's namespace
            config["linux"]["namespaces"] = [space for space in config["linux"]["namespaces"]
                                             if space["type"] != "network"]
        if host_programs:
            (rootfs / "usr").mkdir()
            for name, target in USR_LINKS.items():
                (rootfs / name).symlink_to(target)
            config["mounts"].append({"destination": "/usr", "type": "bind", "source": "/usr",
                                     "options": ["rbind", "ro"]})
            config["process"]["env"][0] = "PATH=/usr/local/bin:/usr/bin:/usr/sbin:/"
        if scratch is not None:
            (rootfs / CONTAINER_SCRATCH.strip("/")).mkdir()
            config["mounts"].append({"destination": CONTAINER_SCRATCH, "type": "bind",
                                     "source": str(scratch), "options": ["rbind", "rw"]})
        (self.directory / "config.json").write_text(json.dumps(config, indent=1))

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)


def _config(args: list[str]) -> dict[str, Any]:
    """A minimal OCI runtime config: the default namespaces and mounts, no terminal."""
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False, "user": {"uid": 0, "gid": 0}, "args": args, "cwd": "/",
            "env": ["PATH=/", "HOME=/tmp"],
            "noNewPrivileges": True,
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 1024, "soft": 1024}],
        },
        "root": {"path": "rootfs", "readonly": False},
        "hostname": "guestbench",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "nodev", "mode=1777"]},
            {"destination": "/sys", "type": "sysfs", "source": "sysfs",
             "options": ["nosuid", "noexec", "nodev", "ro"]},
        ],
        "linux": {
            "namespaces": [{"type": kind} for kind in ("pid", "network", "ipc", "uts", "mount")],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list"],
            "readonlyPaths": ["/proc/sys", "/proc/sysrq-trigger"],
        },
    }
