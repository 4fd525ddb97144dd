"""Plans: every invalid plan is a PlanError naming file, field path and fix; valid plans resolve."""

from __future__ import annotations

import json
import re

import pytest

from guestbench import environments, workloads
from guestbench.environments.base import Capability
from guestbench.host import Host
from guestbench.plan.build import from_flags, load
from guestbench.plan.errors import PlanError, numbered_lines
from guestbench.plan.schema import AUTO, Overrides, repeat_flag
from guestbench.plan.schema import DEFAULT_REPEAT, DEFAULT_TIMEOUT_S

ENV = '[[environment]]\npreset = "native"\n'
WORKLOAD = '[[workload]]\nname = "getpid"\n'


def campaign(body: str) -> str:
    return f"[campaign]\n{body}\n{ENV}{WORKLOAD}"


def environment(body: str) -> str:
    return f"[[environment]]\n{body}\n{WORKLOAD}"


def workload(body: str) -> str:
    return f"{ENV}[[workload]]\n{body}\n"


# (plan text, the field path the message must name right after the file name)
INVALID = [
    pytest.param("[campaign\nname = 'x'\n", "TOML syntax error", id="toml-syntax"),
    pytest.param('name = "x" = 3\n' + ENV + WORKLOAD, "TOML syntax error", id="toml-syntax-value"),
    pytest.param("colour = 'red'\n" + ENV + WORKLOAD, "colour", id="unknown-top-level-key"),
    pytest.param("[extra]\nx = 1\n" + ENV + WORKLOAD, "extra", id="unknown-top-level-table"),
    pytest.param(campaign("repet = 3"), "campaign.repet", id="unknown-campaign-key"),
    pytest.param('[campaign]\nname = "a"\n[campaign.sub]\nx = 1\n' + ENV + WORKLOAD,
                 "campaign.sub", id="unknown-campaign-subtable"),
    pytest.param(environment('preset = "runc"\nruntim = "runc"'), "environment[0].runtim",
                 id="unknown-env-key-on-preset"),
    pytest.param(environment('name = "n"\nkind = "native"\nruntim = "runc"'),
                 "environment[0].runtim", id="unknown-env-key-native"),
    pytest.param(environment('name = "f"\nkind = "fake"\nbehavior = "ok"'),
                 "environment[0].behavior", id="unknown-env-key-fake"),
    pytest.param(environment('preset = "nope"'), "environment[0].preset", id="unknown-preset"),
    pytest.param(environment('preset = "runc"\ncpus = "a"'), "environment[0].cpus",
                 id="cpuset-not-a-list"),
    pytest.param(environment('name = "a"\nkind = "docker"'), "environment[0]", id="unknown-kind"),
    pytest.param(environment('name = "a"'), "environment[0]", id="missing-kind"),
    pytest.param(workload('name = "getpidd"'), "workload[0].name", id="unknown-workload"),
    pytest.param(workload("min_time_s = 0.1"), "workload[0].name", id="workload-without-name"),
    pytest.param(workload('name = "getpid"\nmin_tim = 1.0'), "workload[0].min_tim",
                 id="unknown-workload-param"),
    pytest.param(workload('name = "getpid"\narray_mib = 16'), "workload[0].array_mib",
                 id="param-of-another-workload"),
    pytest.param(campaign('repeat = "three"'), "campaign.repeat", id="repeat-string"),
    pytest.param(campaign('timeout_s = "x"'), "campaign.timeout_s", id="timeout-string"),
    pytest.param(campaign("name = 5"), "campaign.name", id="campaign-name-int"),
    pytest.param(workload('name = "getpid"\nmin_time_s = "fast"'), "workload[0].min_time_s",
                 id="min-time-string"),
    pytest.param(environment('name = "n"\nkind = "namespace"\nnamespaces = "pid"'),
                 "environment[0].namespaces", id="namespaces-not-a-list"),
    pytest.param('environment = ["native"]\n' + WORKLOAD, "environment[0]", id="env-not-a-table"),
    pytest.param(campaign("repeat = 0"), "campaign.repeat", id="repeat-zero"),
    pytest.param(campaign("repeat = -1"), "campaign.repeat", id="repeat-negative"),
    pytest.param(campaign("repeat = 1000000"), "campaign.repeat", id="repeat-huge"),
    pytest.param(campaign("timeout_s = 0"), "campaign.timeout_s", id="timeout-zero"),
    pytest.param(campaign("timeout_s = -5.0"), "campaign.timeout_s", id="timeout-negative"),
    pytest.param(workload('name = "getpid"\nmin_time_s = -1'), "workload[0].min_time_s",
                 id="min-time-negative"),
    pytest.param(workload('name = "getpid"\nmin_time_s = 0'), "workload[0].min_time_s",
                 id="min-time-zero"),
    pytest.param(workload('name = "stream_triad"\narray_mib = 0'), "workload[0].array_mib",
                 id="array-mib-zero"),
    pytest.param(workload('name = "stream"\nntimes = 1'), "workload[0].ntimes", id="ntimes-one"),
    pytest.param(workload('name = "first_write"\npages_per_chunk = 0'),
                 "workload[0].pages_per_chunk", id="pages-zero"),
    pytest.param(environment('name = "f"\nkind = "fake"\nscale = 0'), "environment[0].scale",
                 id="fake-scale-zero"),
    pytest.param(environment('name = "my env"\nkind = "native"'), "environment[0].name",
                 id="env-name-with-space"),
    pytest.param(environment('name = "1abc"\nkind = "native"'), "environment[0].name",
                 id="env-name-starts-with-digit"),
    pytest.param(environment('preset = "native"\nname = "a/b"'), "environment[0].name",
                 id="env-name-with-slash-on-preset"),
    pytest.param(campaign('name = "my campaign"'), "campaign.name", id="campaign-name-with-space"),
    pytest.param(ENV + ENV + WORKLOAD, "environment[1].name", id="duplicate-env-preset"),
    pytest.param(ENV + '[[environment]]\nname = "native"\nkind = "fake"\n' + WORKLOAD,
                 "environment[1].name", id="duplicate-env-name"),
    pytest.param(ENV + WORKLOAD + WORKLOAD, "workload[1].name", id="duplicate-workload"),
    pytest.param(campaign('baseline = "qemu"'), "campaign.baseline", id="baseline-not-planned"),
    pytest.param("environment = []\n" + WORKLOAD, "environment", id="empty-environment-list"),
    pytest.param(WORKLOAD, "environment", id="no-environment"),
    pytest.param(ENV + "workload = []\n", "workload", id="empty-workload-list"),
    pytest.param(ENV, "workload", id="no-workload"),
    pytest.param("", "environment", id="empty-file"),
    pytest.param(workload('name = "stream_triad"\narray_mib = []'), "workload[0].array_mib",
                 id="empty-sweep"),
    pytest.param(environment('name = "n"\nkind = "namespace"\nnamespaces = ["pid", "bogus"]'),
                 "environment[0].namespaces[1]", id="unknown-namespace"),
    pytest.param(environment('preset = "runsc"\nplatform = "xen"'), "environment[0].platform",
                 id="bad-literal"),
    pytest.param(environment('name = "o"\nkind = "oci"'), "environment[0].runtime",
                 id="oci-without-runtime"),
    pytest.param(environment('name = "c"\nkind = "oci"\nruntim = "runc"'),
                 "environment[0].runtim", id="unknown-env-key-with-missing-field"),
    # --- found as bugs, fixed ----------------------------------------------------
    pytest.param(campaign("repeat = 2.5"), "campaign.repeat", id="repeat-fraction"),
    pytest.param(workload('name = "stream_triad"\narray_mib = 2.5'), "workload[0].array_mib",
                 id="array-mib-fraction"),
    pytest.param(environment('name = "f"\nkind = "fake"\ncapabilities = ["bogus"]'),
                 "environment[0].capabilities[0]", id="unknown-enum-value"),
    pytest.param(workload('name = ["getpid"]'), "workload[0].name", id="workload-name-list"),
    pytest.param(environment('preset = ["native"]'), "environment[0].preset", id="preset-list"),
    pytest.param(environment("preset = {x = 1}"), "environment[0].preset", id="preset-table"),
    pytest.param(campaign("repeat = true"), "campaign.repeat", id="repeat-bool"),
    pytest.param(campaign("timeout_s = true"), "campaign.timeout_s", id="timeout-bool"),
    pytest.param(campaign('repeat = "3"'), "campaign.repeat", id="repeat-numeric-string"),
    pytest.param(workload('name = "getpid"\nmin_time_s = true'), "workload[0].min_time_s",
                 id="min-time-bool"),
    # --- repeat = "auto" and [campaign.auto] ----------------------------------------
    pytest.param(campaign('repeat = "Auto"'), "campaign.repeat", id="repeat-auto-capitalised"),
    pytest.param(campaign('repeat = ["auto"]'), "campaign.repeat", id="repeat-list"),
    pytest.param(campaign('repeat = 3\n[campaign.auto]\ntarget = 0'), "campaign.auto.target",
                 id="auto-target-zero"),
    pytest.param(campaign('[campaign.auto]\ntarget = 1.0'), "campaign.auto.target",
                 id="auto-target-one"),
    pytest.param(campaign('[campaign.auto]\ntarget = "2%"'), "campaign.auto.target",
                 id="auto-target-string"),
    pytest.param(campaign('[campaign.auto]\nmin_runs = 2'), "campaign.auto.min_runs",
                 id="auto-min-runs-two"),
    pytest.param(campaign('[campaign.auto]\nmin_runs = 5.0'), "campaign.auto.min_runs",
                 id="auto-min-runs-float"),
    pytest.param(campaign('[campaign.auto]\nmax_runs = 4'), "campaign.auto",
                 id="auto-max-below-default-min"),
    pytest.param(campaign('[campaign.auto]\nmin_runs = 10\nmax_runs = 9'), "campaign.auto",
                 id="auto-max-below-min"),
    pytest.param(campaign('[campaign.auto]\nmax_cell_s = 0'), "campaign.auto.max_cell_s",
                 id="auto-max-cell-zero"),
    pytest.param(campaign('[campaign.auto]\nmax_cell_s = true'), "campaign.auto.max_cell_s",
                 id="auto-max-cell-bool"),
    pytest.param(campaign('[campaign.auto]\ntagret = 0.01'), "campaign.auto.tagret",
                 id="auto-unknown-key"),
    pytest.param(campaign('auto = "yes"'), "campaign.auto", id="auto-not-a-table"),
    pytest.param(workload('name = "getpid"\nrepeat = 0'), "workload[0].repeat",
                 id="workload-repeat-zero"),
    pytest.param(workload('name = "getpid"\nrepeat = "3"'), "workload[0].repeat",
                 id="workload-repeat-numeric-string"),
    pytest.param(workload('name = "getpid"\nrepeat = true'), "workload[0].repeat",
                 id="workload-repeat-bool"),
    pytest.param(workload('name = "getpid"\nrepeat = [3, 5]'), "workload[0].repeat",
                 id="workload-repeat-list-is-no-sweep"),
    pytest.param(workload('name = "hang"\nrepeat = "auto"'), "workload[0].repeat",
                 id="auto-without-primary-metric"),
    pytest.param(workload('name = "dbench"\nbest_of = 1'), "workload[0].best_of",
                 id="best-of-one"),
    pytest.param(workload('name = "dbench"\nbest_of = "2"'), "workload[0].best_of",
                 id="best-of-string"),
    pytest.param(workload('name = "dbench"\nbest_of = 2\nrepeat = 3'), "workload[0]",
                 id="best-of-against-repeat"),
    pytest.param(campaign('repeat = "auto"') + '[[workload]]\nname = "hang"\n', "campaign.repeat",
                 id="campaign-auto-reaches-hang"),
]


