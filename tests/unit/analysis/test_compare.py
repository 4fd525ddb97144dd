"""guestbench compare: pairing like with like, verdicts, exit codes (fake environment, real CLI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from guestbench.analysis.compare import FASTER, SAME, SLOWER, judge
from guestbench.analysis.cells import Interval
from tests.support.cli import invoke

# compare judges what the store read: SQLite for every test, PostgreSQL for those marked
# both_stores (tests/unit/conftest.py)
ABOVE_THE_STORE = True

PLAN = """\
[campaign]
name = "{name}"
repeat = {repeat}
timeout_s = 5

[[environment]]
name = "base"
kind = "fake"

[[environment]]
name = "vm"
kind = "fake"
scale = {scale}

[[workload]]
name = "{workload}"
{extra}"""


@pytest.fixture
def run_campaign(tmp_path: Path, fake_agent: Path, store_url: str):
    url = store_url  # on SQLite and on PostgreSQL

    def run(name: str, scale: float = 1.0, repeat: int = 5, extra: str = "",
            workload: str = "getpid", exit_code: int = 0) -> str:
        """exit_code: 1 for a campaign some of whose runs fail."""
        plan = tmp_path / f"{name}.toml"
        plan.write_text(PLAN.format(name=name, scale=scale, repeat=repeat, extra=extra,
                                    workload=workload))
        result = invoke(["run", str(plan), "--db", url, "--quiet"], fake_agent)
        assert result.exit_code == exit_code, result.output
        return name

    run.url = url
    run.agent = fake_agent
    return run


def compare(run_campaign, *args: str):
    return invoke(["compare", *args, "--db", run_campaign.url], run_campaign.agent)


@pytest.mark.both_stores
def test_a_against_a_is_same_everywhere(run_campaign) -> None:
    run_campaign("a1"), run_campaign("a2")
    result = compare(run_campaign, "a1", "a2", "--format", "json", "--fail-on-regression")
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert document["schema"] == "guestbench-compare"
    assert document["summary"] == {"slower": 0, "faster": 0, "same": 4}
    assert {cell["verdict"] for cell in document["cells"]} == {SAME}
    assert document["unpaired"] == []


def test_a_table_of_no_verdict_says_so_in_one_row(run_campaign) -> None:
    """An A/A compare drew an empty grid, a header and no row (2026-11-27)."""
    run_campaign("a1"), run_campaign("a2")
    shown = compare(run_campaign, "a1", "a2")
    assert shown.exit_code == 0, shown.output
    assert "none of the 4 cells was judged slower or faster" in shown.stdout
    assert "| environment |" not in shown.stdout.split("Host noise")[0]


@pytest.mark.both_stores
def test_a_slowed_environment_is_slower_and_fails_the_check(run_campaign) -> None:
    run_campaign("before"), run_campaign("after", scale=1.2)
    plain = compare(run_campaign, "before", "after")
    assert plain.exit_code == 0  # a spec change is not paired by default
    assert "spec differs in scale" in plain.output
    result = compare(run_campaign, "before", "after", "--ignore-spec", "scale",
                     "--fail-on-regression", "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    verdicts = {(c["environment"], c["metric"]): c["verdict"] for c in document["cells"]}
    assert verdicts == {("base", "time_per_op"): SAME, ("base", "tsc_per_op"): SAME,
                        ("vm", "time_per_op"): SLOWER, ("vm", "tsc_per_op"): SLOWER}
    vm = next(c for c in document["cells"] if c["environment"] == "vm")
    assert vm["ratio"] == pytest.approx(1.2)
    assert vm["ratio_ci"][0] > 1.05 and vm["pvalue"] < 0.01
    assert "cell(s) slower in B" in result.stderr


def test_the_reverse_is_faster_and_passes_the_check(run_campaign) -> None:
    run_campaign("slow", scale=1.2), run_campaign("fast")
    result = compare(run_campaign, "slow", "fast", "--ignore-spec", "scale", "--fail-on-regression")
    assert result.exit_code == 0, result.output
    assert "faster" in result.output and "SLOWER" not in result.output


def test_too_few_runs_never_give_a_verdict_and_say_why(run_campaign) -> None:
    run_campaign("few", repeat=3), run_campaign("few-slow", scale=2.0, repeat=3)
    result = compare(run_campaign, "few", "few-slow", "--ignore-spec", "scale", "--format", "json")
    document = json.loads(result.output)
    vm = next(c for c in document["cells"] if c["environment"] == "vm")
    assert vm["verdict"] == SAME and vm["ratio"] == pytest.approx(2.0)
    assert any("too few runs" in note for note in vm["notes"])


def test_cells_that_cannot_be_paired_are_listed(run_campaign) -> None:
    run_campaign("one"), run_campaign("two", extra='\n[[workload]]\nname = "sched_yield"\n')
    result = compare(run_campaign, "one", "two", "--format", "json")
    unpaired = {row["what"]: row["why"] for row in json.loads(result.output)["unpaired"]}
    assert unpaired == {"workload sched_yield": "only in B"}


def test_an_environment_or_workload_without_results_is_one_line_not_one_per_cell(run_campaign) -> None:
    extra = '[[environment]]\nname = "broken"\nkind = "fake"\nbehaviour = "error"\n'
    run_campaign("a", extra=extra, exit_code=1)
    run_campaign("b", extra=extra, exit_code=1)
    result = compare(run_campaign, "a", "b", "--format", "json")
    unpaired = {row["what"]: row["why"] for row in json.loads(result.output)["unpaired"]}
    assert unpaired == {"environment broken": "no successful run in A and B"}


def test_markdown_output(run_campaign) -> None:
    run_campaign("m1"), run_campaign("m2")
    result = compare(run_campaign, "m1", "m2", "--format", "markdown")
    assert result.exit_code == 0
    assert result.output.startswith("### Compare: A = campaign 1 'm1'")
    assert "| base | getpid | time_per_op (ns) |" in result.output


@pytest.mark.parametrize("args, message", [
    (["nope", "m1"], "no campaign 'nope'"),
    (["m1", "m1", "--threshold", "-1"], "--threshold"),
    (["m1", "m1", "--alpha", "2"], "--alpha"),
])
def test_bad_input_exits_2(run_campaign, args, message) -> None:
    run_campaign("m1")
    result = compare(run_campaign, *args)
    assert result.exit_code == 2
    assert message in result.output


def test_nothing_to_pair_exits_2_and_says_why(run_campaign) -> None:
    run_campaign("x"), run_campaign("y", workload="sched_yield")
    result = compare(run_campaign, "x", "y")
    assert result.exit_code == 2
    assert "no cell of campaign x pairs with one of y" in result.output
    assert "workload getpid: only in A" in result.output


@pytest.mark.parametrize("ratio, pvalue, unit, verdict", [
    ((1.20, 1.15, 1.25), 0.001, "ns", SLOWER), ((0.80, 0.75, 0.85), 0.001, "ns", FASTER),
    ((0.80, 0.75, 0.85), 0.001, "MB/s", SLOWER), ((1.20, 1.15, 1.25), 0.001, "MB/s", FASTER),
    ((1.04, 1.03, 1.05), 0.0001, "ns", SAME),  # significant but within the 5% noise threshold
    ((1.066, 1.023, 1.098), 0.002, "ns", SAME),  # recorded A/A: past 5%, its interval is not
    ((1.50, 1.20, 1.90), 0.02, "ns", SAME),  # large but not significant
    ((1.50, 1.20, 1.90), None, "ns", SAME),
    ((1.20, None, None), 0.001, "ns", SLOWER),  # no interval: the point estimate decides
])
def test_judge(ratio, pvalue, unit, verdict) -> None:
    assert judge(Interval(*ratio), pvalue, unit, 0.05, 0.01) == verdict


def test_a_missing_second_store_exits_2(run_campaign, tmp_path) -> None:
    run_campaign("m1")
    result = compare(run_campaign, "m1", "m1", "--db-b", f"sqlite:///{tmp_path / 'nope.sqlite'}")
    assert result.exit_code == 2 and "no store at" in result.output


@pytest.mark.parametrize("target, message", [
    ("missing/report.html", "does not exist (fix: create it first)"),
    (".", "is a folder (fix: name a file in it)"),
])
def test_report_output_to_a_bad_place_exits_2_and_writes_nothing(run_campaign, tmp_path, target,
                                                                 message) -> None:
    run_campaign("m1")
    result = invoke(["report", "--db", run_campaign.url, "--format", "html", "-o",
                     str(tmp_path / target)], run_campaign.agent)
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not list(tmp_path.glob(".report.html.*")) and not list(tmp_path.glob(".*.tmp"))


def test_report_output_is_written_whole_and_readable_by_others(run_campaign, tmp_path) -> None:
    run_campaign("m1")
    target = tmp_path / "out.md"
    result = invoke(["report", "--db", run_campaign.url, "--format", "markdown", "-o", str(target)],
                    run_campaign.agent)
    assert result.exit_code == 0, result.output
    assert target.read_text().startswith("### Measured")
    assert target.stat().st_mode & 0o044  # not the 0600 of a temporary file


def test_the_cycle_collector_is_on_again_after_report_and_compare(run_campaign) -> None:
    import gc

    run_campaign("a")
    run_campaign("b")
    assert compare(run_campaign, "a", "b").exit_code == 0 and gc.isenabled()
    result = invoke(["report", "--db", run_campaign.url], run_campaign.agent)
    assert result.exit_code == 0 and gc.isenabled()


def test_report_and_compare_leave_the_environment_as_they_found_it(run_campaign, monkeypatch) -> None:
    """They give OpenBLAS one thread for their own run, and only when the user did not
    choose a number: nothing of it stays in a process that goes on."""
    import os

    run_campaign("a")
    run_campaign("b")
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    assert compare(run_campaign, "a", "b").exit_code == 0
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    assert invoke(["report", "--db", run_campaign.url], run_campaign.agent).exit_code == 0
    assert "OPENBLAS_NUM_THREADS" not in os.environ
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")
    assert compare(run_campaign, "a", "b").exit_code == 0
    assert os.environ["OPENBLAS_NUM_THREADS"] == "4"


BROKEN_IN_B = '[[environment]]\nname = "flaky"\nkind = "fake"\nbehaviour = "{behaviour}"\n'


@pytest.mark.both_stores
@pytest.mark.parametrize("behaviour, outcome", [("error", "failed"),
                                                ("unavailable", "unavailable")])
def test_a_workload_ok_in_a_and_broken_in_b_fails_the_gate(run_campaign, behaviour,
                                                            outcome) -> None:
    # (the fake's behaviour stands for the change under test: --ignore-spec pairs the two)
    run_campaign("good", extra=BROKEN_IN_B.format(behaviour="ok"))
    run_campaign("bad", extra=BROKEN_IN_B.format(behaviour=behaviour),
                 exit_code=1 if outcome == "failed" else 0)
    same = ("--ignore-spec", "behaviour")
    result = compare(run_campaign, "good", "bad", "--fail-on-regression", *same)
    assert result.exit_code == 1, result.output
    assert result.stdout.index("Broken in B") < result.stdout.index("Compare: A =")
    assert f"workload(s) ok in A and {outcome} in B (--fail-on-regression)" in result.output
    document = json.loads(compare(run_campaign, "good", "bad", "--format", "json", *same).output)
    assert [(row["environment"], row["workload"], row["outcome"])
            for row in document["broken"]] == [("flaky", "getpid", outcome)]
    assert not any(row["what"] == "environment flaky" for row in document["unpaired"])
    allowed = compare(run_campaign, "good", "bad", "--fail-on-regression", "--allow-missing",
                      *same)
    assert allowed.exit_code == 0, allowed.output
    assert "Broken in B" in allowed.stdout  # listed all the same


FLAKY_IN_B = '[[environment]]\nname = "flaky"\nkind = "fake"\nfail_every = {every}\n'


@pytest.mark.both_stores
def test_a_cell_whose_b_lost_some_runs_is_flaky_not_same_and_fails_the_gate(run_campaign):
    """10 runs a side; in B every third fails (3 of 10): its survivors' figures are A's,
    and the cell is flaky, a regression, with both success rates and Fisher's p."""
    run_campaign("good", repeat=10, extra=FLAKY_IN_B.format(every=0))
    run_campaign("bad", repeat=10, extra=FLAKY_IN_B.format(every=3), exit_code=1)
    same = ("--ignore-spec", "fail_every")
    result = compare(run_campaign, "good", "bad", "--fail-on-regression", *same)
    assert result.exit_code == 1, result.output
    assert "1 workload(s) ok in A and flaky in B (--fail-on-regression)" in result.output
    document = json.loads(compare(run_campaign, "good", "bad", "--format", "json",
                                  *same).output)
    flaky, = document["broken"]
    assert (flaky["environment"], flaky["workload"], flaky["outcome"]) == (
        "flaky", "getpid", "flaky")
    assert flaky["reason"].startswith("3 of 10 runs not ok in B (3 failed), 0 of 10 in A; "
                                      "success 70% against 100% (Fisher's exact p = 0.11)")
    # the survivors are not judged: alone, their figures are A's and would say `same`
    assert not [cell for cell in document["cells"] if cell["environment"] == "flaky"]
    allowed = json.loads(compare(run_campaign, "good", "bad", "--format", "json",
                                 "--max-failure-rate", "0.3", *same).output)
    assert {cell["verdict"] for cell in allowed["cells"]
            if cell["environment"] == "flaky"} == {SAME}
    # a rate the user allows: 3 in 10 lost is within 0.3, not within 0.2
    assert compare(run_campaign, "good", "bad", "--fail-on-regression", "--max-failure-rate",
                   "0.3", *same).exit_code == 0
    assert compare(run_campaign, "good", "bad", "--fail-on-regression", "--max-failure-rate",
                   "0.2", *same).exit_code == 1


