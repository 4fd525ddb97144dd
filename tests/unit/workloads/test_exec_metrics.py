"""exec and its metrics: plan validation, parsing recorded tool output, declared directions."""

from __future__ import annotations

import dataclasses

from pathlib import Path

import pytest

from guestbench.analysis.compare import FASTER, SLOWER, judge
from guestbench.analysis.cells import Interval, declared_directions
from guestbench.analysis.summary import summarise
from guestbench.host import Host
from guestbench.plan.build import load
from guestbench.plan.errors import PlanError
from guestbench.plan.schema import AUTO
from guestbench.workloads import CATALOGUE
from guestbench.workloads.base import OutputError, RunOutput
from guestbench.workloads.metrics import Metric, parse_metrics
from tests.support.campaigns import Campaign
from guestbench.store.records import Run, StoredSample

DATA = Path(__file__).parents[1] / "data" / "tools"
ENV = '[[environment]]\npreset = "native"\n'
SYSBENCH_EPS = r"events per second:\s*(?P<value>[0-9.]+)"
STRESS_CPU = r"^stress-ng: metrc: \[\d+\] cpu\s+\d+\s+(?:\S+\s+){3}(?P<value>[0-9.]+)"


def exec_table(metric: str = "", extra: str = "") -> str:
    """One exec workload with one metric; `metric` adds or replaces keys of the metric."""
    return (f'{ENV}[[workload]]\nname = "exec"\nargv = ["sysbench", "cpu", "run"]\n{extra}\n'
            f"[[workload.metrics]]\nname = \"events\"\nregex = '{SYSBENCH_EPS}'\n"
            f'unit = "events/s"\nbetter = "higher"\n{metric}\n')


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def metric(**given) -> Metric:
    return Metric(**{"name": "events", "regex": SYSBENCH_EPS, "unit": "events/s",
                     "better": "higher", **given})


# ---- plan validation -------------------------------------------------------------

# (the metric table's changed keys, the field path, words of the message)
BAD_METRICS = [
    pytest.param("regex = '(?P<value>[0-9.]+'", "workload[0].metrics[0].regex",
                 "not a valid Python regular expression", id="bad-regex"),
    pytest.param(r"regex = 'events per second:\s*([0-9.]+)'", "workload[0].metrics[0].regex",
                 "no named group 'value'", id="no-value-group"),
    pytest.param("colour = 'red'", "workload[0].metrics[0].colour", "unknown key",
                 id="unknown-key"),
    pytest.param('better = "up"', "workload[0].metrics[0].better", "'higher' or 'lower'",
                 id="bad-better"),
    pytest.param("scale = 0", "workload[0].metrics[0].scale", "scale of 0", id="scale-zero"),
    pytest.param("scale = 0.0", "workload[0].metrics[0].scale", "scale of 0",
                 id="scale-zero-float"),
    pytest.param("scale = inf", "workload[0].metrics[0].scale", "finite", id="scale-inf"),
    pytest.param('scale = "1000"', "workload[0].metrics[0].scale", "number", id="scale-string"),
    pytest.param("count = 0", "workload[0].metrics[0].count", "greater than or equal to 1",
                 id="count-zero"),
    pytest.param("count = 1.5", "workload[0].metrics[0].count", "integer", id="count-fraction"),
    pytest.param('stream = "stdin"', "workload[0].metrics[0].stream", "'stdout' or 'stderr'",
                 id="bad-stream"),
    pytest.param('name = "my metric"', "workload[0].metrics[0].name", "pattern", id="bad-name"),
    pytest.param('name = "clock_ratio"', "workload[0].metrics[0].name", "context metric",
                 id="reserved-name"),
    pytest.param('unit = ""', "workload[0].metrics[0].unit", "at least 1", id="empty-unit"),
]


def check_message(message: str, path: Path, field: str, words: str) -> None:
    assert message.startswith(f"{path}: {field}: "), message
    assert words in message, message
    assert "fix:" in message and "\n" not in message, message