@pytest.mark.parametrize("text, field", INVALID)
def test_invalid_plan_names_file_field_and_fix(write_plan, host: Host, text: str, field: str) -> None:
    path = write_plan(text, "bad-plan.toml")
    with pytest.raises(PlanError) as caught:
        load(path, host)
    problems = numbered_lines(str(caught.value))
    assert problems[0].startswith(f"{path}: {field}: "), problems
    assert all("fix:" in problem and f"{path}: " in problem for problem in problems), problems


def test_every_problem_of_a_plan_is_told_at_once_with_the_nearest_key(write_plan,
                                                                      host: Host) -> None:
    """A plan with four typos told its first only, and a workload's unknown key listed the
    parameters without the table's own keys (2026-11-27): now all four, each with the key
    or preset meant and every key allowed there."""
    path = write_plan('[campaign]\nrepet = 2\n\n[[environment]]\npreset = "nativ"\n\n'
                      '[[environment]]\nname = "x"\nkind = "qemu"\naccell = "tcg"\n\n'
                      '[[workload]]\nname = "getpid"\nrepat = 3\n')
    with pytest.raises(PlanError) as caught:
        load(path, host)
    message = str(caught.value)
    assert message.startswith("4 problems in the plan:\n  1. "), message
    assert numbered_lines(message) == [
        f"{path}: campaign.repet: unknown key; did you mean 'repeat'? (fix: remove it or check "
        "its spelling; allowed here: name, baseline, repeat, timeout_s, description, "
        "log_cap_mib, auto, shared_rounds)",
        f"{path}: environment[0].preset: unknown preset 'nativ'; did you mean 'native'? (fix: "
        f"use one of {', '.join(environments.PRESETS)})",
        f"{path}: environment[1].accell: unknown key; did you mean 'accel'? (fix: remove it or "
        "check its spelling; allowed here: preset, "
        + ", ".join(environments.spec_model("qemu").model_fields) + ")",
        f"{path}: workload[0].repat: unknown key; did you mean 'repeat'? (fix: remove it or "
        "check its spelling; allowed here: name, repeat, best_of, environments, label, "
        "min_time_s, "
        "values)"]