@pytest.mark.both_stores
def test_a_spec_or_parameter_that_differs_in_b_fails_the_gate_without_any_flag(run_campaign):
    """B's environment is not A's (its spec differs: a bogus runtime argument would) or its
    workload is not A's: not judged, listed as broken, and the gate counts it; the hint's
    --ignore-spec pairs them, for an environment's key and a workload's parameter alike."""
    run_campaign("before"), run_campaign("after", scale=1.2)
    result = compare(run_campaign, "before", "after", "--fail-on-regression")
    assert result.exit_code == 1, result.output
    assert "1 workload(s) ok in A and spec differs in B (--fail-on-regression)" in result.output
    document = json.loads(compare(run_campaign, "before", "after", "--format", "json").output)
    drift, = document["broken"]
    assert (drift["environment"], drift["workload"], drift["outcome"]) == ("vm", "*",
                                                                         "spec differs")
    assert "spec differs in scale" in drift["reason"] and "--ignore-spec scale" in drift["reason"]
    run_campaign("longer", extra="min_time_s = 0.2\n")
    told = compare(run_campaign, "before", "longer", "--fail-on-regression")
    assert told.exit_code == 1 and "--ignore-spec min_time_s" in told.output, told.output
    paired = compare(run_campaign, "before", "longer", "--fail-on-regression", "--ignore-spec",
                     "min_time_s", "--format", "json")
    assert paired.exit_code == 0, paired.output
    assert json.loads(paired.output)["broken"] == []


