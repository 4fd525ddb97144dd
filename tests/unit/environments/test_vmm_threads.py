"""Which full-system kinds read their VMM's threads (environments.md, "The VMM's threads'
host CPU"); the reading itself: tests/unit/process/test_threads.py, its windows:
tests/unit/runner/test_thread_cpu.py, for real: tests/integration/test_nested_real.py."""

from pathlib import Path

from guestbench import environments
from guestbench.environments.base import Job, JobNeeds
from guestbench.environments.fullsystem.console import guest_job


def test_uml_and_xen_have_no_vmm_threads_to_read() -> None:
    for preset in ("uml", "xen-tcg", "xen-pv-tcg"):
        environment = environments.create(environments.preset_spec(preset))
        assert environment.thread_reader(object()) is None
        said = environment.facts()["vmm_threads"]
        assert said.startswith("not read: ") and ("no VMM threads" in said
                                                  or "hypervisor" in said), said


def test_a_guest_s_job_keeps_whether_its_threads_are_read() -> None:
    """The flag decides the guest's linger inside an L1 machine: lost on the way, the last
    reading would find the VMM gone."""
    job = Job("getpid", Path("/gbagent"), ("getpid",), read_threads=True)
    assert guest_job(job, JobNeeds()).read_threads
    assert not guest_job(Job("start", Path("/gbagent"), ("idle",)), JobNeeds()).read_threads
