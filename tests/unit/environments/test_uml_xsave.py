"""A UML kernel that cannot set the host's FPU registers is refused before any run.

Debian's linux.uml (6.1) passes a fixed 2696-byte XSAVE buffer; the host's kernel takes only
its own whole size, so on an AMX host (11008 bytes) the guest panics at boot. These tests give
the probe that host's facts: the size through GUESTBENCH_XSAVE_BYTES, the kernel as a script
that prints a release as linux.uml --version does.
"""

import pytest

from guestbench import host, xsave
from guestbench.environments.kinds import uml
from guestbench.environments.kinds.uml import Uml, UmlSpec

AMX_HOST_BYTES = 11008  # AVX-512 and AMX: an Intel Xeon 4th generation or later
AMD_HOST_BYTES = 2440  # AVX2 and protection keys: an AMD EPYC 7003


def _kernel(tmp_path, release: str):
    program = tmp_path / "linux.uml"
    program.write_text(f"#!/bin/sh\n[ \"$1\" = --version ] && echo {release}\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def host_bytes(monkeypatch):
    def given(size: int) -> None:
        monkeypatch.setenv(xsave.OVERRIDE, str(size))
        xsave.host_xsave_bytes.cache_clear()
    yield given
    xsave.host_xsave_bytes.cache_clear()


def _probe(program):
    return Uml(UmlSpec(name="uml", binary=str(program))).vmm_probe()


def test_debians_kernel_is_refused_on_an_amx_host_with_the_sizes_and_the_fix(tmp_path, host_bytes):
    host_bytes(AMX_HOST_BYTES)
    answer = _probe(_kernel(tmp_path, "6.1.176"))
    assert not answer.available
    assert answer.reason.startswith(f"the host's XSAVE area is {AMX_HOST_BYTES} bytes and ")
    assert "(Linux 6.1.176) sets a process's FPU registers with 2696" in answer.reason
    assert "ptrace set fp regs failed, errno = 14" in answer.reason
    assert "fix: bash install.sh builds a UML kernel" in answer.reason
    assert "Linux 6.13 or later" in answer.reason


@pytest.mark.parametrize("size", [AMD_HOST_BYTES, 2696, 832])
def test_debians_kernel_runs_where_its_buffer_holds_the_host_area(tmp_path, host_bytes, size):
    # the host's kernel cuts a longer buffer to its own size: only a shorter one fails
    host_bytes(size)
    assert _probe(_kernel(tmp_path, "6.1.176")).available


@pytest.mark.parametrize("release", ["6.13.0", "6.18.2", "7.0.1", f"6.12.48{uml.XSAVE_SIZED_MARK}"])
def test_a_kernel_that_sizes_its_buffer_from_the_host_runs_on_an_amx_host(tmp_path, host_bytes,
                                                                          release):
    host_bytes(AMX_HOST_BYTES)
    assert _probe(_kernel(tmp_path, release)).available


def test_a_kernel_without_a_release_is_not_judged(tmp_path, host_bytes):
    host_bytes(AMX_HOST_BYTES)
    program = tmp_path / "linux.uml"
    program.write_text("#!/bin/sh\nexit 1\n")
    program.chmod(0o755)
    assert _probe(program).available


def test_the_refusal_is_what_the_environment_says_before_any_run(tmp_path, host_bytes):
    host_bytes(AMX_HOST_BYTES)
    environment = Uml(UmlSpec(name="uml", binary=str(_kernel(tmp_path, "6.1.176"))))
    answer = environment.probe(host.collect())
    assert not answer.available and "XSAVE area is 11008 bytes" in answer.reason
