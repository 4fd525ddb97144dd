"""The HTML report's system card: the host in a few lines and what each environment ran
(runtime, translator or VMM version, gVisor's platform, the guest kernel)."""

from __future__ import annotations

from html import escape
from typing import Any

from guestbench.analysis.results import CampaignResults
from guestbench.host import class_shown
from guestbench.report import functional
from guestbench.report.model import STATUS_MARKS
from guestbench.report.tables.platform import (GUEST_KINDS, HOST_KERNEL, NOT_RECORDED,
                                              accelerator, display_name, shown_ran)

def _e(text: object) -> str:
    return escape(str(text), quote=True)


def system_card(report: CampaignResults, warnings_anchor: str | None) -> str:
    """The host (name, its class: CPU, XSAVE, last-level cache, cgroup mode, kernel, VM;
    memory, disk) and each environment's versions, compact enough to sit beside the
    heatmap."""
    facts = report.host_facts
    shown = class_shown(facts)
    cpu = shown["CPU"]
    if facts.get("logical_cpus"):
        cpu += f", {facts['logical_cpus']} logical CPUs"
    host = str(facts.get("hostname") or "?")
    if facts.get("arch"):
        host += f" ({facts['arch']})"
    host += {True: ", itself a virtual machine", False: ", not a virtual machine"}.get(
        facts.get("virtualised"), "")
    memory = facts.get("memory_mib")
    lines = [("host", host), ("CPU", cpu), ("XSAVE", shown["XSAVE"]),
             ("last-level cache", shown["LLC"]), ("cgroups", shown["cgroup"]),
             ("kernel", facts.get("kernel") or "?")]
    if memory:
        lines.append(("memory", f"{memory / 1024:.1f} GiB"))
    if facts.get("disk"):
        lines.append(("disk", facts["disk"]))
    lines.append(("guestbench", report.campaign.guestbench_version or "?"))
    host_rows = "".join(f"<dt>{_e(name)}</dt><dd>{_e(value)}</dd>" for name, value in lines)
    env_rows = "".join(_env_row(env, facts.get("kernel"), functional.mark(report, env.name))
                       for env in report.environments)
    warnings = (report.host_checks or {}).get("warnings") or []
    checks = ""
    if warnings:
        said = f"{len(warnings)} host warning{'s' if len(warnings) > 1 else ''}"
        linked = f'<a href="#{_e(warnings_anchor)}">{_e(said)}</a>' if warnings_anchor else _e(said)
        checks = f'<p class="card-warning">{linked}: the numbers may be noisy.</p>'
    return (f'<aside id="system-card" class="card"><h2>System</h2><dl>{host_rows}</dl>{checks}'
            '<table class="versions"><thead><tr><th scope="col">environment</th>'
            f'<th scope="col">what ran</th></tr></thead><tbody>{env_rows}</tbody></table>'
            "</aside>")


def _env_row(env: dict[str, Any], host_kernel: str | None, functional_mark: str = "") -> str:
    """functional_mark: a functional environment's (functional.mark), after its name."""
    ran = shown_ran(env, host_kernel)
    name = _e(_named(display_name(env), env.name, functional_mark))
    # the accelerator and a guest's size under what ran, in the cell's width: the card sits
    # beside the heatmap and must not widen the page
    spec, said = env.spec or {}, []
    if accelerator(env) != HOST_KERNEL:
        said.append(accelerator(env))
    if env.kind in GUEST_KINDS and spec.get("memory_mib"):
        vcpus = spec.get("vcpus", 1)
        said.append(f"{spec['memory_mib']} MiB, {vcpus} vCPU{'s' if vcpus > 1 else ''}")
    more = f'<br><span class="detail">{_e("; ".join(said))}</span>' if said else ""
    if not env.available:  # nothing is read from a program that could not run
        why = _e(env.probe or "unavailable")
        mark = (f'<span class="status-bad" title="{why}">{STATUS_MARKS["unavailable"]} '
                "unavailable</span>")
        return (f'<tr><th scope="row">{name}</th><td>'
                f'{"" if ran == NOT_RECORDED else _e(ran) + " "}{mark}{more}</td></tr>')
    return f'<tr><th scope="row">{name}</th><td>{_e(ran)}{more}</td></tr>'


def _named(shown: str, name: str, mark: str) -> str:
    """'runsc § (ptrace)': the mark after the name, before what display_name adds."""
    return name + mark + shown[len(name):] if shown.startswith(name) else shown + mark