@pytest.mark.parametrize("rate", ["-0.1", "1.5", "most"])
def test_a_max_failure_rate_outside_0_to_1_is_bad_input(run_campaign, rate):
    run_campaign("a1"), run_campaign("a2")
    told = compare(run_campaign, "a1", "a2", "--max-failure-rate", rate)
    assert told.exit_code == 2 and "--max-failure-rate" in told.output, told.output


def _memory_side(overhead_mib: float, seed: int):
    """A side of one environment whose footprint workload gave 8 runs: PSS, USS, RSS and
    the overhead beyond guest RAM near overhead_mib (and a start time that never moves)."""
    import datetime as dt
    import random
    from guestbench.analysis import compare as comparing
    from guestbench.store.records import Campaign, Environment, Run, StoredSample
    rng = random.Random(seed)
    runs, samples = [], []
    for number in range(8):
        runs.append(Run(id=number + 1, environment_id=1, environment="vm", workload="footprint",
                        label="footprint", params={}, repetition=number, status="ok",
                        reason="", flags=[], started_at=dt.datetime(2026, 11, 27),
                        host_seconds=1.0))
        noise = rng.gauss(0, 0.05)
        for metric, value in (("footprint_overhead", overhead_mib + noise),
                              ("footprint_pss", 300 + overhead_mib + noise),
                              ("footprint_rss", 400 + 2 * overhead_mib + noise),
                              ("footprint_processes", 3.0)):
            samples.append(StoredSample(run_id=number + 1, metric=metric, unit=(
                "count" if metric == "footprint_processes" else "MiB"), value=value))
    environment = Environment(id=1, name="vm", kind="qemu", spec={"kind": "qemu"},
                              available=True, probe="yes", position=0)
    return comparing.side(Campaign(id=seed), [environment], runs, samples)


