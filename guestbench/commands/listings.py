"""What `envs`, `images` and `report --list` list: every environment preset probed on
this host, every cached guest image (as tables in the report tables' style,
report/listing.py), every stored campaign. Each list imports only what it draws: report
--list (a line per campaign) needs neither the kinds, nor the images, nor rich."""

from __future__ import annotations

NO_IMAGE_YET = ("no image yet: one is built when a campaign first prepares a full-system\n"
                "environment (qemu, uml, command), before its first run")


def environments(here) -> str:
    """Each preset: its kind and options, available or not and why, and how long the probe
    took (a kept KVM test boot's answer where there is one: environments/survey.py)."""
    from guestbench.environments import survey  # deferred: the kinds' registry, 90 ms
    with survey.started(here) as answers:
        from guestbench.report.listing import Column, draw  # deferred: rich loads as probes run
        probed = answers()
    facts = here.facts
    # the kind and its options share a column: with both apart, the longest preset names
    # (cloud-hypervisor-nested) took the table past 120 columns
    rows = [[one.preset, f"{one.spec.kind}: {one.options}" if one.options else one.spec.kind,
             "yes" if one.answer.available else "no", one.answer.reason,
             f"{one.probe_s:.2f}"] for one in probed]
    return draw(f"Environments on {facts['hostname']} ({facts['cpu_model']}, kernel "
                f"{facts['kernel']})",
                [Column("preset", whole=True), Column("kind: options", max_width=24),
                 Column("available", whole=True),
                 Column("probe answer", min_width=39),  # a path to remove, whole
                 Column("probe s", whole=True)], rows)


def images(width: int | None = None) -> str:
    """Each cached guest image: kernel, modules, tools, size and when it was built (width:
    the terminal's, at most 120)."""
    from guestbench import images as guest_images  # deferred: 17 ms
    from guestbench.report.listing import Column, draw  # deferred: rich, 21 ms
    rows = [[row["id"], str(row["kernel"]), row["kernel_version"],
             ",".join(row["modules"]) or "-", ",".join(row["tools"]) or "-",
             f"{row['size_bytes'] / 2**20:.1f}", _minute(row.get("created_at"))]
            for row in guest_images.cached()]
    drawn = draw(f"Guest images in {guest_images.cache_root()}",
                 [Column("id", whole=True), Column("kernel"), Column("version"),
                  Column("modules"), Column("tools"), Column("MiB", whole=True),
                  Column("created (UTC)", whole=True)], rows, width)
    return drawn + ("" if rows else NO_IMAGE_YET + "\n")


def campaigns(opened, as_json: bool = False) -> str:
    """report --list: each stored campaign's id, start, status and name, one a line; as JSON,
    a list of them (its start in ISO 8601, UTC), for a script that picks one."""
    found = opened.campaigns()
    if as_json:
        import json  # deferred: 2 ms that the lines never pay
        return json.dumps([{"id": c.id, "name": c.name, "created_at": c.created_at.isoformat(),
                            "status": c.status} for c in found], indent=2) + "\n"
    return "".join(f"{campaign.id:>5}  {campaign.created_at:%Y-%m-%d %H:%M}  "
                   f"{campaign.status:<11}  {campaign.name}\n" for campaign in found)


def _minute(stamp: str | None) -> str:
    """'2026-11-25T20:18:02+00:00' (the manifest's, in UTC) as '2026-11-25 20:18'."""
    return (stamp or "?")[:16].replace("T", " ")
