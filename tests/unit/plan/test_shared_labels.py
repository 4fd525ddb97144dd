"""One measurement whose parameters belong to the environment: two [[workload]] tables of one
workload share a label when their `environments` share no environment, so that their rows
align (seed 001: uploads into UML over its serial line against a QEMU guest over
virtio-serial), and every table says what differed."""

from __future__ import annotations

import pytest

from guestbench.plan.build import load
from guestbench.plan.errors import PlanError
from guestbench.plan.expand import check_shared_labels
from guestbench.report import select
from tests.support.campaigns import Campaign, row
from tests.support.samples import THREE
from guestbench.commands import reading

ENVIRONMENTS = """
[[environment]]
name = "native"
kind = "native"
[[environment]]
name = "uml"
kind = "native"
[[environment]]
name = "tcg"
kind = "native"
"""


def upload_tables(first: str, second: str, second_name: str = "upload") -> str:
    return ENVIRONMENTS + f"""
[[workload]]
name = "upload"
channel = "serial"
environments = {first}

[[workload]]
name = "{second_name}"
environments = {second}
"""


def test_disjoint_environments_share_one_label(write_plan, host) -> None:
    plan = load(write_plan(upload_tables('["uml"]', '["tcg", "native"]')), host)
    labels = [(case.label, case.environments) for case in plan.workloads]
    assert labels == [("upload", ("uml",)), ("upload", ("tcg", "native"))]
    channels = {case.environments: case.params.channel for case in plan.workloads}
    assert channels[("uml",)] == "serial"


def test_overlapping_environments_are_refused_naming_one(write_plan, host) -> None:
    with pytest.raises(PlanError, match=r"workload\[1\]\.name: 'upload' appears twice \(both "
                                        r"run in uml\).*environments = \[\.\.\.\] that share none"):
        load(write_plan(upload_tables('["uml", "tcg"]', '["u*"]')), host)


def test_a_table_without_environments_cannot_share_its_label(write_plan, host) -> None:
    text = upload_tables('["uml"]', '["tcg"]').replace('environments = ["tcg"]\n', "")
    with pytest.raises(PlanError, match=r"workload\[1\]\.name: 'upload' appears twice \(fix"):
        load(write_plan(text), host)


def test_two_workloads_cannot_share_a_label(write_plan, host) -> None:
    text = upload_tables('["uml"]', '["tcg"]', second_name="getpid").replace(
        'name = "getpid"', 'name = "getpid"\nlabel = "upload"')
    with pytest.raises(PlanError, match=r"'upload' appears twice"):
        load(write_plan(text), host)


def test_the_rows_align_and_the_tables_say_what_differed(store) -> None:
    campaign = Campaign(store, {"native": {}, "uml": {"kind": "uml"}, "tcg": {"kind": "qemu"}},
                        baseline="tcg")
    for jitter in THREE:
        for env, channel, mbps in (("uml", "serial", 3.4), ("tcg", "virtio-serial", 31.0)):
            campaign.run(env, "upload", [("bandwidth", "MB/s", mbps * jitter),
                                         ("bytes", "bytes", 5e8)], label="upload",
                         params={"channel": channel, "size_mib": 476})
    report = reading.load(store, str(campaign.id))
    tables = {table.name: table for table in select.tables(report, "published")}
    ratio = row(tables["ratios"], "upload")
    assert ratio[1].startswith("bandwidth") and "rate, inverted" in ratio[1]
    # uml over serial at a ninth of tcg's bandwidth over virtio-serial: 9x worse, never 0.11x
    assert ratio[3].startswith("9.1")
    note = ("upload: channel serial in uml; virtio-serial in tcg.")
    assert note in tables["ratios"].note and note in tables["measured"].note
    assert "size_mib" not in tables["measured"].note  # the same everywhere: not said
    summary = select.tables(report, "summary")[0]
    assert note in summary.note


