"""The version table: environments that differ only in their kernel or VMM binary, side by side.

A plan that sweeps `kernel = [...]` or `binary = [...]` gives one environment per
value, each spec equal to the others apart from `name` and the swept key. Such a
group gets one table: a row per workload (its primary metric; for the boot
workload each boot phase), a column per version, the first version's median and
every other version's % change against it with the 95% interval of the ratio of
medians (the ratio table's MOVER interval, guestbench.analysis.stats), marked
when that interval lies wholly beyond the noise threshold of `guestbench compare`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from guestbench.analysis import results as analysed
from guestbench.analysis.compare import FASTER, SAME, SLOWER, THRESHOLD, beyond_threshold
from guestbench.analysis.cells import Interval, Cell
from guestbench.analysis.results import CampaignResults
from guestbench.store.records import Environment
from guestbench.report.model import (STYLE, Footnotes, Table, decorate, empty_text, format_value,
                                     problem_text, row_scale)

# swept spec key -> the environment fact that names the version it ran; "campaign": the tag
# of each campaign of `report A B` (commands/joined.py), the same plan run twice
VERSION_KEYS = {"kernel": "guest_kernel", "binary": "vmm_version", "campaign": ""}
WHAT = {"kernel": "guest kernel", "binary": "VMM binary", "campaign": "campaigns"}
# The boot workload's rows: its phase points on the host's clock, from VMM start.
BOOT_METRICS = ("boot_first_byte", "boot_userspace", "boot_agent_ready", "boot_powered_off")
MARKS = {SLOWER: "slower", FASTER: "faster"}


@dataclass
class VersionGroup:
    """Environments of one kind whose specs differ only in `key` (and their names)."""

    key: str  # "kernel" or "binary"
    name: str  # the environments' name without the swept part
    environments: list[str]  # in plan order; the first is the reference
    versions: list[str]  # column headers, one per environment
    values: list[str]  # the spec's value of `key` per environment


def version_groups(report: CampaignResults) -> list[VersionGroup]:
    """Every group of environments that differ from each other only in `kernel` or `binary`.

    Environments are grouped by kind and by every spec option except `name` and the
    swept key; a group needs at least two different values of that key. So a plan
    sweeping kernel = [A, B] and vcpus = [1, 2] gives two kernel groups, one per vCPU
    count (A against B at 1 vCPU, and at 2), while two environments that differ both in
    kernel and in vcpus are no group: their difference is not the version alone.
    """
    groups = []
    for key, fact in VERSION_KEYS.items():
        buckets: dict[tuple[str, str], list[Environment]] = {}
        for env in report.environments:
            spec = env.spec or {}
            if key not in spec:
                continue
            rest = {option: value for option, value in spec.items() if option not in ("name", key)}
            bucket = (env.kind, json.dumps(rest, sort_keys=True, default=str))
            buckets.setdefault(bucket, []).append(env)
        for members in buckets.values():
            values = [_plain(env.spec.get(key)) for env in members]
            if len(set(values)) < 2:
                continue
            groups.append(VersionGroup(key, _group_name(members, key),
                                       [env.name for env in members],
                                       _headers(members, key, fact), values))
    return groups


def _plain(value: Any) -> str:
    return "default" if value is None else str(value)


def _group_name(members: list[Environment], key: str) -> str:
    """'qemu' for qemu-kernel_boot_vmlinuz_A and qemu-kernel_boot_vmlinuz_B (a plan's sweep
    names each environment <name>-<key><value>)."""
    if key == "campaign":  # "tcg (19.02)", "tcg (current)": the name before the tag
        stripped = {env.name.removesuffix(f" ({env.spec.get(key)})") for env in members}
    else:
        stripped = {re.sub(rf"-{key}[A-Za-z0-9_.]*", "", env.name) for env in members}
    return stripped.pop() if len(stripped) == 1 else f"{members[0].kind} ({key} sweep)"


def _headers(members: list[Environment], key: str, fact: str) -> list[str]:
    """The version each environment ran, from its facts, else its spec's value; made unique
    with the environment's name where two read the same."""
    headers = []
    for env in members:
        facts = env.facts or {}
        value = (facts.get(fact) if fact else None) or env.spec.get(key)
        headers.append(str(value) if value else env.name)
    return [f"{header} ({env.name})" if headers.count(header) > 1 else header
            for header, env in zip(headers, members)]