@pytest.mark.parametrize("b_overhead, verdict", [
    (7.0, SLOWER),  # +2 MiB on a 5 MiB overhead: +40%, and beyond 1 MiB
    (5.3, SAME),  # +0.3 MiB: significant, under the threshold whatever the ratio
    (3.0, FASTER)])
def test_memory_is_judged_against_a_threshold_in_mib(b_overhead, verdict) -> None:
    """compare never judged footprint or density memory (2026-11-27): MiB were context."""
    from guestbench.analysis import compare as comparing
    from guestbench.report.tables.comparison import verdict_text
    result = comparing.compare(_memory_side(5.0, 1), _memory_side(b_overhead, 2))
    cells = {cell.metric: cell for cell in result.cells}
    assert set(cells) == {"footprint_overhead", "footprint_pss"}  # RSS and counts: not judged
    assert cells["footprint_overhead"].verdict == verdict
    assert cells["footprint_pss"].verdict == verdict  # +2 MiB of 305: under 1%, still judged
    assert cells["footprint_overhead"].notes[0].endswith(" MiB (judged against 1 MiB)")
    text = verdict_text(cells["footprint_overhead"])
    assert text == {SLOWER: "MORE MEMORY", FASTER: "less memory", SAME: "same"}[verdict]
    assert (result.regressions != []) == (verdict == SLOWER)
    wider = comparing.compare(_memory_side(5.0, 1), _memory_side(b_overhead, 2),
                              memory_threshold_mib=3.0)
    assert {cell.verdict for cell in wider.cells} == {SAME}  # 2 MiB is within 3 MiB


