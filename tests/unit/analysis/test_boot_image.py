"""boot_image: the plan's own image timed to its ready line; only an image = "none" guest
can run it, and the boot table gives the phase."""

from __future__ import annotations

from guestbench.analysis.boot import breakdown
from guestbench.environments.base import Capability
from guestbench.workloads import CATALOGUE
from guestbench.store.records import Run, StoredSample


def test_it_needs_a_guest_of_its_own_and_no_agent() -> None:
    workload = CATALOGUE["boot_image"]
    assert workload.requires == frozenset({Capability.GUEST_PROGRAM})
    assert workload.boot_phases and not workload.uses_agent
    assert workload.primary_metric == "boot_ready"


def test_the_boot_table_gives_the_ready_line_phase() -> None:
    runs = [Run(id=index, environment="debian", status="ok") for index in (1, 2, 3)]
    samples = [StoredSample(run_id=run, metric=metric, unit="ms", value=value * run)
               for run in (1, 2, 3)
               for metric, value in (("boot_first_byte", 100.0), ("boot_ready", 900.0),
                                     ("boot_powered_off", 950.0))]
    phases = breakdown(runs, samples)["debian"]
    assert phases["VMM start -> the ready line (an own image's `ready`)"].median_ms == 1800
    assert phases["total: VMM start -> powered off"].median_ms == 1900
