"""guestbench ab: A and B in one interleaved campaign, compared with Holm-adjusted verdicts."""

from __future__ import annotations

import json

import pytest

from guestbench.analysis.compare import holm
from guestbench.plan.ab import ab_plan, assignments
from guestbench.plan.build import load
from guestbench.plan.errors import PlanError

from tests.support.cli import campaigns_in, invoke

PLAN = """
[campaign]
name = "ab"
repeat = 10

[[environment]]
name = "f"
kind = "fake"

[[workload]]
name = "getpid"

[[workload]]
name = "sched_yield"
environments = ["f"]
"""


def test_assignments_read_toml_values_else_text():
    assert assignments(("vcpus=2", "platform=systrap", "on=true", "xs=[1, 2]"), "--a") == {
        "vcpus": 2, "platform": "systrap", "on": True, "xs": [1, 2]}
    assert assignments(("runsc.platform=systrap",), "--b") == {"runsc.platform": "systrap"}
    for bad, words in (("vcpus", "not KEY=VALUE"), ("=2", "not KEY=VALUE"),
                       ("name=x", "cannot differ"), ("runsc.=2", "not KEY=VALUE"),
                       ("f.kind=qemu", "kind cannot differ")):
        with pytest.raises(PlanError, match=words):
            assignments((bad,), "--b")


def test_the_ab_plan_doubles_every_environment_and_interleaves(write_plan, host):
    plan = ab_plan(load(write_plan(PLAN), host), {"scale": 1.0}, {"scale": 2.0})
    assert [spec.name for spec in plan.environments] == ["f.a", "f.b"]
    assert [spec.scale for spec in plan.environments] == [1.0, 2.0]
    assert plan.interleave and plan.as_dict()["interleave"] is True
    assert all(case.runs_in("f.b") for case in plan.workloads)
    with pytest.raises(PlanError, match=r"--b \(environment f\): .*scal"):
        ab_plan(load(write_plan(PLAN), host), {}, {"scal": 2.0})
    same = ab_plan(load(write_plan(PLAN), host), {}, {})  # an A/A check
    assert [spec.name for spec in same.environments] == ["f.a", "f.b"]


def test_holm_multiplies_the_kth_smallest_and_keeps_order():
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


@pytest.mark.parametrize("b_scale, verdict", [(1.0, "0 slower, 0 faster, 4 same"),
                                              (2.0, "4 slower, 0 faster, 0 same")])
def test_ab_on_the_fake_environment(tmp_path, fake_agent, b_scale, verdict):
    plan_file = tmp_path / "ab.toml"
    plan_file.write_text(PLAN)
    url = f"sqlite:///{tmp_path / 'ab.sqlite'}"
    result = invoke(["ab", str(plan_file), "--a", "scale=1.0", "--b", f"scale={b_scale}",
                     "--db", url], fake_agent)
    assert result.exit_code == 0, result.output
    assert f"A/B: {verdict} of 4 cells" in result.stdout
    (row,) = campaigns_in(tmp_path / "ab.sqlite")
    assert row.status == "finished"


@pytest.mark.parametrize("behaviour, outcome", [("error", "failed")])
def test_a_b_side_whose_runs_all_break_fails_the_gate(tmp_path, fake_agent, behaviour, outcome):
    """A change that breaks every run of B is a regression, not "nothing to compare" (a hang
    is one more outcome of the same rule; its timeouts cost the unit suite 12 s)."""
    plan_file = tmp_path / "ab.toml"
    plan_file.write_text(PLAN.replace("repeat = 10", "repeat = 3\ntimeout_s = 1"))
    url = f"sqlite:///{tmp_path / 'ab.sqlite'}"
    args = ["ab", str(plan_file), "--b", f"behaviour={behaviour}", "--db", url,
            "--fail-on-regression"]
    result = invoke(args, fake_agent)
    assert result.exit_code == 1, result.output
    assert "Broken in B: ok in A, not in B" in result.stdout
    assert f"workload(s) ok in A and {outcome} in B (--fail-on-regression)" in result.output
    allowed = invoke([*args, "--allow-missing"], fake_agent)
    assert allowed.exit_code == 0, allowed.output


def test_a_side_that_cannot_run_at_all_is_refused_before_anything_runs(tmp_path, fake_agent):
    plan_file = tmp_path / "ab.toml"
    plan_file.write_text(PLAN)
    database = tmp_path / "ab.sqlite"
    result = invoke(["ab", str(plan_file), "--b", "behaviour=unavailable", "--db",
                     f"sqlite:///{database}", "--fail-on-regression"], fake_agent)
    assert result.exit_code == 2, result.output
    assert "ab: side B cannot run here" in result.output and "f.b:" in result.output
    assert not database.exists()  # no campaign was started


TWO = PLAN.replace('[[workload]]\nname = "getpid"', '[[environment]]\nname = "g"\nkind = "fake"\n\n'
                   '[[workload]]\nname = "getpid"', 1)


def test_an_option_scoped_to_one_environment_changes_that_one_alone(write_plan, host):
    """--b runsc.platform=systrap in a plan of runc and runsc: runc has no platform."""
    plan = ab_plan(load(write_plan(TWO), host), {}, {"f.scale": 2.0})
    assert [(spec.name, spec.scale) for spec in plan.environments] == [
        ("f.a", 1.0), ("f.b", 2.0), ("g.a", 1.0), ("g.b", 1.0)]
    with pytest.raises(PlanError, match=r"--b h.scale: the plan has no environment h "
                                        r"\(it has: f, g\)"):
        ab_plan(load(write_plan(TWO), host), {}, {"h.scale": 2.0})


def test_ab_takes_run_s_narrowing_flags_and_a_format(tmp_path, fake_agent):
    plan_file = tmp_path / "ab.toml"
    plan_file.write_text(TWO)
    url = f"sqlite:///{tmp_path / 'ab.sqlite'}"
    result = invoke(["ab", str(plan_file), "--b", "g.scale=3.0", "--env", "g",
                     "--workload", "getpid", "--timeout", "30", "--format", "json",
                     "--db", url], fake_agent)
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)  # the document alone on stdout
    assert {(cell["environment"], cell["workload"]) for cell in document["cells"]} == {
        ("g", "getpid")}
    assert {cell["verdict"] for cell in document["cells"]
            if cell["metric"] == "time_per_op"} == {"slower"}
    assert "A/B: " in result.stderr
