"""Boot phases as a breakdown (like libguestfs's boot analysis): per-run durations, then medians."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


# (name shown, point at the phase's end, point at its start; None = VMM process start).
# "guest clock zero" is where the guest's clock starts on the host's timeline: the
# hello's arrival minus the guest's own clock when the agent wrote it (the sample
# boot_clock_zero, environments/console.py): before it, the VMM, firmware and kernel
# decompression; after it, the kernel's own boot. The first console byte is shown
# apart: with `quiet` it is whatever message gets through first.
PHASES = (
    ("VMM start -> guest clock zero (VMM, firmware, decompression)", "clock_zero", None),
    ("guest clock zero -> userspace (kernel boot)", "boot_userspace", "clock_zero"),
    ("userspace -> agent ready (init)", "boot_agent_ready", "boot_userspace"),
    ("agent ready -> powered off", "boot_powered_off", "boot_agent_ready"),
    ("VMM start -> the ready line (an own image's `ready`)", "boot_ready", None),
    ("total: VMM start -> powered off", "boot_powered_off", None),
    ("first console byte, from VMM start", "boot_first_byte", None),
    ("guest's own uptime when the boot workload ran", "guest_uptime", None),
)
# The phases that start or end at the guest's clock zero.
CLOCK_ZERO_PHASES = tuple(name for name, end, start in PHASES if "clock_zero" in (end, start))
UPTIME_PHASE = next(name for name, end, _start in PHASES if end == "guest_uptime")


@dataclass(frozen=True)
class PhaseCell:
    median_ms: float
    n: int
    durations_ms: tuple[float, ...] = field(default=(), compare=False)  # one per run


def breakdown(runs: Iterable[dict[str, Any]], samples: Iterable[dict[str, Any]]
              ) -> dict[str, dict[str, PhaseCell]]:
    """{environment: {phase name: median duration}} over the ok runs that have boot samples.

    Runs recorded before boot_clock_zero existed have no clock zero: their guest_uptime was
    read after the agent's clock check (300 ms of marks after its hello), so pairing it with
    the hello's arrival put the clock zero about 300 ms late; their clock-zero phases are
    left out rather than shown wrong."""
    wanted = {point for _name, end, start in PHASES for point in (end, start)} | {
        "boot_clock_zero"}
    by_run: dict[int, dict[str, float]] = defaultdict(dict)
    # most samples of a campaign are not boot points: only these are read one by one
    from guestbench.store.columns import Samples  # deferred: numpy, as in results.py
    for sample in Samples.coerce(samples).of_metrics(*wanted):
        by_run[sample.run_id][sample.metric] = sample.value
    durations: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        points = dict(by_run.get(run.id, {}))
        if run.status != "ok" or "boot_powered_off" not in points:
            continue
        if "boot_clock_zero" in points:
            points["clock_zero"] = points["boot_clock_zero"]
        for name, end, start in PHASES:
            if end in points and (start is None or start in points):
                durations[run.environment][name].append(points[end] - (points[start] if start else 0))
    return {env: {name: PhaseCell(statistics.median(values), len(values), tuple(values))
                  for name, values in phases.items()}
            for env, phases in durations.items()}
