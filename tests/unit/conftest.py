"""Shared fixtures of the unit suite: a fake host, a temporary store, plan helpers, a fake agent
for the command line, campaigns run through it (history), and the HTML report's campaign full of
markup (markup_report). Plain helpers are in tests/support/.

Nothing here starts a real environment or reads the machine's own facts.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from guestbench import store as gb_store
from guestbench.host import Host
from guestbench.plan import build as plan_build
from guestbench.plan.schema import Overrides, Plan
from guestbench.analysis import results as analysed
from guestbench.commands import reading
from guestbench.runner import Progress, Runner
from tests.support.cli import invoke
from tests.support.html_report import populate

HOST_FACTS: dict[str, Any] = {
    "hostname": "testhost",
    "arch": "x86_64",
    "cpu_model": "Test CPU 3000",
    "logical_cpus": 4,
    "kernel": "6.1.0-test",
    "memory_mib": 8192,
    "virtualised": False,
    "llc_bytes": 32 * 2**20,
}


# The unit suite's temporary folders are in RAM (/dev/shm, where it is a tmpfs with room):
# its stores are SQLite files, and each run a test writes is a commit that waits for the
# disk. A default-like campaign (400 runs) took 1.6 s to write on this VM's disk and 0.5 s
# in RAM (2026-11-29). The integration tests keep pytest's own folders on disk: they
# measure disks, and their images are large.
RAM = Path("/dev/shm")
RAM_NEEDED = 2 * 2**30


class _InRam:
    """What the unit tests use of pytest's tmp_path_factory, in a folder of their own in
    RAM that goes when the session ends."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def getbasetemp(self) -> Path:
        return self.root

    def mktemp(self, basename: str, numbered: bool = True) -> Path:
        if not numbered:
            made = self.root / basename
            made.mkdir()
            return made
        return Path(tempfile.mkdtemp(prefix=f"{basename}-", dir=self.root))


def _ram_has_room() -> bool:
    try:
        with open("/proc/self/mounts") as mounts:
            tmpfs = any(line.split()[1:3] == [str(RAM), "tmpfs"] for line in mounts)
        room = shutil.disk_usage(RAM).free
    except OSError:
        return False
    return tmpfs and room >= RAM_NEEDED and os.access(RAM, os.W_OK)


@pytest.fixture(scope="session")
def tmp_path_factory(tmp_path_factory):
    """pytest's own where RAM has no room (see RAM above)."""
    if not _ram_has_room():
        yield tmp_path_factory
        return
    root = Path(tempfile.mkdtemp(prefix=f"gbunit-{os.getpid()}-", dir=RAM))
    try:
        yield _InRam(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def tmp_path(tmp_path_factory, request) -> Path:
    """A new folder per test, named after it as pytest's are, where tmp_path_factory
    makes them."""
    return tmp_path_factory.mktemp(re.sub(r"\W", "_", request.node.name)[:30])


# What /proc says of a quiet host, to every campaign a unit test runs: the host's own load
# and steal time, which a campaign records and compare weighs, left a unit test's verdicts
# to the machine (a 1.2x slowdown "explained" by B's host load failed a gate test when the
# suite ran beside a busy worker, 2026-11-29), and a loaded host made each snapshot wait
# to count the running tasks again.
QUIET_PROC = {Path("/proc/loadavg"): "0.05 0.05 0.05 1/200 4242",
              Path("/proc/stat"): "cpu  1000 0 1000 100000 0 0 0 0 0 0"}


@pytest.fixture(autouse=True)
def quiet_host(monkeypatch) -> None:
    """The host's /proc load and CPU time, as a campaign reads them, are a quiet host's
    (QUIET_PROC); a test of the checks themselves gives them their text."""
    from guestbench import host as gb_host
    real_read = gb_host._read
    monkeypatch.setattr(gb_host, "_read", lambda path: QUIET_PROC.get(Path(path))
                        or real_read(path))


@pytest.fixture(autouse=True)
def fake_kind_in_plans(monkeypatch) -> None:
    """Plans in the unit suite may name kind = "fake"; users' plans may not."""
    from guestbench import environments
    monkeypatch.setattr(environments, "_plan_kinds", [*environments.PUBLIC_KINDS, "fake"])


@pytest.fixture
def host() -> Host:
    """A host with fixed facts (32 MiB last-level cache)."""
    return Host(dict(HOST_FACTS))


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """A new SQLite store file (not yet created) in the test's folder."""
    return f"sqlite:///{tmp_path / 'results.sqlite'}"


@pytest.hookimpl(tryfirst=True)  # as a mark, before pytest reads the marks and the params
def pytest_generate_tests(metafunc) -> None:
    """A module of tests of what lies above the store (compare, report: the same logic on
    whatever the store read) says so with ABOVE_THE_STORE = True: its tests run on SQLite
    only, and those marked both_stores on PostgreSQL too. (The store's own tests, and its
    reading and writing, run on both: tests/unit/store/.) This halved compare's tests,
    whose PostgreSQL half took 34 of their 48 s (2026-11-29)."""
    if ("store_url" in metafunc.fixturenames
            and getattr(metafunc.module, "ABOVE_THE_STORE", False)
            and not metafunc.definition.get_closest_marker("both_stores")):
        metafunc.definition.add_marker(pytest.mark.parametrize("store_url", ["sqlite"],
                                                               indirect=True))


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request) -> str:
    """A new, empty store on each backend: a SQLite file, and a database on the suite's
    private PostgreSQL server (tests/conftest.py). A test that opens it as `store` gets on
    PostgreSQL a store made once by guestbench and emptied since; one that only has the URL
    gets an empty database (a store to make, or to migrate from an older schema)."""
    if request.param == "sqlite":
        return request.getfixturevalue("sqlite_url")
    return request.getfixturevalue("postgres_store_url" if "store" in request.fixturenames
                                   else "postgres_url")


