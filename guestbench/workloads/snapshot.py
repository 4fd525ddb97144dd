"""Snapshot and restore, as microVM and sandbox teams measure them: the time to save a running
instance and the image's size (snapshot_create), the time from asking for a restore to the
restored agent's next record (restore), and the first write to each page of the agent's
memory after a restore (restore_first_touch). The agent dirties dirty_mib MiB of its memory
before the save and proves afterwards that the same process came back with it; every kind
that cannot save an instance says so (Capability.SNAPSHOT). runner/snapshot.py times them;
docs/workloads-startup.md."""

from __future__ import annotations

from pydantic import Field

from guestbench.environments.base import Capability, JobNeeds
from guestbench.workloads.base import Params, Workload


class SnapshotParams(Params):
    dirty_mib: int = Field(64, ge=1, le=65536, description=(
        "MiB of its own memory the agent fills (with data no compressor shrinks) before the "
        "save: what the image must hold beyond the instance's own state"))


class RestoreParams(SnapshotParams):
    restores: int = Field(1, ge=1, le=100, description=(
        "restores from the one image each run saves, each a value (Firecracker's test "
        "restores one snapshot 30 times)"))


def _agent_args(params: SnapshotParams) -> list[str]:
    return ["--size-mib", str(params.dirty_mib), "snapshot"]


def _needs(params: SnapshotParams, inputs) -> JobNeeds:
    return JobNeeds(memory_mib=params.dirty_mib)  # a guest's RAM must hold it


_COMMON = dict(capabilities=frozenset({Capability.SNAPSHOT}), quick=False,
               produces_samples=False, agent_name="snapshot", host_part="snapshot",
               job_needs=_needs)

WORKLOADS = [
    Workload("snapshot_create", "instance", "a running instance saved: the time to save it "
             "and the image's size", SnapshotParams, _agent_args, **_COMMON,
             primary_metric="snapshot_create", title="snapshot", host_timed=("snapshot_create",),
             metric_titles={"snapshot_create": "save", "snapshot_size": "image size",
                            "snapshot_create_stop": "guest stopped",
                            "snapshot_create_migrate": "migration",
                            "snapshot_create_checkpoint": "checkpoint command",
                            "snapshot_create_xl_save": "xl save",
                            "snapshot_create_pause": "guest paused",
                            "snapshot_create_write": "snapshot written",
                            # QEMU inside a VM: from the migration's end to cat's file whole
                            "snapshot_create_written": "file whole after migration"}),
    Workload("restore", "instance", "a saved instance restored: from asking for it to its "
             "agent's next record, the same process with its memory", RestoreParams,
             _agent_args, **_COMMON, primary_metric="restore", title="restore",
             host_timed=("restore",),
             metric_titles={"restore": "to the agent", "restore_spawn": "VMM started",
                            "restore_load": "state loaded", "restore_resume": "resumed",
                            "restore_attach": "console attached",
                            # from the kind's last step to the token: "go" and the answer
                            "restore_answer": "agent answered"}),
    Workload("restore_first_touch", "instance", "after a restore, the first write to each "
             "page of the agent's memory: per page p50 to max, and all pages", RestoreParams,
             _agent_args, **_COMMON, primary_metric="restore_touch_p50",
             title="first touch after restore",
             metric_titles={"restore_touch_p50": "per page p50",
                            "restore_touch_p90": "per page p90",
                            "restore_touch_p99": "per page p99",
                            "restore_touch_max": "per page, slowest",
                            "restore_touch_total": "every page",
                            "restore_touch_again_p50": "second write, p50"}),
]