def test_toml_syntax_error_gives_line_and_column(write_plan, host: Host) -> None:
    path = write_plan('[campaign]\nrepeat = 3\nname = "a\n' + ENV + WORKLOAD)
    with pytest.raises(PlanError, match=r"line 3") as caught:
        load(path, host)
    assert "fix: correct the TOML syntax" in str(caught.value)


def test_missing_plan_file(tmp_path, host: Host) -> None:
    path = tmp_path / "absent.toml"
    with pytest.raises(PlanError) as caught:
        load(path, host)
    assert str(caught.value).startswith(f"{path}: no such plan file")
    assert "fix:" in str(caught.value)


def test_unreadable_plan_file_is_a_plan_error(tmp_path, host: Host) -> None:
    folder = tmp_path / "a-folder.toml"
    folder.mkdir()
    with pytest.raises(PlanError, match="is a folder, not a plan file"):
        load(folder, host)
    binary = tmp_path / "binary.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(PlanError, match=str(binary)):
        load(binary, host)


def test_unknown_key_lists_the_allowed_keys(write_plan, host: Host) -> None:
    path = write_plan(environment('preset = "runc"\nruntim = "runc"'))
    with pytest.raises(PlanError) as caught:
        load(path, host)
    assert "allowed here: preset, name, kind, runtime, binary, platform" in str(caught.value)
    path = write_plan(workload('name = "getpid"\nmin_tim = 1.0'))
    with pytest.raises(PlanError, match="allowed here: name, repeat, best_of, environments, label, min_time_s"):
        load(path, host)


def test_unknown_campaign_key_lists_campaign_fields(write_plan, host: Host) -> None:
    path = write_plan(campaign("repet = 3"))
    with pytest.raises(PlanError) as caught:
        load(path, host)
    message = str(caught.value)
    assert "allowed here: name, baseline, repeat, timeout_s, description, log_cap_mib, auto" in message
    path = write_plan(campaign("[campaign.auto]\ntagret = 0.01"))
    with pytest.raises(PlanError, match="allowed here: target, min_runs, max_runs, max_cell_s"):
        load(path, host)