VCPU_PLAN = """
[[environment]]
name = "native"
kind = "native"
[[environment]]
name = "tcg"
kind = "qemu"
vcpus = [1, 2]
[[environment]]
name = "uml"
kind = "uml"
[[environment]]
name = "runc"
kind = "oci"
runtime = "runc"
cpus = "0,2-3"

[[workload]]
name = "build"
jobs = "@vcpus"
"""


def test_make_jobs_follow_each_environments_cpus(write_plan, host) -> None:
    plan = load(write_plan(VCPU_PLAN), host)
    jobs = {case.environments: case.params.jobs for case in plan.workloads}
    assert host.facts["logical_cpus"] == 4  # native sees the host's CPUs, UML one
    assert jobs == {("native",): 4, ("tcg-vcpus1", "uml"): 1, ("tcg-vcpus2",): 2,
                    ("runc",): 3}  # its cpuset
    assert {case.label for case in plan.workloads} == {"build"}  # one row
    stored = plan.as_dict()["workloads"]
    assert sorted(case["params"]["jobs"] for case in stored) == sorted(jobs.values())


def test_only_whole_number_parameters_follow_the_vcpus(write_plan, host) -> None:
    text = VCPU_PLAN.replace('jobs = "@vcpus"', 'cache = "@vcpus"')
    with pytest.raises(PlanError, match=r"workload\[0\]\.cache: \"@vcpus\" gives a whole number"):
        load(write_plan(text), host)


def test_the_upload_table_gives_each_environment_its_own_channel(store) -> None:
    campaign = Campaign(store, {"uml": {"kind": "uml"}, "tcg": {"kind": "qemu"}}, baseline="tcg")
    for jitter in THREE:
        for env, channel, mbps in (("uml", "serial", 2.0), ("tcg", "virtio-serial", 75.0)):
            campaign.run(env, "upload", [("bandwidth", "MB/s", mbps * jitter),
                                         ("elapsed", "s", 64 * 2**20 / 1e6 / mbps / jitter)],
                         label="upload[mode=write]",
                         params={"channel": channel, "mode": "write", "size_mib": 64})
    upload = campaign.tables()["upload-rates"]
    assert [r[:2] for r in upload.rows] == [["uml", "serial"], ["tcg", "virtio-serial"]]


def test_an_unknown_parameter_written_vcpus_is_refused_with_the_parameters(write_plan, host):
    text = VCPU_PLAN.replace('jobs = "@vcpus"', 'frobs = "@vcpus"')
    with pytest.raises(PlanError, match=r"workload\[0\]\.frobs: unknown key.*"
                                        r"allowed here: name, repeat, best_of, environments, label, "
                                        r"units, jobs, cache"):
        load(write_plan(text), host)


ONE_ITEM_CHANNEL = ENVIRONMENTS.replace('name = "tcg"', 'name = "qemu"') + """
[[workload]]
name = "upload"
channel = ["serial"]
mode = ["write", "no_write"]
environments = ["uml"]

[[workload]]
name = "upload"
channel = "virtio-serial"
mode = ["write", "no_write"]
environments = ["qemu"]
"""


def test_a_one_item_channel_list_pairs_with_a_plain_channel(write_plan, host) -> None:
    """Seed 001's headline: `channel = ["serial"]` is `channel = "serial"`, so UML's and
    QEMU's uploads of each mode share one label, hence one row."""
    plan = load(write_plan(ONE_ITEM_CHANNEL), host)
    by_mode: dict[str, dict] = {}
    for case in plan.workloads:
        by_mode.setdefault(case.params.mode, {})[case.environments] = case
    assert set(by_mode) == {"write", "no_write"}
    for mode, cases in by_mode.items():
        uml, qemu = cases[("uml",)], cases[("qemu",)]
        assert uml.label == qemu.label == f"upload[mode={mode}]"
        assert (uml.params.channel, qemu.params.channel) == ("serial", "virtio-serial")
    check_shared_labels(list(plan.workloads), list(plan.environments), "plan.toml")
