"""Environments record the versions of the programs they ran (runc, runsc and its platform,
qemu-user, unshare) as facts, read with the one process helper and bounded."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guestbench.environments import program_version
from guestbench.environments.kinds import namespace, oci, qemu_user


@pytest.fixture
def programs(tmp_path: Path, monkeypatch) -> Path:
    """A folder first on PATH: programs written there replace the host's."""
    folder = tmp_path / "bin"
    folder.mkdir()
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    return folder


def program(folder: Path, name: str, script: str) -> None:
    path = folder / name
    path.write_text(f"#!/bin/sh\n{script}\n")
    path.chmod(0o755)


def test_runsc_records_its_first_version_line_and_its_default_platform(programs, host) -> None:
    program(programs, "runsc", 'echo "runsc version 9.9~test"; echo "spec: 1.0.2-dev"')
    runsc = oci.Oci(oci.OciSpec(name="runsc", runtime="runsc"))
    assert runsc.prepare(host).available
    assert runsc.facts() == {"runtime_version": "runsc version 9.9~test", "platform": "ptrace"}


def test_runsc_records_the_platform_its_spec_names(programs, host) -> None:
    program(programs, "runsc", 'echo "runsc version 9.9~test"')
    runsc = oci.Oci(oci.OciSpec(name="runsc-kvm", runtime="runsc", platform="kvm"))
    runsc.prepare(host)
    assert runsc.facts()["platform"] == "kvm"
    assert "--platform=kvm" in runsc._global_args(_bundle_stub())


def test_runc_has_no_platform(programs, host) -> None:
    program(programs, "runc", 'echo "runc version 1.2.3"; echo "commit: abc"')
    runc = oci.Oci(oci.OciSpec(name="runc", runtime="runc"))
    runc.prepare(host)
    assert runc.facts() == {"runtime_version": "runc version 1.2.3"}


def test_a_version_on_stderr_is_read_and_silence_records_none(programs, host) -> None:
    program(programs, "crun", 'echo "crun version 1.8" >&2')
    assert program_version.first_line(["crun", "--version"]) == "crun version 1.8"
    program(programs, "runc", "exit 1")
    runc = oci.Oci(oci.OciSpec(name="runc", runtime="runc"))
    runc.prepare(host)
    assert runc.facts() == {}


def test_a_hanging_or_missing_program_gives_no_version(programs, monkeypatch) -> None:
    monkeypatch.setattr(program_version, "VERSION_TIMEOUT_S", 0.2)
    program(programs, "runsc", "exec sleep 30")
    assert program_version.first_line(["runsc", "--version"]) is None
    assert program_version.first_line(["no-such-program-here", "--version"]) is None


def test_qemu_user_records_the_line_its_probe_read(programs, host) -> None:
    program(programs, "qemu-test", 'echo "qemu-x86_64 version 7.2.22 (Debian 1:7.2)"')
    translator = qemu_user.QemuUser(qemu_user.QemuUserSpec(name="qemu-user", binary="qemu-test"))
    assert translator.facts() == {}  # before the probe: nothing read
    assert translator.probe(host).available
    assert translator.facts() == {"vmm_version": "qemu-x86_64 version 7.2.22 (Debian 1:7.2)"}


def test_namespace_records_unshares_version(programs, host) -> None:
    program(programs, "unshare", 'echo "unshare from util-linux 9.99"')
    namespaces = namespace.Namespace(namespace.NamespaceSpec(name="namespace"))
    namespaces.prepare(host)
    assert namespaces.facts() == {"unshare_version": "unshare from util-linux 9.99"}


def _bundle_stub():
    class Bundle:
        state = Path("/nonexistent-state")
        network = "none"
    return Bundle()