def test_unknown_preset_and_kind_list_the_choices(write_plan, host: Host) -> None:
    with pytest.raises(PlanError) as caught:
        load(write_plan(environment('preset = "nope"')), host)
    assert all(name in str(caught.value) for name in environments.PRESETS)
    with pytest.raises(PlanError) as caught:
        load(write_plan(environment('name = "a"\nkind = "docker"')), host)
    assert "unknown kind 'docker'" in str(caught.value)
    assert all(kind in str(caught.value) for kind in environments.PUBLIC_KINDS)
    with pytest.raises(PlanError, match="missing kind"):
        load(write_plan(environment('name = "a"')), host)


def test_duplicate_and_baseline_messages_say_what(write_plan, host: Host) -> None:
    with pytest.raises(PlanError, match="'native' appears twice"):
        load(write_plan(ENV + ENV + WORKLOAD), host)
    with pytest.raises(PlanError, match="'qemu' is not an environment of this plan.*use one of native"):
        load(write_plan(campaign('baseline = "qemu"')), host)


def test_a_baseline_that_env_leaves_out_is_no_baseline_of_the_run(write_plan, host: Host) -> None:
    """--env runsc on a plan of runc and runsc whose baseline is runc exited 2."""
    path = write_plan('[campaign]\nbaseline = "runc"\n[[environment]]\npreset = "runc"\n'
                      '[[environment]]\npreset = "runsc"\n' + WORKLOAD)
    assert load(path, host).campaign.baseline == "runc"
    assert load(path, host, Overrides(environments=("runsc",))).campaign.baseline is None


# -- valid plans -------------------------------------------------------------------

def test_minimal_plan_gets_the_defaults(write_plan, host: Host) -> None:
    path = write_plan(ENV + WORKLOAD)
    plan = load(path, host)
    assert plan.source == str(path)
    assert plan.campaign.repeat is None  # each workload's family decides
    assert plan.workloads[0].repeat == AUTO  # getpid is a micro workload
    assert plan.campaign.auto.model_dump() == {"target": 0.02, "min_runs": 5, "max_runs": 30,
                                               "max_cell_s": 60.0, "stop_out_of_reach": False}
    assert plan.campaign.timeout_s == DEFAULT_TIMEOUT_S
    assert plan.baseline == "native"
    assert [spec.name for spec in plan.environments] == ["native"]
    assert [(case.name, case.label) for case in plan.workloads] == [("getpid", "getpid")]
    assert (plan.workloads[0].params.min_time_s, plan.workloads[0].params.values) == (0.02, 3)


def test_full_campaign_section(write_plan, host: Host) -> None:
    path = write_plan("""\
        [campaign]
        name = "tcg-vs-native"
        baseline = "native"
        repeat = 5
        timeout_s = 30
        description = "what it costs"

        [[environment]]
        preset = "native"

        [[environment]]
        preset = "qemu-user"

        [[workload]]
        name = "getpid"
        min_time_s = 0.05

        [[workload]]
        name = "stream_triad"
        array_mib = 80
        """)
    plan = load(path, host)
    assert plan.campaign.name == "tcg-vs-native"
    assert (plan.campaign.repeat, plan.campaign.timeout_s) == (5, 30.0)
    assert plan.campaign.description == "what it costs"
    assert [spec.name for spec in plan.environments] == ["native", "qemu-user"]
    assert [spec.kind for spec in plan.environments] == ["native", "qemu-user"]
    assert plan.workloads[0].params.min_time_s == 0.05
    assert plan.workloads[1].params.array_mib == 80
    assert plan.workloads[1].workload is workloads.CATALOGUE["stream_triad"]


def test_no_native_means_no_default_baseline(write_plan, host: Host) -> None:
    plan = load(write_plan(environment('preset = "runc"')), host)
    assert plan.baseline is None


def test_preset_with_overrides(write_plan, host: Host) -> None:
    path = write_plan("""\
        [campaign]
        baseline = "gvisor-kvm"

        [[environment]]
        preset = "runsc"
        name = "gvisor-kvm"
        platform = "kvm"

        [[environment]]
        preset = "runc"
        runtime_args = ["--debug"]

        [[workload]]
        name = "getpid"
        """)
    plan = load(path, host)
    gvisor, runc = plan.environments
    assert (gvisor.name, gvisor.kind, gvisor.runtime, gvisor.platform) == (
        "gvisor-kvm", "oci", "runsc", "kvm")
    assert (runc.name, runc.runtime, runc.runtime_args) == ("runc", "runc", ("--debug",))
    assert plan.baseline == "gvisor-kvm"


def test_preset_defaults_come_through(build_plan) -> None:
    plan = build_plan([{"preset": "runsc"}])
    (spec,) = plan.environments
    assert (spec.name, spec.runtime, spec.platform) == ("runsc", "runsc", "ptrace")


def test_scalar_sweep_gives_one_case_per_value(write_plan, host: Host) -> None:
    path = write_plan(workload('name = "stream_triad"\narray_mib = [16, 32]'))
    plan = load(path, host)
    assert [case.label for case in plan.workloads] == [
        "stream_triad[array_mib=16]", "stream_triad[array_mib=32]"]
    assert [case.params.array_mib for case in plan.workloads] == [16, 32]
    assert all(case.name == "stream_triad" for case in plan.workloads)
    assert all(case.params.ntimes == 10 for case in plan.workloads)