@pytest.mark.parametrize("change, field, words", BAD_METRICS)
def test_a_bad_metric_names_its_field_path_and_the_fix(write_plan, host: Host, change: str,
                                                       field: str, words: str) -> None:
    # a later key replaces the same key given earlier: TOML forbids that, so rebuild the table
    key = change.split("=")[0].strip()
    text = exec_table(change)
    if key in ("regex", "better", "name", "unit"):
        head, table = text.split("[[workload.metrics]]\n")
        table = "\n".join(line for line in table.splitlines()
                          if not line.startswith(f"{key} =") or line == change)
        text = f"{head}[[workload.metrics]]\n{table}\n"
    path = write_plan(text)
    with pytest.raises(PlanError) as caught:
        load(path, host)
    check_message(str(caught.value), path, field, words)
    assert "more)" not in str(caught.value), "a bad item must not drag a second error along"


def test_the_regex_fixes_say_how(write_plan, host: Host) -> None:
    path = write_plan(exec_table().replace(SYSBENCH_EPS, r"events per second:\s*([0-9.]+)"))
    with pytest.raises(PlanError, match=r"fix: capture the number with \(\?P<value>\.\.\.\)"):
        load(path, host)
    path = write_plan(exec_table().replace(SYSBENCH_EPS, "(?P<value>[0-9.]+"))
    with pytest.raises(PlanError, match="missing \\), unterminated subpattern.*single quotes"):
        load(path, host)


def test_an_unknown_metric_key_lists_the_metric_keys(write_plan, host: Host) -> None:
    with pytest.raises(PlanError, match="allowed here: name, regex, unit, better, kind, scale, count, "
                                        "stream"):
        load(write_plan(exec_table("colour = 'red'")), host)


@pytest.mark.parametrize("extra, field, words", [
    pytest.param("argv = []", "workload[0].argv", "no program", id="argv-empty"),
    pytest.param('argv = ["bin/sysbench"]', "workload[0].argv", "relative path",
                 id="argv-relative"),
    pytest.param('argv = "sysbench cpu run"', "workload[0].argv", "tuple", id="argv-a-string"),
    pytest.param('argv = ["sysbench", 3]', "workload[0].argv[1]", "string", id="argv-number"),
    pytest.param("warmup_runs = -1", "workload[0].warmup_runs", "greater than", id="warmup"),
    pytest.param("shell = true", "workload[0].shell", "unknown key", id="unknown-param"),
])
def test_bad_exec_parameters(write_plan, host: Host, extra: str, field: str, words: str) -> None:
    text = exec_table()
    if extra.startswith("argv"):
        text = text.replace('argv = ["sysbench", "cpu", "run"]', extra)
    else:
        text = text.replace('argv = ["sysbench", "cpu", "run"]\n',
                            f'argv = ["sysbench", "cpu", "run"]\n{extra}\n')
    path = write_plan(text)
    with pytest.raises(PlanError) as caught:
        load(path, host)
    check_message(str(caught.value), path, field, words)


def test_metric_names_must_differ(write_plan, host: Host) -> None:
    path = write_plan(exec_table() + exec_table().split("\n\n", 1)[1].split("[[workload]]")[0]
                      + f"[[workload.metrics]]\nname = \"events\"\nregex = '{SYSBENCH_EPS}'\n"
                        'unit = "events/s"\nbetter = "higher"\n')
    with pytest.raises(PlanError) as caught:
        load(path, host)
    check_message(str(caught.value), path, "workload[0].metrics",
                  "metrics[1].name 'events' is also the name of metrics[0]")


def test_no_metric_is_an_error(write_plan, host: Host) -> None:
    path = write_plan(f'{ENV}[[workload]]\nname = "exec"\nargv = ["true"]\nmetrics = []\n')
    with pytest.raises(PlanError) as caught:
        load(path, host)
    check_message(str(caught.value), path, "workload[0].metrics", "no metric")


