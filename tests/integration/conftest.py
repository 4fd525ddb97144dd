"""Fixtures for tests that run the real agent in the real environments of this machine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from guestbench import agent, environments, host
from tests.support.leaks import guest_folders, guest_processes, left_since

# Process-level presets; full-system guests (each kind says whether it is one) have
# tests/integration/test_full_system.py.
PRESETS = [name for name, spec in environments.PRESETS.items()
           if not environments.KINDS[spec["kind"]].full_system]
FULL_SYSTEM_PRESETS = [name for name, spec in environments.PRESETS.items()
                       if environments.KINDS[spec["kind"]].full_system]


def prepared(host_facts, environment):
    """The environment probed and prepared (its image built); skips with the reason if either
    says it cannot run here."""
    answer = environment.probe(host_facts)
    if answer.available:
        answer = environment.prepare(host_facts)
    if not answer.available:
        pytest.skip(f"{environment.spec.name} unavailable here: {answer.reason}")
    return environment


@pytest.fixture(scope="session")
def agent_path() -> Path:
    try:
        return agent.path()
    except agent.AgentMissing as error:
        pytest.skip(f"agent not built: {error}")


@pytest.fixture(scope="session")
def host_facts() -> host.Host:
    return host.collect()


@pytest.fixture(scope="session")
def probes(host_facts, agent_path):
    """Every preset's environment and its probe answer, asked once per test session."""
    probed = {}
    for name in PRESETS:
        environment = environments.create(environments.preset_spec(name))
        probed[name] = (environment, environment.probe(host_facts))
    return probed


@pytest.fixture
def available(probes):
    """Returns the preset's probed environment, or skips the test with the probe's reason."""
    def get(name: str):
        environment, answer = probes[name]
        if not answer.available:
            pytest.skip(f"{name} unavailable here: {answer.reason}")
        return environment
    return get


def agent_processes(agent_path: Path) -> list[int]:
    """Live processes a run may leave behind: the agent, or anything (a runtime's sandbox,
    gofer or shim, qemu-user) whose command line names the agent or an OCI bundle."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            exe = os.readlink(entry / "exe")
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if state in ("Z", "X"):
            continue
        if (exe == str(agent_path) or exe.endswith("/gbagent") or b"gbagent" in cmdline
                or b"guestbench-oci-" in cmdline):
            pids.append(int(entry.name))
    return pids


@pytest.fixture(autouse=True)
def nothing_left_behind():
    """After every integration test, as after every VM in Firecracker's framework: no guest
    process and no guestbench folder under /tmp that the test made is left (5 s grace)."""
    processes, folders = guest_processes(), guest_folders()
    yield
    left = left_since(processes, folders)
    if left:
        pytest.fail(f"left behind: {left}")
