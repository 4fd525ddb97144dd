"""The platform table, the setup a write-up states: the host (CPU, cores, RAM, disk, kernel)
and what each environment ran (runtime, translator or VMM version, the guest kernel), under
which accelerator in words, with the guest's memory and vCPUs; as the HTML report's system
card shows it. Markdown puts it first, once per report."""

from __future__ import annotations

from typing import Any

from guestbench.analysis.cells import Cell
from guestbench.analysis.results import CampaignResults
from guestbench.host import class_shown
from guestbench.report.functional import as_written
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


def shown_ran(env: dict[str, Any], host_kernel: str | None) -> str:
    """what_ran as a write-up's setup names it (functional.as_written)."""
    return as_written(what_ran(env, host_kernel))


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


HOST_KERNEL = "none: the host kernel"  # the accelerator of native, namespaces, runc, crun
# the kinds whose guest has memory and vCPUs of its own, of those that do not record their
# accelerator (a kind that records one, in its facts, has a guest of its own too)
GUEST_KINDS = ("qemu", "xen", "xen-pv", "uml", "command")
ACCELERATOR = "accelerator"  # the fact of a kind that says its accelerator in words


def own_guest(env) -> bool:
    """Whether the environment's guest has memory and vCPUs of its own."""
    return env.kind in GUEST_KINDS or ACCELERATOR in (env.facts or {})


def accelerator(env) -> str:
    """What runs the guest's instructions, in words: "KVM (hardware)", "TCG (QEMU's
    emulation)", "none: the host kernel", ..."""
    facts, spec, kind = env.facts or {}, env.spec or {}, env.kind
    if facts.get(ACCELERATOR):
        return str(facts[ACCELERATOR])
    nested = spec.get("inside") not in (None, "none")
    if kind in ("qemu", "xen", "xen-pv"):
        accel = facts.get("accel") or spec.get("accel")
        words = {"tcg": "TCG (QEMU's emulation)", "kvm": "KVM (hardware)",
                 "auto": "KVM where it boots, else TCG"}.get(accel, str(accel or "-"))
        if nested:
            words = ("KVM in an L1 guest that runs under TCG" if accel == "kvm"
                     else f"{ {'tcg': 'TCG', 'auto': 'KVM or TCG'}.get(accel, words)} "
                          "inside an L1 guest under TCG")
        return {"xen": f"Xen on {words}", "xen-pv": f"Xen PV on {words}"}.get(kind, words)
    if kind == "qemu-user":
        return "TCG (QEMU user-mode translation)"
    if kind == "uml":
        return "none: the guest kernel is a host process (UML)" + (
            ", in an L1 guest under TCG" if nested else "")
    if kind == "oci" and facts.get("platform"):
        return f"gVisor's {facts['platform']} platform (its own kernel in user space)"
    if kind == "command":
        argv = " ".join(str(part) for part in spec.get("argv") or ())
        return "KVM (hardware, from its command line)" if "kvm" in argv.lower() else \
            "as its command line says"
    return HOST_KERNEL


def host_line(facts: dict[str, Any]) -> str:
    """The host as a write-up states it: CPU, cores, last-level cache, RAM, disk, kernel
    (a line of at most 160 characters with the rest of a table's title); the rest of its
    class is in class_note()."""
    memory = facts.get("memory_mib")
    shown = class_shown(facts)
    parts = [f"{facts.get('cpu_model') or 'CPU not recorded'}, "
             f"{facts.get('logical_cpus') or '?'} logical CPUs", f"LLC {shown['LLC']}",
             f"{memory / 1024:.1f} GiB RAM" if memory else "RAM not recorded",
             _disk(facts["disk"]) if facts.get("disk") else "disk not recorded",
             f"kernel {facts.get('kernel') or 'not recorded'}"]
    if facts.get("virtualised"):
        parts.append("itself a VM")
    return "; ".join(parts)


def class_note(facts: dict[str, Any]) -> str:
    """What the setup line leaves out of the host's class (host.HostClass)."""
    shown = class_shown(facts)
    return f"Host class: {shown['CPU']}, XSAVE {shown['XSAVE']}, cgroup {shown['cgroup']}."


def _disk(fact: str) -> str:
    """The host's disk fact ("vda: virtio disk (virtual), 256 GiB") as a write-up says it:
    "virtio disk (virtual), 256 GiB"; "disk sda: ..." where the model does not say disk."""
    told = fact.split(": ", 1)[-1]
    return told if "disk" in told.lower() else f"disk {fact}"


def platform_table(report: CampaignResults, footnotes: Footnotes) -> Table | None:
    if not report.environments:
        return None
    host_kernel = report.host_facts.get("kernel")
    guests = any(own_guest(env) for env in report.environments)
    table = Table(f"Setup: host {host_line(report.host_facts)}",
                  ["environment", "what ran", "accelerator",
                   *(["guest memory", "vCPUs"] if guests else [])],
                  [], label_columns=3 + 2 * guests, name="platform",  # words, not figures
                  keep_in_title=f"host {host_line(report.host_facts)}",
                  note=f"{class_note(report.host_facts)} What ran: the runtime's, "
                       "translator's or VMM's version as the environment reported it, and "
                       "the guest kernel's release" + ("; native runs on the host's kernel."
                                                       if any(env.kind == "native" for env in
                                                              report.environments) else "."))
    for env in report.environments:
        ran = shown_ran(env, host_kernel)
        told = f" {NOT_RECORDED}: a campaign stored before its kind recorded versions."
        if ran == NOT_RECORDED and told not in table.note:
            table.note += told
        if not env.available:
            mark = problem_text(_unavailable(env, report), footnotes)
            ran = mark if ran == NOT_RECORDED else f"{ran} {mark}"
        elif (failed := _never_ok(env, report)) is not None:  # it is set up, but never ran
            ran = f"{ran} {problem_text(failed, footnotes)}"
        spec = env.spec or {}
        own = own_guest(env)
        table.add([display_name(env), ran, accelerator(env),
                   *([f"{spec['memory_mib']} MiB" if own and spec.get("memory_mib") else "-",
                      str(spec.get("vcpus", 1)) if own else "-"] if guests else [])])
    return table


def _never_ok(env, report: CampaignResults) -> Cell | None:
    """A cell of the environment's runs where it had some and none ended ok (it crashed in
    every one): its row would otherwise read as if it had run; None where one ran."""
    runs = [run for run in report.runs if run.environment == env.name]
    if not runs or any(run.status == "ok" for run in runs):
        return None
    return Cell(env.name, "", "", "", problems=[(run.status, run.reason or "no reason given")
                                                for run in runs])


def _unavailable(env: dict, report: CampaignResults) -> Cell:
    """A cell standing for the environment's answer, so its footnote is the one every other
    table gives its unavailable cells: its runs' reason, else its probe's."""
    reason = next((run.reason for run in report.runs if run.environment == env.name
                   and run.status == "unavailable" and run.reason), None)
    return Cell(env.name, "", "", "", problems=[
        ("unavailable", str(reason or env.probe or "no reason given"))])