def test_a_valid_exec_plan(write_plan, host: Host) -> None:
    text = exec_table('scale = 2\ncount = 1\nstream = "stdout"', 'repeat = "auto"\nwarmup_runs = 1')
    text += ("[[workload.metrics]]\nname = \"total_time\"\nregex = 'total time:\\s*"
             "(?P<value>[0-9.]+)s'\nunit = \"ms\"\nbetter = \"lower\"\nscale = 1000\n")
    plan = load(write_plan(text), host)
    case = plan.workloads[0]
    assert case.label == "exec" and case.repeat == AUTO
    assert [m.name for m in case.params.metrics] == ["events", "total_time"]
    assert case.params.metrics[0].scale == 2.0 and case.params.metrics[1].scale == 1000.0
    # the first metric is the primary one, for the runner's "auto" too
    assert case.workload.primary_metric == "events"
    assert CATALOGUE["exec"].primary_metric is None
    assert case.workload.agent_args(case.params) == [
        "--warmup-runs", "1", "exec", "sysbench", "cpu", "run"]
    assert case.workload.needed_tools(case.params) == ("sysbench",)
    stored = plan.as_dict()["workloads"][0]["params"]
    assert declared_directions(stored) == {"events": True, "total_time": False}


def test_two_exec_tables_are_told_apart_by_label(write_plan, host: Host) -> None:
    second = exec_table().split(ENV, 1)[1]
    with pytest.raises(PlanError, match=r"workload\[1\]\.name: 'exec' appears twice .*label"):
        load(write_plan(exec_table() + second), host)
    labelled = exec_table(extra='label = "cpu"') + second.replace(
        'name = "exec"\n', 'name = "exec"\nlabel = "cpu-again"\n')
    plan = load(write_plan(labelled), host)
    assert [case.label for case in plan.workloads] == ["cpu", "cpu-again"]
    with pytest.raises(PlanError, match=r"workload\[0\]\.label: 'a b' is not a plain identifier"):
        load(write_plan(exec_table(extra='label = "a b"')), host)


def test_scratch_drop_caches_and_children_become_needs(write_plan, host: Host, tmp_path) -> None:
    plan = load(write_plan(exec_table(extra="scratch_mib = 64\ndrop_caches = true\n"
                                            "exec_children = true")), host)
    case = plan.workloads[0]
    needs = case.workload.job_needs(case.params, tmp_path)
    assert (needs.scratch, needs.scratch_mib, needs.drop_caches, needs.exec_children) == (
        True, 64, True, True)
    default = load(write_plan(exec_table()), host).workloads[0]
    assert not default.workload.job_needs(default.params, tmp_path).scratch


# ---- parse_metrics on recorded output ------------------------------------------------

def test_sysbench_events_per_second_and_latency() -> None:
    text = recorded("sysbench-cpu.stdout")
    samples = parse_metrics([
        metric(),
        metric(name="latency_p95", regex=r"95th percentile:\s*(?P<value>[0-9.]+)", unit="us",
               better="lower", scale=1000),
        metric(name="total_time", regex=r"^\s*total time:\s*(?P<value>[0-9.]+)s$", unit="s",
               better="lower")], text)
    assert samples == [("events", "events/s", 49873.69), ("latency_p95", "us", 20.0),
                       ("total_time", "s", 1.0002)]


def test_stress_ng_reports_on_stderr() -> None:
    streams = {"stdout": recorded("stress-ng-cpu.stdout"),
               "stderr": recorded("stress-ng-cpu.stderr")}
    bogo = metric(name="bogo_ops", regex=STRESS_CPU, unit="bogo ops/s", stream="stderr")
    assert parse_metrics([bogo], streams) == [("bogo_ops", "bogo ops/s", 3471.11)]
    with pytest.raises(OutputError, match="expected to match once in stdout, found no match; "
                                          r"stdout ends: \(no output\)"):
        parse_metrics([bogo.model_copy(update={"stream": "stdout"})], streams)


