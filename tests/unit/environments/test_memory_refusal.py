"""Runs sure to fail for lack of memory are refused before they start, with the fix."""

from __future__ import annotations

import pytest

from guestbench import environments
from guestbench.environments.kinds import uml
from guestbench.environments.base import JobNeeds
from guestbench.workloads import CATALOGUE


def stream_needs(array_mib: int) -> JobNeeds:
    workload = CATALOGUE["stream_triad"]
    params = workload.params_model(array_mib=array_mib)
    return workload.job_needs(params, None)


def test_stream_says_what_it_touches():
    assert stream_needs(128).memory_mib == 384


@pytest.mark.parametrize("map_count, array_mib, refused", [
    (65530, 128, True),    # 384 MiB against ~255: the default host and arrays of a 32 MiB LLC
    (65530, 80, False),    # 240 MiB: ran here
    (262144, 128, False),  # the fix: ~1 GiB of mappings
])
def test_uml_refuses_what_its_map_count_cannot_hold(tmp_path, monkeypatch, map_count,
                                                    array_mib, refused):
    count_file = tmp_path / "max_map_count"
    count_file.write_text(f"{map_count}\n")
    monkeypatch.setattr(uml, "MAP_COUNT_FILE", count_file)
    environment = environments.create(environments.preset_spec("uml"))
    reason = environment.refusal(CATALOGUE["stream_triad"].requires, stream_needs(array_mib))
    if refused:
        assert "vm.max_map_count" in reason and "sysctl -w vm.max_map_count=262144" in reason
    else:
        assert reason is None


def test_a_guest_smaller_than_the_arrays_is_refused():
    spec = environments.spec_model("qemu")(name="small", kind="qemu", memory_mib=256)
    environment = environments.create(spec)
    reason = environment.refusal(CATALOGUE["stream_triad"].requires, stream_needs(128))
    assert "touches 384 MiB" in reason and "memory_mib = 256" in reason
    assert environment.refusal(CATALOGUE["stream_triad"].requires, stream_needs(64)) is None


def test_process_kinds_take_the_host_memory_as_it_is():
    native = environments.create(environments.preset_spec("native"))
    assert native.refusal(CATALOGUE["stream_triad"].requires, stream_needs(4096)) is None