def test_a_burst_whose_b_readied_fewer_instances_is_flaky_by_its_success_rate():
    """47 of 50 instances ready in B against 50 of 50 in A: every run ended ok and the times
    said `same`; the success rate is judged as a proportion, as lost runs are."""
    from types import SimpleNamespace

    from guestbench.analysis.compare import lower_success

    def side(*success: float, instances: int = 50):
        cell = SimpleNamespace(values=list(success))
        return SimpleNamespace(results=SimpleNamespace(cells={("b50", "burst_success"): {
            "runc": cell}}), params={"b50": {"instances": instances}})

    flaky = lower_success(side(100.0, 100.0), side(94.0, 100.0), "runc", "b50")
    assert (flaky.environment, flaky.label, flaky.outcome) == ("runc", "b50", "flaky")
    assert flaky.reason.startswith("97 of 100 instances succeeded in B (burst_success), 100 "
                                   "of 100 in A; success 97% against 100% (Fisher's exact p =")
    assert lower_success(side(100.0), side(100.0), "runc", "b50") is None
    assert lower_success(side(94.0), side(100.0), "runc", "b50") is None  # B better
    assert lower_success(side(100.0), side(94.0), "runc", "b50", max_failure_rate=0.1) is None
    assert lower_success(side(100.0), side(94.0), "runsc", "b50") is None  # no such cell


def test_an_environment_of_functional_figures_is_marked_with_its_legend(run_campaign) -> None:
    """As report does: its name marked § wherever a table names it, and the legend saying
    why once (a Xen domU under emulation, a KVM nested in an emulated L1); the JSON says
    it in a field."""
    why = 'functional = "run under emulation here"\n'
    run_campaign("before", extra=""), run_campaign("after", scale=1.5)
    plain = compare(run_campaign, "before", "after")
    assert "§" not in plain.stdout
    marked_plan = PLAN.replace('name = "vm"\nkind = "fake"\n', 'name = "vm"\nkind = "fake"\n'
                               + why)
    for name, scale in (("m1", 1.0), ("m2", 1.5)):
        plan = Path(run_campaign.url.removeprefix("sqlite:///")).parent / f"{name}.toml"
        plan.write_text(marked_plan.format(name=name, scale=scale, repeat=5, extra="",
                                           workload="getpid"))
        assert invoke(["run", str(plan), "--db", run_campaign.url, "--quiet"],
                      run_campaign.agent).exit_code == 0
    shown = compare(run_campaign, "m1", "m2", "--ignore-spec", "scale", "--all")
    assert shown.exit_code == 0, shown.output
    rows = [line for line in shown.stdout.splitlines() if line.startswith("| vm")]
    assert rows and all(line.startswith("| vm § ") for line in rows), rows
    legend = ("§ functional figures only, kept out of geometric means (vm: Fake 1.0): run "
              "under emulation here.")
    assert shown.stdout.replace("\n", " ").count(legend.split(":")[0]) == 1
    document = json.loads(compare(run_campaign, "m1", "m2", "--ignore-spec", "scale",
                                  "--format", "json").output)
    assert document["functional"] == {"vm": "run under emulation here"}
