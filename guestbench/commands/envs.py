"""guestbench envs, doctor and images: every preset probed here; what is missing for each
kind and how to install it; every cached guest image."""

from __future__ import annotations

import click

from guestbench.commands import listings


@click.command()
def envs() -> None:
    """Every environment preset: available on this host, or why not."""
    from guestbench import host  # deferred: 13 ms that --help never pays
    click.echo(listings.environments(host.collect()), nl=False)


@click.command()
def doctor() -> None:
    """What each environment kind needs that this host lacks, and the line that installs it."""
    from guestbench import host  # deferred: 13 ms that --help never pays
    click.echo(listings.doctor(host.collect()), nl=False)


@click.command("images")
def images() -> None:
    """Cached guest images (kernel + initramfs) of full-system guests."""
    click.echo(listings.images(), nl=False)