def test_count_takes_the_median_of_every_match() -> None:
    text = recorded("stress-ng-two.stderr")
    per_stressor = metric(name="bogo_ops", unit="bogo ops/s", count=2,
                          regex=r"^stress-ng: metrc: \[\d+\] (?:cpu|matrix)\s+\d+\s+(?:\S+\s+){3}"
                                r"(?P<value>[0-9.]+)")
    assert parse_metrics([per_stressor], text) == [
        ("bogo_ops", "bogo ops/s", pytest.approx((3488.90 + 8131.15) / 2))]
    with pytest.raises(OutputError, match="expected to match once in the output, found 2 "
                                          "matches: 'stress-ng: metrc: .* cpu "):
        parse_metrics([per_stressor.model_copy(update={"count": 1})], text)


def test_a_missing_metric_quotes_the_regex_and_the_output_tail() -> None:
    text = recorded("sysbench-cpu.stdout")
    absent = metric(name="iops", regex=r"IOPS=(?P<value>\d+)")
    with pytest.raises(OutputError) as caught:
        parse_metrics([metric(), absent], text)
    message = str(caught.value)
    assert message.startswith("metric iops: regex 'IOPS=(?P<value>\\d+)' was expected to match "
                              "once in the output, found no match; the output ends: ")
    assert "execution time (avg/stddev)" in message


def test_a_doubled_metric_fails() -> None:
    text = recorded("sysbench-cpu.stdout") * 2
    with pytest.raises(OutputError, match=r"metric events: regex 'events per second:\\s\*"
                                          r"\(\?P<value>\[0-9\.\]\+\)' was expected to match once "
                                          "in the output, found 2 matches"):
        parse_metrics([metric()], text)


@pytest.mark.parametrize("regex, captured", [
    (r"Number of threads: (?P<value>\S+)", "'one'"),
    (r"Number of threads: (?P<value>.*)", "'one'"),
    (r"(?P<value>\d+)?events per second", "None"),
])
def test_a_value_that_is_not_a_number_fails(regex: str, captured: str) -> None:
    text = recorded("sysbench-cpu.stdout").replace("Number of threads: 1",
                                                   "Number of threads: one")
    with pytest.raises(OutputError) as caught:
        parse_metrics([metric(regex=regex)], text)
    message = str(caught.value)
    assert message.startswith(f"metric events: regex '{regex}' captured {captured} in the "
                              "output, not a finite number"), message


def test_nan_and_inf_are_not_values() -> None:
    for word in ("nan", "inf", "-Infinity"):
        with pytest.raises(OutputError, match="not a finite number"):
            parse_metrics([metric(regex=r"x=(?P<value>\S+)")], f"x={word}\n")


def test_one_text_is_read_by_every_metric_whatever_its_stream() -> None:
    console = "boot...\nbench: 12.5 ops/s\n"
    assert parse_metrics([metric(regex=r"bench: (?P<value>[0-9.]+)", stream="stderr")],
                         console) == [("events", "events/s", 12.5)]


def test_the_exec_workload_derives_only_its_metrics() -> None:
    workload = CATALOGUE["exec"]
    params = workload.resolve({"argv": ["sysbench", "cpu", "run"],
                               "metrics": [metric().model_dump()]}, None)
    run = RunOutput(samples=[("elapsed", "s", 1.0)], stdout=recorded("sysbench-cpu.stdout"),
                    stderr="", records=[], artifacts={})
    assert workload.derive(params, run) == [("events", "events/s", 49873.69)]


# ---- declared directions in the analysis ----------------------------------------------

def runs_and_samples(better: str, values: dict[str, list[float]]):
    params = {"argv": ["tool"], "metrics": [{"name": "lat", "regex": "(?P<value>.*)",
                                             "unit": "MB/s", "better": better}]}
    runs, samples = [], []
    for env, found in values.items():
        for value in found:
            run_id = len(runs) + 1
            runs.append(Run(id=run_id, environment=env, label="exec", status="ok",
                         reason="", params=params))
            samples.append(StoredSample(run_id=run_id, metric="lat", unit="MB/s", value=value))
    return runs, samples


