"""The host's XSAVE size, asked of its kernel through ptrace."""

import platform

import pytest

from guestbench import xsave


def _cpu_flags() -> set[str]:
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="XSAVE is x86-64's")
def test_the_size_is_a_whole_standard_format_area():
    if "xsave" not in _cpu_flags():
        pytest.skip("this CPU has no XSAVE")
    size = xsave.host_xsave_bytes()
    # the legacy area (512) and the header (64) at least, and the AVX state where there is AVX
    assert size is not None and size >= 576 and size % 8 == 0
    if "avx" in _cpu_flags():
        assert size >= 832
    if "avx512f" in _cpu_flags():
        assert size >= 2688


def test_no_size_off_x86(monkeypatch):
    xsave.host_xsave_bytes.cache_clear()
    monkeypatch.setattr(platform, "machine", lambda: "aarch64")
    try:
        assert xsave.host_xsave_bytes() is None
    finally:
        xsave.host_xsave_bytes.cache_clear()


def test_a_size_given_in_the_environment_is_taken(monkeypatch):
    xsave.host_xsave_bytes.cache_clear()
    monkeypatch.setenv(xsave.OVERRIDE, "11008")
    try:
        assert xsave.host_xsave_bytes() == 11008
    finally:
        xsave.host_xsave_bytes.cache_clear()
