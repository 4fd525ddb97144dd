"""The build workloads, timed like kernbench: `make -jN` of a generated C tree (build) or
of a Linux source tree (kernel_build).

The tree is buildtree.py's: `units` translation units of generated C, the same bytes in
every environment, made once per campaign and size in the campaign's inputs folder and
copied into each run's scratch folder (the agent's --cwd; an ext4 scratch disk in
full-system guests). The agent runs

    make -B -jN CC=gcc check

there through its exec workload and reports what wait4 gives for make and everything it
ran: elapsed, user, sys, CPU%, context switches (involuntary) and sleeps (voluntary),
max RSS. `check` runs the built program, whose one line of output the host predicts
(buildtree.expected_output), so a toolchain that builds something wrong fails the run.

cache=cold: the host's page cache is dropped before the run and the copied tree is
written out and dropped from it again; full-system guests also drop their own kernel's
caches (the agent's --drop-caches). cache=warm: one untimed build first (the agent's
--warmup-runs 1), so the timed one finds sources, headers and the compiler in memory.
docs/workloads-build.md has what this measures and the figures.

kernel_build: the tree is kernelsrc.py's, a Linux source unpacked, configured (tinyconfig
by default) and prepared once on the host, and the agent runs `make -s -jN [target]` in
its copy. There is no warm-up build (one takes twenty minutes in a TCG guest here):
cache=copied builds the tree as it was just copied (in the host's page cache), cache=cold
drops every cache first. A target such as lib/ctype.o builds one object file.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from guestbench.environments.base import Capability, JobNeeds
from guestbench.workloads.build import kernel_source as kernelsrc, source_tree as buildtree
from guestbench.workloads.base import (
    InputError, OutputError, Params, RunOutput, Sample, Workload)

COMPILER = "gcc"  # passed as CC=, so the image needs gcc, not a `cc` link
TARGET = "check"  # builds app, then runs it
TREE_MARK = ".guestbench-tree"  # written last: its content is the tree's digest


class BuildParams(Params):
    units: int = Field(buildtree.DEFAULT_UNITS, ge=1, le=4096,
                       description="translation units of the generated tree (40 functions each; "
                                   f"{buildtree.DEFAULT_UNITS}: about 10 s of make -j2 on 2 cores)")
    jobs: int = Field(2, ge=1, le=256, description="make -jN: compilers run at once")
    cache: Literal["cold", "warm"] = Field(
        "warm", description="cold: caches dropped before the build (needs root); warm: one "
                            "untimed build first")


def make_command(params: BuildParams) -> list[str]:
    """The command the agent runs in the tree (also for benchmarks by hand)."""
    return ["make", "-B", f"-j{params.jobs}", f"CC={COMPILER}", TARGET]


def agent_args(params: BuildParams) -> list[str]:
    warm = ["--warmup-runs", "1"] if params.cache == "warm" else []
    return [*warm, "exec", *make_command(params)]


def tree(units: int, inputs: Path) -> Path:
    """The generated tree of this size under inputs, made once per campaign and size.

    It is written aside and renamed into place with its mark last, so a killed run
    leaves no half tree that a later one would take for whole.
    """
    folder = inputs / f"buildtree-{units}"
    if (folder / TREE_MARK).is_file():
        return folder
    staging = inputs / f".buildtree-{units}.{os.getpid()}"
    try:
        shutil.rmtree(staging, ignore_errors=True)
        digest = buildtree.generate(staging, units)
        (staging / TREE_MARK).write_text(digest + "\n")
        shutil.rmtree(folder, ignore_errors=True)  # a damaged one, without its mark
        staging.rename(folder)
    except OSError as error:
        shutil.rmtree(staging, ignore_errors=True)
        if (folder / TREE_MARK).is_file():  # another process made it meanwhile
            return folder
        raise InputError(f"cannot write the build tree under {inputs}: "
                         f"{error.strerror or error}") from None
    return folder


def scratch_mib(units: int) -> int:
    """Room for the tree, its objects and the program (3.8 MB built at 80 units), with margin."""
    return 16 + units // 4


def job_needs(params: BuildParams, inputs: Path) -> JobNeeds:
    cold = params.cache == "cold"
    return JobNeeds(scratch=True, scratch_files=tree(params.units, inputs),
                    scratch_mib=scratch_mib(params.units), uncache_files=cold,
                    drop_caches=cold, exec_children=True)


def derive(params: BuildParams, run: RunOutput) -> list[Sample]:
    """The agent's samples, once the built program printed what the host predicts."""
    lines = [line.strip() for line in run.stdout.splitlines() if line.strip()]
    printed = lines[-1] if lines else ""
    expected = buildtree.expected_output(params.units)
    if printed != expected:
        tail = " | ".join(lines[-3:])[-200:] or "(no output)"
        raise OutputError(f"the built program printed {printed!r}, expected {expected} "
                          f"(a toolchain that built it wrong?); make's output ends: {tail}")
    return list(run.samples)