@pytest.fixture
def store(store_url: str) -> gb_store.Store:
    opened = gb_store.open(store_url)
    yield opened
    opened.engine.dispose()


@pytest.fixture
def write_plan(tmp_path: Path) -> Callable[..., Path]:
    """write_plan(text, name="plan.toml") -> the path of a TOML plan in tmp_path."""

    def write(text: str, name: str = "plan.toml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return path

    return write


@pytest.fixture
def build_plan(host: Host) -> Callable[..., Plan]:
    """build_plan(environments, workloads, **campaign) -> a validated Plan (source 'test.toml')."""

    def build(environments: list[dict[str, Any]], workloads: list[dict[str, Any]] | None = None,
              **campaign: Any) -> Plan:
        raw = {"campaign": campaign, "environment": environments,
               "workload": workloads or [{"name": "getpid"}]}
        return plan_build.validated(raw, "test.toml", host, Overrides())

    return build


@pytest.fixture
def run_plan(store: gb_store.Store, host: Host, tmp_path: Path) -> Callable[..., int]:
    """run_plan(plan, progress=None, create=...) -> campaign id, with the agent path /bin/true."""

    def run(the_plan: Plan, progress: Progress | None = None, **kwargs: Any) -> int:
        runner = Runner(the_plan, store, host, tmp_path / "logs", Path("/bin/true"),
                        progress, **kwargs)
        return runner.run()

    return run


@pytest.fixture
def fake_agent(tmp_path: Path) -> Path:
    """Any executable file satisfies the CLI's agent check; the fake environment never runs it."""
    agent = tmp_path / "fake-gbagent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    return agent


HISTORY_PLAN = """\
[campaign]
name = "{name}"
repeat = 3
timeout_s = 5

[[environment]]
name = "vm"
kind = "fake"
scale = {scale}

[[workload]]
name = "getpid"
"""


@pytest.fixture
def campaigns(tmp_path: Path, fake_agent: Path):
    def run(url: str, scales: list[float], name: str = "nightly") -> None:
        for scale in scales:
            plan = tmp_path / "plan.toml"
            plan.write_text(HISTORY_PLAN.format(name=name, scale=f"{scale:.6f}"))
            result = invoke(["run", str(plan), "--db", url, "--quiet"], fake_agent)
            assert result.exit_code == 0, result.output
    run.agent = fake_agent
    return run


@pytest.fixture
def markup_report(store, tmp_path: Path) -> analysed.CampaignResults:
    """The campaign of tests/support/html_report.py (markup to escape in every name, its logs in
    tmp_path / "logs"), read back from the store."""
    populate(store, tmp_path / "logs")
    return reading.load(store)
