"""The platform table: what each environment ran (runtime, translator or VMM version, the
guest kernel), as a write-up lists its platforms and the HTML report's system card shows."""

from __future__ import annotations

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.report.model import Footnotes, Table, problem_text
from guestbench.report.formats.html.card import NOT_RECORDED, display_name, what_ran


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
        if not env.get("available"):
            mark = problem_text(_unavailable(env, report), footnotes)
            ran = mark if ran == NOT_RECORDED else f"{ran} {mark}"
        table.add([display_name(env), str(env.get("kind") or "-"), ran])
    return table


def _unavailable(env: dict, report: CampaignResults) -> Cell:
    """A cell standing for the environment's answer, so its footnote is the one every other
    table gives its unavailable cells: its runs' reason, else its probe's."""
    reason = next((run["reason"] for run in report.runs if run["environment"] == env["name"]
                   and run["status"] == "unavailable" and run["reason"]), None)
    return Cell(env["name"], "", "", "", problems=[
        ("unavailable", str(reason or env.get("probe") or "no reason given"))])
