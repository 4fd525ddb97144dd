"""The platform table: what each environment ran (runtime, translator or VMM version, the
guest kernel), as a write-up lists its platforms and the HTML report's system card shows."""

from __future__ import annotations

from typing import Any

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import Footnotes, Table, problem_text


# The facts environments record about what they ran (environments/*.py facts()), in the
# order they are shown; a key ending in _version that is not listed is shown after them.
VERSION_FACTS = ("runtime_version", "vmm_version", "unshare_version")
NOT_RECORDED = "not recorded"  # a campaign stored before its kind recorded versions


def display_name(env: dict[str, Any]) -> str:
    """'runsc (ptrace)': the name, with gVisor's platform where the environment recorded one."""
    platform = (env.facts or {}).get("platform")
    name = env.name
    return f"{name} ({platform})" if platform and platform not in name else name


def what_ran(env: dict[str, Any], host_kernel: str | None) -> str:
    """'runc version 1.1.5+ds1', 'QEMU emulator version 7.2.22 (...); guest kernel 6.1.0';
    the host's kernel for native; 'not recorded' for a campaign older than these facts."""
    facts = env.facts or {}
    keys = [*VERSION_FACTS, *sorted(key for key in facts
                                    if key.endswith("_version") and key not in VERSION_FACTS)]
    parts = [str(facts[key]) for key in keys if facts.get(key)]
    guest = facts.get("guest_kernel")
    if guest and str(guest) not in parts:
        parts.append(f"guest kernel {guest}")
    elif guest:  # UML: the binary's version is the guest kernel's release
        parts = [f"{part} (guest kernel)" if part == str(guest) else part for part in parts]
    if not parts and env.kind == "native" and host_kernel:
        parts.append(f"host kernel {host_kernel}")
    return "; ".join(parts) or NOT_RECORDED


def platform_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    if not report.environments:
        return None
    host_kernel = report.host_facts.get("kernel")
    table = Table("Platform: what each environment ran", ["environment", "kind", "what ran"],
                  [], label_columns=3, name="platform",  # words, not figures
                  note="What ran: the runtime's, translator's or VMM's version as the "
                       "environment reported it, and the guest kernel's release; native runs "
                       f"on the host's kernel. {NOT_RECORDED}: a campaign stored before its "
                       "kind recorded versions.")
    for env in report.environments:
        ran = what_ran(env, host_kernel)
        if not env.available:
            mark = problem_text(_unavailable(env, report), footnotes)
            ran = mark if ran == NOT_RECORDED else f"{ran} {mark}"
        table.add([display_name(env), str(env.kind or "-"), ran])
    return table


def _unavailable(env: dict, report: CampaignResults) -> Cell:
    """A cell standing for the environment's answer, so its footnote is the one every other
    table gives its unavailable cells: its runs' reason, else its probe's."""
    reason = next((run.reason for run in report.runs if run.environment == env.name
                   and run.status == "unavailable" and run.reason), None)
    return Cell(env.name, "", "", "", problems=[
        ("unavailable", str(reason or env.probe or "no reason given"))])
