"""The system packages guestbench needs (packages.toml beside this file: the one list), and
which of them this host lacks. install.sh runs this file with the system's python3 before
any virtual environment exists, so it imports nothing outside the standard library:

    python3 guestbench/packages.py apt    two lines: the packages to install with their
                                          recommends, then those to install without
"""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from pathlib import Path

LIST = Path(__file__).with_name("packages.toml")
KIND_PREFIX = "kinds."


@dataclass(frozen=True)
class Group:
    """What one part of guestbench (an environment kind, the workloads) needs."""

    name: str                     # "guestbench", "kinds.oci", "workloads"
    why: str
    apt: tuple[str, ...]
    dnf: tuple[str, ...] = ()
    recommends: bool = True       # apt-get installs them with their recommends
    other: str = ""               # what no package gives (a VMM built from source)

    @property
    def kind(self) -> str | None:
        return self.name.removeprefix(KIND_PREFIX) if self.name.startswith(KIND_PREFIX) else None


def groups(path: Path = LIST) -> list[Group]:
    """Every group of the list, in its order."""
    with open(path, "rb") as file:
        table = tomllib.load(file)
    found = []
    for name, body in table.items():
        parts = body.items() if name == "kinds" else [(None, body)]
        for kind, group in parts:
            found.append(Group(f"{KIND_PREFIX}{kind}" if kind else name, group["why"],
                               tuple(group["apt"]), tuple(group.get("dnf", ())),
                               group.get("recommends", True), group.get("other", "")))
    return found


def for_kind(kind: str) -> Group | None:
    return next((group for group in groups() if group.kind == kind), None)


def apt_lists(path: Path = LIST) -> tuple[list[str], list[str]]:
    """Every apt package once: those installed with their recommends, then those without
    (a package in both is installed with them)."""
    every = groups(path)
    with_them = list(dict.fromkeys(p for g in every if g.recommends for p in g.apt))
    without = list(dict.fromkeys(p for g in every if not g.recommends for p in g.apt
                                 if p not in with_them))
    return with_them, without


def installed_apt(names: list[str] | tuple[str, ...]) -> set[str] | None:
    """Those of names that dpkg says are installed; None where there is no dpkg (not a
    Debian or Ubuntu host)."""
    if shutil.which("dpkg-query") is None:
        return None
    if not names:
        return set()
    try:
        said = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\\n", *names],
                              capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):  # as if there were none: names, unchecked
        return None
    return {line.split()[0] for line in said.splitlines()
            if line.endswith("install ok installed")}


def install_line(group: Group, missing: list[str]) -> str:
    """The apt-get line that installs missing (empty if nothing is)."""
    if not missing:
        return ""
    options = "" if group.recommends else "--no-install-recommends "
    return f"apt-get install {options}{' '.join(missing)}"


if __name__ == "__main__":
    import argparse  # deferred: the program's alone
    parser = argparse.ArgumentParser(description="guestbench's system packages, for install.sh")
    parser.add_argument("manager", choices=["apt"], help="whose names: apt (Debian, Ubuntu)")
    parser.parse_args()
    for packages in apt_lists():
        print(" ".join(packages))
