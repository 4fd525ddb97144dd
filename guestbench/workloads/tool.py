"""Any program as a workload: `exec` runs argv and reads its samples from the output.

`guest_program` reads the same metrics from the console of a guest that runs its own
program instead of the agent (a command environment with image = "none").

The program runs through the agent's exec workload (as fio and dbench do): the agent
starts it directly with execvp (no shell: no quoting, globbing, pipes or variables),
waits for it, and sends its stdout and stderr to the host, where each metric's regular
expression (guestbench/workloads/metrics.py) reads one number from them. A program that
exits non-zero, or output where a metric is missing, appears the wrong number of times
or is not a number, fails the run with the reason. argv[0] is the one program the run
needs: full-system guest images include it with its shared libraries.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_core import PydanticCustomError

from guestbench.environments.base import Capability, JobNeeds
from guestbench.workloads.base import Params, RunOutput, Sample, Workload
from guestbench.workloads.metrics import Metric, check_names, parse_metrics


class ExecParams(Params):
    # lists in a plan (strict=False: a TOML array is a list); emptiness is checked below, so
    # that a bad item is reported alone, not with a "too short" list after it
    argv: tuple[str, ...] = Field(
        strict=False,
        description="the program and its arguments, run without a shell; argv[0] is a program "
                    "on PATH or an absolute path")
    metrics: tuple[Metric, ...] = Field(
        strict=False,
        description="the numbers read from the output, one [[workload.metrics]] table each; "
                    "the first is the primary metric")
    warmup_runs: int = Field(0, ge=0, le=100,
                             description="untimed runs first, output thrown away (warm caches)")
    scratch_mib: int = Field(0, ge=0, le=1 << 20,
                             description="0: the program runs in the agent's folder and should "
                                         "write nothing; N: it runs in a scratch folder with N "
                                         "MiB free (an ext4 disk in full-system guests)")
    drop_caches: bool = Field(False, description="cold caches: the host's page cache is dropped "
                                                 "first (needs root), a guest kernel drops its own")
    exec_children: bool = Field(False, description="the program starts other programs (make "
                                                   "runs gcc): environments that cannot run "
                                                   "them as measured (qemu-user) refuse the run")

    @field_validator("argv")
    @classmethod
    def _program(cls, argv: tuple[str, ...]) -> tuple[str, ...]:
        program = argv[0] if argv else ""
        if not program.strip():
            raise PydanticCustomError(
                "argv_program", "no program: argv is empty or argv[0] is blank",
                {"fix": 'name a program first, e.g. argv = ["sysbench", "cpu", "run"]'})
        if "/" in program and not program.startswith("/"):
            raise PydanticCustomError(
                "argv_program", "argv[0] '{program}' is a relative path",
                {"program": program, "fix": "give a program name found on PATH, or an "
                                            "absolute path"})
        if any("\0" in arg for arg in argv):
            raise PydanticCustomError("argv_nul", "an argument holds a NUL character",
                                      {"fix": "remove it: a program's arguments cannot"})
        return argv

    @field_validator("metrics")
    @classmethod
    def _distinct(cls, metrics: tuple[Metric, ...]) -> tuple[Metric, ...]:
        if not metrics:
            raise PydanticCustomError(
                "metrics_empty", "no metric: a run would give no sample",
                {"fix": "add a [[workload.metrics]] table with name, regex, unit and better"})
        check_names(metrics)
        return metrics

    @property
    def primary_metric(self) -> str:
        """The first metric: what repeat = "auto" and the summaries judge."""
        return self.metrics[0].name


def agent_args(params: ExecParams) -> list[str]:
    warmup = ["--warmup-runs", str(params.warmup_runs)] if params.warmup_runs else []
    return [*warmup, "exec", *params.argv]


def job_needs(params: ExecParams, inputs: Path) -> JobNeeds:
    return JobNeeds(scratch=params.scratch_mib > 0, scratch_mib=params.scratch_mib,
                    drop_caches=params.drop_caches, exec_children=params.exec_children)


def derive(params: ExecParams, run: RunOutput) -> list[Sample]:
    """The declared metrics only (the agent's rusage figures are left out)."""
    return parse_metrics(params.metrics, {"stdout": run.stdout, "stderr": run.stderr})


class GuestProgramParams(Params):
    metrics: tuple[Metric, ...] = Field(
        strict=False,
        description="the numbers read from the guest's console, one [[workload.metrics]] table "
                    "each; the first is the primary metric")

    _distinct = field_validator("metrics")(ExecParams._distinct.__func__)

    @property
    def primary_metric(self) -> str:
        return self.metrics[0].name


def derive_console(params: GuestProgramParams, run: RunOutput) -> list[Sample]:
    """The declared metrics, read from the console of a guest that ran its own program."""
    return parse_metrics(params.metrics, run.stdout)


WORKLOADS = [
    Workload("exec", "tool", "any program, run without a shell; its samples are numbers "
             "read from its output by the plan's regular expressions", ExecParams, agent_args,
             frozenset({Capability.PROCESSES}), quick=False,
             # the first of the plan's metrics: WorkloadCase.workload fills it in per case
             primary_metric=None, agent_name="exec", job_needs=job_needs, derive=derive,
             tools_of=lambda params: (params.argv[0],)),
    Workload("guest_program", "tool", "a guest's own program (a unikernel's benchmark, another "
             "OS): its samples are numbers read from the console by the plan's regular "
             "expressions; boot phases to its first byte and its ready line",
             GuestProgramParams, lambda params: [], frozenset({Capability.GUEST_PROGRAM}),
             quick=False, uses_agent=False, boot_phases=True, primary_metric=None,
             derive=derive_console),
]
