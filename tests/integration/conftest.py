"""Fixtures for tests that run the real agent in the real environments of this machine (the
agent, host facts and probes themselves are in tests/conftest.py, shared with tests/faults)."""

from __future__ import annotations

import pytest

from tests.support.leaks import guest_folders, guest_processes, left_since


@pytest.fixture
def available(probes):
    """Returns the preset's probed environment, or skips the test with the probe's reason."""
    def get(name: str):
        environment, answer = probes[name]
        if not answer.available:
            pytest.skip(f"{name} unavailable here: {answer.reason}")
        return environment
    return get


@pytest.fixture(autouse=True)
def nothing_left_behind(request):
    """After every integration test, as after every VM in Firecracker's framework: no guest
    process, no guestbench folder and no network path that the test made is left (5 s
    grace); what others run on the machine is not counted (tests/support/leaks.py tells
    the test's own). A module with GUESTS_CHECKED_BY_RUN = True checks each guest it starts
    itself."""
    if getattr(request.module, "GUESTS_CHECKED_BY_RUN", False):
        yield
        return
    processes, folders = guest_processes(), guest_folders()
    yield
    left = left_since(processes, folders)
    if left:
        pytest.fail(f"left behind: {left}")