def test_a_declared_direction_beats_the_unit() -> None:
    for better, expected in (("lower", False), ("higher", True)):
        runs, samples = runs_and_samples(better, {"a": [1.0, 2.0]})
        cell = summarise(["a"], runs, samples).cell("exec", "lat", "a")
        assert cell.declared_higher is expected and cell.higher_is_better is expected
    # without a declaration the unit decides, as before
    runs, samples = runs_and_samples("lower", {"a": [1.0]})
    runs = [dataclasses.replace(run, params={}) for run in runs]
    assert summarise(["a"], runs, samples).cell("exec", "lat", "a").higher_is_better
    assert declared_directions({"metrics": "nonsense"}) == {}
    assert declared_directions(None) == {}


def test_compare_verdicts_follow_the_declared_direction() -> None:
    larger = Interval(1.5, 1.4, 1.6)
    assert judge(larger, 0.001, "MB/s", 0.05, 0.01) == FASTER
    assert judge(larger, 0.001, "MB/s", 0.05, 0.01, declared_higher=False) == SLOWER
    assert judge(larger, 0.001, "ms", 0.05, 0.01, declared_higher=True) == FASTER


def test_percent_of_native_uses_the_declared_direction(store) -> None:
    campaign = Campaign(store, {"native": {"kind": "native"}, "vm": {"kind": "qemu"}},
                        baseline="native")
    for better in ("higher", "lower"):
        params = {"argv": ["tool"], "metrics": [{"name": "score", "regex": "(?P<value>.*)",
                                                 "unit": "points", "better": better}]}
        for native, vm in ((100.0, 50.0), (101.0, 51.0), (99.0, 49.0)):
            for env, value in (("native", native), ("vm", vm)):
                campaign.run(env, "exec", [("score", "points", value)], label=f"exec-{better}",
                             params=params)
    tables = campaign.tables()
    rows = {row[0]: row for row in tables["percent"].rows}
    header = tables["percent"].header
    vm = dict(zip(header, rows["vm"]))
    assert vm["exec-higher"].startswith("50")   # half the score of native: 50%
    assert vm["exec-lower"].startswith("200")   # half the cost of native: twice as fast
    ratios = {row[0]: row for row in tables["ratios"].rows}
    assert ratios["exec-higher"][1] == "score (rate, inverted)"
    assert ratios["exec-lower"][1] == "score"
    # the one rule, x native and above 1 is worse, whichever way the score points
    vm_at = tables["ratios"].header.index("vm")
    assert ratios["exec-higher"][vm_at].startswith("2.0")  # half the score: twice as bad
    assert ratios["exec-lower"][vm_at].startswith("0.5")  # half the cost: twice as good


def test_guest_program_reads_its_metrics_from_the_console() -> None:
    workload = CATALOGUE["guest_program"]
    params = workload.resolve({"metrics": [
        {"name": "getpid", "regex": r"^getpid: (?P<value>\d+) cycles", "unit": "cycles",
         "better": "lower"}]}, Host({}))
    assert not workload.uses_agent and workload.boot_phases
    console = "Booting...\ngetpid: 321 cycles\nhalting"
    run = RunOutput(samples=[], stdout=console, stderr="", records=[], artifacts={})
    assert workload.derive(params, run) == [("getpid", "cycles", 321.0)]
    with pytest.raises(OutputError, match="metric getpid"):
        workload.derive(params, RunOutput([], "Booting...\n", "", [], {}))


def test_guest_program_without_metrics_is_a_plan_error(write_plan, host: Host) -> None:
    path = write_plan('[[environment]]\npreset = "native"\n[[workload]]\nname = "guest_program"\n'
                      'metrics = []\n')
    with pytest.raises(PlanError, match=r"workload\[0\]\.metrics: .*no metric"):
        load(path, host)
