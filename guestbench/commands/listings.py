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


def doctor(here, width: int | None = None) -> str:
    """Each environment kind and each of guestbench's own needs: which presets of the kind
    are available here, what is missing (its packages this host lacks, the probes' reasons),
    and the line that installs it (packages.toml, the list install.sh installs)."""
    from guestbench import packages  # deferred: tomllib and the list, read only here
    from guestbench.environments import PUBLIC_KINDS, survey  # deferred: the registry, 90 ms
    groups = packages.groups()
    with survey.started(here) as answers:
        from guestbench.report.listing import Column, draw  # deferred: rich loads as probes run
        names = sorted({name for group in groups for name in group.apt})
        installed = packages.installed_apt(names)
        probed = answers()
    by_kind = {kind: [one for one in probed if one.spec.kind == kind] for kind in PUBLIC_KINDS}
    rows, needed = [], []
    for group in sorted(groups, key=lambda g: g.kind is None):  # the kinds first
        kind = group.kind
        if kind is not None and kind not in by_kind:
            continue
        missing = ([name for name in group.apt if name not in installed]
                   if installed is not None else [])
        reasons = [f"{one.preset}: {one.answer.reason}" for one in by_kind.get(kind, [])
                   if not one.answer.available]
        if installed is None:
            line = f"needs: {' '.join(group.dnf or group.apt)}" if group.apt else ""
        else:
            line = packages.install_line(group, missing)
            needed += [(name, group.recommends) for name in missing]
        presets = by_kind.get(kind, [])
        if group.other and (missing or (presets and not any(p.answer.available
                                                            for p in presets))):
            line = "; ".join(filter(None, [line, group.other]))  # none runs: maybe not built
        status = (f"{sum(one.answer.available for one in presets)} of {len(presets)}: "
                  + ", ".join(one.preset for one in presets if one.answer.available)
                  if presets else "-")
        rows.append([kind or group.name, status.rstrip(": ") if presets else status,
                     "; ".join([*(f"package {name}" for name in missing), *reasons]) or "-",
                     line or "-"])
    facts = here.facts
    title = (f"What guestbench needs on {facts['hostname']} (kernel {facts['kernel']}): each "
             "kind's presets available here, what is missing, how to install it")
    drawn = draw(title, [Column("kind or part", whole=True),
                         Column("available presets", max_width=26),
                         Column("missing", min_width=30), Column("install", max_width=36)],
                 rows, width)
    if installed is None:
        return drawn + ("dpkg-query was not found: this is not a Debian or Ubuntu host, so the "
                        "packages installed are not checked; the names above are Fedora's where "
                        "known, else Debian's.\n")
    if needed:  # Xen's without their recommends, as install.sh installs them
        lines = [packages.install_line(packages.Group("all", "", (), recommends=recommends),
                                       list(dict.fromkeys(n for n, r in needed if r == recommends)))
                 for recommends in (True, False)]
        return drawn + (f"All of it: {' && '.join(filter(None, lines))} "
                        "(or bash install.sh in a checkout)\n")
    return drawn + "Every package in guestbench's list is installed.\n"


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
