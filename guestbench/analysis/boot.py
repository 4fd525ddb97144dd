"""Boot phases as a breakdown (like libguestfs's boot analysis): per-run durations, then medians."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any


# (name shown, point at the phase's end, point at its start; None = VMM process start).
# "guest clock zero" is where the guest's uptime starts on the host's timeline
# (agent ready - guest uptime): before it, the VMM, firmware and kernel
# decompression; after it, the kernel's own boot. The first console byte is
# shown apart: with `quiet` it is whatever message gets through first.
PHASES = (
    ("VMM start -> guest clock zero (VMM, firmware, decompression)", "clock_zero", None),
    ("guest clock zero -> userspace (kernel boot)", "boot_userspace", "clock_zero"),
    ("userspace -> agent ready (init)", "boot_agent_ready", "boot_userspace"),
    ("agent ready -> powered off", "boot_powered_off", "boot_agent_ready"),
    ("VMM start -> the ready line (an own image's `ready`)", "boot_ready", None),
    ("total: VMM start -> powered off", "boot_powered_off", None),
    ("first console byte, from VMM start", "boot_first_byte", None),
    ("guest's own uptime at agent start", "guest_uptime", None),
)


@dataclass(frozen=True)
class PhaseCell:
    median_ms: float
    n: int


def breakdown(runs: Iterable[dict[str, Any]], samples: Iterable[dict[str, Any]]
              ) -> dict[str, dict[str, PhaseCell]]:
    """{environment: {phase name: median duration}} over the ok runs that have boot samples."""
    wanted = {point for _name, end, start in PHASES for point in (end, start)} | {"guest_uptime"}
    by_run: dict[int, dict[str, float]] = defaultdict(dict)
    # most samples of a campaign are not boot points: only these are read one by one
    from guestbench.store.columns import Samples
    for sample in Samples.coerce(samples).of_metrics(*wanted):
        by_run[sample["run_id"]][sample["metric"]] = sample["value"]
    durations: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        points = dict(by_run.get(run["id"], {}))
        if run["status"] != "ok" or "boot_powered_off" not in points:
            continue
        if "guest_uptime" in points and "boot_agent_ready" in points:
            points["clock_zero"] = points["boot_agent_ready"] - points["guest_uptime"]
        for name, end, start in PHASES:
            if end in points and (start is None or start in points):
                durations[run["environment"]][name].append(points[end] - (points[start] if start else 0))
    return {env: {name: PhaseCell(statistics.median(values), len(values))
                  for name, values in phases.items()}
            for env, phases in durations.items()}