def test_two_swept_parameters_give_the_product(build_plan) -> None:
    plan = build_plan([{"preset": "native"}],
                      [{"name": "stream", "array_mib": [16, 32], "ntimes": [5, 6, 7]}])
    assert len(plan.workloads) == 6
    assert len({case.label for case in plan.workloads}) == 6
    assert {(c.params.array_mib, c.params.ntimes) for c in plan.workloads} == {
        (a, n) for a in (16, 32) for n in (5, 6, 7)}
    assert "stream[array_mib=32][ntimes=7]" in {case.label for case in plan.workloads}


def test_list_for_a_list_field_is_one_value_not_a_sweep(write_plan, host: Host) -> None:
    path = write_plan(environment('name = "ns"\nkind = "namespace"\nnamespaces = ["pid", "net"]'))
    plan = load(path, host)
    (spec,) = plan.environments
    assert spec.name == "ns"
    assert spec.namespaces == ("pid", "net")


def test_list_of_lists_sweeps_a_list_field(write_plan, host: Host) -> None:
    path = write_plan(environment(
        'name = "ns"\nkind = "namespace"\nnamespaces = [["pid"], ["pid", "net"]]'))
    plan = load(path, host)
    assert len(plan.environments) == 2
    first, second = plan.environments
    assert first.name != second.name
    assert all(spec.name.startswith("ns-") for spec in plan.environments)
    assert [first.namespaces, second.namespaces] == [("pid",), ("pid", "net")]


def test_a_one_item_list_is_the_plain_value(build_plan) -> None:
    plan = build_plan([{"name": "tcg", "kind": "qemu", "vcpus": [1]},
                       {"name": "ns", "kind": "namespace", "namespaces": [["pid"]]}],
                      [{"name": "upload", "channel": ["serial"], "mode": ["write", "no_write"]},
                       {"name": "stream_triad", "array_mib": [32]}])
    assert [spec.name for spec in plan.environments] == ["tcg", "ns"]
    assert plan.environments[0].vcpus == 1
    assert plan.environments[1].namespaces == ("pid",)  # [["pid"]]: a sweep over one list
    assert [case.label for case in plan.workloads] == [
        "upload[mode=write]", "upload[mode=no_write]", "stream_triad"]
    assert {case.params.channel for case in plan.workloads[:2]} == {"serial"}
    assert plan.workloads[2].params.array_mib == 32


def test_a_one_item_list_of_a_list_field_stays_one_list(build_plan) -> None:
    plan = build_plan([{"name": "ns", "kind": "namespace", "namespaces": ["net"]}])
    assert plan.environments[0].namespaces == ("net",)  # not "net", which the field refuses


def test_environment_sweep_on_a_preset_and_on_a_fake(build_plan) -> None:
    plan = build_plan([{"preset": "namespace", "namespaces": [["pid"], ["net"]]},
                       {"name": "f", "kind": "fake", "scale": [1, 2]}])
    names = [spec.name for spec in plan.environments]
    assert len(names) == 4 and len(set(names)) == 4
    assert [spec.scale for spec in plan.environments if spec.kind == "fake"] == [1.0, 2.0]


def test_fake_capabilities_are_validated_into_enums(build_plan) -> None:
    plan = build_plan([{"name": "f", "kind": "fake", "capabilities": ["tsc"]}])
    assert plan.environments[0].capabilities == (Capability.TSC,)


@pytest.mark.parametrize("llc_bytes, expected", [
    pytest.param(32 * 2**20, 128, id="32MiB-llc"),
    pytest.param(None, 80, id="no-llc"),
    pytest.param(1 * 2**20, 80, id="small-llc"),
    pytest.param(20 * 2**20, 80, id="exactly-80"),
    pytest.param(20 * 2**20 + 1, 81, id="rounded-up"),
])
def test_stream_array_default_from_host_facts(write_plan, llc_bytes, expected) -> None:
    facts = {"hostname": "h"} if llc_bytes is None else {"hostname": "h", "llc_bytes": llc_bytes}
    plan = load(write_plan(workload('name = "stream"')), Host(facts))
    assert plan.workloads[0].params.array_mib == expected


def test_explicit_array_mib_beats_the_host_default(build_plan) -> None:
    plan = build_plan([{"preset": "native"}], [{"name": "stream_triad", "array_mib": 16}])
    assert plan.workloads[0].params.array_mib == 16


def test_as_dict_is_json_and_complete(build_plan) -> None:
    plan = build_plan([{"preset": "native"}, {"name": "f", "kind": "fake", "capabilities": ["tsc"]}],
                      [{"name": "stream_triad", "array_mib": [16, 32]}], repeat=2)
    data = json.loads(json.dumps(plan.as_dict()))
    assert data["source"] == "test.toml"
    assert data["campaign"]["repeat"] == 2
    assert [env["name"] for env in data["environments"]] == ["native", "f"]
    assert data["environments"][1]["capabilities"] == ["tsc"]
    assert [w["label"] for w in data["workloads"]] == [
        "stream_triad[array_mib=16]", "stream_triad[array_mib=32]"]
    assert data["workloads"][0]["params"] == {"array_mib": 16, "ntimes": 10, "enough_s": 1.0}
    assert [w["repeat"] for w in data["workloads"]] == [2, 2]
    assert data["campaign"]["auto"] == {"target": 0.02, "min_runs": 5, "max_runs": 30,
                                        "max_cell_s": 60.0, "stop_out_of_reach": False}


