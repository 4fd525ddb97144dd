"""`guestbench run --resume CAMPAIGN`: which stored campaigns may be resumed here, and why not.

A campaign is resumed on the host that ran it (the same fingerprint: hostname, CPU,
kernel, memory), with the plan it stored, and only when no process is running it: one
that ended `interrupted` or `failed`, or one left `running` by a process that is gone
(killed by SIGKILL, or by a power cut). What a resume does to the stored rows is in
Runner.resume and Store.reopen_campaign.
"""

from __future__ import annotations

from guestbench.host import Host
from guestbench.process import proc
from guestbench.store.records import Campaign

FINGERPRINT_KEYS = ("hostname", "cpu_model", "logical_cpus", "kernel", "memory_mib", "arch")


class NotResumable(Exception):
    """The campaign cannot be resumed here; the message says why and the fix."""


def check(campaign: Campaign, here: Host) -> str | None:
    """None when the campaign may be resumed here, with nothing to say; a warning to print
    when it may but that is not certain; raises NotResumable otherwise."""
    name = f"campaign {campaign.id} ({campaign.name!r})"
    if campaign.status == "finished":
        raise NotResumable(f"{name} finished already: nothing to resume "
                           "(fix: 'guestbench report' shows it; run its plan again for more runs)")
    stored = Host(campaign.host_facts or {})
    if stored.fingerprint != here.fingerprint:
        differs = [f"{key} {stored.facts.get(key)!r} there, {here.facts.get(key)!r} here"
                   for key in FINGERPRINT_KEYS if stored.facts.get(key) != here.facts.get(key)]
        raise NotResumable(f"{name} ran on another host ({'; '.join(differs)}): resuming it "
                           "here would mix two hosts in one campaign (fix: resume it on that "
                           "host, or run its plan again here as a new campaign)")
    if campaign.status != "running":
        return None
    owner = campaign.owner
    running = proc.still_running(owner)
    if running:
        raise NotResumable(f"{name} is still being run by process {owner['pid']} on this host "
                           f"(fix: wait for it to end, or stop it: kill {owner['pid']})")
    if running is None:
        return (f"{name} is marked running and does not say which process runs it (a store "
                "written before guestbench recorded that); resuming it while another "
                "guestbench still runs it would store runs twice")
    return None
