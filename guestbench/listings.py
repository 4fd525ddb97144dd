"""What `envs`, `images` and `report --list` list: every environment preset probed on
this host, every cached guest image, every stored campaign."""

from __future__ import annotations

import io
import time

from rich.console import Console
from rich.table import Table

NO_IMAGE_YET = ("no image yet: one is built when a campaign first prepares a full-system "
                "environment (qemu, uml, command), before its first run\n")


def environments(here) -> str:
    """Each preset: its kind and options, available or not and why, and how long the probe
    took."""
    from guestbench import environments as kinds
    facts = here.facts
    table = Table(title=f"Environments on {facts['hostname']} ({facts['cpu_model']}, kernel "
                        f"{facts['kernel']})", title_justify="left")
    for column in ("preset", "kind", "options", "available", "probe answer", "probe s"):
        table.add_column(column, overflow="fold")
    for name in kinds.PRESETS:
        spec = kinds.preset_spec(name)
        began = time.monotonic()
        answer = kinds.create(spec).probe(here)
        options = ", ".join(f"{k}={','.join(v) if isinstance(v, tuple) else v}"
                            for k, v in spec.options().items() if v not in (None, ()))
        table.add_row(name, spec.kind, options, "yes" if answer.available else "no",
                      answer.reason, f"{time.monotonic() - began:.2f}",
                      style=None if answer.available else "yellow")
    return _drawn(table)


def images() -> str:
    """Each cached guest image: kernel, modules, tools, size and when it was built."""
    from guestbench import images as guest_images
    rows = guest_images.cached()
    table = Table(title=f"Guest images in {guest_images.cache_root()}", title_justify="left")
    for column in ("id", "kernel", "version", "modules", "tools", "MiB", "created"):
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(row["id"], str(row["kernel"]), row["kernel_version"],
                      ",".join(row["modules"]) or "-", ",".join(row["tools"]) or "-",
                      f"{row['size_bytes'] / 2**20:.1f}", str(row["created_at"])[:19])
    return _drawn(table) + ("" if rows else NO_IMAGE_YET)


def campaigns(opened) -> str:
    """report --list: each stored campaign's id, start, status and name, one a line."""
    return "".join(f"{row['id']:>5}  {row['created_at']:%Y-%m-%d %H:%M}  {row['status']:<11}  "
                   f"{row['name']}\n" for row in opened.campaigns())


def _drawn(table: Table) -> str:
    shown = Console()  # what standard output is
    buffer = io.StringIO()
    Console(file=buffer, width=max(shown.width, 120), force_terminal=shown.is_terminal,
            color_system=shown.color_system).print(table)
    return buffer.getvalue()