# -- overrides (CLI flags) -----------------------------------------------------------

def test_overrides_narrow_a_plan_file(write_plan, host: Host) -> None:
    path = write_plan(ENV + '[[environment]]\npreset = "runc"\n' + WORKLOAD
                      + '[[workload]]\nname = "stream"\n')
    plan = load(path, host, Overrides(environments=("runc",), workloads=("stream",), repeat=7,
                                      timeout_s=2.5, name="narrow"))
    assert [spec.name for spec in plan.environments] == ["runc"]
    assert [case.name for case in plan.workloads] == ["stream"]
    assert (plan.campaign.repeat, plan.campaign.timeout_s, plan.campaign.name) == (7, 2.5, "narrow")
    assert plan.baseline is None  # native was narrowed away


def test_override_naming_something_not_in_the_plan(write_plan, host: Host) -> None:
    path = write_plan(ENV + WORKLOAD)
    with pytest.raises(PlanError, match=r"--env: 'runc' is not in the plan .*fix: use one of native"):
        load(path, host, Overrides(environments=("runc",)))
    with pytest.raises(PlanError, match=r"--workload: 'stream' is not in the plan .*fix:"):
        load(path, host, Overrides(workloads=("stream",)))


@pytest.mark.parametrize("overrides, flag", [
    (Overrides(repeat=0), "--repeat"),
    (Overrides(timeout_s=-1.0), "--timeout"),
    (Overrides(name="has space"), "--name"),
])
def test_override_with_a_bad_value_names_the_flag(write_plan, host: Host, overrides: Overrides,
                                                  flag: str) -> None:
    path = write_plan(ENV + WORKLOAD)
    with pytest.raises(PlanError) as caught:
        load(path, host, overrides)
    assert str(caught.value).startswith(f"{flag}: ")
    assert "fix:" in str(caught.value)
    with pytest.raises(PlanError, match=f"^{flag}: .*fix:"):
        from_flags(host, overrides)


def test_bad_value_in_the_file_still_names_the_file_with_a_flag_given(write_plan,
                                                                     host: Host) -> None:
    path = write_plan(campaign("timeout_s = 0"))
    with pytest.raises(PlanError, match=f"^{re.escape(str(path))}: campaign.timeout_s: .*fix:"):
        load(path, host, Overrides(repeat=2))


def test_from_flags_defaults(host: Host) -> None:
    plan = from_flags(host)
    assert plan.source == "command line"
    assert [spec.name for spec in plan.environments] == list(environments.DEFAULT_CAMPAIGN)
    assert "qemu-tcg" not in environments.DEFAULT_CAMPAIGN and "native" in environments.DEFAULT_CAMPAIGN
    assert [case.name for case in plan.workloads] == list(workloads.QUICK_SUITE)
    assert "hang" not in [case.name for case in plan.workloads]
    assert plan.baseline == "native"
    assert plan.campaign.repeat is None
    assert {case.name: case.repeat for case in plan.workloads} == {
        name: 3 if name == "stream" else AUTO for name in workloads.QUICK_SUITE}
    stream = next(case for case in plan.workloads if case.name == "stream")
    assert stream.params.array_mib == 128  # 4 x the fake host's 32 MiB cache
    assert stream.params.kernels == ["triad"]  # the summary's figure


@pytest.mark.parametrize("llc_mib, array_mib, runs", [
    (8, 80, 4),  # a small cache: 80 MiB arrays at least
    (32, 128, 3),  # an AMD EPYC 7003 VM: 3 runs of 3 x 128 MiB
    (480, 1920, 1),  # an Intel Xeon VM with a 480 MiB L3: one run of 3 x 1920 MiB
    (1152, 4608, 1),  # AMD Genoa-X: still valid STREAM, still one run
])
def test_the_default_campaign_s_stream_is_valid_and_bounded_by_its_arrays(
        host: Host, llc_mib: int, array_mib: int, runs: int) -> None:
    facts = Host({**host.facts, "llc_bytes": llc_mib * 2**20})
    stream = next(case for case in from_flags(facts).workloads if case.name == "stream")
    assert stream.params.array_mib == array_mib >= 4 * llc_mib  # McCalpin's rule
    assert stream.repeat == runs
    # the arrays the cell sets up in all stay within the budget, or are one run's
    assert runs == 1 or runs * 3 * array_mib <= 1152


def test_a_plan_s_stream_runs_all_four_kernels(host: Host, write_plan) -> None:
    path = write_plan('[[environment]]\npreset = "native"\n\n[[workload]]\nname = "stream"\n')
    stream = load(path, host, Overrides()).workloads[0]
    assert stream.params.kernels == ["copy", "scale", "add", "triad"]
    assert stream.repeat == DEFAULT_REPEAT


def test_from_flags_with_overrides(host: Host) -> None:
    plan = from_flags(host, Overrides(environments=("native", "runc"), workloads=("getpid", "hang"),
                                      repeat=5, timeout_s=3, name="flags"))
    assert [spec.name for spec in plan.environments] == ["native", "runc"]
    assert [case.name for case in plan.workloads] == ["getpid", "hang"]
    assert (plan.campaign.repeat, plan.campaign.timeout_s, plan.campaign.name) == (5, 3.0, "flags")
    assert plan.baseline == "native"
    assert from_flags(host, Overrides(environments=("runc",))).baseline is None


