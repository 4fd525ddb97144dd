"""Boot time of a full-system guest: phases on the host's clock, the guest's own uptime.

boot: guestbench's own image, to its agent and power-off. boot_image: the plan's own image
(a distribution's kernel and initramfs, a disk image, a unikernel) in an environment with
image = "none", timed to the console line its `ready` names (and `done`, if given, where
the VMM is stopped): the libguestfs start-up figure, for any appliance."""

from __future__ import annotations

from guestbench.environments.base import Capability
from guestbench.workloads.base import Params, Workload


class BootParams(Params):
    """No parameters: each repetition is one fresh boot."""


WORKLOADS = [
    Workload("boot", "boot", "a fresh boot to the agent and power-off, by phase",
             BootParams, lambda params: [], frozenset({Capability.GUEST_KERNEL}),
             quick=False, boot_phases=True, primary_metric="boot_powered_off", title="boot"),
    Workload("boot_image", "boot", "the plan's own image booted to the console line its "
             "environment's `ready` names, by phase (image = \"none\")", BootParams,
             lambda params: [], frozenset({Capability.GUEST_PROGRAM}), quick=False,
             uses_agent=False, boot_phases=True, primary_metric="boot_ready",
             title="boot (own image)",
             metric_titles={"boot_ready": "to the ready line",
                            "boot_first_byte": "to the first byte"}),
]