# -- kernel_build: a Linux tree ----------------------------------------------------------

# Fixed so that every environment builds the same bytes and none runs whoami or hostname.
KBUILD_IDENTITY = ("KBUILD_BUILD_USER=guestbench", "KBUILD_BUILD_HOST=guestbench",
                   "KBUILD_BUILD_TIMESTAMP=2026-01-01")
# What Kbuild runs besides the compiler (found by tracing a tinyconfig build's execve
# calls on Debian 12): full-system images include them, since the image has no shell
# applets on its PATH. git is left out: Kbuild asks it for a version suffix only in a
# git checkout, and a tree unpacked from a tarball is not one.
KERNEL_TOOLS = ("make", COMPILER, "as", "ld", "ar", "nm", "objcopy", "objdump", "awk", "sed",
                "grep", "xargs", "cat", "mkdir", "cmp", "tr", "expr", "uname", "touch",
                "sha1sum", "ls", "head", "getconf", "basename", "uniq", "sort", "mv", "cut",
                "wc", "ln", "find", "dirname", "date", "bc", "xz", "gzip", "env", "rm", "mktemp")
TARGET_PATTERN = r"^[A-Za-z0-9_][A-Za-z0-9_./+-]*$"
# Free space for the objects and images of a build, besides the tree itself.
KERNEL_OUTPUT_MIB = {"tinyconfig": 512, "defconfig": 4096}


class KernelParams(Params):
    source: str = Field("", description="a Linux source tarball or unpacked tree (default: the "
                                        "newest /usr/src/linux-source-*.tar.*)")
    config: Literal["tinyconfig", "defconfig"] = Field(
        "tinyconfig", description="the make target that configures the tree on the host")
    jobs: int = Field(2, ge=1, le=256, description="make -jN (\"@vcpus\": each environment's CPUs)")
    target: str = Field("", description="what make builds (\"\": the kernel; lib/ctype.o: one "
                                        "object file and what it needs)")
    cache: Literal["copied", "cold"] = Field(
        "copied", description="copied: built as just copied (no warm-up build); cold: caches "
                              "dropped first (needs root)")

    @field_validator("target")
    @classmethod
    def _target(cls, value: str) -> str:
        if value and not re.match(TARGET_PATTERN, value):
            raise ValueError("a make target is a path or name such as lib/ctype.o or bzImage "
                             "(letters, digits, _ . / + -, not starting with -)")
        return value


def kernel_make_command(params: KernelParams) -> list[str]:
    return ["make", "-s", f"-j{params.jobs}", *KBUILD_IDENTITY,
            *([params.target] if params.target else [])]


def kernel_agent_args(params: KernelParams) -> list[str]:
    return ["exec", *kernel_make_command(params)]


def kernel_job_needs(params: KernelParams, inputs: Path) -> JobNeeds:
    cold = params.cache == "cold"
    return JobNeeds(scratch=True, scratch_files=kernelsrc.prepared(params.source, params.config,
                                                                   inputs),
                    scratch_mib=KERNEL_OUTPUT_MIB[params.config], uncache_files=cold,
                    drop_caches=cold, exec_children=True)


WORKLOADS = [
    Workload("build", "build", "make -jN of a generated C tree (kernbench-like): elapsed, "
             "user, sys, CPU%, context switches, sleeps; cold or warm caches", BuildParams,
             agent_args, frozenset({Capability.FILESYSTEM, Capability.PROCESSES}), quick=False,
             primary_metric="elapsed", agent_name="exec", job_needs=job_needs, derive=derive,
             tools=("make", COMPILER)),
    Workload("kernel_build", "build", "make -jN of a Linux source tree (tinyconfig or "
             "defconfig, configured once on the host), kernbench's columns", KernelParams,
             kernel_agent_args, frozenset({Capability.FILESYSTEM, Capability.PROCESSES}),
             quick=False, primary_metric="elapsed", agent_name="exec",
             job_needs=kernel_job_needs, tools=KERNEL_TOOLS, title="Linux kernel build",
             host_defaults=lambda host: {"source": kernelsrc.default_source()}),
]
