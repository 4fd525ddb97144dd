"""What `envs` does to answer quickly, and that it still answers the same: the presets'
probes run at once and come back in the presets' order, a kind's module loads when a
preset names it, envs loads neither the store's engine nor the numbers' libraries, a
container probe cleans up only what its run may have left, and the host's facts start no
process where /proc/cpuinfo names the CPU."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest

from guestbench import environments, host
from guestbench.process import proc
from guestbench.environments import survey
from guestbench.environments.fullsystem import kvm
from guestbench.environments.kinds import oci
from guestbench.environments.base import Availability

PRESETS = list(environments.PRESETS)
WAIT_S = 20  # a guard against a hang only; nothing here is timed


@pytest.fixture
def no_kept_kvm_answer(tmp_path, monkeypatch):
    """No test boot kept for this boot of the host: qemu-kvm says what its probe says."""
    monkeypatch.setattr(kvm, "remembered_file", lambda: tmp_path / "kvm-boot.json")


def test_the_probes_run_at_once_and_answer_in_the_presets_order(no_kept_kvm_answer,
                                                                monkeypatch):
    together = threading.Barrier(len(PRESETS), timeout=WAIT_S)
    finished = {name: threading.Event() for name in PRESETS}

    class FinishesInReverse:
        def __init__(self, spec):
            self.name = spec.name

        def probe(self, host):
            together.wait()  # broken unless every preset's probe is running at once
            after = PRESETS[PRESETS.index(self.name) + 1:]
            assert not after or finished[after[0]].wait(WAIT_S), f"{after[0]} never finished"
            finished[self.name].set()
            return Availability.no(f"{self.name}'s own reason")
    monkeypatch.setattr(environments, "create", FinishesInReverse)
    found = survey.presets(None)
    assert [one.preset for one in found] == PRESETS
    assert [one.answer.reason for one in found] == [f"{name}'s own reason" for name in PRESETS]
    assert [one.spec.name for one in found] == PRESETS


def test_a_probe_that_fails_fails_the_survey(no_kept_kvm_answer, monkeypatch):
    class Broken:
        def __init__(self, spec):
            self.name = spec.name

        def probe(self, host):
            if self.name == "runsc":
                raise RuntimeError("a bug in runsc's probe")
            return Availability.yes()
    monkeypatch.setattr(environments, "create", Broken)
    with pytest.raises(RuntimeError, match="a bug in runsc's probe"):
        survey.presets(None)


def test_every_kind_is_registered_under_its_own_name():
    kinds = environments.KINDS
    assert [kind for kind, cls in kinds.items() if cls.kind != kind] == []
    assert environments.PUBLIC_KINDS == tuple(kind for kind in kinds if kind != "fake")
    assert all(environments.spec_model(kind) is cls.spec_model for kind, cls in kinds.items())
    with pytest.raises(KeyError):
        environments.kind_class("vmware")
    with pytest.raises(AttributeError, match="no attribute 'KIND'"):
        environments.KIND  # noqa: B018 - a misspelt name is an error, not a registry


def test_envs_loads_neither_the_store_nor_numbers_nor_the_command_kind(tmp_path: Path):
    """Each probe answers yes here (the real ones start containers); what envs imports is
    what a user's `guestbench envs` imports."""
    probe = tmp_path / "loaded.py"
    probe.write_text(
        "import sys\n"
        "from guestbench import environments\n"
        "from guestbench.environments.base import Availability\n"
        "class Yes:\n"
        "    def __init__(self, spec): pass\n"
        "    def probe(self, host): return Availability.yes('probed')\n"
        "environments.create = Yes\n"
        "from guestbench.cli import main\n"
        "try:\n    main(['envs'])\nexcept SystemExit:\n    pass\n"
        "heavy = ('sqlalchemy', 'numpy', 'scipy', 'guestbench.store.engine', 'guestbench.analysis.results',"
        " 'guestbench.environments.kinds.command', 'guestbench.environments.kinds.fake')\n"
        "print('LOADED', [name for name in heavy if name in sys.modules])\n")
    shown = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True,
                           cwd=tmp_path, timeout=60, check=True).stdout
    assert shown.endswith("LOADED []\n"), shown
    assert "| runsc " in shown and "probed" in shown, shown


# -- a container probe's cleanup ------------------------------------------------------

@pytest.fixture
def container_runs(tmp_path, monkeypatch):
    """oci's probe with a runtime that answers as told: call it with what `run` does
    (a return code or an exception); it gives the answer and every command started."""
    agent_file = tmp_path / "gbagent"
    agent_file.write_text("an agent\n")
    monkeypatch.setattr(oci.agent, "path", lambda: agent_file)
    monkeypatch.setattr(oci, "which", lambda program: f"/usr/bin/{program}")

    def probe(run_does):
        started: list[str] = []

        def run(argv, timeout_s):
            started.append(next(word for word in argv if word in ("run", "delete")))
            if started[-1] == "delete":
                return proc.Completed(tuple(argv), 0, "", "", 0.0)
            if isinstance(run_does, Exception):
                raise run_does
            return proc.Completed(tuple(argv), run_does, "gbagent 0.1.0 (protocol 1)\n",
                                  "cgroups: no\n" if run_does else "", 0.0)
        monkeypatch.setattr(oci.proc, "run", run)
        answer = environments.create(environments.preset_spec("runsc")).probe(None)
        return answer, started
    return probe


def test_a_container_that_ran_is_not_deleted_again(container_runs):
    answer, commands = container_runs(0)
    assert answer == Availability.yes("runsc: gbagent 0.1.0 (protocol 1)")
    assert commands == ["run"]


@pytest.mark.parametrize("run_does", [1, proc.DeadlineExceeded("runsc did not finish"),
                                      proc.ProcessError("cannot start runsc")])
def test_a_container_that_failed_is_deleted(container_runs, run_does):
    answer, commands = container_runs(run_does)
    assert not answer.available and answer.reason
    assert commands == ["run", "delete"]


# -- the host's facts -----------------------------------------------------------------

def test_the_cpu_model_starts_no_process_where_cpuinfo_names_it(monkeypatch):
    def uname_p():
        raise AssertionError("platform.processor() starts `uname -p`")
    monkeypatch.setattr(host.platform, "processor", uname_p)
    assert host._cpu_model({"model name": "AMD EPYC"}) == "AMD EPYC"
    monkeypatch.setattr(host.platform, "processor", lambda: "")
    assert host._cpu_model({}) == "unknown"
    monkeypatch.setattr(host.platform, "processor", lambda: "x86_64")
    assert host._cpu_model({"flags": "fpu"}) == "x86_64"