def test_from_flags_unknown_names(host: Host) -> None:
    with pytest.raises(PlanError) as caught:
        from_flags(host, Overrides(environments=("native", "docker")))
    assert str(caught.value).startswith("--env: unknown environment 'docker'")
    assert "fix:" in str(caught.value)
    with pytest.raises(PlanError) as caught:
        from_flags(host, Overrides(workloads=("getpidd",)))
    assert "unknown workload 'getpidd'" in str(caught.value)
    assert "fix:" in str(caught.value)
    with pytest.raises(PlanError, match="^--repeat: .*fix:"):
        from_flags(host, Overrides(repeat=-3))


def test_fake_kind_is_refused_in_users_plans(write_plan, host: Host, monkeypatch) -> None:
    from guestbench import environments
    monkeypatch.setattr(environments, "_plan_kinds", list(environments.PUBLIC_KINDS))
    path = write_plan('[[environment]]\nname = "f"\nkind = "fake"\n[[workload]]\nname = "getpid"\n')
    with pytest.raises(PlanError, match=r"environment\[0\]: unknown kind 'fake' \(fix: set kind"):
        load(path, host)


def test_runc_refuses_gvisor_options(write_plan, host: Host) -> None:
    path = write_plan('[[environment]]\npreset = "runc"\nplatform = "ptrace"\n'
                      '[[workload]]\nname = "getpid"\n')
    with pytest.raises(PlanError, match=r"environment\[0\].*platform is a runsc option.*fix:"):
        load(path, host)


def test_campaign_is_named_after_the_plan_file(write_plan, host: Host) -> None:
    path = write_plan('[[environment]]\npreset = "native"\n[[workload]]\nname = "getpid"\n')
    assert load(path, host).campaign.name == re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)


@pytest.mark.parametrize("field", ['tools = [""]', 'tools = ["a b"]', 'modules = [" "]',
                                   'kernel_args = ["a b"]', 'kernel_args = ["gb.args=x"]',
                                   'kernel = ""'])
def test_full_system_fields_reject_nonsense(write_plan, host: Host, field: str) -> None:
    name = field.split()[0]
    path = write_plan(f'[[environment]]\nname = "q"\nkind = "qemu"\n{field}\n'
                      '[[workload]]\nname = "boot"\n')
    with pytest.raises(PlanError, match=rf"environment\[0\]\.{name}.*fix:"):
        load(path, host)


# -- repeat: a number, "auto", per workload, by family -----------------------------------

def repeats(plan) -> dict[str, int | str]:
    return {case.label: case.repeat for case in plan.workloads}


def test_family_default_auto_for_micro_and_fixed_for_the_rest(build_plan) -> None:
    plan = build_plan([{"preset": "native"}],
                      [{"name": "getpid"}, {"name": "pipe_switch"}, {"name": "stream"},
                       {"name": "stream_triad"}, {"name": "boot"}, {"name": "hang"}])
    assert repeats(plan) == {"getpid": AUTO, "pipe_switch": AUTO, "stream": DEFAULT_REPEAT,
                             "stream_triad": DEFAULT_REPEAT, "boot": DEFAULT_REPEAT,
                             "hang": DEFAULT_REPEAT}
    assert plan.campaign.repeat is None
    assert plan.workloads[0].adaptive and not plan.workloads[2].adaptive


def test_campaign_repeat_applies_to_every_workload(build_plan) -> None:
    both = [{"name": "getpid"}, {"name": "stream"}]
    assert repeats(build_plan([{"preset": "native"}], both, repeat=3)) == {
        "getpid": 3, "stream": 3}
    assert repeats(build_plan([{"preset": "native"}], both, repeat="auto")) == {
        "getpid": AUTO, "stream": AUTO}


def test_a_workload_repeat_beats_the_campaign_and_covers_its_sweep(write_plan, host) -> None:
    path = write_plan("""\
        [campaign]
        repeat = 4

        [[environment]]
        preset = "native"

        [[workload]]
        name = "getpid"
        repeat = "auto"

        [[workload]]
        name = "stream_triad"
        array_mib = [16, 32]
        repeat = 2

        [[workload]]
        name = "boot"
        """)
    plan = load(path, host)
    assert repeats(plan) == {"getpid": AUTO, "stream_triad[array_mib=16]": 2,
                             "stream_triad[array_mib=32]": 2, "boot": 4}
    assert [case.params.model_dump() for case in plan.workloads][:2] == [
        {"min_time_s": 0.02, "values": 3}, {"array_mib": 16, "ntimes": 10, "enough_s": 1.0}]  # repeat is no parameter
    assert [w["repeat"] for w in plan.as_dict()["workloads"]] == [AUTO, 2, 2, 4]


def test_the_repeat_flag_beats_every_repeat_of_the_plan(write_plan, host) -> None:
    path = write_plan(campaign("repeat = 4") + '[[workload]]\nname = "stream"\nrepeat = 2\n')
    plan = load(path, host, Overrides(repeat=AUTO))
    assert repeats(plan) == {"getpid": AUTO, "stream": AUTO}
    assert plan.campaign.repeat == AUTO
    assert repeats(load(path, host, Overrides(repeat=1))) == {"getpid": 1, "stream": 1}


def test_auto_settings(write_plan, host) -> None:
    path = write_plan(campaign('repeat = "auto"\n[campaign.auto]\ntarget = 0.05\n'
                               "min_runs = 3\nmax_runs = 3\nmax_cell_s = 7"))
    auto = load(path, host).campaign.auto
    assert (auto.target, auto.min_runs, auto.max_runs, auto.max_cell_s) == (0.05, 3, 3, 7.0)