def rows(report: CampaignResults) -> list[tuple[str, str]]:
    """(label, metric) per row: each workload's primary metric; the boot phases for boot."""
    out = []
    for label, metric in report.primary.items():
        phases = [name for name in BOOT_METRICS if (label, name) in report.results.cells]
        if metric in BOOT_METRICS and phases:
            out += [(label, name) for name in phases]
        else:
            out.append((label, metric))
    return out


def version_tables(report: CampaignResults, footnotes: Footnotes) -> list[Table]:
    """One table per version group (none when the campaign swept no kernel or binary)."""
    return [table for table in (version_table(report, group, footnotes)
                                for group in version_groups(report)) if table is not None]


def version_table(report: CampaignResults, group: VersionGroup, footnotes: Footnotes) -> Table | None:
    first = group.versions[0]
    what = WHAT[group.key]
    interval = "" if STYLE.get().plain and not STYLE.get().spread else " [95% CI]"
    table = Table(f"Versions of {group.name} ({what}): median of the first, % change against "
                  f"it{interval}", ["workload", "metric", *group.versions], [],
                  name=f"versions-{group.name}-{group.key}",
                  note=_note(group, first))
    for label, metric in rows(report):
        row = report.results.cells[(label, metric)]
        cells = [row[env] for env in group.environments]
        if not any(cell.runs for cell in cells):
            continue  # the workload left these environments out
        unit, divisor = row_scale(cells[0].unit, cells)
        better = ", higher is better" if cells[0].higher_is_better else ""
        table.add([label, f"{metric} ({unit}{better})",
                   _median_text(cells[0], footnotes, divisor),
                   *(_change_text(cell, cells[0], footnotes) for cell in cells[1:])],
                  [(env, label) for env in group.environments])
    return table if table.rows else None


def _note(group: VersionGroup, first: str) -> str:
    columns = "; ".join(f"{header} = {env} ({group.key} {value})" for header, env, value in
                        zip(group.versions, group.environments, group.values))
    return (f"Columns: {columns}. The first column is the median of {first}; the others the "
            f"change of each median against it, + meaning a larger number (slower for times "
            "and cycles, faster for throughput), with the 95% interval of the ratio of medians "
            "(as in the ratio table). 'slower' or 'faster' marks a change whose whole interval "
            f"lies beyond the ±{THRESHOLD:.0%} noise threshold of guestbench compare (no "
            "p-value here: compare two campaigns for a test).")


def _median_text(cell: Cell, footnotes: Footnotes, divisor: float) -> str:
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    return decorate(format_value(cell.median / divisor), cell, footnotes)


def _change_text(cell: Cell, base: Cell, footnotes: Footnotes) -> str:
    if not cell.values:
        return problem_text(cell, footnotes) if cell.problems else empty_text(cell)
    ratio = analysed.change(base, cell)
    if ratio is None:
        return decorate("no reference", cell, footnotes)
    text = format_change(ratio.value - 1)
    if ratio.low is not None and ratio.high is not None:
        text += f" [{format_change(ratio.low - 1)}, {format_change(ratio.high - 1)}]"
    mark = MARKS.get(verdict(ratio, cell))
    if mark:
        text += f" {mark}"
    return decorate(text, cell, footnotes)


def verdict(ratio: Interval, cell: Cell) -> str:
    """compare's rule for a change beyond its noise threshold, on the interval alone: this
    table has no p-value, so a change counts only when its whole interval is beyond."""
    if ratio.low is None or ratio.high is None:
        return SAME
    return beyond_threshold(ratio, cell.unit, THRESHOLD, cell.declared_higher)


def format_change(fraction: float) -> str:
    """0.123 -> '+12%', -0.031 -> '-3.1%', 0.0004 -> '+0.04%'; two significant digits."""
    percent = fraction * 100
    if abs(percent) < 0.005:
        return "0%"
    if abs(percent) >= 10:
        return f"{percent:+.0f}%"
    return f"{float(f'{percent:.2g}'):+g}%"
