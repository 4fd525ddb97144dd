"""Boot time of a full-system guest: phases on the host's clock, the guest's own uptime."""

from __future__ import annotations

from guestbench.environments.base import Capability
from guestbench.workloads.base import Params, Workload


class BootParams(Params):
    """No parameters: each repetition is one fresh boot."""


WORKLOADS = [
    Workload("boot", "boot", "a fresh boot to the agent and power-off, by phase",
             BootParams, lambda params: [], frozenset({Capability.GUEST_KERNEL}),
             quick=False, boot_phases=True, primary_metric="boot_powered_off"),
]