def test_max_runs_below_min_runs_says_which(write_plan, host) -> None:
    path = write_plan(campaign("[campaign.auto]\nmin_runs = 10\nmax_runs = 9"))
    with pytest.raises(PlanError, match=r"campaign.auto: max_runs \(9\) is below min_runs \(10\) "
                                        r"\(fix: make max_runs at least min_runs\)"):
        load(path, host)


def test_bad_repeat_message_names_both_forms(write_plan, host) -> None:
    with pytest.raises(PlanError) as caught:
        load(write_plan(campaign("repeat = true")), host)
    assert 'whole number from 1 to 10000, or "auto"' in str(caught.value)
    assert 'fix: give a whole number of runs such as 5, or "auto"' in str(caught.value)
    assert "not built yet" not in str(caught.value)


def test_auto_on_a_workload_without_a_primary_metric(host) -> None:
    with pytest.raises(PlanError, match=r'^--repeat: "auto" judges .* hang has none \(fix:'):
        from_flags(host, Overrides(workloads=("getpid", "hang"), repeat=AUTO))
    plan = from_flags(host, Overrides(workloads=("getpid", "hang")))
    assert repeats(plan) == {"getpid": AUTO, "hang": DEFAULT_REPEAT}


@pytest.mark.parametrize("text, expected", [
    (None, None), ("auto", AUTO), (" auto ", AUTO), ("7", 7), ("0", 0), ("-2", -2)])
def test_repeat_flag_text(text, expected) -> None:
    assert repeat_flag(text) == expected  # the range is checked with the plan


@pytest.mark.parametrize("text", ["", "x", "2.5", "AUTO", "3 runs", "true"])
def test_repeat_flag_that_is_neither_number_nor_auto(text) -> None:
    with pytest.raises(PlanError, match=r"^--repeat: .* is neither a number of runs nor auto "
                                        r"\(fix: e\.g\. --repeat 5, or --repeat auto\)"):
        repeat_flag(text)


@pytest.mark.parametrize("value", [0, 10001])
def test_repeat_flag_out_of_range_names_the_flag(host, value) -> None:
    with pytest.raises(PlanError, match=r'^--repeat: Input should be a whole number .*fix:'):
        from_flags(host, Overrides(repeat=value))


def test_a_workload_can_name_the_environments_it_runs_in(write_plan, host: Host) -> None:
    text = ('[[environment]]\npreset = "native"\n[[environment]]\nname = "tcg"\nkind = "qemu"\n'
            'vcpus = [1, 2]\n[[workload]]\nname = "getpid"\n'
            '[[workload]]\nname = "boot"\nenvironments = ["tcg*"]\n')
    plan = load(write_plan(text), host)
    boot = next(case for case in plan.workloads if case.name == "boot")
    getpid = next(case for case in plan.workloads if case.name == "getpid")
    assert [boot.runs_in(spec.name) for spec in plan.environments] == [False, True, True]
    assert all(getpid.runs_in(spec.name) for spec in plan.environments)
    assert plan.as_dict()["workloads"][1]["environments"] == ["tcg*"]


@pytest.mark.parametrize("value, message", [
    ('["kvm*"]', "'kvm\\*' matches no environment"),
    ('"native"', "a list of environment names"),
    ("[]", "a list of environment names"),
])
def test_workload_environments_must_match(write_plan, host: Host, value, message) -> None:
    with pytest.raises(PlanError, match=message) as caught:
        load(write_plan(workload(f'name = "getpid"\nenvironments = {value}')), host)
    assert "workload" in str(caught.value) and "fix:" in str(caught.value)


def test_a_swept_path_names_the_environment_by_its_file_name(write_plan, host) -> None:
    path = write_plan('[[environment]]\nname = "tcg"\npreset = "qemu-tcg"\n'
                      'kernel = ["/boot/vmlinuz-6.1.0-1-amd64", "/k/vmlinuz-6.1.0-1-cloud-amd64"]\n'
                      '[[workload]]\nname = "boot"\n')
    names = [spec.name for spec in load(path, host).environments]
    assert names == ["tcg-kernelvmlinuz_6.1.0_1_amd64", "tcg-kernelvmlinuz_6.1.0_1_cloud_amd64"]


def test_best_of_runs_n_times_whatever_repeat_says_and_is_stored(write_plan, host: Host) -> None:
    """best_of = 2, as the KVM-against-Xen page ran dbench ("the best of 2 runs"): 2 runs even
    under --repeat 5, kept in the stored plan (resume) and in each run's parameters (the
    tables show the best run)."""
    from guestbench.plan.build import stored
    path = write_plan(ENV + '[[workload]]\nname = "dbench"\nbest_of = 2\n' + WORKLOAD)
    plan = load(path, host, Overrides(repeat=5))
    dbench, getpid = plan.workloads
    assert (dbench.repeat, dbench.best_of, getpid.repeat, getpid.best_of) == (2, 2, 5, None)
    assert dbench.stored_params()["best_of"] == 2 and "best_of" not in getpid.stored_params()
    again = stored(json.loads(json.dumps(plan.as_dict())), "campaign 1")
    assert again.workloads[0].best_of == 2 and again.workloads[0].repeat == 2
