"""The default campaign's length on either class of host, as its first estimate tells it
before any run: STREAM's arrays grow with the last-level cache, the campaign must not.

The hosts' facts are rebuilt here (tests/support/facts.py): an AMD EPYC VM with a 32 MiB L3,
an Intel Xeon VM with a 480 MiB L3 and AMX, where Debian's UML kernel cannot run and crun
refuses hybrid cgroups as on both. The estimate is the sum of typical costs (priors): what
the campaign is expected to take on such a host before anything of it was measured.
"""

import pytest

from guestbench import environments
from guestbench.environments.base import Availability
from guestbench.host import Host
from guestbench.plan.build import from_flags
from guestbench.runner.campaign import new_cell
from guestbench.runner.estimate import SUMMARY_S, first_estimate, seconds_left
from guestbench.runner.schedule import Column
from tests.support.facts import AMD_EPYC, INTEL_XEON

# what the probes of each host said (the rest: available)
UNAVAILABLE = {
    "AMD": {"crun": "cgroups in hybrid mode", "qemu-kvm": "no test guest booted under KVM"},
    "Intel": {"crun": "cgroups in hybrid mode", "qemu-kvm": "no test guest booted under KVM",
              "uml": "the host's XSAVE area is 11008 bytes and Debian's linux.uml ... 2696"},
}
LIMIT_S = {"AMD": 75.0, "Intel": 120.0}  # the bounds for the whole campaign


def _cells(facts: dict, unavailable: dict[str, str]):
    host = Host(facts)
    plan = from_flags(host)
    columns = [Column(spec, environments.create(spec),
                      Availability.no(unavailable[spec.name]) if spec.name in unavailable
                      else Availability.yes()) for spec in plan.environments]
    return host, plan, [new_cell(column, case, plan.campaign.auto) for column in columns
                        for case in plan.workloads]


@pytest.mark.parametrize("name, facts", [("AMD", AMD_EPYC), ("Intel", INTEL_XEON)])
def test_the_default_campaign_is_expected_within_its_bound_on_either_host(name, facts):
    host, plan, cells = _cells(facts, UNAVAILABLE[name])
    stream = next(case for case in plan.workloads if case.name == "stream")
    assert stream.params.array_mib >= 4 * facts["llc_bytes"] / 2**20  # valid STREAM
    expected = seconds_left(cells) + SUMMARY_S
    # the runs and what the runner does between them, the summary after: a margin is left
    # for the probes before the first run (1-2 s here) and a host slower than typical
    assert expected <= 0.9 * LIMIT_S[name], expected


def test_on_the_intel_host_stream_is_one_run_of_triad_and_said_before_the_first_run():
    host, plan, cells = _cells(INTEL_XEON, UNAVAILABLE["Intel"])
    streams = [cell for cell in cells if cell.case.name == "stream"]
    assert {cell.most_runs for cell in streams if cell.column.availability.available} == {1}
    assert all(cell.case.params.kernels == ["triad"] for cell in streams)
    lines = first_estimate(cells, seconds_left(cells), host)
    assert lines[0].startswith("guestbench: expected to take about ")
    note = " ".join(lines[1:])
    assert "arrays are 1920 MiB each (4x this host's 480 MiB last-level cache" in note
    assert "fix: --workload without stream" in note


def test_on_the_amd_host_no_note_on_stream():
    host, plan, cells = _cells(AMD_EPYC, UNAVAILABLE["AMD"])
    lines = first_estimate(cells, seconds_left(cells), host)
    assert len(lines) == 1


def test_stream_s_time_grows_far_less_than_its_arrays():
    # the cell's runs fall as its arrays grow: 3 runs of 3 x 128 MiB, 1 of 3 x 1920 MiB (at
    # one run, past that, its time grows with the arrays again: docs/workloads-micro.md)
    shares = []
    for llc_mib in (32, 480):
        facts = {**INTEL_XEON, "llc_bytes": llc_mib * 2**20}
        _, _, cells = _cells(facts, UNAVAILABLE["Intel"])
        shares.append(seconds_left([cell for cell in cells if cell.case.name == "stream"]))
    assert shares[1] < 4 * shares[0]  # 15x the arrays, under 4x the time
