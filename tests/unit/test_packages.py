"""The one list of system packages (guestbench/packages.toml): install.sh installs exactly it,
every environment kind has its group, and `guestbench doctor` tells, kind by kind, what of
it this host lacks and the line that installs it."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path

import pytest

from guestbench import environments, packages
from guestbench.commands import listings
from guestbench.environments import survey
from guestbench.environments.base import Availability

ROOT = Path(__file__).resolve().parents[2]


def test_install_sh_installs_the_one_list_and_nothing_else() -> None:
    """Its packages come from packages.toml: a package added to the list is installed, and
    a list of install.sh's own would show here as a difference."""
    said = subprocess.run(["bash", str(ROOT / "install.sh"), "--print-packages"],
                          capture_output=True, text=True, check=True).stdout.splitlines()
    with_them, without = packages.apt_lists()
    assert said == [" ".join(with_them), " ".join(without)]
    text = (ROOT / "install.sh").read_text()
    assert "apt-get install" not in text.replace('apt-get install -y -qq "${options[@]}" '
                                                 '"${missing[@]}"', "")


def test_every_kind_has_its_group_and_every_group_its_reason() -> None:
    groups = packages.groups()
    kinds = {group.kind for group in groups if group.kind}
    assert kinds == set(environments.PUBLIC_KINDS)
    for group in groups:
        assert group.why and len(set(group.apt)) == len(group.apt), group.name
    assert {"guestbench", "workloads"} <= {group.name for group in groups}


def test_the_list_is_printed_for_install_sh_by_the_system_s_python(tmp_path) -> None:
    """install.sh runs packages.py before any virtual environment exists: the standard
    library alone (a clean interpreter, no site-packages) must read the list."""
    said = subprocess.run(["python3", "-S", "-I", str(ROOT / "guestbench" / "packages.py"),
                           "apt"], capture_output=True, text=True, cwd=tmp_path)
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines()[0].split() == packages.apt_lists()[0]


@pytest.fixture
def probes(monkeypatch):
    """Fixed probe answers: runc yes, crun and runsc no; every other preset yes."""
    answers = {"crun": Availability.no("crun not found (fix: apt-get install crun)"),
               "runsc": Availability.no("runsc not found")}

    @contextlib.contextmanager
    def started(here):
        yield lambda: [survey.Probed(name, environments.preset_spec(name),
                                     answers.get(name, Availability.yes("here")), 0.0)
                       for name in environments.PRESETS]
    monkeypatch.setattr(survey, "started", started)


def test_doctor_names_what_each_kind_lacks_and_the_line_that_installs_it(monkeypatch, host,
                                                                         probes) -> None:
    every = {name for group in packages.groups() for name in group.apt}
    monkeypatch.setattr(packages, "installed_apt", lambda names: every - {"crun", "fio"})
    text = listings.doctor(host, width=120)
    assert max(len(line) for line in text.splitlines()) <= 120
    oci = next(line for line in text.splitlines() if line.startswith("| oci "))
    assert "1 of 3: runc" in oci and "package crun" in oci
    assert "apt-get install crun" in oci
    workloads = next(line for line in text.splitlines() if line.startswith("| workloads "))
    assert "package fio" in workloads and "apt-get install fio" in workloads
    assert text.splitlines()[-1] == ("All of it: apt-get install crun fio (or bash install.sh "
                                     "in a checkout)")


def test_doctor_with_everything_installed_says_so(monkeypatch, host, probes) -> None:
    every = {name for group in packages.groups() for name in group.apt}
    monkeypatch.setattr(packages, "installed_apt", lambda names: every)
    text = listings.doctor(host, width=120)
    assert text.splitlines()[-1] == "Every package in guestbench's list is installed."
    xen = next(line for line in text.splitlines() if line.startswith("| xen "))
    assert "| -" in xen  # nothing missing, nothing to install


def test_off_debian_doctor_gives_the_names_without_checking_them(monkeypatch, host,
                                                                  probes) -> None:
    monkeypatch.setattr(packages, "installed_apt", lambda names: None)
    text = listings.doctor(host, width=120)
    namespace = next(line for line in text.splitlines() if line.startswith("| namespace "))
    assert "needs: util-linux" in namespace
    assert "not a Debian or Ubuntu host" in text


def test_an_xen_group_is_installed_without_its_recommends() -> None:
    group = packages.for_kind("xen")
    assert not group.recommends
    assert packages.install_line(group, ["xen-utils-4.17"]) == (
        "apt-get install --no-install-recommends xen-utils-4.17")
    assert "xen-utils-4.17" in packages.apt_lists()[1]


def test_doctor_s_whole_line_installs_xen_without_its_recommends(monkeypatch, host,
                                                                 probes) -> None:
    every = {name for group in packages.groups() for name in group.apt}
    monkeypatch.setattr(packages, "installed_apt",
                        lambda names: every - {"fio", "xen-utils-4.17"})
    last = listings.doctor(host, width=120).splitlines()[-1]
    assert last == ("All of it: apt-get install fio && apt-get install "
                    "--no-install-recommends xen-utils-4.17 (or bash install.sh in a checkout)")
