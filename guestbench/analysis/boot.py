"""Boot phases as a breakdown (like libguestfs's boot analysis): per-run durations, then medians."""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# (name shown, sample at the phase's end, sample at its start; None = VMM process start)
PHASES = (
    ("VMM start -> first console byte", "boot_first_byte", None),
    ("first byte -> userspace (kernel boot)", "boot_userspace", "boot_first_byte"),
    ("userspace -> agent ready (init)", "boot_agent_ready", "boot_userspace"),
    ("agent ready -> powered off", "boot_powered_off", "boot_agent_ready"),
    ("total: VMM start -> powered off", "boot_powered_off", None),
    ("guest's own uptime at agent start", "guest_uptime", None),
)


@dataclass(frozen=True)
class PhaseCell:
    median_ms: float
    n: int


def breakdown(runs: Iterable[dict[str, Any]], samples: Iterable[dict[str, Any]]
              ) -> dict[str, dict[str, PhaseCell]]:
    """{environment: {phase name: median duration}} over the ok runs that have boot samples."""
    by_run: dict[int, dict[str, float]] = defaultdict(dict)
    for sample in samples:
        by_run[sample["run_id"]][sample["metric"]] = sample["value"]
    durations: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        points = by_run.get(run["id"], {})
        if run["status"] != "ok" or "boot_powered_off" not in points:
            continue
        for name, end, start in PHASES:
            if end in points and (start is None or start in points):
                durations[run["environment"]][name].append(points[end] - (points[start] if start else 0))
    return {env: {name: PhaseCell(statistics.median(values), len(values))
                  for name, values in phases.items()}
            for env, phases in durations.items()}
